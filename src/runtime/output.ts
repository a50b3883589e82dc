/**
 * Where an operator's records go. An Output collects emitted records into a batch and hands
 * it to its targets (the next chained operator, or a record writer at the end of a chain)
 * when the batch is full or when the operator finishes its input batch. Side outputs are
 * Outputs of their own, found by tag id.
 */
import { MIN_WATERMARK } from './events.ts';
import { DEFAULT_BATCH_SIZE, newTimestamps, type Batch } from '../core/batch.ts';

/** Anything that takes batches and in-band events from an operator: chained operators, record writers. */
export interface BatchConsumer {
  processBatch(batch: Batch): void;
  processWatermark(timestamp: number): void;
  processWatermarkStatus(idle: boolean): void;
  /** The producer has finished: no more records or watermarks. */
  endInput(): void;
  /**
   * Present on a chained operator that takes records one at a time: an Output whose targets
   * all have it hands each record straight on instead of collecting a batch (see Output).
   */
  processRecord?(value: unknown, timestamp: number): void;
  /** With processRecord: the producer's current batch of records is done; hand on what is buffered. */
  flush?(): void;
}

/** Fan-outs up to this wide get code of their own (one bound call per target); wider ones loop. */
const MAX_SPECIALIZED_TARGETS = 8;

export class Output {
  /**
   * The batch being collected: its first `size` slots are records. The arrays are allocated
   * at the length of the last batch handed on (batches of one output are mostly alike), so
   * filling them grows no array: growing by push allocates and copies about twice the final
   * size, as much garbage as the records themselves for small records.
   */
  private values: unknown[] = [];
  private timestamps: number[] = [];
  private size = 0;
  /** Records handed on, for metrics (and a source's rate limit); stays 0 when not counting. */
  count = 0;
  /** The operator's numRecordsOut: its main output's records and its side outputs', as Flink's CountingOutput counts both. */
  get countWithSides(): number {
    let n = this.count;
    for (const side of this.sideOutputs.values()) n += side.count;
    return n;
  }
  /** The last watermark emitted (currentOutputWatermark); MIN_WATERMARK before the first. */
  lastWatermark = MIN_WATERMARK;
  /**
   * Record-at-a-time mode: every target is a chained operator that takes single records, so a
   * record goes straight through the chain (like Flink's chained outputs) instead of being
   * copied into a batch array per operator. Batches remain the unit across channels and
   * threads, and at operators that work on whole batches.
   */
  private readonly direct: boolean;

  constructor(
    readonly targets: BatchConsumer[],
    readonly sideOutputs: ReadonlyMap<string, Output> = new Map(),
    private readonly batchSize = DEFAULT_BATCH_SIZE,
    /**
     * Count the records handed on (`count`). Off (metrics.record-counters.enabled: false), the
     * per-record paths are built without the increment, not guarded by a test per record.
     */
    private counting = true,
  ) {
    this.direct = targets.length > 0 && targets.every((t) => t.processRecord !== undefined);
    this.specializeEmit(counting);
  }

  /** Record-at-a-time mode: the per-record emit, with or without the count's increment. */
  private specializeEmit(counting: boolean): void {
    const targets = this.targets;
    if (this.direct && targets.length === 1) {
      this.emit = specialize('emitToOne', 'out', 'f', `${counting ? 'out.count++; ' : ''}f(value, timestamp);`)(this, directRecordFn(targets[0]!));
    } else if (this.direct && targets.length <= MAX_SPECIALIZED_TARGETS) {
      this.emit = specializeFanOut(targets.length, counting)(this, ...targets.map(directRecordFn));
    } else if (this.direct) {
      this.emit = counting ? this.emitToManyCounting : this.emitToMany;
    }
  }

  /**
   * Its owner adds to `count` itself from now on, once per batch (a source whose reader reports
   * how many records each poll collected): this output stops counting, and its per-record path
   * loses the increment. Why: in a chain of a source, map and filter into a sink, that increment
   * was ~9 % of the job's time (V8 inlines the whole chain into the source's loop, so an
   * increment is a sizeable part of a record's ~7 ns). Returns whether this output was counting,
   * that is whether the owner must count; called before the first record.
   */
  countOutside(): boolean {
    if (!this.counting) return false;
    if (this.count !== 0 || this.size !== 0) throw new Error('Output.countOutside: records were already handed on');
    this.counting = false;
    this.specializeEmit(false);
    return true;
  }

  /** Batch mode: collects the record; record-at-a-time mode replaces this in the constructor. */
  emit(value: unknown, timestamp: number): void {
    const n = this.size;
    // Beyond the allocated length this appends, like push.
    this.values[n] = value;
    this.timestamps[n] = timestamp;
    this.size = n + 1;
    if (n + 1 >= this.batchSize) this.flush();
  }

  /** Record-at-a-time mode with several targets (one target gets its own function, see the constructor). */
  private emitToManyCounting(value: unknown, timestamp: number): void {
    this.count++;
    this.emitToMany(value, timestamp);
  }

  private emitToMany(value: unknown, timestamp: number): void {
    const targets = this.targets;
    for (let i = 0; i < targets.length; i++) targets[i]!.processRecord!(value, timestamp);
  }

  /** Emits a whole batch at once; the batch is borrowed. */
  emitBatch(batch: Batch): void {
    if (batch.values.length === 0) return;
    this.flush();
    if (this.counting) this.count += batch.values.length;
    const targets = this.targets;
    for (let i = 0; i < targets.length; i++) targets[i]!.processBatch(batch);
  }

  emitSide(tagId: string, value: unknown, timestamp: number): void {
    // Like Flink, a side output nobody consumes is dropped.
    this.sideOutputs.get(tagId)?.emit(value, timestamp);
  }

  hasSideOutput(tagId: string): boolean {
    return this.sideOutputs.has(tagId);
  }

  flush(): void {
    if (this.direct) {
      for (let i = 0; i < this.targets.length; i++) this.targets[i]!.flush!();
    } else if (this.size > 0) {
      const n = this.size;
      const values = this.values;
      const timestamps = this.timestamps;
      // A shorter batch than allocated: cut to the records (trimmed in place, nothing copied).
      if (values.length !== n) {
        values.length = n;
        timestamps.length = n;
      }
      const batch: Batch = { values, timestamps };
      this.values = new Array(n);
      this.timestamps = newTimestamps(n);
      this.size = 0;
      if (this.counting) this.count += n;
      const targets = this.targets;
      for (let i = 0; i < targets.length; i++) targets[i]!.processBatch(batch);
    }
    for (const side of this.sideOutputs.values()) side.flush();
  }

  emitWatermark(timestamp: number): void {
    this.lastWatermark = timestamp;
    this.flush();
    for (const t of this.targets) t.processWatermark(timestamp);
    for (const side of this.sideOutputs.values()) side.emitWatermark(timestamp);
  }

  emitWatermarkStatus(idle: boolean): void {
    this.flush();
    for (const t of this.targets) t.processWatermarkStatus(idle);
    for (const side of this.sideOutputs.values()) side.emitWatermarkStatus(idle);
  }

  endInput(): void {
    this.flush();
    for (const t of this.targets) t.endInput();
    for (const side of this.sideOutputs.values()) side.endInput();
  }
}

/**
 * A function with its own compiled code (and so its own type feedback) for one instance.
 * Calls through a chain of operators are monomorphic this way, so V8 can inline a whole
 * chain into its source's loop; a method shared by every instance would see every operator
 * type at its call sites and inline none of them. The bodies are fixed strings, never data.
 */
export function specialize(name: string, a: string, b: string, body: string): (x: unknown, y: unknown) => (value: unknown, timestamp: number) => void {
  return new Function(a, b, `return function ${name}(value, timestamp) { ${body} };`) as never;
}

/**
 * An emit for `n` chained targets that calls each target's bound per-record function in turn
 * (a job splitting one stream by filters, as Nexmark's events into persons, auctions and bids):
 * like the single-target emit, each call can be inlined, which a loop over the targets' fields
 * prevents. The body is built from the count alone, never from data.
 */
function specializeFanOut(n: number, counting: boolean): (out: Output, ...fs: ((value: unknown, timestamp: number) => void)[]) => (value: unknown, timestamp: number) => void {
  if (!(Number.isInteger(n) && n >= 2 && n <= MAX_SPECIALIZED_TARGETS)) throw new RangeError(`specializeFanOut: ${n} targets`);
  const params = Array.from({ length: n }, (_, i) => `f${i}`);
  const calls = params.map((f) => `${f}(value, timestamp);`).join(' ');
  return new Function('out', ...params, `return function emitToMany(value, timestamp) { ${counting ? 'out.count++; ' : ''}${calls} };`) as never;
}

/**
 * A target's per-record function, bound to it once. Called through the bound function, V8
 * inlines the target into the caller (measured: the whole map + filter chain into the
 * source's loop, 2.2x less CPU); called as `t.processRecord(...)` it loads a field it cannot
 * treat as constant and inlines nothing past it. Binding also keeps `this` right for methods.
 */
export function directRecordFn(t: { processRecord?: (value: unknown, timestamp: number) => void }): (value: unknown, timestamp: number) => void {
  const f = t.processRecord!;
  return f.bind(t);
}
