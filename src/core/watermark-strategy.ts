/**
 * Watermark strategies: where a record's event timestamp comes from and how event time
 * advances. Same vocabulary as Flink's WatermarkStrategy.
 */
import { toMillis, type Duration } from './duration.ts';

export interface WatermarkOutput {
  emitWatermark(timestamp: number): void;
  /** This input will produce no records for a while: let other inputs advance event time. */
  markIdle(): void;
  markActive(): void;
}

export interface WatermarkGenerator<T> {
  /** Called for every record; may emit a watermark (punctuated watermarks). */
  onEvent(event: T, timestamp: number, output: WatermarkOutput): void;
  /** Called every auto-watermark interval of processing time (periodic watermarks). */
  onPeriodicEmit(output: WatermarkOutput): void;
}

export type TimestampAssigner<T> = (element: T, recordTimestamp: number | undefined) => number;

export class WatermarkStrategy<T> {
  private constructor(
    readonly createGenerator: () => WatermarkGenerator<T>,
    readonly timestampAssigner: TimestampAssigner<T> | undefined,
    readonly idleTimeoutMs: number | undefined,
    readonly description: string,
  ) {}

  /** Watermark = highest timestamp seen - maxOutOfOrderness - 1. */
  static forBoundedOutOfOrderness<T>(maxOutOfOrderness: Duration): WatermarkStrategy<T> {
    const bound = toMillis(maxOutOfOrderness, 'forBoundedOutOfOrderness');
    return new WatermarkStrategy<T>(() => new BoundedOutOfOrdernessGenerator<T>(bound), undefined, undefined, `boundedOutOfOrderness(${bound} ms)`);
  }

  /** Timestamps never decrease: watermark = highest timestamp seen - 1. */
  static forMonotonousTimestamps<T>(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(() => new BoundedOutOfOrdernessGenerator<T>(0), undefined, undefined, 'monotonousTimestamps');
  }

  static forGenerator<T>(factory: () => WatermarkGenerator<T>): WatermarkStrategy<T> {
    if (typeof factory !== 'function') throw new TypeError('forGenerator needs a function that creates a WatermarkGenerator');
    return new WatermarkStrategy<T>(factory, undefined, undefined, 'custom');
  }

  /** Timestamps are assigned but event time never advances (until the end of input). */
  static noWatermarks<T>(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(() => ({ onEvent() {}, onPeriodicEmit() {} }), undefined, undefined, 'noWatermarks');
  }

  withTimestampAssigner(assigner: TimestampAssigner<T>): WatermarkStrategy<T> {
    if (typeof assigner !== 'function') throw new TypeError('withTimestampAssigner needs a function (element, recordTimestamp) => epoch ms');
    return new WatermarkStrategy<T>(this.createGenerator, assigner, this.idleTimeoutMs, this.description);
  }

  /** Marks the input idle after `timeout` of processing time without records. */
  withIdleness(timeout: Duration): WatermarkStrategy<T> {
    const ms = toMillis(timeout, 'withIdleness');
    if (ms <= 0) throw new RangeError('withIdleness: the timeout must be greater than zero');
    return new WatermarkStrategy<T>(this.createGenerator, this.timestampAssigner, ms, `${this.description}, idleness ${ms} ms`);
  }
}

class BoundedOutOfOrdernessGenerator<T> implements WatermarkGenerator<T> {
  private maxTimestamp: number;
  constructor(private readonly bound: number) {
    // Start so that the first watermark is the minimum without underflow.
    this.maxTimestamp = Number.MIN_SAFE_INTEGER + bound + 1;
  }
  onEvent(_event: T, timestamp: number): void {
    if (timestamp > this.maxTimestamp) this.maxTimestamp = timestamp;
  }
  onPeriodicEmit(output: WatermarkOutput): void {
    output.emitWatermark(this.maxTimestamp - this.bound - 1);
  }
}
