/**
 * What every benchmark suite shares (bench/run.ts, bench/checkpoints.ts): child processes
 * with the machine's CPU use measured around them (to repeat measurements other processes
 * disturbed), medians, the machine and revision measured, number formats, and the generated
 * sections of BENCHMARKS.md.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { distIsCurrent } from '../src/cli/dist-current.js';

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(BENCH_DIR, '..');
export const MD_PATH = join(ROOT, 'BENCHMARKS.md');
export const RESULTS_DIR = join(BENCH_DIR, 'results');

export class BenchFailure extends Error {}

// ---- machine noise -------------------------------------------------------------------

/** Busy and total CPU time of the machine so far, ms (Linux /proc/stat); undefined elsewhere. */
export function machineCpu(): { busy: number; total: number } | undefined {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = f as [number, number, number, number, number, number, number, number];
    const busy = user + nice + system + irq + softirq + (steal ?? 0);
    return { busy: busy * 10, total: (busy + idle + iowait) * 10 }; // USER_HZ = 100
  } catch {
    return undefined;
  }
}

/** Above this share of the machine used by other processes, a measurement is repeated. */
export const MAX_FOREIGN_CPU = 0.15;

/** A finished child process, with the machine's CPU counters around it. */
export interface ChildRun {
  readonly stdout: string;
  readonly stderr: string;
  /** 1-minute load average just before the child started. */
  readonly loadBefore: number;
  /** Wall time of the whole child process, ms. */
  readonly wallMs: number;
  /**
   * Share of the machine's CPU capacity used by OTHER processes while the child ran, given
   * the child's own CPU time (ms, all its threads); undefined where /proc/stat is missing.
   */
  foreignCpu(childCpuMs: number): number | undefined;
}

/**
 * Which weir a child process runs: 'dist' is the compiled dist/ as `npx weir run` runs it (plain
 * JavaScript, the job bundled by esbuild, worker threads without tsx); 'sources' is src/
 * through tsx in every thread (the 'weir-source' condition), as the tests and
 * `WEIR_FROM_SOURCE=1 npx weir run` do, with a fixed cost of ~1 s more per worker thread.
 */
export type WeirRuntime = 'dist' | 'sources';

/**
 * The runtime the weir suites measure: dist/ when it was built from the sources as they are
 * now (dist/source-stamp.json, src/cli/dist-current.js); the sources when asked (--from-source
 * or WEIR_FROM_SOURCE=1). A stale dist/ is refused rather than measured: the numbers would be
 * of code that is no longer there.
 */
export function weirRuntime(fromSource: boolean): WeirRuntime {
  if (fromSource || process.env.WEIR_FROM_SOURCE === '1') return 'sources';
  if (distIsCurrent(join(ROOT, 'src'), join(ROOT, 'dist', 'source-stamp.json'))) return 'dist';
  throw new BenchFailure(
    'dist/ is stale or missing: src/ changed since `npm run build` (dist/source-stamp.json), so a benchmark of dist/ would measure old code.\n' +
      '  Run `npm run build` first, or measure the TypeScript sources with --from-source (or WEIR_FROM_SOURCE=1).',
  );
}

/** What the output says about a runtime. */
export function runtimeLine(runtime: WeirRuntime): string {
  return runtime === 'dist'
    ? 'weir ran from dist/ (compiled, current with src/ per dist/source-stamp.json), as `npx weir run` runs it: job bundled by esbuild, worker threads without tsx'
    : 'weir ran from its TypeScript sources through tsx in every thread (--from-source): each worker thread adds about a second of start-up';
}

/** Fails when a child ran another weir than the one asked for (e.g. a condition lost on the way). */
export function checkChildRuntime(where: string, reported: WeirRuntime | undefined, wanted: WeirRuntime): void {
  if (reported !== wanted) throw new BenchFailure(`${where}: the child ran weir from ${reported ?? 'an unknown runtime'}, expected ${wanted}`);
}

/** The node arguments that start a TypeScript child script against `runtime`. */
function childCommand(runtime: WeirRuntime, args: readonly string[]): string[] {
  return runtime === 'dist' ? [join(BENCH_DIR, 'ts-entry.mjs'), ...args] : ['--conditions=weir-source', '--import', 'tsx', ...args];
}

/**
 * Runs the TypeScript script `args[0]` (with the rest as its arguments) in a child process in
 * ROOT against weir's `runtime` (default the sources: children that import weir's internal
 * modules from src/ must not mix them with dist/); rejects (BenchFailure, with the output)
 * when it exits with an error or runs longer than `timeoutMs`.
 */
export function spawnChild(args: readonly string[], timeoutMs: number, where: string, runtime: WeirRuntime = 'sources', extraEnv: Readonly<Record<string, string>> = {}): Promise<ChildRun> {
  const loadBefore = loadavg()[0]!;
  const cpuBefore = machineCpu();
  const t0 = Date.now();
  return new Promise((resolvePromise, reject) => {
    const env = { ...process.env, ...extraEnv, WEIR_RUNTIME: runtime };
    const child = spawn(process.execPath, childCommand(runtime, args), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new BenchFailure(`${where}: no result after ${timeoutMs / 1000} s, killed\n${stderr}`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const cpuAfter = machineCpu();
      if (code !== 0) {
        reject(new BenchFailure(`${where}: child process exited with ${signal ?? `code ${code}`}\n${stderr}${stdout}`));
        return;
      }
      resolvePromise({
        stdout, stderr, loadBefore, wallMs: Date.now() - t0,
        foreignCpu(childCpuMs: number): number | undefined {
          if (cpuBefore === undefined || cpuAfter === undefined || cpuAfter.total <= cpuBefore.total) return undefined;
          const others = cpuAfter.busy - cpuBefore.busy - childCpuMs;
          return Math.min(1, Math.max(0, others / (cpuAfter.total - cpuBefore.total)));
        },
      });
    });
  });
}

/**
 * Runs a measurement, repeating it (up to `tries` times) while other processes disturb it
 * (more than MAX_FOREIGN_CPU of the machine); keeps the least disturbed.
 */
export async function withRetries<M extends { readonly foreignCpu: number | undefined }>(tries: number, label: string, once: () => Promise<M>): Promise<M & { readonly attempts: number }> {
  let best: M | undefined;
  let attempts = 0;
  while (attempts < tries) {
    attempts++;
    const m = await once();
    if (best === undefined || (m.foreignCpu ?? 0) < (best.foreignCpu ?? 0)) best = m;
    if ((m.foreignCpu ?? 0) <= MAX_FOREIGN_CPU) break;
    if (attempts < tries) {
      process.stdout.write(`  (other processes used ${((m.foreignCpu ?? 0) * 100).toFixed(0)}% of the CPUs during ${label}; measuring again)\n`);
    }
  }
  return { ...best!, attempts };
}

// ---- statistics and facts about the run ----------------------------------------------

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Which weir was measured: the commit, and whether src/ had uncommitted changes. */
export function sourceRevision(): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const commit = git('rev-parse', '--short', 'HEAD');
    const dirty = git('status', '--porcelain', '--', 'src') !== '';
    return dirty ? `${commit} with uncommitted changes in src/` : commit;
  } catch {
    return process.env.WEIR_BENCH_REVISION ?? 'unknown (not a git checkout; set WEIR_BENCH_REVISION)';
  }
}

export interface Machine {
  readonly cpu: string;
  readonly logicalCpus: number;
  readonly availableParallelism: number;
  readonly node: string;
  readonly platform: string;
  readonly memoryGiB: number;
}

export function machine(): Machine {
  let cpu = cpus()[0]?.model ?? 'unknown';
  let logical = cpus().length;
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const model = /^model name\s*:\s*(.+)$/m.exec(info);
    if (model) cpu = model[1]!.trim();
    logical = (info.match(/^processor\s*:/gm) ?? []).length || logical;
  } catch {
    // Not Linux: keep what os.cpus() says.
  }
  return {
    cpu, logicalCpus: logical, availableParallelism: availableParallelism(), node: process.version,
    platform: `${process.platform} ${process.arch}`, memoryGiB: Math.round(totalmem() / 2 ** 30),
  };
}

/** The sentence every generated section starts with (machine, revision, runs). */
export function machineLine(m: Machine): string {
  return `${m.cpu}, ${m.logicalCpus} logical CPUs (available parallelism ${m.availableParallelism}), ${m.memoryGiB} GiB RAM, Node ${m.node} on ${m.platform}`;
}

/** How much other processes disturbed the measurements kept. */
export function noiseLine(measurements: readonly { readonly foreignCpu: number | undefined; readonly attempts: number }[], tries: number): string | undefined {
  const foreign = measurements.map((x) => x.foreignCpu).filter((x) => x !== undefined);
  if (foreign.length === 0) return undefined;
  const repeated = measurements.filter((x) => x.attempts > 1).length;
  return (
    `Other processes on the machine used a median ${(median(foreign) * 100).toFixed(0)}% (max ${(Math.max(...foreign) * 100).toFixed(0)}%) of its CPU capacity during the measurements kept` +
    ` (from /proc/stat; a measurement with over ${MAX_FOREIGN_CPU * 100}% is repeated, up to ${tries} attempts, keeping the least disturbed; ${repeated} of ${measurements.length} were repeated).`
  );
}

// ---- formats -------------------------------------------------------------------------

export const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
export function fmtRate(r: number): string {
  if (r >= 1e6) return `${(r / 1e6).toFixed(2)} M`;
  if (r >= 1e3) return `${(r / 1e3).toFixed(0)} k`;
  return r.toFixed(0);
}
export const fmtMs = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : ms >= 10 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`);
export const fmtX = (x: number) => (x >= 10 ? `${x.toFixed(0)}×` : `${x.toFixed(2)}×`);
/** Bytes in MB (10^6), as disk speeds are usually given. */
export const fmtMB = (bytes: number) => (bytes >= 100e6 ? `${(bytes / 1e6).toFixed(0)} MB` : `${(bytes / 1e6).toFixed(1)} MB`);

// ---- BENCHMARKS.md -------------------------------------------------------------------

/** Replaces what is between the markers `begin` and `end` of BENCHMARKS.md with `section`. */
export function writeMarkdownSection(begin: string, end: string, section: string, intro: string): void {
  const text = existsSync(MD_PATH) ? readFileSync(MD_PATH, 'utf8') : intro;
  const b = text.indexOf(begin);
  const e = text.indexOf(end);
  if (b < 0 || e < b) throw new BenchFailure(`${MD_PATH} has no generated-section markers; add\n${begin}\n${end}`);
  writeFileSync(MD_PATH, text.slice(0, b + begin.length) + '\n' + section + '\n' + text.slice(e));
}

/** A performance target from the issues, and whether this run met it. */
export interface Target {
  readonly text: string;
  readonly measured: string;
  readonly met: boolean;
}

/** The markdown table of targets (no lines when there are none), followed by a blank line. */
export function targetTable(ts: readonly Target[]): string[] {
  if (ts.length === 0) return [];
  return ['| Target | Measured | Met |', '|---|---|---|', ...ts.map((t) => `| ${t.text} | ${t.measured} | ${t.met ? 'yes' : '**no**'} |`), ''];
}
