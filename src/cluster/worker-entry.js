// Worker thread bootstrap: TypeScript (the runtime and the user's job) loads through tsx,
// so a job file runs without a build step in every worker as in the main thread.
import { register } from 'tsx/esm/api';
register();
await import('./worker-main.ts');
