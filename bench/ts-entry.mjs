// Runs a bench child written in TypeScript against weir's compiled dist/, as `npx weir run`
// runs an installed or freshly built weir: tsx is registered in this thread only (for the
// child's own .ts files), not with `--import tsx`, which every worker thread would inherit
// through execArgv and pay for (~200 ms of CPU each, and every module through tsx's hooks
// thread). Without the 'weir-source' condition, `import 'weir'` resolves to dist/index.js,
// weir's workers run dist/'s worker bundle and the job module arrives bundled by esbuild
// (src/cluster/job-bundle.ts). Used by bench/harness.ts (spawnChild with runtime 'dist').
//   node bench/ts-entry.mjs <child.ts> [args...]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

register();
process.setSourceMapsEnabled(false);
const script = process.argv[2];
if (script === undefined) {
  process.stderr.write('usage: node bench/ts-entry.mjs <child.ts> [args...]\n');
  process.exit(2);
}
// The child reads its own arguments from process.argv.slice(2), as when started directly.
process.argv.splice(1, 2, resolve(script));
await import(pathToFileURL(resolve(script)).href);
