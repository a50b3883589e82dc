/**
 * The generator source: record i is fn(i, rng) with rng positioned at (seed, i). Indices are
 * split into lanes (lane k holds k, k+L, k+2L, ...), one lane per subtask at the start; a
 * lane's position is its next index, so a restore resumes exactly there. With a rate limit,
 * the job-wide rate is divided over the lanes.
 */
import { Rng } from '../../core/random.ts';
import type { PollStatus, ReaderOutput, Source, SourceReader, SourceReaderContext, SourceSplit } from '../../core/source.ts';

export interface GeneratorOptions {
  /** Number of records; omit (or Infinity) for an unbounded source. */
  readonly count?: number;
  /** Records per second over the whole job; omit for as fast as possible. */
  readonly ratePerSecond?: number;
  readonly seed?: number;
  /** Number of lanes (splits); defaults to the parallelism when the job first starts. */
  readonly lanes?: number;
}

export interface GeneratorSplit extends SourceSplit {
  readonly lane: number;
  readonly lanes: number;
  /** Next index this lane produces. */
  next: number;
}

export type GeneratorFn<T> = (index: number, rng: Rng) => T;

export class GeneratorSource<T> implements Source<T, GeneratorSplit> {
  readonly name = 'generator';
  readonly bounded: boolean;
  readonly count: number;
  readonly seed: number;
  readonly ratePerSecond: number | undefined;

  constructor(readonly fn: GeneratorFn<T>, private readonly options: GeneratorOptions = {}) {
    if (typeof fn !== 'function') throw new TypeError('fromGenerator needs a function (index, rng) => record');
    const count = options.count ?? Number.POSITIVE_INFINITY;
    if (!(count === Number.POSITIVE_INFINITY || (Number.isSafeInteger(count) && count >= 0))) {
      throw new RangeError(`fromGenerator: count must be a non-negative integer or omitted, got ${String(options.count)}`);
    }
    const rate = options.ratePerSecond;
    if (rate !== undefined && !(Number.isFinite(rate) && rate > 0)) {
      throw new RangeError(`fromGenerator: ratePerSecond must be a positive number, got ${String(rate)}`);
    }
    const seed = options.seed ?? 0;
    if (!Number.isInteger(seed)) throw new RangeError(`fromGenerator: seed must be an integer, got ${String(seed)}`);
    if (options.lanes !== undefined && !(Number.isInteger(options.lanes) && options.lanes > 0)) {
      throw new RangeError(`fromGenerator: lanes must be a positive integer, got ${String(options.lanes)}`);
    }
    this.count = count;
    this.bounded = count !== Number.POSITIVE_INFINITY;
    this.seed = seed;
    this.ratePerSecond = rate;
  }

  planSplits(parallelism: number): GeneratorSplit[] {
    const lanes = this.options.lanes ?? parallelism;
    return Array.from({ length: lanes }, (_, k) => ({ id: `lane-${k}`, lane: k, lanes, next: k }));
  }

  createReader(ctx: SourceReaderContext): SourceReader<T, GeneratorSplit> {
    return new GeneratorReader(this, ctx);
  }
}

class GeneratorReader<T> implements SourceReader<T, GeneratorSplit> {
  /** Each poll ends with out.collected(produced): the runtime counts per poll. */
  readonly reportsCollected = true;
  private splits: GeneratorSplit[] = [];
  private current = 0;
  private readonly rng = new Rng();
  private readonly startedAt: number;
  private emitted = 0;
  private wakeScheduled = false;

  constructor(private readonly src: GeneratorSource<T>, private readonly ctx: SourceReaderContext) {
    this.startedAt = ctx.now();
  }

  addSplits(splits: GeneratorSplit[]): void {
    for (const s of splits) this.splits.push({ ...s });
  }

  /** Records this reader may emit now under the rate limit (its share of the job-wide rate). */
  private allowance(max: number): number {
    const rate = this.src.ratePerSecond;
    if (rate === undefined) return max;
    const lanes = this.splits[0]?.lanes ?? 1;
    const myRate = (rate * this.splits.length) / lanes;
    const due = Math.floor(((this.ctx.now() - this.startedAt) * myRate) / 1000) - this.emitted;
    return Math.max(0, Math.min(max, due));
  }

  poll(out: ReaderOutput<T>, maxRecords: number): PollStatus {
    const splits = this.splits;
    const count = this.src.count;
    // Drop exhausted lanes without splitFinished: a reader whose splits are all finished is idle
    // until it ends, and an idle input near the end let a downstream window pass records still in
    // flight from the other subtask (Nexmark q5 on 2 workers lost a window's maximum). Lanes end
    // together (±1 record), so holding event time at the last lane's watermark until 'end' (MAX)
    // costs nothing. (Split watermarks now also treat a bounded reader with every split finished
    // as ending, not idle, for every source.)
    while (splits.length > 0 && this.current < splits.length && splits[this.current]!.next >= count) splits.splice(this.current, 1);
    if (splits.length === 0) return 'end';
    if (this.current >= splits.length) this.current = 0;
    const n = this.allowance(maxRecords);
    if (n === 0) {
      this.scheduleWake();
      return 'wait';
    }
    const split = splits[this.current]!;
    // Each lane is a split with its own watermark (fromGenerator's `watermarks`): a reader that
    // holds several lanes interleaves them, and no lane's records become late by that order.
    const o = out.forSplit(split.id);
    const { fn, seed } = this.src;
    const rng = this.rng;
    const stride = split.lanes;
    let i = split.next;
    let produced = 0;
    while (produced < n && i < count) {
      o.collect(fn(i, rng.reseed(seed, i)));
      i += stride;
      produced++;
    }
    split.next = i;
    this.emitted += produced;
    this.current = (this.current + 1) % splits.length;
    out.collected?.(produced);
    return 'more';
  }

  private scheduleWake(): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    const lanes = this.splits[0]?.lanes ?? 1;
    const myRate = ((this.src.ratePerSecond ?? 1) * this.splits.length) / lanes;
    const at = this.startedAt + Math.ceil(((this.emitted + 1) * 1000) / myRate);
    this.ctx.schedule(at, () => {
      this.wakeScheduled = false;
      this.ctx.wake();
    });
  }

  snapshotSplits(): GeneratorSplit[] {
    return this.splits.map((s) => ({ ...s }));
  }
}
