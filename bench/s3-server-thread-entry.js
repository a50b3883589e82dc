// Worker bootstrap for bench/s3-server-thread.ts: TypeScript through tsx, as in the main thread.
import { register } from 'tsx/esm/api';

register();
await import(new URL('./s3-server-thread.ts', import.meta.url).href);
