/**
 * Job bundles kept between runs ($WEIR_HOME/job-bundles), so that `weir run` of a job whose
 * files did not change neither loads esbuild nor starts its service process: in a fresh
 * process that is most of a small job's fixed cost (job-bundle.ts bundles on a miss).
 *
 * A bundle is reused only when everything that went into it is byte for byte the same: each
 * entry records the SHA-256 of every file esbuild read and of every file that steers how its
 * imports resolve (package.json, tsconfig.json and jsconfig.json in the job's directories and
 * their parents, the configs those extend, the package.json of every package it imports, or
 * their absence), and each
 * external import's resolved file must still exist. The key is the job's path, the runtime's
 * entry, esbuild's version, this file's format and the temporary directory, so a rebuilt or
 * upgraded weir never meets an old bundle. Anything unreadable or malformed in the cache is a
 * miss (debug log), never an error: the cache can be deleted at any time.
 *
 * A run never imports the cached file itself: it gets a hard link (or copy) in a directory of
 * its own, deleted when the job ends, so evicting or replacing an entry cannot pull a file from
 * under a running job whose workers import it later (a restart of the pool re-imports it).
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, parse, resolve, sep } from 'node:path';
import { logger } from '../core/log.ts';
import { weirHome } from '../core/weir-home.ts';

/** Bump when what a bundle contains for the same inputs changes (the plugins in job-bundle.ts). */
const CACHE_FORMAT = 1;
/** Entries kept; past it the least recently written go. */
export const MAX_CACHED_BUNDLES = 64;
/** Files a manifest may list (a job with more is bundled every time). */
const MAX_MANIFEST_FILES = 10_000;
/** What resolution reads besides the sources, looked for in every directory a source lives in and above. */
const RESOLUTION_FILES = ['package.json', 'tsconfig.json', 'jsconfig.json'] as const;

/** What a bundle was made from: file -> SHA-256 of its bytes, or null where the file was absent. */
export interface BundleManifest {
  readonly format: number;
  readonly bundle: string;
  readonly files: Readonly<Record<string, string | null>>;
  /** Absolute paths of the packages' files the bundle imports by URL. */
  readonly externals: readonly string[];
}

export function bundleCacheRoot(): string {
  return join(weirHome(), 'job-bundles');
}

/**
 * The cache's root, created if need be, when it and weir's home belong to this user and no one
 * else can write to them; otherwise undefined (no cache, debug log). Bundles are code this
 * process runs: a directory someone else could write to would let them plant one.
 */
export function privateCacheRoot(root = bundleCacheRoot()): string | undefined {
  try {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const uid = process.getuid?.();
    for (const d of [dirname(root), root]) {
      const st = statSync(d);
      if (uid !== undefined && st.uid !== uid) throw new Error(`${d} belongs to another user (uid ${st.uid})`);
      if ((st.mode & 0o022) !== 0) throw new Error(`${d} is writable by others (mode ${(st.mode & 0o777).toString(8)})`);
    }
    return root;
  } catch (e) {
    logger().debug(`job bundle cache: off (${e instanceof Error ? e.message : String(e)})`);
    return undefined;
  }
}

/**
 * The cache entry's directory for a job: one per (job path, runtime entry, esbuild version,
 * format, temporary directory). The bundle's inline source map names the job's files relative to
 * the run's directory under the temporary directory, so a bundle made under another one would
 * point stacks at the wrong files.
 */
export function bundleCacheEntry(modulePath: string, weirEntry: string, root = bundleCacheRoot()): string {
  // The file's real path: reached through a symlink (current -> releases/v1), the entry is the
  // release's own, so switching the link to v2 no longer serves v1's bundle (its manifest holds
  // the real paths read, which never change when the link moves).
  const key = createHash('sha256').update(JSON.stringify([CACHE_FORMAT, realPathOf(modulePath), weirEntry, esbuildVersion(), tmpdir()])).digest('hex').slice(0, 32);
  return join(root, key);
}

function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function esbuildVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(createRequire(import.meta.url).resolve('esbuild/package.json'), 'utf8')) as { version?: unknown };
    return String(pkg.version);
  } catch {
    return 'unknown';
  }
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** A file's hash, or null when it does not exist (or is not a file). */
function fileHash(path: string): string | null {
  try {
    return sha256(readFileSync(path));
  } catch {
    return null;
  }
}

/** Checks a manifest read from disk (external input): undefined when malformed. */
export function parseManifest(text: string): BundleManifest | undefined {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof m !== 'object' || m === null) return undefined;
  const { format, bundle, files, externals } = m as Record<string, unknown>;
  if (format !== CACHE_FORMAT || typeof bundle !== 'string' || !/^job-[0-9a-f]{16}\.mjs$/.test(bundle)) return undefined;
  if (typeof files !== 'object' || files === null || Array.isArray(files)) return undefined;
  const entries = Object.entries(files as Record<string, unknown>);
  if (entries.length === 0 || entries.length > MAX_MANIFEST_FILES) return undefined;
  for (const [path, hash] of entries) {
    if (!path.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(path)) return undefined;
    if (hash !== null && (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash))) return undefined;
  }
  if (!Array.isArray(externals) || externals.length > MAX_MANIFEST_FILES || !externals.every((e) => typeof e === 'string')) return undefined;
  return { format, bundle, files: files as Record<string, string | null>, externals: externals as string[] };
}

/** Why a manifest no longer describes the files as they are, or undefined when it still does. */
export function staleReason(m: BundleManifest, hashOf: (path: string) => string | null = fileHash, exists: (path: string) => boolean = existsSync): string | undefined {
  for (const [path, hash] of Object.entries(m.files)) {
    const now = hashOf(path);
    if (now !== hash) return `${path} ${hash === null ? 'appeared' : now === null ? 'is gone' : 'changed'}`;
  }
  for (const e of m.externals) if (!exists(e)) return `${e} is gone`;
  return undefined;
}

export interface CachedBundle {
  readonly url: string;
  readonly dispose: () => void;
}

/** A run's own directory for its bundle, under the system's temporary directory. */
export function runDir(): string {
  return mkdtempSync(join(tmpdir(), 'weir-job-'));
}

/** The cached bundle of a job linked into `dir` as job.mjs, or undefined on a miss (why: debug log). */
export function takeCachedBundle(entryDir: string, dir: string): string | undefined {
  const manifestPath = join(entryDir, 'manifest.json');
  let text: string;
  try {
    text = readFileSync(manifestPath, 'utf8');
  } catch {
    return undefined; // never bundled here
  }
  const m = parseManifest(text);
  const why = m === undefined ? `malformed manifest ${manifestPath}` : staleReason(m);
  if (why !== undefined || m === undefined) {
    logger().debug(`job bundle cache: rebuilding (${why})`);
    return undefined;
  }
  const out = join(dir, 'job.mjs');
  try {
    linkOrCopy(join(entryDir, m.bundle), out);
  } catch (e) {
    logger().debug(`job bundle cache: rebuilding (${e instanceof Error ? e.message : String(e)})`);
    return undefined;
  }
  logger().debug(`job bundle cache: reused ${entryDir} (${Object.keys(m.files).length} files unchanged)`);
  return out;
}

function linkOrCopy(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to); // another file system, or links not allowed
  }
}

/**
 * What a bundle was made from, as a manifest: the files esbuild read (absolute paths), the
 * resolution files around them and around the externals' packages, and the externals.
 */
export function manifestFor(inputs: readonly string[], externals: readonly string[]): Omit<BundleManifest, 'bundle'> {
  const files: Record<string, string | null> = {};
  const dirs = new Set<string>();
  for (const f of inputs) {
    files[f] = fileHash(f);
    for (let d = dirname(f); ; d = dirname(d)) {
      if (dirs.has(d)) break;
      dirs.add(d);
      if (d === parse(d).root) break;
    }
  }
  for (const d of dirs) for (const name of RESOLUTION_FILES) files[join(d, name)] = fileHash(join(d, name));
  // Files an import might resolve to instead, if they appeared (./util read util.js; a new
  // util.ts would win): recorded as absent, within the manifest's bound.
  for (const f of inputs) {
    for (const twin of sourceTwins(f)) {
      if (Object.keys(files).length >= MAX_MANIFEST_FILES / 2) break;
      if (!(twin in files)) files[twin] = fileHash(twin);
    }
  }
  // A tsconfig's "extends" steers resolution too (paths, baseUrl): the configs it names, to the end of the chain.
  for (const d of dirs) {
    for (const name of ['tsconfig.json', 'jsconfig.json']) {
      if (files[join(d, name)] === null) continue;
      for (const x of extendedConfigs(join(d, name))) files[x] = fileHash(x);
    }
  }
  for (const e of externals) {
    const pkg = packageJsonOf(e);
    if (pkg !== undefined) files[pkg] = fileHash(pkg);
  }
  return { format: CACHE_FORMAT, files, externals: [...externals] };
}

/** The extensions an extensionless import tries (esbuild's order and TypeScript's module ones). */
const SOURCE_EXTENSIONS = ['.tsx', '.ts', '.jsx', '.js', '.mts', '.cts', '.mjs', '.cjs', '.json'];

/** Where else an import that found `file` could have resolved: its name with another extension; for an index file, the directory's name. */
export function sourceTwins(file: string): string[] {
  const { dir, name, ext } = parse(file);
  if (!SOURCE_EXTENSIONS.includes(ext) || file.includes(`${sep}node_modules${sep}`)) return [];
  const out = SOURCE_EXTENSIONS.map((e) => join(dir, name + e)).filter((x) => x !== file);
  if (name === 'index') for (const e of SOURCE_EXTENSIONS) out.push(dir + e);
  return out;
}

/** Configs a tsconfig chain extends (at most MAX_EXTENDS deep): where each is, or would be. */
export function extendedConfigs(config: string): string[] {
  const out: string[] = [];
  const todo = [config];
  for (let n = 0; todo.length > 0 && n < MAX_EXTENDS; n++) {
    const from = todo.shift()!;
    for (const spec of extendsOf(from)) {
      const target = resolveExtends(from, spec);
      if (target === undefined || out.includes(target)) continue;
      out.push(target);
      todo.push(target);
    }
  }
  return out;
}

const MAX_EXTENDS = 32;

/** The "extends" of a tsconfig (JSON with comments and trailing commas), or none when unreadable. */
function extendsOf(config: string): string[] {
  let text: string;
  try {
    text = readFileSync(config, 'utf8');
  } catch {
    return [];
  }
  // Comments out (strings kept as they are), then trailing commas.
  const json = text.replace(/("(?:[^"\\]|\\.)*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (_m, str: string | undefined) => str ?? '').replace(/,(\s*[}\]])/g, '$1');
  try {
    const e = (JSON.parse(json) as { extends?: unknown }).extends;
    if (typeof e === 'string') return [e];
    return Array.isArray(e) ? e.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** Where an extends spec leads: a path (".json" added as TypeScript does), else a package's file. */
function resolveExtends(from: string, spec: string): string | undefined {
  if (spec.startsWith('.') || spec.startsWith('/')) {
    const p = resolve(dirname(from), spec);
    return p.endsWith('.json') || existsSync(p) ? p : `${p}.json`;
  }
  const req = createRequire(from);
  for (const candidate of [spec, `${spec}/tsconfig.json`, `${spec}.json`]) {
    try {
      return req.resolve(candidate);
    } catch {
      // the next spelling
    }
  }
  return undefined;
}

/** The package.json nearest above a file (its package's), if any within a few levels. */
function packageJsonOf(file: string): string | undefined {
  let d = dirname(file);
  for (let i = 0; i < 32; i++) {
    const p = join(d, 'package.json');
    if (existsSync(p)) return p;
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
  }
  return undefined;
}

/**
 * Stores a freshly made bundle (the file at `built`) with its manifest. The bundle is written
 * under a new name first and the manifest replaced atomically, so a reader sees either the
 * old entry or the new one; the old bundle file is left for the eviction (a reader may be
 * linking it). Failures are logged and ignored: the run has its bundle either way.
 */
export function storeBundle(entryDir: string, built: string, manifest: Omit<BundleManifest, 'bundle'>): void {
  try {
    mkdirSync(entryDir, { recursive: true });
    const name = `job-${randomBytes(8).toString('hex')}.mjs`;
    const tmpBundle = join(entryDir, `${name}.tmp`);
    copyFileSync(built, tmpBundle);
    renameSync(tmpBundle, join(entryDir, name));
    const full: BundleManifest = { ...manifest, bundle: name };
    const tmpManifest = join(entryDir, `manifest.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    writeFileSync(tmpManifest, JSON.stringify(full));
    renameSync(tmpManifest, join(entryDir, 'manifest.json'));
    logger().debug(`job bundle cache: stored ${entryDir}`);
    dropOldBundles(entryDir, name);
    evict(dirname(entryDir), MAX_CACHED_BUNDLES);
  } catch (e) {
    logger().debug(`job bundle cache: not stored (${e instanceof Error ? e.message : String(e)})`);
  }
}

/** Bundle files of an entry other than the current one, older than a minute (no reader is still linking them). */
function dropOldBundles(entryDir: string, current: string): void {
  const before = Date.now() - 60_000;
  for (const f of readdirSync(entryDir)) {
    if (f === current || f === 'manifest.json' || !(f.startsWith('job-') || f.startsWith('manifest.'))) continue;
    const p = join(entryDir, f);
    try {
      if (statSync(p).mtimeMs < before) rmSync(p, { force: true });
    } catch {
      // gone meanwhile
    }
  }
}

/** Keeps the `keep` most recently written entries of the cache. */
export function evict(root: string, keep: number): void {
  const entries: { dir: string; at: number }[] = [];
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    try {
      entries.push({ dir, at: statSync(join(dir, 'manifest.json')).mtimeMs });
    } catch {
      entries.push({ dir, at: 0 }); // no manifest: unfinished or foreign
    }
  }
  if (entries.length <= keep) return;
  entries.sort((a, b) => b.at - a.at);
  for (const e of entries.slice(keep)) rmSync(e.dir, { recursive: true, force: true });
}
