// Worker thread bootstrap: a job file in TypeScript loads through tsx in every worker, as in
// the main thread, without a build step. From a checkout weir itself runs from its sources
// (worker-main.ts beside this file); from an installed package it runs the compiled dist/,
// where only worker-main.js exists.
import { existsSync } from 'node:fs';
import { register as registerHooks } from 'node:module';
import { register } from 'tsx/esm/api';

register();
const source = new URL('./worker-main.ts', import.meta.url);
if (existsSync(source)) {
  registerHooks('./source-condition-hooks.js', import.meta.url);
  await import(source.href);
} else {
  await import('./worker-main.js');
}
