// Worker thread bootstrap. From a checkout weir runs from its sources (worker-main.ts beside
// this file) through tsx, with the 'weir-source' condition so that a job's `import 'weir'` gets
// those same modules. From an installed package it runs dist/'s bundle (worker.js at dist/'s
// top) as plain JavaScript, without tsx: the job module arrives bundled as JavaScript by the
// main thread (job-bundle.ts), and tsx is registered only if it does not (typescript-jobs.ts).
// A worker never starts tsx's hooks thread unless it needs it: that costs ~200 ms of CPU.
import { existsSync } from 'node:fs';

const source = new URL('./worker-main.ts', import.meta.url);
if (existsSync(source)) {
  const { register: registerHooks } = await import('node:module');
  const { register } = await import('tsx/esm/api');
  register();
  registerHooks('./source-condition-hooks.js', import.meta.url);
  await import(source.href);
} else {
  // Only in dist/ (there is no src/worker.js): the bundle's entry for worker threads.
  await import(new URL('../worker.js', import.meta.url).href);
}
