/**
 * Builds the published package (npm run build; `prepare` runs it, so `npm ci` and `npm pack`
 * produce dist/): weir's JavaScript as an esbuild bundle and tsc's .d.ts files. `weir run`
 * still loads job files in TypeScript without a build step; this is for the runtime itself.
 *
 * Why a bundle: every module Node loads costs a resolution and a read, and every worker thread
 * loads weir anew (~225 modules as files: ~150 ms per thread; bundled: ~100 ms). The three
 * entry points (the API, the CLI, a worker thread's body) share chunks, so a job's
 * `import 'weir'` and the runtime in the same thread get one instance of every class.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { sourceStamp } from '../src/cli/dist-current.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
/** Beside dist/'s files; bin/weir.js reads it (the same name there). */
const SOURCE_STAMP = 'source-stamp.json';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

/**
 * A module's import.meta.url, as if it were still its own file (src/x/y.ts -> dist/x/y.js):
 * the few modules that find files beside them (the worker bootstrap, the dashboard's page, the
 * bin script) keep finding them, although the bundle put their code in a chunk. Every output
 * file sits at dist/'s top, so the path relative to the chunk is the path relative to dist/.
 */
const ownUrls: Plugin = {
  name: 'own-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return undefined;
      const own = `./${relative(SRC, args.path).split('\\').join('/').replace(/\.ts$/, '.js')}`;
      return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(own)}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

// A clean dist/: files of deleted sources must not linger in the package.
rmSync(DIST, { recursive: true, force: true });
await build({
  entryPoints: { index: join(SRC, 'index.ts'), cli: join(SRC, 'cli/main.ts'), worker: join(SRC, 'cluster/worker-main.ts'), reader: join(SRC, 'state/disk/reader-main.ts') },
  outdir: DIST,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Dependencies stay packages of their own (installed beside weir, some native).
  packages: 'external',
  chunkNames: 'chunk-[hash]',
  // Class and function names stay as written: error messages and stacks name them.
  keepNames: true,
  plugins: [ownUrls],
  logLevel: 'warning',
});

// esbuild escapes non-ASCII characters in strings, regular expressions and identifiers, but
// copies comments as written: one '≤' in a comment made Node decode the 670 KB runtime chunk
// into a two-byte string (twice the memory, a slower UTF-8 decode and scan) in every thread that
// loads weir. Escaped the same way here, the files are ASCII, which V8 reads as one byte per
// character; a \uXXXX escape means the same character wherever else one could stand.
let escaped = 0;
for (const f of files(DIST).filter((p) => p.endsWith('.js'))) {
  const text = readFileSync(f, 'utf8');
  const ascii = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (ascii !== text) {
    writeFileSync(f, ascii);
    escaped++;
  }
}

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
// dashboard's page, script and styles) is copied as is, where ownUrls says its users look.
const copied = files(SRC).filter((p) => !p.endsWith('.ts'));
for (const f of copied) {
  const to = join(DIST, relative(SRC, f));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(f, to);
}
// What bin/weir.js checks in a checkout to run dist/ instead of the sources: the sources this
// build saw (their number and newest modification). Any source edited, added or removed since
// makes it stale, and the checkout runs from src/ again.
writeFileSync(join(DIST, SOURCE_STAMP), JSON.stringify(sourceStamp(SRC)) + '\n');
process.stdout.write(`built dist/: ${files(DIST).length} files (${escaped} with non-ASCII characters escaped, ${rewritten} declarations with rewritten paths, ${copied.length} copied)\n`);
