// Runs a bench child written in TypeScript against weir's compiled dist/, as `npx weir run`
// runs an installed or freshly built weir: the child's own .ts files are bundled with esbuild
// into one JavaScript file (packages, 'weir' among them, stay imports), so that no thread of
// the child registers tsx. With tsx registered, every module the main thread loads later (the
// job's bundle, weir's chunks) goes through tsx's hooks thread while the measurement runs:
// ~170 ms of a 2-worker job's start waited on it, and its CPU competed with the workers, none
// of which happens under `npx weir run`. Without the 'weir-source' condition, `import 'weir'`
// resolves to dist/index.js, weir's workers run dist/'s worker bundle and the job module arrives
// bundled by esbuild (src/cluster/job-bundle.ts). Used by bench/harness.ts (spawnChild with
// runtime 'dist') and as the entry of bench worker threads (bench/parallel-ceiling.ts).
//   node bench/ts-entry.mjs <child.ts> [args...]
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { build, stop } from 'esbuild';

const script = process.argv[2]; // in a worker: its argv option, after "[worker]"
if (script === undefined) {
  process.stderr.write('usage: node bench/ts-entry.mjs <child.ts> [args...]\n');
  process.exit(2);
}
const source = resolve(script);

/** Each bundled file keeps its own import.meta.url, filename and dirname (children find their jobs by them). */
const ownImportMeta = {
  name: 'own-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]s$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta')) return undefined;
      const own = { url: pathToFileURL(args.path).href, filename: args.path, dirname: dirname(args.path) };
      const contents = text.replace(/\bimport\.meta\.(url|filename|dirname)\b/g, (_m, k) => JSON.stringify(own[k]));
      return { contents, loader: /\.[cm]?ts$/.test(args.path) ? 'ts' : 'js' };
    });
  },
};

// Inside the checkout, so that the bundle's `import 'weir'` resolves to the package itself.
const cacheDir = join(dirname(fileURLToPath(import.meta.url)), '.cache');
mkdirSync(cacheDir, { recursive: true });
const outfile = join(cacheDir, `${basename(source).replace(/\.[cm]?ts$/, '')}-${process.pid}-${Math.random().toString(16).slice(2, 10)}.mjs`);
await build({
  entryPoints: [source], outfile, bundle: true, format: 'esm', platform: 'node', target: 'node20',
  packages: 'external', sourcemap: 'inline', logLevel: 'error', plugins: [ownImportMeta],
});
// Stop esbuild's service process: a cold `weir run` (no kept job bundle) starts its own, and
// a child measuring one must not find it running already.
await stop();
// The child reads its own arguments from process.argv.slice(2), as when started directly.
if (isMainThread) process.argv.splice(1, 2, source);
try {
  await import(pathToFileURL(outfile).href);
} finally {
  rmSync(outfile, { force: true });
}
