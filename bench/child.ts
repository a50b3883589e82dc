/**
 * One measurement, in a fresh process: node --import tsx bench/child.ts <job> <variant> <n> <keys> [counters=off] [backend=disk] [keys=zipf]
 * Times the processing only (after imports and module loading), from just before the job
 * starts until it has finished, and prints one RESULT_MARK line on stdout. `counters=off` runs a
 * weir variant with record counting off (runJob's recordCounters: false; the metrics suite). weir sinks report
 * their checks on stderr (PARTIAL_MARK lines), which the runner sums.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runJob } from 'weir';
import type { Baseline } from './baselines/baseline.ts';
import { importedWeirRuntime, JOB_IDS, RESULT_MARK, VARIANTS, type JobId, type Result, type Variant } from './workloads.ts';

export interface ChildReport {
  readonly job: JobId;
  readonly variant: Variant;
  readonly n: number;
  readonly keys: number;
  /** Wall time of the processing, ms. */
  readonly ms: number;
  /** CPU time (user + system, all threads of the process) over the same span, ms. */
  readonly cpuMs: number;
  /** Baselines: the checks. weir: undefined (its sinks report on stderr). */
  readonly result: Result | undefined;
  /**
   * CPU time of the main thread alone over the same span, ms (Linux; undefined elsewhere): with
   * 1 worker the job's tasks run there, so it is the task's share when other threads (the disk
   * state backend's write thread) work beside it.
   */
  readonly mainThreadCpuMs?: number;
  /** CPU time of the whole child process up to the report (start-up included), ms. */
  readonly processCpuMs: number;
  /** weir only: records the sources emitted (0 with record counting off), and the job's own duration. */
  readonly recordsIn?: number;
  /** weir only: whether records were counted (false with counters=off). */
  readonly recordCounters?: boolean;
  readonly jobMs?: number;
  /** Which weir this process imported (weir variants): dist/ or the sources. */
  readonly runtime?: 'dist' | 'sources';
}

async function baseline(variant: Variant): Promise<Baseline> {
  switch (variant) {
    case 'loop':
      return (await import('./baselines/loop.ts')).loop;
    case 'rxjs':
      return (await import('./baselines/rxjs.ts')).rxjs;
    case 'streams':
      return (await import('./baselines/streams.ts')).streams;
    default:
      throw new Error(`not a baseline: ${variant}`);
  }
}

/** The main thread's CPU time so far, ms, from /proc (its thread id is the process id); undefined off Linux. */
function mainThreadCpu(): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

function cpuSince(start?: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

async function main(argv: string[]): Promise<void> {
  const [job, variant, nArg, keysArg, ...settings] = argv as [JobId, Variant, string, string, ...string[]];
  let recordCounters = true;
  let stateBackend = 'heap';
  let dist = 'uniform';
  for (const s of settings) {
    if (s === 'counters=off' || s === 'counters=on') recordCounters = s === 'counters=on';
    else if (s === 'backend=heap' || s === 'backend=disk') stateBackend = s.slice('backend='.length);
    else if (s === 'keys=uniform' || s === 'keys=zipf') dist = s.slice('keys='.length);
    else throw new Error(`settings after <keys>: counters=on|off, backend=heap|disk, keys=uniform|zipf; got ${s}`);
  }
  if (!JOB_IDS.includes(job)) throw new Error(`unknown job ${job}; one of ${JOB_IDS.join(', ')}`);
  if (!VARIANTS.includes(variant)) throw new Error(`unknown variant ${variant}; one of ${VARIANTS.join(', ')}`);
  const n = Number(nArg);
  const keys = Number(keysArg);
  let report: Omit<ChildReport, 'processCpuMs'>;
  if (variant === 'weir-1' || variant === 'weir-2') {
    const workers = variant === 'weir-1' ? 1 : 2;
    const modulePath = resolve(fileURLToPath(new URL('.', import.meta.url)), 'jobs', `${job}.ts`);
    // From the sources: load the job module up front (runJob finds it in the module cache) so
    // that transpiling it is not timed; worker threads of weir-2 still load it themselves,
    // inside the timing. From dist/, runJob bundles the job (timed, as `npx weir run` does).
    if (importedWeirRuntime() === 'sources') await import(pathToFileURL(modulePath).href);
    const c0 = process.cpuUsage();
    const m0 = mainThreadCpu();
    const t0 = performance.now();
    const r = await runJob(modulePath, { workers, parallelism: workers, args: [nArg, keysArg, dist], recordCounters, stateBackend });
    const ms = performance.now() - t0;
    const cpuMs = cpuSince(c0);
    const m1 = mainThreadCpu();
    const mainThreadCpuMs = m0 === undefined || m1 === undefined ? undefined : m1 - m0;
    if (r.status !== 'FINISHED') throw new Error(`weir job ${job} ${r.status}: ${r.error?.message ?? 'unknown reason'}\n${r.error?.stack ?? ''}`);
    report = { job, variant, n, keys, ms, cpuMs, ...(mainThreadCpuMs !== undefined ? { mainThreadCpuMs } : {}), result: undefined, recordsIn: r.progress.recordsIn, recordCounters: r.progress.recordCounters !== false, jobMs: r.durationMs, runtime: importedWeirRuntime() };
  } else {
    if (dist !== 'uniform') throw new Error('keys=zipf: weir variants only');
    const run = (await baseline(variant))[job];
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const result = await run({ n, keys });
    const ms = performance.now() - t0;
    report = { job, variant, n, keys, ms, cpuMs: cpuSince(c0), result };
  }
  const full: ChildReport = { ...report, processCpuMs: cpuSince() };
  process.stdout.write(RESULT_MARK + JSON.stringify(full) + '\n', () => process.exit(0));
}

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`bench child failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
