/**
 * Count windows per key (Flink's KeyedStream.countWindow: a GlobalWindow with a count trigger).
 * - countWindow(size): every `size` records of a key, in arrival order, form a window; it
 *   fires when the last of them arrives and is then purged (CountTrigger + PurgingTrigger).
 * - countWindow(size, slide): every `slide` records of a key the window fires with the last
 *   `size` records (fewer until `size` have arrived), as Flink's CountTrigger(slide) with a
 *   CountEvictor(size); records older than the last `size` are let go at once.
 * Event time plays no part in which records meet: out-of-order records count in the order
 * they arrive. A window that has not reached its count at the end of input never fires (as
 * in Flink, where a GlobalWindow only fires through its trigger).
 *
 * Each result carries the largest event timestamp among the window's records (none if they
 * had none). Flink stamps it with GlobalWindow's maxTimestamp, Long.MAX_VALUE, which puts
 * every result of a count window past every later event-time window; weir does not.
 *
 * State per key is one value state: for tumbling windows [count, accumulator, max timestamp],
 * so reduce and aggregate run incrementally; for sliding windows the last records with their
 * timestamps and the count since the last firing, and reduce/aggregate run over them when
 * the window fires (Flink's evicting window operator does the same).
 */
import type { Collector, ProcessWindowFunction, WindowContext } from '../../core/functions.ts';
import type { OutputTag } from '../../core/output-tag.ts';
import { ValueStateDescriptor, type ValueState } from '../../core/state.ts';
import { GLOBAL_WINDOW, type GlobalWindow } from '../../core/windows.ts';
import { NO_TIMESTAMP, type Batch } from '../../core/batch.ts';
import type { KeySelectorFn } from '../../core/partitioning.ts';
import { copyValue } from '../../core/copy.ts';
import { checkCombined, collectReturned } from './basic.ts';
import { KeyedOperator } from './keyed.ts';
import type { WindowContents } from './window.ts';
import { checkStateLayout } from './state-layout.ts';
import type { InlineOperatorState } from '../../core/checkpoint-format.ts';

export interface CountWindowSpec {
  readonly size: number;
  /** Sliding windows only. */
  readonly slide: number | undefined;
  readonly contents: WindowContents;
  readonly windowFunction: ProcessWindowFunction<any, any, any, GlobalWindow> | undefined;
}

/** Tumbling: [records so far, accumulator, largest timestamp]. */
type Tumbling = [n: number, acc: unknown, maxTs: number];
/** Sliding: [records since the last firing, last `size` records as [ts, value]]. */
type Sliding = [sinceFire: number, records: [number, unknown][]];

const STATE = new ValueStateDescriptor<Tumbling | Sliding>('__count_window');

export class CountWindowOperator extends KeyedOperator {
  private state!: ValueState<Tumbling | Sliding>;
  private readonly collector: Collector<unknown>;
  private readonly windowCtx: WindowContext<GlobalWindow>;
  private outTs = NO_TIMESTAMP;

  constructor(private readonly spec: CountWindowSpec) {
    super();
    if (!Number.isInteger(spec.size) || spec.size < 1) throw new RangeError(`countWindow size must be a positive integer, got ${String(spec.size)}`);
    if (spec.slide !== undefined && (!Number.isInteger(spec.slide) || spec.slide < 1)) {
      throw new RangeError(`countWindow slide must be a positive integer, got ${String(spec.slide)}`);
    }
    if (spec.contents.kind === 'cogroup') throw new TypeError('count windows have one input');
    this.userFunction = spec.windowFunction;
    this.collector = { collect: (v: unknown) => this.output.emit(v, this.outTs) };
    const op = this;
    this.windowCtx = {
      window: GLOBAL_WINDOW,
      currentWatermark: () => op.currentWatermark,
      currentProcessingTime: () => op.env.clock.now(),
      output<X>(tag: OutputTag<X>, value: X) {
        op.output.emitSide(tag.id, value, op.outTs);
      },
    };
  }

  /** A count window's state: [count, accumulator, ts] when tumbling, its last records when sliding (state-layout.ts). */
  private stateLayout(): string {
    return `${this.spec.slide === undefined ? 'tumbling' : 'sliding'} count windows holding ${this.spec.contents.kind} contents`;
  }

  override restoreInline(state: InlineOperatorState): void {
    super.restoreInline(state);
    checkStateLayout(this.env.taskInfo.operatorName, state.stateLayout, this.stateLayout());
  }

  override snapshotInline(checkpointId: number): InlineOperatorState | undefined {
    return { ...super.snapshotInline(checkpointId), stateLayout: this.stateLayout() };
  }

  protected override userFunctionContext(): unknown {
    return this.runtimeContext();
  }

  protected override setUp(): void {
    super.setUp();
    this.state = this.backend.getValueState(STATE);
  }

  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    const kgs = this.keyGroupsOf(batch);
    const sel = this.env.keySelectors[0] as KeySelectorFn;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        this.keyFrom(sel, values[i], kgs, i);
        if (this.spec.slide === undefined) this.addTumbling(values[i], timestamps[i]!);
        else this.addSliding(values[i], timestamps[i]!, this.spec.slide);
      }
    } catch (e) {
      throw this.failOn(e, 'count window', values[i]);
    }
  }

  private addTumbling(v: unknown, ts: number): void {
    const s = this.state.value() as Tumbling | undefined;
    let n: number;
    let acc: unknown;
    let maxTs: number;
    if (s === undefined) {
      n = 1;
      acc = this.initial(v);
      maxTs = ts;
    } else {
      n = s[0] + 1;
      acc = this.accumulate(s[1], v);
      maxTs = ts > s[2] ? ts : s[2];
    }
    if (n >= this.spec.size) {
      this.state.clear();
      this.fire(acc, maxTs);
    } else if (s === undefined) {
      this.state.update([n, acc, maxTs]);
    } else {
      // The read above released the key group from a snapshot in progress: change in place.
      s[0] = n;
      s[1] = acc;
      s[2] = maxTs;
      this.changedInPlace(this.state, s);
    }
  }

  private addSliding(v: unknown, ts: number, slide: number): void {
    let s = this.state.value() as Sliding | undefined;
    if (s === undefined) {
      s = [0, []];
      this.state.update(s);
    }
    const records = s[1];
    records.push([ts, v]);
    if (records.length > this.spec.size) records.shift();
    const fires = ++s[0] >= slide;
    if (fires) s[0] = 0;
    // Every change to s made, then told once.
    this.changedInPlace(this.state, s);
    if (!fires) return;
    let acc: unknown;
    let maxTs = NO_TIMESTAMP;
    for (let j = 0; j < records.length; j++) {
      const [t, x] = records[j]!;
      // A reduce may change its first argument in place: begin on a copy of the buffered
      // record, which later firings read again (object reuse or not).
      acc = j === 0 ? this.initial(x, true) : this.accumulate(acc, x);
      if (t > maxTs) maxTs = t;
    }
    this.fire(acc, maxTs);
  }

  /** The first record's accumulator; a reduce's is the record itself, copied unless object reuse is on (or always, when `buffered`). */
  private initial(v: unknown, buffered = false): unknown {
    const c = this.spec.contents;
    if (c.kind === 'reduce') return buffered && v !== null && typeof v === 'object' ? copyValue(v) : this.detached(v);
    if (c.kind === 'aggregate') return checkCombined(c.aggregate.add(v, c.aggregate.createAccumulator()), 'aggregate');
    return [v];
  }

  private accumulate(acc: unknown, v: unknown): unknown {
    const c = this.spec.contents;
    if (c.kind === 'reduce') return checkCombined(c.reduce(acc, v), 'reduce');
    if (c.kind === 'aggregate') return checkCombined(c.aggregate.add(v, acc), 'aggregate');
    (acc as unknown[]).push(v);
    return acc;
  }

  private fire(acc: unknown, maxTs: number): void {
    this.outTs = maxTs;
    const c = this.spec.contents;
    const result = c.kind === 'aggregate' ? c.aggregate.getResult(acc) : acc;
    const f = this.spec.windowFunction;
    if (f === undefined) {
      this.output.emit(result, maxTs);
      return;
    }
    const elements = c.kind === 'list' ? (result as unknown[]) : [result];
    const r = f.process(this.backend.ctx.originalKey, this.windowCtx, elements, this.collector);
    if (r !== undefined) collectReturned(r, this.collector, 'process');
  }
}
