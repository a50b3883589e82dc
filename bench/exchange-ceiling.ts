/**
 * By hand: how much of "2 workers ÷ 1 worker" the keyBy exchange costs, on the keyed running
 * count (bench/jobs/word-count.ts). Four measurements, alternated, each a fresh process:
 *
 * - weir, 1 worker and weir, 2 workers (p=2): bench/child.ts, as the throughput suite times them
 *   (2 workers: booting the worker threads included);
 * - weir in one thread: the 1-worker job in a worker thread over the whole input;
 * - weir in two threads, no exchange: two 1-worker jobs at once, in two worker threads of one
 *   process, each over half the records and half the keys (bench/thread-gate.ts starts them
 *   together once both have loaded weir).
 *
 * The last two differ from a 2-worker job only in the exchange: no record crosses a thread, no
 * key is hashed to pick a channel, nothing is encoded. Their ratio is the most any exchange could
 * leave weir's two workers on this machine, as bench/parallel-ceiling.ts is that of the plain
 * loop; both threads share one process's V8 platform (its GC and compiler helper threads) as a
 * 2-worker job does.
 *
 *   node bench/ts-entry.mjs bench/exchange-ceiling.ts [--runs N] [--records N] [--keys N]
 * (the throughput suite of bench/run.ts measures the last two beside weir's 2 workers ÷ 1:
 * measureExchangeCeiling).
 *
 * Checked: every job's running counts (its partial results, bench/workloads.ts) add up to its
 * records, and the halves' to the whole's records.
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parentPort } from 'node:worker_threads';
import { runJob } from 'weir';
import { fmtX, machine, machineLine, median, sourceRevision } from './harness.ts';
import { arriveAndWait, runAsScriptOrThread, runTogether, type Gated } from './thread-gate.ts';
import { FULL_SIZES, PARTIAL_MARK, RESULT_MARK, type Size } from './workloads.ts';

const JOB = fileURLToPath(new URL('./jobs/word-count.ts', import.meta.url));
const CHILD_TIMEOUT_MS = 10 * 60_000;
const CEILING_MARK = '@@exchange-ceiling ';

type Mode = 'weir-1' | 'weir-2' | 'thread' | 'split';
const MODES: readonly Mode[] = ['weir-1', 'weir-2', 'thread', 'split'];

/** In a worker thread: wait for the go, run the 1-worker job over `size`, report its time. */
async function threadMain(d: Size & Gated): Promise<void> {
  arriveAndWait(d, 'exchange-ceiling');
  const t0 = performance.now();
  const r = await runJob(JOB, { workers: 1, parallelism: 1, args: [String(d.n), String(d.keys)], stdout: () => {} });
  if (r.status !== 'FINISHED') throw new Error(`exchange-ceiling: word-count ${r.status}: ${r.error?.message ?? ''}`);
  parentPort!.postMessage({ ms: performance.now() - t0, recordsIn: r.progress.recordsIn });
}

/** In a child process: `threads` jobs at once, each over `size`; prints the time. */
async function childMain(size: Size, threads: number): Promise<void> {
  const data = Array.from({ length: threads }, () => size);
  const { ms, reports } = await runTogether<Size, { ms: number; recordsIn: number }>(new URL(import.meta.url), data, 'exchange-ceiling');
  for (const r of reports) if (r.recordsIn !== size.n) throw new Error(`exchange-ceiling: a job read ${r.recordsIn} records, expected ${size.n}`);
  process.stdout.write(`${CEILING_MARK}${JSON.stringify({ ms })}\n`);
}

/** The running counts the partial sinks of one process reported, summed over instances. */
function outputsIn(stderr: string): { outputs: number; instances: number } {
  let outputs = 0;
  let instances = 0;
  for (const l of stderr.split('\n')) {
    if (!l.startsWith(PARTIAL_MARK)) continue;
    const p = JSON.parse(l.slice(PARTIAL_MARK.length)) as { result: { outputs?: number } };
    outputs += p.result.outputs ?? 0;
    instances++;
  }
  return { outputs, instances };
}

/** One measurement of `mode` in a fresh process; checks its outputs. */
function measure(mode: Mode, whole: Size): number {
  const half: Size = { n: whole.n / 2, keys: Math.max(1, Math.floor(whole.keys / 2)) };
  const entry = fileURLToPath(new URL('./ts-entry.mjs', import.meta.url));
  const args = mode === 'weir-1' || mode === 'weir-2'
    ? [fileURLToPath(new URL('./child.ts', import.meta.url)), 'word-count', mode, String(whole.n), String(whole.keys)]
    : [fileURLToPath(import.meta.url), '--child', String(mode === 'split' ? half.n : whole.n), String(mode === 'split' ? half.keys : whole.keys), mode === 'split' ? '2' : '1'];
  const r = spawnSync(process.execPath, [entry, ...args], { encoding: 'utf8', timeout: CHILD_TIMEOUT_MS, maxBuffer: 64 << 20 });
  const mark = mode === 'weir-1' || mode === 'weir-2' ? RESULT_MARK : CEILING_MARK;
  const line = r.stdout.split('\n').find((l) => l.startsWith(mark));
  if (r.status !== 0 || line === undefined) throw new Error(`exchange-ceiling: ${mode} failed (${r.status}): ${r.stderr.slice(-500)}`);
  const { outputs } = outputsIn(r.stderr);
  if (outputs !== whole.n) throw new Error(`exchange-ceiling: ${mode} emitted ${outputs} running counts, expected ${whole.n}`);
  return (JSON.parse(line.slice(mark.length)) as { ms: number }).ms;
}

export interface ExchangeCeiling {
  /** Median ms of the 1-worker job in one thread over the whole input. */
  readonly oneMs: number;
  /** Median ms of two 1-worker jobs at once in two threads, each over half the records and keys. */
  readonly twoMs: number;
  readonly ratio: number;
}

/** Weir's two threads without the exchange against one, `runs` times alternated; every run's outputs checked. */
export function measureExchangeCeiling(whole: Size, runs: number, progress: (line: string) => void = () => {}): ExchangeCeiling {
  const one: number[] = [];
  const two: number[] = [];
  for (let run = 0; run < runs; run++) {
    for (const mode of run % 2 === 0 ? (['thread', 'split'] as const) : (['split', 'thread'] as const)) {
      const t = measure(mode, whole);
      (mode === 'thread' ? one : two).push(t);
      progress(`  exchange-ceiling run ${run + 1}/${runs}  ${mode === 'thread' ? 'weir in 1 thread ' : 'weir in 2 threads'} ${t.toFixed(0).padStart(6)} ms`);
    }
  }
  const oneMs = median(one);
  const twoMs = median(two);
  return { oneMs, twoMs, ratio: oneMs / twoMs };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string' }, records: { type: 'string' }, keys: { type: 'string' }, child: { type: 'boolean' } }, allowPositionals: true, strict: true });
  if (values.child === true) {
    const [n, keys, threads] = process.argv.slice(process.argv.indexOf('--child') + 1).map(Number);
    await childMain({ n: n!, keys: keys! }, threads!);
    return;
  }
  const runs = Number(values.runs ?? 5);
  const whole: Size = { n: Number(values.records ?? FULL_SIZES['word-count'].n), keys: Number(values.keys ?? FULL_SIZES['word-count'].keys) };
  if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`--runs must be a positive integer, got ${String(values.runs)}`);
  if (!Number.isInteger(whole.n) || whole.n < 2 || whole.n % 2 !== 0) throw new RangeError(`--records must be an even integer of at least 2, got ${String(values.records)}`);
  if (!Number.isInteger(whole.keys) || whole.keys < 2) throw new RangeError(`--keys must be an integer of at least 2, got ${String(values.keys)}`);
  process.stdout.write(`${machineLine(machine())}; weir at ${sourceRevision()}; word count, ${whole.n.toLocaleString('en-US')} records over ${whole.keys.toLocaleString('en-US')} keys; ${runs} run(s), order rotated, median shown\n`);
  const ms = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
  for (let run = 0; run < runs; run++) {
    const order = MODES.map((_, i) => MODES[(i + run) % MODES.length]!);
    for (const mode of order) {
      const t = measure(mode, whole);
      ms.get(mode)!.push(t);
      process.stdout.write(`  run ${run + 1}/${runs} ${mode.padEnd(7)} ${t.toFixed(0).padStart(6)} ms\n`);
    }
  }
  const m = (mode: Mode): number => median(ms.get(mode)!);
  process.stdout.write([
    '',
    '| Measurement | Median | All runs |',
    '|---|---:|---|',
    ...MODES.map((mode) => `| ${LABELS[mode]} | ${m(mode).toFixed(0)} ms | ${ms.get(mode)!.map((t) => t.toFixed(0)).join(', ')} ms |`),
    '',
    `weir 2 workers ÷ 1 worker: ${fmtX(m('weir-1') / m('weir-2'))}; without the exchange (two threads ÷ one thread): ${fmtX(m('thread') / m('split'))}`,
    '',
  ].join('\n'));
}

const LABELS: Record<Mode, string> = {
  'weir-1': 'weir, 1 worker (bench/child.ts)',
  'weir-2': 'weir, 2 workers, p=2 (bench/child.ts; threads booted inside the time)',
  thread: 'weir, 1 worker, in one thread (whole input)',
  split: 'two 1-worker jobs at once in two threads (half the records and keys each)',
};

runAsScriptOrThread<Size>(import.meta.url, main, threadMain);
