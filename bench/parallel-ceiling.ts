/**
 * How much two threads can gain on this machine, whatever runs in them: the plain loop of each
 * throughput job (bench/baselines/loop.ts) in one thread over the whole input, against two
 * threads each running the same loop over half the records and half the keys at the same
 * time (what a perfect two-way split by key would leave each thread, with no exchange between
 * them). The ratio is the ceiling for "2 workers ÷ 1 worker" of any engine on these jobs here:
 * when the jobs are bound by memory (a Map of a million strings), two threads share the
 * machine's caches and memory bandwidth and gain less than 2×.
 *   node bench/ts-entry.mjs bench/parallel-ceiling.ts [--runs N] [--quick]
 * (the throughput suite of bench/run.ts runs it too, beside weir's 2 workers ÷ 1).
 * Each run's outputs are checked (record counts), and each measurement is a fresh process.
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { parentPort } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { loop } from './baselines/loop.ts';
import { FULL_SIZES, JOB_IDS, QUICK_SIZES, type JobId, type Result, type Size } from './workloads.ts';
import { fmtX, machine, machineLine, median, sourceRevision } from './harness.ts';
import { arriveAndWait, runAsScriptOrThread, runTogether, type Gated } from './thread-gate.ts';

interface ThreadJob {
  readonly job: JobId;
  readonly size: Size;
}

/** In a worker: say ready, wait for the go, run the loop, report its time and result. */
async function threadMain(d: ThreadJob & Gated): Promise<void> {
  arriveAndWait(d, 'parallel-ceiling');
  const t0 = performance.now();
  const result = await loop[d.job](d.size);
  parentPort!.postMessage({ ms: performance.now() - t0, result });
}

/** One measurement in this (fresh) process: `threads` loops at once, each over `size`. */
async function measure(job: JobId, size: Size, threads: number): Promise<{ ms: number; results: Result[] }> {
  const data = Array.from({ length: threads }, (): ThreadJob => ({ job, size }));
  const { ms, reports } = await runTogether<ThreadJob, { ms: number; result: Result }>(new URL(import.meta.url), data, 'parallel-ceiling');
  return { ms, results: reports.map((r) => r.result) };
}

/** The count of outputs a job's result reports (what is checked). */
function outputsOf(job: JobId, r: Result): number {
  return job === 'map-filter' ? r.survivors! : job === 'word-count' ? r.outputs! : r.sumCounts!;
}

function expectedOutputs(job: JobId, size: Size): number {
  // map + filter keeps v % 3 == 0 of v = 2 (i % 1000): 334 of every 1000 records.
  if (job === 'map-filter') return Math.floor(size.n / 1000) * 334 + Math.ceil((size.n % 1000) / 3);
  return size.n; // a running count per record; window counts add up to the records
}

/** Runs one measurement in a child process (fresh heap and JIT) and returns its report. */
function child(job: JobId, size: Size, threads: number): { ms: number; results: Result[] } {
  const r = spawnSync(process.execPath, [fileURLToPath(new URL('./ts-entry.mjs', import.meta.url)), fileURLToPath(import.meta.url), '--child', job, String(size.n), String(size.keys), String(threads)], {
    encoding: 'utf8', timeout: 10 * 60_000,
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith('@@ceiling '));
  if (r.status !== 0 || line === undefined) throw new Error(`parallel-ceiling: child ${job} x${threads} failed (${r.status}): ${r.stderr.slice(-500)}`);
  return JSON.parse(line.slice('@@ceiling '.length)) as { ms: number; results: Result[] };
}

export interface Ceiling {
  readonly job: JobId;
  /** Median ms of one thread over the whole input. */
  readonly oneMs: number;
  /** Median ms of two threads at once, each over half the records and keys. */
  readonly twoMs: number;
  readonly ratio: number;
}

/** Measures a job's ceiling `runs` times (one and two threads alternated, each a fresh process); checks every output count. */
export function measureCeiling(job: JobId, whole: Size, runs: number, progress: (line: string) => void = () => {}): Ceiling {
  const half: Size = { ...whole, n: whole.n / 2, keys: Math.max(1, Math.floor(whole.keys / 2)) };
  const one: number[] = [];
  const two: number[] = [];
  for (let i = 0; i < runs; i++) {
    for (const threads of i % 2 === 0 ? [1, 2] : [2, 1]) {
      const size = threads === 1 ? whole : half;
      const r = child(job, size, threads);
      if (r.results.length !== threads) throw new Error(`parallel-ceiling: ${job} x${threads} reported ${r.results.length} results`);
      for (const res of r.results) {
        const got = outputsOf(job, res);
        const want = expectedOutputs(job, size);
        if (got !== want) throw new Error(`parallel-ceiling: ${job} x${threads} produced ${got} outputs, expected ${want}`);
      }
      (threads === 1 ? one : two).push(r.ms);
      progress(`  ceiling      run ${i + 1}/${runs}  ${job.padEnd(12)} ${threads} thread(s) ${r.ms.toFixed(0).padStart(6)} ms`);
    }
  }
  const oneMs = median(one);
  const twoMs = median(two);
  return { job, oneMs, twoMs, ratio: oneMs / twoMs };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string' }, quick: { type: 'boolean' }, child: { type: 'boolean' } }, allowPositionals: true, strict: false });
  if (values.child === true) {
    const [job, n, keys, threads] = process.argv.slice(process.argv.indexOf('--child') + 1);
    const r = await measure(job as JobId, { n: Number(n), keys: Number(keys) } as Size, Number(threads));
    process.stdout.write(`@@ceiling ${JSON.stringify(r)}\n`);
    return;
  }
  const runs = Number(values.runs ?? 3);
  if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`--runs must be a positive integer, got ${String(values.runs)}`);
  const sizes = values.quick === true ? QUICK_SIZES : FULL_SIZES;
  process.stdout.write(`${machineLine(machine())}; weir at ${sourceRevision()}; ${runs} run(s), alternated, median shown\n\n`);
  const rows: string[] = [];
  for (const job of JOB_IDS) {
    const c = measureCeiling(job, sizes[job], runs, (l) => process.stdout.write(`${l}\n`));
    const w = sizes[job];
    rows.push(`| ${job} (${w.n.toLocaleString('en-US')} records, ${w.keys.toLocaleString('en-US')} keys) | ${c.oneMs.toFixed(0)} ms | ${c.twoMs.toFixed(0)} ms | ${fmtX(c.ratio)} |`);
  }
  process.stdout.write('\n| Job | 1 thread, whole input | 2 threads at once, half the records and keys each | Ceiling of 2 ÷ 1 |\n|---|---:|---:|---:|\n');
  process.stdout.write(`${rows.join('\n')}\n`);
}

runAsScriptOrThread<ThreadJob>(import.meta.url, main, threadMain);
