#!/usr/bin/env node
// weir's command line. A job file in TypeScript loads without a build step. An installed
// package runs dist/ as plain JavaScript, and the job bundled as JavaScript by esbuild
// (src/cluster/job-bundle.ts; tsx only if that fails: src/cluster/typescript-jobs.ts). A
// checkout does the same while dist/ is current (built by `npm ci` from the sources as they
// are now: dist/source-stamp.json, written by scripts/build.ts); once a source is edited, added
// or removed, or with WEIR_FROM_SOURCE=1, it runs from src/ through tsx with the 'weir-source'
// condition, so that a job's `import 'weir'` gets those same modules. `weir run`'s worker
// threads start first (early-workers.js): they load weir meanwhile.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = new URL('../src/cli/main.ts', import.meta.url);
const fromSource = existsSync(source) && (process.env.WEIR_FROM_SOURCE === '1' || !(await import('../src/cli/dist-current.js')).distIsCurrent(
  fileURLToPath(new URL('../src/', import.meta.url)), fileURLToPath(new URL('../dist/source-stamp.json', import.meta.url))));
// Said to the job and its worker threads (they inherit the environment): which runtime runs them.
process.env.WEIR_RUNTIME = fromSource ? 'sources' : 'dist';
const { startEarlyWorkers } = await import(fromSource ? '../src/cluster/early-workers.js' : '../dist/cluster/early-workers.js');
startEarlyWorkers(process.argv.slice(2));

if (fromSource) {
  const { register: registerHooks } = await import('node:module');
  const { register } = await import('tsx/esm/api');
  register();
  registerHooks('../src/cluster/source-condition-hooks.js', import.meta.url);
  await import(source.href);
} else {
  await import('../dist/cli.js');
}
