/**
 * Window operator: assigns records to time windows per key, keeps their contents in keyed
 * state and emits a result when a window fires. Semantics follow Flink's WindowOperator with
 * the default event-time and processing-time triggers:
 * - an event-time window fires when the watermark passes its last timestamp (end - 1), and
 *   again for every late record that arrives within the allowed lateness;
 * - its state is dropped when the watermark passes end - 1 + allowed lateness;
 * - a record all of whose windows are already dropped is late: it goes to the late-data side
 *   output if there is one, else it is counted and dropped;
 * - session windows merge when they overlap or touch.
 * Contents are stored per key as a map from window start to [end, accumulator]; windows of
 * one key never share a start (sessions of a key never overlap after merging).
 */
import type { AggregateFunction, Collector, ProcessWindowFunction, WindowContext } from '../../api/functions.ts';
import type { OutputTag } from '../../api/output-tag.ts';
import { MapStateDescriptor, type MapState } from '../../api/state.ts';
import { maxTimestamp, windowStart, type TimeWindow, type WindowAssigner } from '../../api/windows.ts';
import { denormalizeKey as denormalize } from '../../state/key-groups.ts';
import type { Batch } from '../batch.ts';
import type { Timer } from '../timers.ts';
import type { KeySelectorFn } from './keying.ts';
import { KeyedOperator } from './keyed.ts';
import { callOptional } from './operator.ts';

/** How a window's contents are kept: a running reduce, an aggregate accumulator, or all elements. */
export type WindowContents =
  | { readonly kind: 'reduce'; readonly reduce: (a: any, b: any) => unknown }
  | { readonly kind: 'aggregate'; readonly aggregate: AggregateFunction<any, any, any> }
  | { readonly kind: 'list' };

export interface WindowOperatorSpec {
  readonly assigner: WindowAssigner;
  readonly contents: WindowContents;
  /** Applied when the window fires; without one the reduce result or aggregate result is emitted. */
  readonly windowFunction: ProcessWindowFunction<any, any, any> | undefined;
  readonly allowedLateness: number;
  readonly lateDataTag: OutputTag<any> | undefined;
}

type Entry = [end: number, acc: unknown];

const CONTENTS = new MapStateDescriptor<number, Entry>('__window_contents');

export class WindowOperator extends KeyedOperator {
  private contents!: MapState<number, Entry>;
  private readonly starts: number[] = [];
  private readonly windowCtx: WindowCtx;
  private readonly collector: Collector<unknown>;
  private outTs = 0;
  /** Records dropped because they were late and no late-data output was set. */
  numLateRecordsDropped = 0;

  constructor(private readonly spec: WindowOperatorSpec) {
    super();
    this.windowCtx = new WindowCtx(this);
    this.collector = { collect: (v: unknown) => this.output.emit(v, this.outTs) };
    if (spec.assigner.kind === 'session' && spec.contents.kind === 'aggregate' && typeof spec.contents.aggregate.merge !== 'function') {
      throw new TypeError('session windows with aggregate() need an AggregateFunction with a merge(a, b) method');
    }
  }

  protected override userFunctions(): readonly object[] {
    return this.spec.windowFunction ? [this.spec.windowFunction] : [];
  }

  override open(): void {
    super.open();
    this.contents = this.backend.getMapState(CONTENTS);
    callOptional(this, this.spec.windowFunction, 'open', this.runtimeContext());
  }

  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    const sel = this.env.keySelectors[0] as KeySelectorFn;
    const eventTime = this.spec.assigner.eventTime;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const v = values[i];
        let ts: number;
        if (eventTime) {
          ts = timestamps[i]!;
          if (ts === Number.NEGATIVE_INFINITY) {
            throw new Error('record has no event timestamp; call assignTimestampsAndWatermarks(...) before an event-time window');
          }
        } else {
          ts = this.env.clock.now();
        }
        this.backend.setCurrentKey(sel(v));
        if (this.spec.assigner.kind === 'session') this.addToSession(v, ts);
        else this.addToFixed(v, ts);
      }
    } catch (e) {
      throw this.failOn(e, 'window', values[i]);
    }
  }

  private isLate(maxTs: number): boolean {
    return this.spec.assigner.eventTime && maxTs + this.spec.allowedLateness <= this.currentWatermark;
  }

  private addToFixed(v: unknown, ts: number): void {
    const a = this.spec.assigner;
    const starts = this.starts;
    starts.length = 0;
    let size: number;
    if (a.kind === 'tumbling') {
      size = a.size;
      starts.push(windowStart(ts, a.offset, a.size));
    } else if (a.kind === 'sliding') {
      size = a.size;
      const last = windowStart(ts, a.offset, a.slide);
      for (let s = last; s > ts - a.size; s -= a.slide) starts.push(s);
    } else {
      throw new Error('unreachable');
    }
    let skipped = true;
    for (const start of starts) {
      const end = start + size;
      if (this.isLate(end - 1)) continue;
      skipped = false;
      const entry = this.contents.get(start);
      if (entry === undefined) {
        this.contents.put(start, [end, this.initial(v)]);
        this.registerTimers(start, end);
      } else {
        entry[1] = this.accumulate(entry[1], v);
        this.contents.put(start, entry);
      }
      // Default triggers: a window whose time has passed fires again for each late record.
      if (a.eventTime && end - 1 <= this.currentWatermark) this.fire(start, end, this.contents.get(start)![1]);
    }
    if (skipped) this.late(v, ts);
  }

  private addToSession(v: unknown, ts: number): void {
    const gap = (this.spec.assigner as { gap: number }).gap;
    let start = ts;
    let end = ts + gap;
    // Merge every session of this key that overlaps or touches [start, end).
    const merged: [number, Entry][] = [];
    for (const [s, e] of this.contents.entries()) {
      if (s <= end && e[0] >= start) merged.push([s, e]);
    }
    for (const [s, e] of merged) {
      if (s < start) start = s;
      if (e[0] > end) end = e[0];
    }
    if (this.isLate(end - 1)) {
      this.late(v, ts);
      return;
    }
    merged.sort((x, y) => x[0] - y[0]);
    let acc: unknown = undefined;
    let has = false;
    for (const [s, e] of merged) {
      this.deleteTimers(s, e[0]);
      this.contents.remove(s);
      acc = has ? this.mergeAcc(acc, e[1]) : e[1];
      has = true;
    }
    acc = has ? this.accumulate(acc, v) : this.initial(v);
    this.contents.put(start, [end, acc]);
    this.registerTimers(start, end);
    if (this.spec.assigner.eventTime && end - 1 <= this.currentWatermark) this.fire(start, end, acc);
  }

  private late(v: unknown, ts: number): void {
    if (this.spec.lateDataTag !== undefined) this.output.emitSide(this.spec.lateDataTag.id, v, ts);
    else this.numLateRecordsDropped++;
  }

  private initial(v: unknown): unknown {
    const c = this.spec.contents;
    if (c.kind === 'reduce') return v;
    if (c.kind === 'aggregate') return c.aggregate.add(v, c.aggregate.createAccumulator());
    return [v];
  }

  private accumulate(acc: unknown, v: unknown): unknown {
    const c = this.spec.contents;
    if (c.kind === 'reduce') return c.reduce(acc, v);
    if (c.kind === 'aggregate') return c.aggregate.add(v, acc);
    (acc as unknown[]).push(v);
    return acc;
  }

  private mergeAcc(a: unknown, b: unknown): unknown {
    const c = this.spec.contents;
    if (c.kind === 'reduce') return c.reduce(a, b);
    if (c.kind === 'aggregate') return c.aggregate.merge!(a, b);
    return (a as unknown[]).concat(b as unknown[]);
  }

  private cleanupTime(end: number): number {
    return this.spec.assigner.eventTime ? end - 1 + this.spec.allowedLateness : end - 1;
  }

  private registerTimers(start: number, end: number): void {
    if (this.spec.assigner.eventTime) {
      // A window already past the watermark fires on each record instead (see addToFixed).
      if (end - 1 > this.currentWatermark) this.timers.registerEventTimeTimer(start, end - 1);
      this.timers.registerEventTimeTimer(start, this.cleanupTime(end));
    } else {
      this.timers.registerProcessingTimeTimer(start, end - 1);
    }
  }

  private deleteTimers(start: number, end: number): void {
    if (this.spec.assigner.eventTime) {
      this.timers.deleteEventTimeTimer(start, end - 1);
      this.timers.deleteEventTimeTimer(start, this.cleanupTime(end));
    } else {
      this.timers.deleteProcessingTimeTimer(start, end - 1);
    }
  }

  override onEventTime(timer: Timer): void {
    this.onTimer(timer);
  }

  override onProcessingTime(timer: Timer): void {
    try {
      this.onTimer(timer);
    } catch (e) {
      throw this.fail(e, 'window (processing-time trigger)');
    }
  }

  private onTimer(timer: Timer): void {
    const start = timer.namespace as number;
    const entry = this.contents.get(start);
    if (entry === undefined) return;
    const end = entry[0];
    if (timer.timestamp === end - 1) this.fire(start, end, entry[1]);
    if (timer.timestamp === this.cleanupTime(end)) this.contents.remove(start);
  }

  private fire(start: number, end: number, acc: unknown): void {
    const window: TimeWindow = { start, end };
    this.outTs = maxTimestamp(window);
    const c = this.spec.contents;
    const f = this.spec.windowFunction;
    const key = this.backend.ctx.originalKey;
    // With allowed lateness the window's accumulator lives on after firing and later records
    // may update it in place: emit a copy (unless object reuse is on), as Flink emits copies.
    const lives = this.spec.assigner.eventTime && this.spec.allowedLateness > 0;
    const result = () => {
      const r = c.kind === 'aggregate' ? c.aggregate.getResult(acc) : acc;
      return lives ? this.detached(r) : r;
    };
    if (f === undefined) {
      this.output.emit(result(), this.outTs);
      return;
    }
    // The function gets a copy of the element list, not the live state array: a window that
    // re-fires (allowed lateness) appends to that array, which would otherwise change results
    // already emitted from an earlier firing (records pass by reference within a thread).
    const elements = c.kind === 'list' ? (acc as unknown[]).slice() : [result()];
    this.windowCtx.window = window;
    f.process(key, this.windowCtx, elements, this.collector);
  }

  /** Processing-time windows still open at the end of input fire now, so a bounded job loses nothing. */
  override finish(): void {
    if (this.spec.assigner.eventTime) return;
    const pending: { key: string | number; kg: number; start: number }[] = [];
    for (const { key, keyGroup } of this.backend.keys(CONTENTS.name)) {
      this.backend.setCurrentNormalizedKey(key, keyGroup, undefined);
      for (const start of this.contents.keys()) pending.push({ key, kg: keyGroup, start });
    }
    pending.sort((a, b) => a.start - b.start);
    try {
      for (const p of pending) {
        this.backend.setCurrentNormalizedKey(p.key, p.kg, denormalize(p.key));
        const entry = this.contents.get(p.start);
        if (entry === undefined) continue;
        this.fire(p.start, entry[0], entry[1]);
        this.contents.remove(p.start);
      }
    } catch (e) {
      throw this.fail(e, 'window (end of input)');
    }
  }

  override close(): void {
    super.close();
    callOptional(this, this.spec.windowFunction, 'close');
  }
}

class WindowCtx implements WindowContext {
  window: TimeWindow = { start: 0, end: 0 };
  constructor(private readonly op: WindowOperator) {}
  currentWatermark(): number {
    return this.op.currentWatermark;
  }
  currentProcessingTime(): number {
    return this.op.env.clock.now();
  }
  output<X>(tag: OutputTag<X>, value: X): void {
    this.op.output.emitSide(tag.id, value, maxTimestamp(this.window));
  }
}
