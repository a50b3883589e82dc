/**
 * Builds the published package: dist/ with compiled JavaScript and .d.ts files (npm run build;
 * `prepare` runs it, so `npm ci` and `npm pack` produce dist/). `weir run` still loads job
 * files in TypeScript without a build step; this is for projects that import 'weir'.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

// A clean dist/: files of deleted sources must not linger in the package.
rmSync(DIST, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });

// tsc rewrites './x.ts' to './x.js' in the JavaScript it emits but not in declarations
// (TypeScript 5.9), and a user's tsc without allowImportingTsExtensions rejects '.ts' paths.
const RELATIVE_TS = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]*?)\.ts(['"])/g;
let rewritten = 0;
for (const f of files(DIST).filter((p) => p.endsWith('.d.ts'))) {
  const text = readFileSync(f, 'utf8');
  const out = text.replace(RELATIVE_TS, '$1$2.js$3');
  if (out !== text) {
    writeFileSync(f, out);
    rewritten++;
  }
}

// Everything in src/ that is not TypeScript (the worker bootstrap and its resolution hook, the
// dashboard's page, script and styles) is copied as is.
const copied = files(SRC).filter((p) => !p.endsWith('.ts'));
for (const f of copied) {
  const to = join(DIST, relative(SRC, f));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(f, to);
}
process.stdout.write(`built dist/: ${files(DIST).length} files (${rewritten} declarations with rewritten paths, ${copied.length} copied)\n`);
