/**
 * Interval join of two keyed streams (Flink's IntervalJoinOperator): a left record at time t
 * joins every right record with the same key whose time lies in [t + lower, t + upper]
 * (bounds inclusive unless made exclusive; exclusive bounds are turned into inclusive ones
 * by the API). Event time only; each result carries the larger of the two timestamps.
 *
 * Each side keeps its records per key in keyed state, as one array of [timestamp, value]
 * sorted by timestamp (arrival order among equal timestamps), so checkpoints, savepoints and
 * rescaling treat the buffers like any keyed state. A record is buffered, probed against the
 * other side's buffer (a binary search for the first candidate, then a scan), and given a
 * cleanup timer. A record with a timestamp below the watermark is late (as in Flink): it is
 * sent to the side's late-data output if there is one, else counted and dropped.
 *
 * Cleanup (one event-time timer per key, side and timestamp): a record at t can meet records
 * of the other side at times up to t + r (r the relative upper bound seen from this side);
 * such records are not late only while the watermark is at most t + r. So the record is
 * dropped when the watermark passes t + max(r, 0), one millisecond later than Flink's timer,
 * which lets a record at exactly the watermark still meet its partners (Flink drops it
 * partly joined).
 */
import type { Collector, ProcessJoinContext, ProcessJoinFunction } from '../../core/functions.ts';
import type { OutputTag } from '../../core/output-tag.ts';
import { ValueStateDescriptor, type ValueState } from '../../core/state.ts';
import { NO_TIMESTAMP, type Batch } from '../../core/batch.ts';
import type { KeySelectorFn } from '../../core/partitioning.ts';
import type { Timer } from '../timers.ts';
import { collectReturned } from './basic.ts';
import { KeyedOperator } from './keyed.ts';

export interface IntervalJoinSpec {
  /** Inclusive lower bound: right.ts >= left.ts + lower. */
  readonly lower: number;
  /** Inclusive upper bound: right.ts <= left.ts + upper. */
  readonly upper: number;
  readonly fn: ProcessJoinFunction<any, any, any>;
  readonly leftLateTag: OutputTag<any> | undefined;
  readonly rightLateTag: OutputTag<any> | undefined;
}

/** A side's buffer for one key: [timestamp, value] pairs sorted by timestamp. */
type Buffer = [ts: number, value: unknown][];

const LEFT = new ValueStateDescriptor<Buffer>('__interval_join_left');
const RIGHT = new ValueStateDescriptor<Buffer>('__interval_join_right');
const LEFT_CLEANUP = 'L';
const RIGHT_CLEANUP = 'R';

/** Index of the first entry with timestamp >= ts (buffer sorted by timestamp). */
function lowerIndex(buf: Buffer, ts: number): number {
  let lo = 0;
  let hi = buf.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (buf[mid]![0] < ts) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

class JoinCtx implements ProcessJoinContext {
  leftTimestamp = 0;
  rightTimestamp = 0;
  timestamp = 0;
  constructor(private readonly op: IntervalJoinOperator) {}
  output<X>(tag: OutputTag<X>, value: X): void {
    this.op.output.emitSide(tag.id, value, this.timestamp);
  }
}

export class IntervalJoinOperator extends KeyedOperator {
  private left!: ValueState<Buffer>;
  private right!: ValueState<Buffer>;
  private readonly ctx = new JoinCtx(this);
  private readonly collector: Collector<unknown>;
  /** Records dropped because they were late and their side has no late-data output. */
  numLateRecordsDropped = 0;

  constructor(private readonly spec: IntervalJoinSpec) {
    super();
    if (!(spec.lower <= spec.upper)) throw new RangeError(`interval join: lower bound ${spec.lower} must not be above upper bound ${spec.upper}`);
    this.userFunction = spec.fn;
    this.collector = { collect: (v: unknown) => this.output.emit(v, this.ctx.timestamp) };
  }

  protected override userFunctionContext(): unknown {
    return this.runtimeContext();
  }

  protected override setUp(): void {
    super.setUp();
    this.left = this.backend.getValueState(LEFT);
    this.right = this.backend.getValueState(RIGHT);
  }

  processBatch(batch: Batch, input: number): void {
    const { values, timestamps } = batch;
    const kgs = this.keyGroupsOf(batch);
    const sel = this.env.keySelectors[input] as KeySelectorFn;
    const isLeft = input === 0;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const v = values[i];
        const ts = timestamps[i]!;
        if (ts === NO_TIMESTAMP) {
          throw new Error('record has no event timestamp; an interval join needs event time: call assignTimestampsAndWatermarks(...) on both inputs');
        }
        // Late as in Flink: below the watermark (the watermark itself is not late).
        if (ts < this.currentWatermark) {
          const tag = isLeft ? this.spec.leftLateTag : this.spec.rightLateTag;
          if (tag !== undefined) this.output.emitSide(tag.id, v, ts);
          else this.numLateRecordsDropped++;
          continue;
        }
        this.keyFrom(sel, v, kgs, i);
        if (isLeft) this.add(v, ts, this.left, this.right, this.spec.lower, this.spec.upper, true);
        else this.add(v, ts, this.right, this.left, -this.spec.upper, -this.spec.lower, false);
      }
    } catch (e) {
      throw this.failOn(e, isLeft ? 'interval join (left input)' : 'interval join (right input)', values[i]);
    }
  }

  /** Buffers a record of one side, joins it with the other side's matches, sets its cleanup timer. */
  private add(v: unknown, ts: number, ours: ValueState<Buffer>, theirs: ValueState<Buffer>, relLower: number, relUpper: number, isLeft: boolean): void {
    // Reading first releases the key group from a snapshot in progress; changes in place are then safe.
    const own = ours.value();
    if (own === undefined) ours.update([[ts, v]]);
    else {
      let at = own.length;
      while (at > 0 && own[at - 1]![0] > ts) at--;
      if (at === own.length) own.push([ts, v]);
      else own.splice(at, 0, [ts, v]);
      this.changedInPlace(ours, own);
    }
    const other = theirs.value();
    if (other !== undefined) {
      const from = ts + relLower;
      const to = ts + relUpper;
      const ctx = this.ctx;
      const fn = this.spec.fn;
      for (let j = lowerIndex(other, from); j < other.length; j++) {
        const e = other[j]!;
        if (e[0] > to) break;
        if (isLeft) {
          ctx.leftTimestamp = ts;
          ctx.rightTimestamp = e[0];
        } else {
          ctx.leftTimestamp = e[0];
          ctx.rightTimestamp = ts;
        }
        ctx.timestamp = ts > e[0] ? ts : e[0];
        const r = isLeft ? fn.processElement(v, e[1], ctx, this.collector) : fn.processElement(e[1], v, ctx, this.collector);
        if (r !== undefined) collectReturned(r, this.collector, 'processElement');
      }
    }
    this.timers.registerEventTimeTimer(isLeft ? LEFT_CLEANUP : RIGHT_CLEANUP, ts + (relUpper > 0 ? relUpper : 0) + 1);
  }

  override onEventTime(timer: Timer): void {
    const isLeft = timer.namespace === LEFT_CLEANUP;
    const relUpper = isLeft ? this.spec.upper : -this.spec.lower;
    // The records of this side at or before this time can meet nothing more.
    const upTo = timer.timestamp - 1 - (relUpper > 0 ? relUpper : 0);
    const state = isLeft ? this.left : this.right;
    const buf = state.value();
    if (buf === undefined) return;
    const n = lowerIndex(buf, upTo + 1);
    if (n >= buf.length) state.clear();
    else if (n > 0) {
      buf.splice(0, n);
      this.changedInPlace(state, buf);
    }
  }
}
