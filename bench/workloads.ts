/**
 * The three benchmark workloads, shared by every variant (weir jobs and baselines): record
 * shapes, generators, the per-record functions and the result accumulators. Everything that
 * decides WHAT is computed lives here, so the variants can only differ in HOW they run it.
 *
 * Generators follow weir's generator-source contract: record i is gen(i, rng) with rng
 * positioned at (seed, i) by `rng.reseed(seed, i)`; the baselines call it the same way.
 */
import { writeSync } from 'node:fs';
import { threadId } from 'node:worker_threads';
import type { Rng } from 'weir';

/**
 * Which weir this process imports: 'sources' (src/index.ts, under the 'weir-source' condition)
 * or 'dist' (the compiled dist/index.js). Children report it, and the suites check it is the
 * runtime they asked for (bench/harness.ts, spawnChild).
 */
export function importedWeirRuntime(): 'dist' | 'sources' {
  return import.meta.resolve('weir').endsWith('/src/index.ts') ? 'sources' : 'dist';
}

export type JobId = 'map-filter' | 'word-count' | 'window-count';
export const JOB_IDS: readonly JobId[] = ['map-filter', 'word-count', 'window-count'];

/** weir on 1 worker thread (the main thread), weir on 2 worker threads (parallelism 2), the baselines. */
export const VARIANTS = ['weir-1', 'weir-2', 'loop', 'rxjs', 'streams'] as const;
export type Variant = (typeof VARIANTS)[number];

/** Sizes of one job run; passed to weir jobs as `-- <n> <keys>` and to baselines as arguments. */
export interface Size {
  readonly n: number;
  /** Distinct keys (word-count, window-count); 0 for map-filter. */
  readonly keys: number;
  /** How word-count draws its keys: uniformly (default), or Zipf-distributed like the words of a text (genBZipf). */
  readonly dist?: KeyDist;
}

export type KeyDist = 'uniform' | 'zipf';

export const FULL_SIZES: Record<JobId, Size> = {
  'map-filter': { n: 10_000_000, keys: 0 },
  'word-count': { n: 5_000_000, keys: 1_000_000 },
  'window-count': { n: 5_000_000, keys: 10_000 },
};

export const QUICK_SIZES: Record<JobId, Size> = {
  'map-filter': { n: 1_000_000, keys: 0 },
  'word-count': { n: 500_000, keys: 100_000 },
  'window-count': { n: 500_000, keys: 10_000 },
};

/** Reads `<n> <keys> [uniform|zipf]` job arguments (weir jobs get them after `--`). */
export function sizeFromArgs(job: JobId, args: readonly string[]): Size {
  const d = FULL_SIZES[job];
  const n = args[0] === undefined ? d.n : Number(args[0]);
  const keys = args[1] === undefined ? d.keys : Number(args[1]);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${job}: record count must be a non-negative integer, got ${args[0]}`);
  if (!Number.isSafeInteger(keys) || keys < 0 || (job !== 'map-filter' && keys < 1)) throw new RangeError(`${job}: key count must be a positive integer, got ${args[1]}`);
  const dist = args[2];
  if (dist === undefined) return { n, keys };
  if (dist !== 'uniform' && dist !== 'zipf') throw new RangeError(`${job}: key distribution must be uniform or zipf, got ${dist}`);
  return { n, keys, dist };
}

/** Results are flat objects of additive numbers, so partial results of parallel subtasks sum up. */
export type Result = Record<string, number>;

export function addResults(a: Result, b: Result): Result {
  const out: Result = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
  return out;
}

export interface Accumulator<T> {
  add(record: T): void;
  result(): Result;
}

// ---- (a) map then filter -------------------------------------------------------------

export interface RecA {
  readonly id: number;
  readonly value: number;
}
export interface MappedA {
  readonly id: number;
  readonly v: number;
}

export const SEED_A = 1;
export const genA = (i: number): RecA => ({ id: i, value: i % 1000 });
export const mapA = (r: RecA): MappedA => ({ id: r.id, v: r.value * 2 });
export const keepA = (r: MappedA): boolean => r.v % 3 === 0;

export class MapFilterAccumulator implements Accumulator<MappedA> {
  survivors = 0;
  sumV = 0;
  sumId = 0;
  add(r: MappedA): void {
    this.survivors++;
    this.sumV += r.v;
    this.sumId += r.id;
  }
  result(): Result {
    return { survivors: this.survivors, sumV: this.sumV, sumId: this.sumId };
  }
}

// ---- (b) keyed running count ---------------------------------------------------------

export interface RecB {
  readonly key: string;
  readonly count: number;
}

export const SEED_B = 7;
/** A word drawn uniformly from `keys` distinct strings. */
export const genB = (keys: number) => (_i: number, rng: Rng): RecB => ({ key: 'w' + rng.int(keys), count: 1 });

/** Zipf's exponent of genBZipf: word frequencies of natural-language text are close to 1. */
export const ZIPF_S = 1;

/**
 * A word drawn from `keys` distinct strings with Zipf-distributed frequencies (exponent
 * ZIPF_S): the k-th most frequent has weight 1/k^s, as words in a text (with 1 M possible
 * words and s = 1, the top 100 are ~36 % of the records and most words are rare). Inverse
 * transform over a table of the cumulative weights (8 bytes per key, built once).
 */
export function genBZipf(keys: number): (i: number, rng: Rng) => RecB {
  const cdf = new Float64Array(keys);
  let sum = 0;
  for (let k = 0; k < keys; k++) cdf[k] = sum += 1 / Math.pow(k + 1, ZIPF_S);
  for (let k = 0; k < keys; k++) cdf[k]! /= sum;
  return (_i, rng) => {
    const u = rng.next();
    let lo = 0;
    let hi = keys - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return { key: 'w' + lo, count: 1 };
  };
}

/** The word-count generator of a size: genB, or genBZipf with dist 'zipf'. */
export const genBOf = (size: Size): ((i: number, rng: Rng) => RecB) => (size.dist === 'zipf' ? genBZipf(size.keys) : genB(size.keys));

/** Checks the running counts: every record yields one output; sums are order-independent per key. */
export class WordCountAccumulator implements Accumulator<RecB> {
  outputs = 0;
  sumCounts = 0;
  sumSquares = 0;
  add(r: RecB): void {
    this.outputs++;
    this.sumCounts += r.count;
    this.sumSquares += r.count * r.count;
  }
  result(): Result {
    return { outputs: this.outputs, sumCounts: this.sumCounts, sumSquares: this.sumSquares };
  }
}

// ---- (c) event-time tumbling-window count per key ------------------------------------

export interface RecC {
  readonly key: string;
  /** Event time, epoch ms. */
  readonly ts: number;
}
export interface WindowResult {
  readonly key: string;
  readonly start: number;
  readonly count: number;
}

export const SEED_C = 11;
/** Event time of record 0 (a whole second, so windows start at BASE_TS + k * WINDOW_MS). */
export const BASE_TS = 1_700_000_000_000;
/** Records per millisecond of event time: 100 000 records per 1 s window. */
export const RECORDS_PER_MS = 100;
/** Timestamps run up to this much ahead of their place in the sequence (bounded disorder). */
export const DISORDER_MS = 200;
/** The watermark bound: more than the disorder, so no record is ever late in any variant. */
export const OUT_OF_ORDERNESS_MS = 200;
export const WINDOW_MS = 1000;

export const genC = (keys: number) => (i: number, rng: Rng): RecC => ({
  key: 'k' + rng.int(keys),
  ts: BASE_TS + Math.floor(i / RECORDS_PER_MS) + rng.int(DISORDER_MS),
});

/** Number of window results, total of their counts, and a checksum over (key, window, count). */
export class WindowCountAccumulator implements Accumulator<WindowResult> {
  windows = 0;
  sumCounts = 0;
  checksum = 0;
  add(r: WindowResult): void {
    this.windows++;
    this.sumCounts += r.count;
    const keyNo = Number(r.key.slice(1)) + 1;
    const windowNo = (r.start - BASE_TS) / WINDOW_MS + 1;
    this.checksum += r.count * keyNo * windowNo;
  }
  result(): Result {
    return { windows: this.windows, sumCounts: this.sumCounts, checksum: this.checksum };
  }
}

/**
 * Tumbling event-time windows by hand, for the baselines: counts per (window, key); the
 * watermark is the highest timestamp seen - bound - 1 (as weir's bounded-out-of-orderness
 * strategy) and a window [start, end) fires when the watermark reaches end - 1. At the end
 * of input every open window fires. A record whose window has already fired is late and
 * dropped (counted in `late`; the workload is built so that none is).
 */
export class TumblingCounter {
  private readonly windows = new Map<number, Map<string, number>>();
  /** Starts of open windows, ascending. */
  private readonly starts: number[] = [];
  private watermark = Number.NEGATIVE_INFINITY;
  late = 0;

  constructor(private readonly size = WINDOW_MS, private readonly bound = OUT_OF_ORDERNESS_MS) {}

  add(r: RecC, emit: (w: WindowResult) => void): void {
    const ts = r.ts;
    const start = ts - (ts % this.size);
    if (start + this.size - 1 <= this.watermark) {
      this.late++;
      return;
    }
    let w = this.windows.get(start);
    if (w === undefined) {
      w = new Map();
      this.windows.set(start, w);
      const starts = this.starts;
      let at = starts.length;
      while (at > 0 && starts[at - 1]! > start) at--;
      starts.splice(at, 0, start);
    }
    w.set(r.key, (w.get(r.key) ?? 0) + 1);
    const wm = ts - this.bound - 1;
    if (wm > this.watermark) {
      this.watermark = wm;
      this.fireUpTo(wm, emit);
    }
  }

  /** End of input: the final watermark fires everything. */
  finish(emit: (w: WindowResult) => void): void {
    this.fireUpTo(Number.POSITIVE_INFINITY, emit);
  }

  private fireUpTo(wm: number, emit: (w: WindowResult) => void): void {
    const starts = this.starts;
    while (starts.length > 0 && starts[0]! + this.size - 1 <= wm) {
      const start = starts.shift()!;
      const w = this.windows.get(start)!;
      this.windows.delete(start);
      for (const [key, count] of w) emit({ key, start, count });
    }
  }
}

// ---- reporting from weir subtasks ----------------------------------------------------

/** Marks a partial result line on stderr; the bench runner sums the last line of every sink instance. */
export const PARTIAL_MARK = '@@weir-bench-partial ';
/** Marks the child's measurement line on stdout. */
export const RESULT_MARK = '@@weir-bench-result ';

/** A sink instance's report on stderr. */
export interface PartialReport {
  readonly instance: string;
  readonly result: Result;
  /** When the instance saw the end of its input (epoch ms). */
  readonly at?: number;
}

/**
 * The partial results a weir job's sinks wrote on stderr, summed (the last line of each
 * instance is its total), and when the last of them saw the end of its input; undefined
 * when no sink reported.
 */
export function readPartials(stderr: string): { result: Result; endOfInputAt: number | undefined; instances: number } | undefined {
  const last = new Map<string, PartialReport>();
  for (const l of stderr.split('\n')) {
    if (!l.startsWith(PARTIAL_MARK)) continue;
    const p = JSON.parse(l.slice(PARTIAL_MARK.length)) as PartialReport;
    last.set(p.instance, p);
  }
  if (last.size === 0) return undefined;
  const all = [...last.values()];
  const ats = all.map((p) => p.at).filter((x) => x !== undefined);
  return { result: all.map((p) => p.result).reduce(addResults), endOfInputAt: ats.length === all.length ? Math.max(...ats) : undefined, instances: all.length };
}

/** Facts every correct run of a job must show, independent of the variants agreeing with each other. */
export function invariants(job: JobId, size: Size, r: Result): string[] {
  const bad: string[] = [];
  if (job === 'map-filter') {
    let survivors = 0;
    for (let m = 0; m < 1000; m++) {
      if ((m * 2) % 3 === 0) survivors += Math.floor(size.n / 1000) + (m < size.n % 1000 ? 1 : 0);
    }
    if (r.survivors !== survivors) bad.push(`survivors ${r.survivors}, expected ${survivors}`);
  } else if (job === 'word-count') {
    if (r.outputs !== size.n) bad.push(`${r.outputs} running counts for ${size.n} records`);
    if (!(r.sumCounts! >= size.n)) bad.push(`sum of running counts ${r.sumCounts} < ${size.n}`);
  } else {
    if (r.sumCounts !== size.n) bad.push(`window counts add up to ${r.sumCounts}, expected ${size.n} (records lost or late)`);
    if (!(r.windows! >= size.n / 100_000)) bad.push(`only ${r.windows} window results`);
  }
  if (r.late !== undefined) bad.push(`${r.late} late records dropped`);
  return bad;
}

export function sameResult(a: Result, b: Result): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}

let instances = 0;

/**
 * A weir sink function around an accumulator. A sink function runs in whichever worker hosts
 * its subtask, so it cannot hand its total back to the client: in finish() it writes its
 * cumulative result synchronously to fd 2 (shared by all threads of the process), tagged
 * with an instance id and the time it saw the end of its input (finish() runs at the end of
 * input, before the final checkpoint of a job with checkpointing). Should several subtasks of one worker share the instance, every
 * finish() reports the cumulative total and the runner keeps the last line per instance.
 */
export function partialSink<T>(acc: Accumulator<T>): { invoke(v: T): void; finish(): void } {
  const instance = `${process.pid}.${threadId}.${instances++}`;
  return {
    invoke(v: T) {
      acc.add(v);
    },
    finish() {
      // `at`: when this instance saw the end of its input (epoch ms, comparable across threads).
      writeSync(2, PARTIAL_MARK + JSON.stringify({ instance, result: acc.result(), at: performance.timeOrigin + performance.now() }) + '\n');
    },
  };
}
