/**
 * The job module as one plain JavaScript file, so that an installed weir (dist/, plain
 * JavaScript) runs a TypeScript job without tsx: registering tsx costs a thread ~200 ms of CPU
 * (it starts a hooks thread, and that its own esbuild process), and every module loaded after
 * goes through that thread. runJob bundles the job once with esbuild; the main thread and every
 * worker import the result.
 *
 * The bundle keeps the job's meaning: its own files (relative imports, tsconfig path aliases)
 * are inlined with their import.meta.url/filename/dirname; every package stays external and is
 * imported by the absolute URL Node's resolution finds from the job's own file, and `weir`
 * is the runtime's own entry (one instance of every class in the thread). Stacks point into
 * the job's sources (inline source map). import.meta.resolve in a job file resolves from the
 * bundle's place, not the file's (a known difference).
 *
 * From a checkout the runtime runs from its TypeScript sources and every thread registers tsx
 * anyway (bin/weir.js, worker-entry.js): then there is nothing to gain and nothing is bundled.
 * A job esbuild cannot bundle is loaded as it is, through tsx (typescript-jobs.ts), which then
 * reports what is wrong with it as before.
 *
 * Bundles are kept between runs (job-bundle-cache.ts): a job whose files are all unchanged
 * starts without loading esbuild or starting its service process.
 */
import { readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Plugin } from 'esbuild';
import { logger } from '../core/log.ts';
import { bundleCacheEntry, manifestFor, privateCacheRoot, runDir, storeBundle, takeCachedBundle } from './job-bundle-cache.ts';
import { RUNTIME_IS_COMPILED, WEIR_ENTRY } from './typescript-jobs.ts';

export interface JobBundle {
  /** What a thread imports instead of the job file. */
  readonly url: string;
  /** Deletes the run's copy of the bundle (when the job is done); the cache keeps its own. */
  readonly dispose: () => void;
  /** Whether it came from the cache of earlier runs (job-bundle-cache.ts) rather than esbuild. */
  readonly cached: boolean;
}

/**
 * Why esbuild could not bundle a job module, by its absolute path: "file:line:column: message"
 * of the first error (a syntax error, an import that resolves nowhere). The module then loads
 * through tsx, whose own error for the same fault can be unrelated (Node's CommonJS
 * complaints); job-loader.ts reports this one instead when that load fails too.
 */
const bundleFailures = new Map<string, string>();

export function bundleFailureOf(modulePath: string): string | undefined {
  return bundleFailures.get(resolve(modulePath));
}

/** The job bundled (or taken from the cache); undefined from a checkout, or when esbuild cannot bundle it. */
export async function bundleJob(modulePath: string): Promise<JobBundle | undefined> {
  if (!RUNTIME_IS_COMPILED) return undefined;
  try {
    const cacheRoot = privateCacheRoot();
    const bundle = await bundleJobAs(modulePath, WEIR_ENTRY, cacheRoot === undefined ? undefined : bundleCacheEntry(modulePath, WEIR_ENTRY, cacheRoot));
    bundleFailures.delete(resolve(modulePath));
    return bundle;
  } catch (e) {
    const why = firstBuildError(e);
    if (why !== undefined) bundleFailures.set(resolve(modulePath), why);
    logger().debug(`the job module is not bundled (it loads through tsx): ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
}

/** "file:line:column: message" of an esbuild failure's first error; undefined for other errors. */
function firstBuildError(e: unknown): string | undefined {
  const first = (e as { errors?: { text?: string; location?: { file?: string; line?: number; column?: number } | null }[] }).errors?.[0];
  if (first?.text === undefined) return undefined;
  const file = first.location?.file;
  // esbuild names files relative to the working directory: outside it, by their absolute path.
  const shown = file === undefined ? undefined : file.startsWith('..') ? resolve(file) : file;
  const at = shown !== undefined ? `${shown}:${first.location!.line ?? 0}:${(first.location!.column ?? 0) + 1}: ` : '';
  return `${at}${first.text}`;
}

/**
 * Why a job module that failed to load cannot be bundled, if that is why: esbuild run over it
 * (packages left out) after the load failed, for the runs that load it through tsx (from
 * sources), whose own message for a syntax error can be Node's unrelated CommonJS complaint.
 */
export async function diagnoseJobModule(modulePath: string): Promise<string | undefined> {
  const known = bundleFailureOf(modulePath);
  if (known !== undefined) return known;
  try {
    const { build } = await import('esbuild');
    await build({ entryPoints: [modulePath], bundle: true, write: false, format: 'esm', platform: 'node', target: 'node20', packages: 'external', logLevel: 'silent', absWorkingDir: process.cwd() });
    return undefined;
  } catch (e) {
    return firstBuildError(e);
  }
}

/**
 * The job bundled in a new temporary directory, its `import 'weir'` turned into `weirEntry`;
 * with a cache entry directory, taken from there when nothing it was made from changed, and
 * stored there when made.
 */
export async function bundleJobAs(modulePath: string, weirEntry: string, cacheEntry?: string): Promise<JobBundle> {
  const dir = runDir();
  const dispose = () => rmSync(dir, { recursive: true, force: true });
  try {
    const hit = cacheEntry === undefined ? undefined : takeCachedBundle(cacheEntry, dir);
    if (hit !== undefined) return { url: pathToFileURL(hit).href, dispose, cached: true };
    const outfile = join(dir, 'job.mjs');
    const externals: string[] = [];
    // Loaded here, not at the top: only `weir run` of an installed weir needs it, on a cache miss.
    const { build } = await import('esbuild');
    const absWorkingDir = process.cwd();
    const result = await build({
      entryPoints: [modulePath], outfile, bundle: true, format: 'esm', platform: 'node', target: 'node20',
      sourcemap: 'inline', sourcesContent: false, keepNames: true, logLevel: 'silent', metafile: true, absWorkingDir,
      // Only Node's own conditions ('node', 'import'): esbuild would add bundlers' 'module'.
      conditions: ['node'],
      plugins: [packagesByUrl(weirEntry, externals), ownImportMeta],
    });
    if (cacheEntry !== undefined) {
      const inputs = Object.keys(result.metafile.inputs).map((p) => resolve(absWorkingDir, p));
      storeBundle(cacheEntry, outfile, manifestFor(inputs, externals));
    }
    return { url: pathToFileURL(outfile).href, dispose, cached: false };
  } catch (e) {
    dispose();
    throw e;
  }
}

const RESOLVING = Symbol('resolving');

/** A package stays outside the bundle, imported by its absolute URL; 'weir' is the runtime. */
function packagesByUrl(weirEntry: string, externals: string[]): Plugin {
  return {
    name: 'packages-by-url',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === RESOLVING) return undefined;
        if (args.path === 'weir') return { path: weirEntry, external: true };
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        const r = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: RESOLVING });
        if (r.errors.length > 0) return { errors: r.errors };
        // Not in node_modules: a path alias to the job's own sources, which are bundled.
        if (!r.path.split(sep).includes('node_modules')) return { path: r.path };
        externals.push(r.path);
        return { path: pathToFileURL(r.path).href, external: true };
      });
    },
  };
}

/** The job's own files keep their import.meta.url, filename and dirname. */
const ownImportMeta: Plugin = {
  name: 'own-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta')) return undefined;
      const own: Record<string, string> = { url: pathToFileURL(args.path).href, filename: args.path, dirname: dirname(args.path) };
      const contents = text.replace(/\bimport\.meta\.(url|filename|dirname)\b/g, (_m, k: string) => JSON.stringify(own[k]));
      const ext = /\.[cm]?([jt]sx?)$/.exec(args.path)![1] as 'js' | 'jsx' | 'ts' | 'tsx';
      return { contents, loader: ext };
    });
  },
};
