// The snapshot reader thread's bootstrap (reader-thread.ts starts it). From a checkout it runs
// reader-main.ts beside this file through tsx (registered in this thread only); from dist/ the
// bundle's entry for it (reader.js at dist/'s top), plain JavaScript.
import { existsSync } from 'node:fs';

const source = new URL('./reader-main.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../../reader.js', import.meta.url).href);
}
