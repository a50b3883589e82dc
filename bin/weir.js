#!/usr/bin/env node
// weir's command line. A job file in TypeScript loads through tsx, without a build step. From a
// checkout (src/ present) weir runs from its sources, with the 'weir-source' condition so that a
// job's `import 'weir'` gets those same modules; from an installed package it runs dist/.
import { existsSync } from 'node:fs';
import { register as registerHooks } from 'node:module';
import { register } from 'tsx/esm/api';

register();
const source = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(source)) {
  registerHooks('../src/cluster/source-condition-hooks.js', import.meta.url);
  await import(source.href);
} else {
  await import('../dist/cli/main.js');
}
