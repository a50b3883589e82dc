#!/usr/bin/env node
// weir's command line. A job file in TypeScript loads through tsx, without a build step. From a
// checkout (src/ present) weir runs from its sources, through tsx with the 'weir-source'
// condition so that a job's `import 'weir'` gets those same modules. From an installed package
// it runs dist/ as plain JavaScript, and the job bundled as JavaScript by esbuild
// (src/cluster/job-bundle.ts; tsx only if that fails: src/cluster/typescript-jobs.ts). `weir run`'s worker threads start first (early-workers.js):
// they load weir meanwhile.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/main.ts', import.meta.url);
const fromSource = existsSync(source);
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
