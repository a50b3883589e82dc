/**
 * The source operator at the head of a source task: pulls a batch from the reader on every
 * mailbox step. End of input is the end of event time: the final watermark goes out before
 * the chain finishes, which fires every event-time window and timer.
 *
 * With a watermark strategy (fromSource's `watermarks`), event time is kept per split
 * (split-watermarks.ts): the operator stamps records, runs each split's generator, emits the
 * minimum over the splits, marks the output idle when no split holds time back, and pauses
 * and resumes splits for alignment (maxDrift).
 */
import type { MalformedRecord, PollStatus, ReaderOutput, Source, SourceOutput, SourceReader, SourceSplit } from '../../core/source.ts';
import { DEFAULT_BATCH_SIZE, NO_TIMESTAMP, type Batch } from '../../core/batch.ts';
import { MAX_WATERMARK, MIN_WATERMARK, wholeMs } from '../events.ts';
import type { WatermarkStrategy } from '../../core/watermark-strategy.ts';
import { SplitWatermarks, type SplitTimeHandle } from './split-watermarks.ts';
import { SourceMetrics } from './source-metrics.ts';
import { StreamOperator } from './operator.ts';
import type { InlineOperatorState } from '../../core/checkpoint-format.ts';
import { WeirError } from '../../core/errors.ts';
import { quoteRaw } from '../../core/redact.ts';

export const DEAD_LETTER_TAG_ID = 'weir.dead-letters';

export type MalformedPolicy = 'fail' | 'dead-letter';

/** Event time kept by the source per split (fromSource's `watermarks` and `maxDrift`). */
export interface SourceWatermarkSettings {
  readonly strategy: WatermarkStrategy<unknown>;
  readonly maxDriftMs: number | undefined;
  /** The job's auto-watermark interval, read when the task starts. */
  readonly intervalMs: () => number;
}

export class SourceOperator extends StreamOperator implements ReaderOutput<unknown> {
  reader!: SourceReader<unknown, SourceSplit>;
  private ended = false;
  /** Called by the task when the reader asks to be woken. */
  wake: () => void = () => {};
  readonly metrics = new SourceMetrics();
  private splitTime: SplitWatermarks | undefined;
  private readonly splitOutputs = new Map<string, SourceOutput<unknown>>();
  /** Split outputs that gave records since the last poll. */
  private readonly touched = new Set<SplitOutput>();
  private lastWatermark = MIN_WATERMARK;
  /**
   * When the reader was last polled, and whether it then had nothing to give ('wait'). Split
   * idleness counts time only while the reader is polled or waits for data: time the task spent
   * back-pressured or behind other work in its thread is no silence (Flink 1.20, FLINK-35886).
   * Before, a stall downstream made splits with data waiting idle, and their records came late.
   */
  private lastPollAt = Number.NEGATIVE_INFINITY;
  private lastPollWaited = true;
  private tornDown = false;
  private idle = false;
  private periodic: { cancel(): void } | undefined;
  private alignmentWarned = false;

  constructor(
    readonly source: Source<unknown, SourceSplit>,
    private readonly malformedPolicy: MalformedPolicy,
    private readonly batchSize = DEFAULT_BATCH_SIZE,
    /** This subtask's share of a source rate limit, records per second. */
    private readonly ratePerSecond?: number,
    private readonly watermarks?: SourceWatermarkSettings,
  ) {
    super();
    this.numInputs = 0;
    this.assigner = watermarks?.strategy.timestampAssigner;
  }

  /** The strategy's timestamp assigner, read once: collect() runs per record. */
  private readonly assigner: ((value: unknown, readerTimestamp: number | undefined) => number) | undefined;

  /** This poll's dead letters, handed to the runtime's dead-letter output once the poll is done. */
  private letters: MalformedRecord[] = [];

  private rateStart = -1;
  private rateWake: { cancel(): void } | undefined;

  /** Records this subtask may emit now under its rate limit (a token bucket from the start). */
  private allowance(): number {
    const rate = this.ratePerSecond;
    if (rate === undefined) return this.batchSize;
    const now = this.env.clock.now();
    if (this.rateStart < 0) this.rateStart = now;
    const due = Math.floor(((now - this.rateStart) * rate) / 1000) + 1 - this.output.count;
    return Math.max(0, Math.min(this.batchSize, due));
  }

  /**
   * When the next record is due: the first millisecond at which allowance() grants one more.
   * Records 1..n are due by n-1 intervals after the start (the first one at the start), so the
   * record after `count` emitted ones is due `count` intervals in, not `count + 1`.
   */
  private nextDueAt(): number {
    const rate = this.ratePerSecond!;
    const count = this.output.count;
    let at = this.rateStart + Math.ceil((count * 1000) / rate);
    // Guard against rounding: allowance() must really grant a record at `at`.
    while (Math.floor(((at - this.rateStart) * rate) / 1000) + 1 <= count) at++;
    return at;
  }

  /** Splits come from the job manager's plan (or, later, a restored checkpoint). */
  assignedSplits: SourceSplit[] = [];

  protected override setUp(): void {
    const env = this.env;
    try {
      this.reader = this.source.createReader({
        subtaskIndex: env.taskInfo.subtaskIndex,
        parallelism: env.taskInfo.parallelism,
        now: () => env.clock.now(),
        wake: () => this.wake(),
        schedule: (at, fn) => env.scheduleMail(at, fn),
        metrics: this.metrics,
        log: (line) => env.services.log(`source "${this.source.name}" (subtask ${env.taskInfo.subtaskIndex + 1}/${env.taskInfo.parallelism}): ${line}`),
        sendSourceEvent: (event) => env.services.sourceEvent?.(env.taskInfo.operatorId, env.taskInfo.subtaskIndex, event),
      });
      // A reader that reports each poll's count is counted per poll (collected), not per record.
      this.countsReported = this.reader.reportsCollected === true && this.output.countOutside();
      const w = this.watermarks;
      if (w !== undefined) {
        const now = env.clock.now();
        const interval = w.intervalMs();
        const st = new SplitWatermarks(w.strategy, { idleTimeoutMs: w.strategy.idleTimeoutMs, maxDriftMs: w.maxDriftMs, bounded: this.source.bounded, intervalMs: interval });
        for (const sp of this.assignedSplits) st.add(sp.id, now);
        this.splitTime = st;
        if (interval > 0) this.schedulePeriodic(now + interval, interval);
      }
      this.reader.addSplits(this.assignedSplits);
    } catch (e) {
      throw this.fail(e, 'source open');
    }
    // A reader with nothing to read must not hold back event time downstream.
    if (this.splitTime !== undefined) this.advanceTime();
  }

  /** Splits from the source's enumerator while the task runs (in the mailbox, between polls). */
  addSplits(splits: SourceSplit[]): void {
    if (this.reader === undefined) {
      for (const s of splits) this.assignedSplits.push(s);
      return;
    }
    const st = this.splitTime;
    if (st !== undefined) {
      const now = this.env.clock.now();
      for (const sp of splits) st.add(sp.id, now);
    }
    try {
      this.reader.addSplits(splits);
    } catch (e) {
      throw this.fail(e, `source "${this.source.name}" addSplits`);
    }
    if (st !== undefined) this.advanceTime();
    this.wake();
  }

  /** An event from the source's split enumerator (in the mailbox, between polls). */
  handleReaderEvent(event: unknown): void {
    if (this.reader === undefined || this.reader.handleSourceEvent === undefined) return;
    try {
      this.reader.handleSourceEvent(event);
    } catch (e) {
      throw this.fail(e, `source "${this.source.name}" handleSourceEvent`);
    }
    this.wake();
  }

  private schedulePeriodic(at: number, interval: number): void {
    this.periodic = this.env.scheduleMail(at, () => {
      if (!this.ended && !this.env.isSuspended()) {
        try {
          const now = this.env.clock.now();
          this.splitTime!.periodic(now, this.lastPollWaited ? now : this.lastPollAt);
        } catch (e) {
          throw this.fail(e, 'onPeriodicEmit');
        }
        this.advanceTime();
        this.output.flush();
      }
      // Not past the end, nor after tearDown (this mail may have been queued before it cancelled
      // the timer): a periodic mail rescheduling itself for good outlived its job.
      if (!this.ended && !this.tornDown) this.schedulePeriodic(this.env.clock.now() + interval, interval);
    });
  }

  /** Emits the reader's watermark (or idleness) if it changed, and applies alignment. */
  private advanceTime(): void {
    const st = this.splitTime!;
    const t = st.current();
    if (t.idle) {
      if (!this.idle) {
        if (t.last !== undefined && t.last > this.lastWatermark) {
          this.lastWatermark = t.last;
          this.output.emitWatermark(t.last);
        }
        this.idle = true;
        this.output.emitWatermarkStatus(true);
      }
    } else {
      if (this.idle) {
        this.idle = false;
        this.output.emitWatermarkStatus(false);
      }
      if (t.watermark > this.lastWatermark) {
        this.lastWatermark = t.watermark;
        this.output.emitWatermark(t.watermark);
      }
    }
    if (this.watermarks!.maxDriftMs === undefined) return;
    const change = st.align();
    if (change.pause.length === 0 && change.resume.length === 0) return;
    st.resumed(change.resume, this.env.clock.now());
    if (this.reader.pauseOrResumeSplits === undefined) {
      if (!this.alignmentWarned) {
        this.alignmentWarned = true;
        this.env.services.log(`source "${this.source.name}": its reader cannot pause splits, so maxDrift has no effect`);
      }
      return;
    }
    this.reader.pauseOrResumeSplits(change.pause, change.resume);
    if (change.resume.length > 0) this.wake();
  }

  // ---- ReaderOutput

  /** The reader reports its polls' counts and the output no longer counts (setUp): they are added here. */
  private countsReported = false;

  collected(records: number): void {
    if (!this.countsReported) return;
    if (!(Number.isSafeInteger(records) && records >= 0)) {
      throw new Error(`source "${this.source.name}": its reader reported ${String(records)} records collected in a poll; expected a count`);
    }
    this.output.count += records;
  }

  forSplit(splitId: string): SourceOutput<unknown> {
    let out = this.splitOutputs.get(splitId);
    if (out !== undefined) return out;
    const st = this.splitTime;
    if (st === undefined) {
      out = this; // no per-split event time: every split writes to the one output
    } else {
      st.start(splitId, this.env.clock.now());
      out = new SplitOutput(this, splitId, st.handle(splitId), this.watermarks!.strategy.timestampAssigner);
    }
    this.splitOutputs.set(splitId, out);
    return out;
  }

  splitFinished(splitId: string): void {
    this.splitOutputs.delete(splitId);
    this.metrics.setPendingRecords(splitId, undefined);
    this.metrics.setMillisBehindLatest(splitId, undefined);
    if (this.splitTime === undefined) return;
    this.splitTime.finish(splitId);
    for (const o of this.touched) if (o.splitId === splitId) this.touched.delete(o);
    this.advanceTime();
  }

  /** A split output saw records in this poll (alignment looks at it after the poll). */
  splitTouched(out: SplitOutput): void {
    this.touched.add(out);
  }

  /** An error of a user function (timestamp assigner, watermark generator) on a record. */
  failOnRecord(e: unknown, value: unknown): Error {
    return this.failOn(e, 'timestamp assigner / watermark generator', value);
  }

  processBatch(_batch: Batch): void {
    throw new Error('a source has no input');
  }

  /** Emits one batch; the task calls this as its default action. */
  emitNext(): PollStatus {
    if (this.ended) return 'end';
    const max = this.allowance();
    if (max === 0) {
      // Over the rate: sleep until the next record is due (a mail wakes the task).
      if (this.rateWake === undefined) {
        const at = this.nextDueAt();
        this.rateWake = this.env.scheduleMail(at, () => {
          this.rateWake = undefined;
          this.wake();
        });
      }
      return 'wait';
    }
    let status: PollStatus;
    try {
      status = this.reader.poll(this, max);
      if (this.splitTime !== undefined) {
        this.lastPollAt = this.env.clock.now();
        this.lastPollWaited = status === 'wait';
      }
    } catch (e) {
      this.flushDeadLetters();
      throw this.fail(e, `source "${this.source.name}"`);
    }
    this.flushDeadLetters();
    const st = this.splitTime;
    if (st !== undefined && this.touched.size > 0) {
      // Once per poll, not per record: each split that moved is active (and, with alignment,
      // emits), then the minimum goes out if it moved (punctuated generators emit per record).
      const now = this.env.clock.now();
      try {
        for (const o of this.touched) {
          o.moved = false;
          st.polled(o.splitId, now);
        }
      } catch (e) {
        throw this.fail(e, 'onPeriodicEmit');
      }
      this.touched.clear();
      if (status !== 'end') this.advanceTime();
    }
    this.output.flush();
    if (status === 'end') {
      this.ended = true;
      this.output.emitWatermark(MAX_WATERMARK);
    }
    return status;
  }

  /** Ends the source now, as if its input were exhausted: event time goes to its end. */
  endNow(): void {
    if (this.ended) return;
    this.ended = true;
    this.output.flush();
    this.output.emitWatermark(MAX_WATERMARK);
  }

  collect(value: unknown, timestamp?: number): void {
    // The common case first and alone: a record with no timestamp from a source with no assigner
    // is handed on as it is. Kept apart from the checks below, whose error paths take the record:
    // inlined into a chain's loop, those paths made V8 keep every record object (escape analysis
    // is not per branch), where a chain of map/filter into a sink otherwise allocates none:
    // 230 scavenges per 30 M records fell to 10 and the map + filter chain ran ~10 % faster.
    if (timestamp === undefined && this.assigner === undefined) {
      this.output.emit(value, NO_TIMESTAMP);
      return;
    }
    this.collectStamped(value, timestamp);
  }

  /** collect with a reader's timestamp or an assigner: both checked. */
  private collectStamped(value: unknown, timestamp: number | undefined): void {
    const a = this.assigner;
    if (a === undefined) {
      this.output.emit(value, readerTimestamp(timestamp, value, this));
      return;
    }
    this.output.emit(value, assignTimestamp(a, value, timestamp, this));
  }

  malformed(record: MalformedRecord): void {
    if (this.malformedPolicy === 'dead-letter') {
      this.deadLetterCount++;
      this.letters.push(record);
      this.output.emitSide(DEAD_LETTER_TAG_ID, record, NO_TIMESTAMP);
      return;
    }
    throw new MalformedRecordError(record);
  }

  /** One write per poll, not one per record. */
  private flushDeadLetters(): void {
    if (this.letters.length === 0) return;
    const letters = this.letters;
    this.letters = [];
    this.env.services.deadLetters(this.source.name, this.env.taskInfo.subtaskIndex, letters);
  }

  /** A source's checkpoint: its splits with their positions at the barrier. */
  override snapshotInline(checkpointId: number): InlineOperatorState | undefined {
    const base = super.snapshotInline(checkpointId) ?? {};
    return { ...base, splits: this.reader.snapshotSplits(checkpointId) };
  }

  override notifyCheckpointComplete(checkpointId: number): void {
    super.notifyCheckpointComplete(checkpointId);
    try {
      this.reader.notifyCheckpointComplete?.(checkpointId);
    } catch (e) {
      throw this.fail(e, `source "${this.source.name}" notifyCheckpointComplete`);
    }
  }

  protected override tearDown(): void {
    this.tornDown = true;
    this.rateWake?.cancel();
    this.periodic?.cancel();
    const closing = this.reader?.close?.();
    if (closing instanceof Promise) closing.catch((e) => this.env.services.log(`source "${this.source.name}": close failed: ${(e as Error).message}`));
  }
}

function assignTimestamp(a: (v: unknown, ts: number | undefined) => number, value: unknown, timestamp: number | undefined, op: SourceOperator): number {
  let ts: number;
  try {
    ts = a(value, timestamp);
  } catch (e) {
    throw op.failOnRecord(e, value);
  }
  if (typeof ts !== 'number' || !Number.isFinite(ts)) {
    throw op.failOnRecord(new TypeError(`timestamp assigner returned ${String(ts)}; expected epoch milliseconds as a finite number`), value);
  }
  return wholeMs(ts);
}

/**
 * A reader's own timestamp, checked as an assigner's is: NaN put a record in a [NaN, NaN)
 * window, Infinity made its split look idle for good (its watermark then meant "no split").
 */
function readerTimestamp(timestamp: number | undefined, value: unknown, op: SourceOperator): number {
  if (timestamp === undefined) return NO_TIMESTAMP;
  if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
    throw op.failOnRecord(new TypeError(`the source reader gave the timestamp ${String(timestamp)}; expected epoch milliseconds as a finite number`), value);
  }
  return wholeMs(timestamp);
}

/** One split's records: stamped, fed to the split's watermark generator, then emitted. */
class SplitOutput implements SourceOutput<unknown> {
  /** Gave records since the operator last looked (set once per poll, not per record). */
  moved = false;
  private readonly assigner: ((v: unknown, ts: number | undefined) => number) | undefined;
  constructor(
    private readonly op: SourceOperator,
    readonly splitId: string,
    private readonly time: SplitTimeHandle,
    assigner: ((v: unknown, ts: number | undefined) => number) | undefined,
  ) {
    this.assigner = assigner;
  }

  collect(value: unknown, timestamp?: number): void {
    const a = this.assigner;
    const ts = a !== undefined ? assignTimestamp(a, value, timestamp, this.op) : readerTimestamp(timestamp, value, this.op);
    this.op.output.emit(value, ts);
    try {
      this.time.generator.onEvent(value, ts, this.time);
    } catch (e) {
      throw this.op.failOnRecord(e, value);
    }
    if (!this.moved) {
      this.moved = true;
      this.op.splitTouched(this);
    }
  }

  malformed(record: MalformedRecord): void {
    this.op.malformed(record);
  }
}

export class MalformedRecordError extends WeirError {
  constructor(readonly record: MalformedRecord) {
    super('MALFORMED_RECORD', `malformed record at ${record.location}: ${record.error} (raw: ${quoteRaw(record.raw)}); set malformed: 'dead-letter' to route such records to a dead-letter output instead`);
  }
}
