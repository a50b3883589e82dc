/** Writes docs/configuration.md from the option registry: npm run docs:config. */
import { writeFileSync } from 'node:fs';
import { configurationDocs } from '../src/core/options/docs.ts';

const target = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(target, configurationDocs());
process.stdout.write(`wrote ${target.pathname}\n`);
