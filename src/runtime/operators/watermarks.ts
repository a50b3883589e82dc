/**
 * assignTimestampsAndWatermarks: stamps each record with its event time and runs the
 * strategy's watermark generator: per record (punctuated) and every auto-watermark interval
 * of processing time (periodic), with idleness detection. Watermarks from upstream are
 * ignored except the final one that ends event time, as in Flink.
 */
import type { WatermarkGenerator, WatermarkOutput, WatermarkStrategy } from '../../core/watermark-strategy.ts';
import type { Batch } from '../../core/batch.ts';
import { MAX_WATERMARK, wholeMs } from '../events.ts';
import { StreamOperator } from './operator.ts';

export class TimestampsAndWatermarksOperator extends StreamOperator implements WatermarkOutput {
  private generator!: WatermarkGenerator<unknown>;
  private lastEmitted = Number.MIN_SAFE_INTEGER;
  private sourceIdle = false;
  private lastRecordAt = 0;
  private lastPeriodicAt = 0;
  private periodic: { cancel(): void } | undefined;

  constructor(private readonly strategy: WatermarkStrategy<any>, private readonly intervalMs: number) {
    super();
  }

  override get oneToOne(): boolean {
    return true;
  }

  protected override setUp(): void {
    try {
      this.generator = this.strategy.createGenerator();
    } catch (e) {
      throw this.fail(e, 'createWatermarkGenerator');
    }
    const now = this.env.clock.now();
    this.lastRecordAt = now;
    this.lastPeriodicAt = now;
    if (this.intervalMs > 0) this.schedulePeriodic(now + this.intervalMs);
  }

  private schedulePeriodic(at: number): void {
    this.periodic = this.env.scheduleMail(at, () => {
      this.onPeriodic();
      this.schedulePeriodic(this.env.clock.now() + this.intervalMs);
    });
  }

  private onPeriodic(): void {
    // After the end of input (MAX_WATERMARK went out), nothing follows it: an idle status would
    // make the ended channel idle downstream, and event time there would depend on timing.
    if (this.env.isSuspended() || this.lastEmitted === MAX_WATERMARK) return;
    const now = this.env.clock.now();
    this.lastPeriodicAt = now;
    const timeout = this.strategy.idleTimeoutMs;
    if (timeout !== undefined && !this.sourceIdle && now - this.lastRecordAt >= timeout) {
      // Held back (back-pressured, or input waiting): no records came because the task could not
      // take them, not because there are none. Idle then, downstream windows would fire without
      // them and they would come late; the timeout starts again instead.
      if (!this.env.isHeldBack()) {
        this.markIdle();
        return;
      }
      this.lastRecordAt = now;
    }
    if (this.sourceIdle) return;
    try {
      this.generator.onPeriodicEmit(this);
    } catch (e) {
      throw this.fail(e, 'onPeriodicEmit');
    }
  }

  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    const assigner = this.strategy.timestampAssigner;
    const gen = this.generator;
    const out = this.output;
    if (values.length > 0) {
      this.lastRecordAt = this.env.clock.now();
      if (this.sourceIdle) this.markActive();
    }
    let i = 0;
    // Which user function threw, for the error (a generator's onEvent was named the assigner).
    let inGenerator = false;
    try {
      for (; i < values.length; i++) {
        const v = values[i];
        const prev = timestamps[i]!;
        inGenerator = false;
        const ts = wholeMs(finiteTimestamp(assigner !== undefined ? assigner(v, prev === Number.NEGATIVE_INFINITY ? undefined : prev) : prev));
        out.emit(v, ts);
        inGenerator = true;
        gen.onEvent(v, ts, this);
      }
    } catch (e) {
      throw this.failOn(e, inGenerator ? 'watermark generator' : 'timestamp assigner', values[i]);
    }
    // Periodic emission also happens between batches of a busy stream, not only on the timer.
    if (this.intervalMs > 0 && this.lastRecordAt - this.lastPeriodicAt >= this.intervalMs) this.onPeriodic();
  }

  /** Records went through processRecord since the last afterRecords(). */
  private sawRecords = false;

  override processRecord(value: unknown, timestamp: number): void {
    if (this.sourceIdle) this.markActive();
    this.sawRecords = true;
    const assigner = this.strategy.timestampAssigner;
    let inGenerator = false;
    try {
      // The assigner's result is checked and emitted on a path of its own: merged first with
      // the incoming timestamp (one variable for both cases), it was boxed, a HeapNumber per
      // record (epoch milliseconds are doubles to V8), 16 bytes of garbage a record.
      if (assigner !== undefined) {
        const ts = wholeMs(finiteTimestamp(assigner(value, timestamp === Number.NEGATIVE_INFINITY ? undefined : timestamp)));
        this.output.emit(value, ts);
        inGenerator = true;
        this.generator.onEvent(value, ts, this);
      } else {
        const ts = wholeMs(finiteTimestamp(timestamp));
        this.output.emit(value, ts);
        inGenerator = true;
        this.generator.onEvent(value, ts, this);
      }
    } catch (e) {
      throw this.failOn(e, inGenerator ? 'watermark generator' : 'timestamp assigner', value);
    }
  }

  /** Per batch, not per record: the clock read for idleness and the periodic emission check. */
  override afterRecords(): void {
    if (!this.sawRecords) return;
    this.sawRecords = false;
    this.lastRecordAt = this.env.clock.now();
    if (this.intervalMs > 0 && this.lastRecordAt - this.lastPeriodicAt >= this.intervalMs) this.onPeriodic();
  }

  emitWatermark(watermark: number): void {
    const timestamp = wholeMs(watermark);
    if (timestamp > this.lastEmitted) {
      this.lastEmitted = timestamp;
      if (this.sourceIdle) this.markActive();
      this.output.emitWatermark(timestamp);
    }
  }
  markIdle(): void {
    if (!this.sourceIdle) {
      this.sourceIdle = true;
      this.output.emitWatermarkStatus(true);
    }
  }
  markActive(): void {
    if (this.sourceIdle) {
      this.sourceIdle = false;
      this.output.emitWatermarkStatus(false);
    }
  }

  override processWatermark(timestamp: number): void {
    if (timestamp >= MAX_WATERMARK) {
      this.currentWatermark = MAX_WATERMARK;
      this.lastEmitted = MAX_WATERMARK;
      this.output.emitWatermark(MAX_WATERMARK);
    }
  }

  override processWatermarkStatus(): void {
    // Idleness is decided here from this operator's own input, not inherited from upstream.
  }

  protected override tearDown(): void {
    this.periodic?.cancel();
  }
}

/** An assigner's result (or a record's own timestamp) as epoch milliseconds, or a TypeError. */
function finiteTimestamp(ts: number): number {
  if (typeof ts !== 'number' || !Number.isFinite(ts)) {
    throw new TypeError(`timestamp assigner returned ${String(ts)}; expected epoch milliseconds as a finite number`);
  }
  return ts;
}
