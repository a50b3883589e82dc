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
 * With two inputs (window join and coGroup, Flink's CoGroupedStreams) the operator keys each
 * input by its own key selector and keeps, per key and window, the records of each input in
 * arrival order (contents 'cogroup'; merged sessions' lists are joined in session-start
 * order); the window function gets both lists.
 * Contents are stored per key as a small array of [start, end, accumulator] (a key has only
 * a few open windows at a time, so a scan beats a map), in one value state, so snapshots and
 * rescaling handle them like any keyed state. Windows of one key never share a start
 * (sessions of a key never overlap after merging).
 */
import type { AggregateFunction, Collector, ProcessWindowFunction, WindowContext } from '../../core/functions.ts';
import type { OutputTag } from '../../core/output-tag.ts';
import { ValueStateDescriptor, type ValueState } from '../../core/state.ts';
import { maxTimestamp, windowStart, type TimeWindow, type WindowAssigner } from '../../core/windows.ts';
import { denormalizeKey as denormalize, type NormKey } from '../../state/key-groups.ts';
import type { Batch } from '../../core/batch.ts';
import type { Timer } from '../timers.ts';
import { MAX_WATERMARK } from '../events.ts';
import type { KeySelectorFn } from '../../core/partitioning.ts';
import { KeyedOperator } from './keyed.ts';
import { checkCombined, collectReturned } from './basic.ts';
import { PANE_STATE_PREFIX, PaneWindows } from './window-panes.ts';
import { checkStateLayout } from './state-layout.ts';
import type { InlineOperatorState } from '../../core/checkpoint-format.ts';

/** How a window's contents are kept: a running reduce, an aggregate accumulator, or all elements. */
export type WindowContents =
  | { readonly kind: 'reduce'; readonly reduce: (a: any, b: any) => unknown }
  | { readonly kind: 'aggregate'; readonly aggregate: AggregateFunction<any, any, any> }
  | { readonly kind: 'list' }
  /** Two inputs: the records of each, [first[], second[]]; the window function gets that pair. */
  | { readonly kind: 'cogroup' };

export interface WindowOperatorSpec {
  readonly assigner: WindowAssigner;
  readonly contents: WindowContents;
  /** Applied when the window fires; without one the reduce result or aggregate result is emitted. */
  readonly windowFunction: ProcessWindowFunction<any, any, any> | undefined;
  readonly allowedLateness: number;
  readonly lateDataTag: OutputTag<any> | undefined;
}

type Entry = [start: number, end: number, acc: unknown];

const WINDOWS = new ValueStateDescriptor<Entry[]>('__windows');

function find(list: Entry[] | undefined, start: number): Entry | undefined {
  if (list === undefined) return undefined;
  for (let i = list.length - 1; i >= 0; i--) if (list[i]![0] === start) return list[i];
  return undefined;
}

/**
 * Event-time tumbling and sliding windows keep their state window-major: one value state per
 * open window (key -> accumulator, per key group like any keyed state), and a sorted list of
 * open windows instead of a timer per key and window. A watermark fires a whole window at
 * once, key group by key group. Snapshots and rescaling see ordinary keyed states named
 * "__w<start>"; a restore rebuilds the list from them.
 */
interface OpenWindow {
  readonly start: number;
  readonly end: number;
  /** The window's accumulator per key. */
  readonly state: ValueState<unknown>;
  readonly name: string;
  fired: boolean;
}

const WINDOW_STATE_PREFIX = '__w';

/** The window or pane start in a state name "<prefix><start>", or undefined for other states ("__windows"). */
function startIn(name: string, prefix: string): number | undefined {
  if (!name.startsWith(prefix)) return undefined;
  const rest = name.slice(prefix.length);
  const start = Number(rest);
  return rest !== '' && Number.isSafeInteger(start) ? start : undefined;
}

/**
 * How the operator's windows are kept (state-layout.ts): window-major windows by their start,
 * so their size, slide and offset; windows kept per key carry their own bounds, so only the
 * time domain. And what a window holds, by the kind of window function.
 */
export function windowStateLayout(a: WindowAssigner, contents: WindowContents['kind']): string {
  if (a.eventTime && a.kind !== 'session') {
    const every = a.kind === 'sliding' ? ` every ${a.slide} ms` : '';
    return `event-time ${a.kind} windows of ${a.size} ms${every} (offset ${a.offset} ms) holding ${contents} contents`;
  }
  return `${a.eventTime ? 'event' : 'processing'}-time windows kept per key holding ${contents} contents`;
}

export class WindowOperator extends KeyedOperator {
  private windows!: ValueState<Entry[]>;
  private readonly starts: number[] = [];
  private readonly windowCtx: WindowCtx;
  private readonly collector: Collector<unknown>;
  private outTs = 0;
  /** Records dropped because they were late and no late-data output was set. */
  numLateRecordsDropped = 0;

  private readonly eventTime: boolean;
  private readonly allowedLateness: number;
  /** Window-major mode (event-time tumbling or sliding windows). */
  private readonly major: boolean;
  private readonly openWindows = new Map<number, OpenWindow>();
  /** Starts of open windows, ascending. */
  private readonly openStarts: number[] = [];
  /** The window the last record went to (window-major mode). */
  private lastWindow: OpenWindow | undefined;
  /**
   * Sliding windows (window-major): the open windows of the pane (slide) the last record fell
   * in, index k holding the window that starts k slides before the pane; the records of one
   * pane, mostly consecutive, reach their size/slide windows without a map lookup each.
   * Emptied whenever a window is dropped, so it holds on to none (a dropped window is late for
   * every later record, and skipped as such before the cache is consulted).
   */
  private paneStart = Number.NaN;
  private readonly paneWindows: (OpenWindow | undefined)[] = [];
  /** The input the current record came from (0 or 1; cogroup contents keep them apart). */
  private side = 0;
  /** Sliding event-time windows of a mergeable aggregate with a primitive accumulator: kept as panes (window-panes.ts). */
  private panes: PaneWindows | undefined;

  constructor(private readonly spec: WindowOperatorSpec) {
    super();
    this.eventTime = spec.assigner.eventTime;
    this.allowedLateness = spec.allowedLateness;
    this.major = spec.assigner.eventTime && spec.assigner.kind !== 'session';
    this.userFunction = spec.windowFunction;
    this.windowCtx = new WindowCtx(this);
    this.collector = { collect: (v: unknown) => this.output.emit(v, this.outTs) };
    if (spec.assigner.kind === 'session' && spec.contents.kind === 'aggregate' && typeof spec.contents.aggregate.merge !== 'function') {
      throw new TypeError('session windows with aggregate() need an AggregateFunction with a merge(a, b) method');
    }
  }

  override restoreInline(state: InlineOperatorState): void {
    super.restoreInline(state);
    checkStateLayout(this.env.taskInfo.operatorName, state.stateLayout, windowStateLayout(this.spec.assigner, this.spec.contents.kind));
  }

  override snapshotInline(checkpointId: number): InlineOperatorState | undefined {
    return { ...super.snapshotInline(checkpointId), stateLayout: windowStateLayout(this.spec.assigner, this.spec.contents.kind) };
  }

  /** Window functions open with the plain runtime context (their keyed state is per window, through the context). */
  protected override userFunctionContext(): unknown {
    return this.runtimeContext();
  }

  protected override setUp(): void {
    super.setUp();
    this.windows = this.backend.getValueState(WINDOWS);
    if (this.major) this.restoreMajor(this.backend.restoredStateNames());
  }

  /**
   * Windows restored from a snapshot come back as states named __w<start> (window-major) or
   * __p<start> (panes). Sliding windows that qualify are kept as panes, unless the snapshot
   * holds them as whole windows (taken before panes existed): those stay whole windows.
   */
  private restoreMajor(restored: readonly string[]): void {
    const a = this.spec.assigner;
    const c = this.spec.contents;
    const windowNames = restored.filter((n) => startIn(n, WINDOW_STATE_PREFIX) !== undefined);
    const paneNames = restored.filter((n) => startIn(n, PANE_STATE_PREFIX) !== undefined);
    const agg = c.kind === 'aggregate' ? c.aggregate : undefined;
    if (a.kind === 'sliding' && windowNames.length === 0 && PaneWindows.eligible(a, agg)) {
      const owner = {
        backend: this.backend,
        watermark: () => this.currentWatermark,
        fire: (window: TimeWindow, acc: unknown) => this.fireIn(window, acc),
        late: (v: unknown, ts: number) => this.late(v, ts),
      };
      this.panes = new PaneWindows(owner, agg!, a.size, a.slide, a.offset, this.allowedLateness);
      this.panes.restore(paneNames);
      return;
    }
    if (paneNames.length > 0) {
      throw new Error(`the snapshot keeps this sliding window's contents as panes (${paneNames[0]}), which need an AggregateFunction with merge(), commutative: true and a number, bigint, string or boolean accumulator, as the job that took it had`);
    }
    const size = (a as { size: number }).size;
    for (const name of windowNames) {
      const start = startIn(name, WINDOW_STATE_PREFIX)!;
      this.window(start, start + size);
    }
  }

  processBatch(batch: Batch, input: number): void {
    const { values, timestamps } = batch;
    const kgs = this.keyGroupsOf(batch);
    const sel = this.env.keySelectors[input] as KeySelectorFn;
    this.side = input;
    const a = this.spec.assigner;
    if (this.major && a.kind === 'tumbling') {
      this.tumblingMajorBatch(batch, sel, a.size, a.offset);
      return;
    }
    const eventTime = a.eventTime;
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
        this.keyFrom(sel, v, kgs, i);
        if (this.spec.assigner.kind === 'session') this.addToSession(v, ts);
        else this.addToFixed(v, ts);
      }
    } catch (e) {
      throw this.failOn(e, 'window', values[i]);
    }
  }

  /**
   * Event-time tumbling windows, window-major (the common windowed job): the per-record path
   * of addToTumbling in one loop, so that V8 inlines more of it than through four calls.
   */
  private tumblingMajorBatch(batch: Batch, sel: KeySelectorFn, size: number, offset: number): void {
    const { values, timestamps } = batch;
    const kgs = this.keyGroupsOf(batch);
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const v = values[i];
        const ts = timestamps[i]!;
        if (ts === Number.NEGATIVE_INFINITY) {
          throw new Error('record has no event timestamp; call assignTimestampsAndWatermarks(...) before an event-time window');
        }
        this.keyFrom(sel, v, kgs, i);
        const start = windowStart(ts, offset, size);
        if (start + size - 1 + this.allowedLateness <= this.currentWatermark) {
          this.late(v, ts);
          continue;
        }
        const last = this.lastWindow;
        this.addTo(last !== undefined && last.start === start ? last : this.window(start, start + size), v);
      }
    } catch (e) {
      throw this.failOn(e, 'window', values[i]);
    }
  }

  private isLate(maxTs: number): boolean {
    return this.eventTime && maxTs + this.allowedLateness <= this.currentWatermark;
  }

  /** The open window starting at `start`, created (and its state registered) on first use. */
  private window(start: number, end: number): OpenWindow {
    // Consecutive records mostly fall into the same window: skip the map lookup for them.
    const last = this.lastWindow;
    if (last !== undefined && last.start === start) return last;
    let w = this.openWindows.get(start);
    if (w === undefined) {
      const name = WINDOW_STATE_PREFIX + start;
      const state = this.backend.getValueState(new ValueStateDescriptor<unknown>(name));
      // Windows mostly see the same keys: the newest open window's sizes are the best guess.
      const newest = this.openStarts.length === 0 ? undefined : this.openWindows.get(this.openStarts[this.openStarts.length - 1]!);
      if (newest !== undefined) this.backend.presizeLike?.(name, newest.name);
      // A window opened after the watermark passed its end (allowed lateness) counts as fired:
      // each of its records fires it for its key at once, as the default trigger does.
      w = { start, end, state, name, fired: end - 1 <= this.currentWatermark };
      this.openWindows.set(start, w);
      const starts = this.openStarts;
      let at = starts.length;
      while (at > 0 && starts[at - 1]! > start) at--;
      starts.splice(at, 0, start);
    }
    this.lastWindow = w;
    return w;
  }

  /** Window-major: add a record to one window of the current key. */
  private addMajor(v: unknown, start: number, end: number): void {
    this.addTo(this.window(start, end), v);
  }

  /** Window-major: add a record to open window `w` for the current key. */
  private addTo(w: OpenWindow, v: unknown): void {
    const { start, end } = w;
    // Reading the accumulator first releases its key group from a snapshot in progress, so
    // accumulating in place below never reaches the snapshot.
    const acc = w.state.value();
    const next = acc === undefined ? this.initial(v) : this.accumulate(acc, v);
    // update(undefined) clears. The same object, changed in place by accumulate() (list
    // contents, an aggregate that returns its accumulator): see changedInPlace.
    if (next !== acc) w.state.update(next);
    else this.changedInPlace(w.state, next);
    // A window that already fired (allowed lateness) fires again for this key.
    if (w.fired) this.fire(start, end, next);
  }

  /** Window-major: fire and drop whole windows as the watermark passes them. */
  private advanceWindows(watermark: number): void {
    const starts = this.openStarts;
    let i = 0;
    while (i < starts.length) {
      const w = this.openWindows.get(starts[i]!)!;
      if (w.end - 1 > watermark) break;
      if (!w.fired) {
        w.fired = true;
        this.fireAll(w);
      }
      if (w.end - 1 + this.allowedLateness <= watermark) {
        this.backend.dropState(w.name);
        this.openWindows.delete(w.start);
        if (this.lastWindow === w) this.lastWindow = undefined;
        this.paneStart = Number.NaN;
        this.paneWindows.length = 0;
        starts.splice(i, 1);
      } else {
        i++;
      }
    }
  }

  /**
   * Fires window `w` for every key that has contents in it, key group by key group. Where the
   * backend can (visitGroup), a group's keys and accumulators are read in one pass over its
   * table, not through a lookup per key; an accumulator that is an object is still read through
   * the state (value() notes it for incremental checkpoints, as user code may change it in place).
   * Every key's firing gets the same window object, as Flink hands out one window per namespace.
   */
  private fireAll(w: OpenWindow): void {
    const backend = this.backend;
    const { start, end } = backend.keyGroupRange;
    const window: TimeWindow = { start: w.start, end: w.end };
    const keys = this.firingKeys;
    const accs = this.firingAccs;
    for (let kg = start; kg <= end; kg++) {
      if (backend.visitGroup?.(w.name, kg, this.takeFiring) !== true) {
        for (const key of backend.keysInGroup(w.name, kg)) {
          backend.setCurrentNormalizedKey(key, kg, denormalize(key));
          this.fireIn(window, w.state.value());
        }
        continue;
      }
      // Taken whole before any firing: visitGroup's table must not change while it is read.
      const n = keys.length;
      try {
        for (let i = 0; i < n; i++) {
          const key = keys[i]!;
          const acc = accs[i];
          backend.setCurrentNormalizedKey(key, kg, denormalize(key));
          this.fireIn(window, typeof acc === 'object' && acc !== null ? w.state.value() : acc);
        }
      } finally {
        keys.length = 0;
        accs.length = 0;
      }
    }
  }

  /** One key group's keys and accumulators of the window firing (fireAll), in table order. */
  private readonly firingKeys: NormKey[] = [];
  private readonly firingAccs: unknown[] = [];
  private readonly takeFiring = (acc: unknown, key: NormKey): void => {
    this.firingKeys.push(key);
    this.firingAccs.push(acc);
  };

  protected override onWatermark(timestamp: number): void {
    // The end of event time: processing-time windows still open fire before it goes downstream,
    // where an event-time operator would otherwise take their results, emitted at finish(), as late.
    if (timestamp >= MAX_WATERMARK && !this.spec.assigner.eventTime) this.flushProcessingTimeWindows();
    if (this.major) {
      // The end of event time passes every window, also those ending past MAX_WATERMARK
      // (Number.MAX_SAFE_INTEGER), as the timer service fires every timer then.
      const wm = timestamp >= MAX_WATERMARK ? Number.POSITIVE_INFINITY : timestamp;
      try {
        if (this.panes !== undefined) this.panes.advance(wm);
        else this.advanceWindows(wm);
      } catch (e) {
        throw this.fail(e, 'window');
      }
    }
    super.onWatermark(timestamp);
  }

  /** Tumbling windows kept per key (processing time; event time is window-major, tumblingMajorBatch). */
  private addToTumbling(v: unknown, ts: number, size: number, offset: number): void {
    const start = windowStart(ts, offset, size);
    const end = start + size;
    if (this.isLate(end - 1)) {
      this.late(v, ts);
      return;
    }
    const list = this.windows.value();
    let entry = find(list, start);
    if (entry === undefined) {
      entry = [start, end, this.initial(v)];
      if (list === undefined) this.windows.update([entry]);
      else {
        list.push(entry);
        this.changedInPlace(this.windows, list);
      }
      this.registerTimers(start, end);
    } else {
      entry[2] = this.accumulate(entry[2], v);
      this.changedInPlace(this.windows, list!);
    }
    if (this.eventTime && end - 1 <= this.currentWatermark) this.fire(start, end, entry[2]);
  }

  private addToFixed(v: unknown, ts: number): void {
    const a = this.spec.assigner;
    if (a.kind === 'tumbling') {
      this.addToTumbling(v, ts, a.size, a.offset);
      return;
    }
    if (this.panes !== undefined) {
      this.panes.add(v, ts);
      return;
    }
    if (this.major && a.kind === 'sliding') {
      this.addToSlidingMajor(v, ts, a.size, a.slide, a.offset);
      return;
    }
    const starts = this.starts;
    starts.length = 0;
    let size: number;
    if (a.kind === 'sliding') {
      size = a.size;
      const last = windowStart(ts, a.offset, a.slide);
      for (let s = last; s > ts - a.size; s -= a.slide) starts.push(s);
    } else {
      throw new Error('unreachable');
    }
    if (this.major) {
      let skippedMajor = true;
      for (const start of starts) {
        if (this.isLate(start + size - 1)) continue;
        skippedMajor = false;
        this.addMajor(v, start, start + size);
      }
      if (skippedMajor) this.late(v, ts);
      return;
    }
    let skipped = true;
    // One state read per record; entries are updated in place (the read released the key
    // group from any snapshot in progress, so the snapshot is not affected).
    let list = this.windows.value();
    for (const start of starts) {
      const end = start + size;
      if (this.isLate(end - 1)) continue;
      skipped = false;
      let entry = find(list, start);
      if (entry === undefined) {
        entry = [start, end, this.initial(v)];
        if (list === undefined) {
          list = [entry];
          this.windows.update(list);
        } else {
          list.push(entry);
        }
        this.registerTimers(start, end);
      } else {
        entry[2] = this.accumulate(entry[2], v);
      }
      // Default triggers: a window whose time has passed fires again for each late record.
      if (a.eventTime && end - 1 <= this.currentWatermark) this.fire(start, end, entry[2]);
    }
    if (skipped) this.late(v, ts);
    else this.changedInPlace(this.windows, list!);
  }

  /** Sliding windows, window-major: the record joins every window of its pane that is not late. */
  private addToSlidingMajor(v: unknown, ts: number, size: number, slide: number, offset: number): void {
    const pane = windowStart(ts, offset, slide);
    const cache = this.paneWindows;
    if (pane !== this.paneStart) {
      cache.length = 0;
      this.paneStart = pane;
    }
    let joined = false;
    let k = 0;
    for (let start = pane; start > ts - size; start -= slide, k++) {
      if (this.isLate(start + size - 1)) continue;
      joined = true;
      let w = cache[k];
      if (w === undefined) cache[k] = w = this.window(start, start + size);
      this.addTo(w, v);
    }
    if (!joined) this.late(v, ts);
  }

  private addToSession(v: unknown, ts: number): void {
    const gap = (this.spec.assigner as { gap: number }).gap;
    let start = ts;
    let end = ts + gap;
    // Every session of this key that overlaps or touches [start, end) merges with it: counted
    // and spanned here without building lists, as most records meet exactly one session.
    const list = this.windows.value();
    let hits = 0;
    let hit = -1;
    if (list !== undefined) {
      for (let i = 0; i < list.length; i++) {
        const e = list[i]!;
        if (e[0] <= end && e[1] >= start) {
          hits++;
          hit = i;
          if (e[0] < start) start = e[0];
          if (e[1] > end) end = e[1];
        }
      }
    }
    if (this.isLate(end - 1)) {
      this.late(v, ts);
      return;
    }
    if (hits === 1 && list![hit]![0] === start && this.triggerPending(list![hit]![1])) {
      // The record falls into one session and keeps its start (the common case): that session
      // grows in place. Its timers stay where they are: the one at its old end - 1 is still to
      // come (triggerPending), and when it fires, onTimer moves them on to the end as it is then,
      // instead of deleting and registering two timers for every record that extends a session.
      const e = list![hit]!;
      e[1] = end;
      e[2] = this.accumulate(e[2], v);
      this.changedInPlace(this.windows, list!);
      if (this.spec.assigner.eventTime && end - 1 <= this.currentWatermark) this.fire(start, end, e[2]);
      return;
    }
    let acc: unknown = undefined;
    let kept: Entry[];
    if (hits === 0) {
      acc = this.initial(v);
      kept = list ?? [];
    } else {
      const merged = list!.filter((e) => e[0] <= end && e[1] >= start);
      merged.sort((x, y) => x[0] - y[0]);
      let has = false;
      for (const e of merged) {
        this.deleteTimers(e[0], e[1]);
        acc = has ? this.mergeAcc(acc, e[2]) : e[2];
        has = true;
      }
      acc = this.accumulate(acc, v);
      kept = list!.filter((e) => !merged.includes(e));
    }
    kept.push([start, end, acc]);
    this.windows.update(kept);
    this.registerTimers(start, end);
    if (this.spec.assigner.eventTime && end - 1 <= this.currentWatermark) this.fire(start, end, acc);
  }

  /**
   * Whether a window ending at `end` still has its firing timer to come: in event time while
   * the watermark has not reached end - 1; in processing time always, as the window is dropped
   * when that timer fires.
   */
  private triggerPending(end: number): boolean {
    return !this.spec.assigner.eventTime || end - 1 > this.currentWatermark;
  }

  /**
   * A record no window took. As Flink's WindowOperator, it counts as late (late-data output, or
   * numLateRecordsDropped) only when it is: event time, and its own timestamp plus the allowed
   * lateness at or behind the watermark. Otherwise it fell between windows (a sliding window
   * smaller than its slide) and is dropped quietly; before, it went to the late-data output,
   * from processing-time windows with the processing time as its timestamp.
   */
  private late(v: unknown, ts: number): void {
    if (!(this.eventTime && ts + this.allowedLateness <= this.currentWatermark)) return;
    if (this.spec.lateDataTag !== undefined) this.output.emitSide(this.spec.lateDataTag.id, v, ts);
    else this.numLateRecordsDropped++;
  }

  private initial(v: unknown): unknown {
    const c = this.spec.contents;
    // A copy (object reuse off): a reducer updating its accumulator in place must not change the
    // record, which a sibling consumer or another window (sliding) holds too.
    if (c.kind === 'reduce') return this.detached(v);
    if (c.kind === 'aggregate') return checkCombined(c.aggregate.add(v, c.aggregate.createAccumulator()), 'aggregate');
    if (c.kind === 'cogroup') return this.side === 0 ? [[v], []] : [[], [v]];
    return [v];
  }

  private accumulate(acc: unknown, v: unknown): unknown {
    const c = this.spec.contents;
    if (c.kind === 'reduce') return checkCombined(c.reduce(acc, v), 'reduce');
    if (c.kind === 'aggregate') return checkCombined(c.aggregate.add(v, acc), 'aggregate');
    if (c.kind === 'cogroup') {
      (acc as unknown[][])[this.side]!.push(v);
      return acc;
    }
    (acc as unknown[]).push(v);
    return acc;
  }

  private mergeAcc(a: unknown, b: unknown): unknown {
    const c = this.spec.contents;
    if (c.kind === 'reduce') return c.reduce(a, b);
    if (c.kind === 'aggregate') return c.aggregate.merge!(a, b);
    if (c.kind === 'cogroup') {
      const [a1, a2] = a as unknown[][];
      const [b1, b2] = b as unknown[][];
      return [a1!.concat(b1!), a2!.concat(b2!)];
    }
    return (a as unknown[]).concat(b as unknown[]);
  }

  private cleanupTime(end: number): number {
    return this.spec.assigner.eventTime ? end - 1 + this.spec.allowedLateness : end - 1;
  }

  private registerTimers(start: number, end: number): void {
    if (this.spec.assigner.eventTime) {
      // A window already past the watermark fires on each record instead (see addToFixed).
      if (end - 1 > this.currentWatermark) this.timers.registerEventTimeTimer(start, end - 1);
      const cleanup = this.cleanupTime(end);
      if (cleanup !== end - 1 || end - 1 <= this.currentWatermark) this.timers.registerEventTimeTimer(start, cleanup);
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
    const list = this.windows.value();
    const entry = find(list, start);
    if (entry === undefined) return;
    const end = entry[1];
    if (timer.timestamp === end - 1) this.fire(start, end, entry[2]);
    if (timer.timestamp === this.cleanupTime(end)) this.drop(list!, entry);
    // A session that grew in place after this timer was set (addToSession): its timers move on
    // to its end as it is now. Registered whatever the watermark (a time already passed fires
    // later in this same pass); registering keeps one timer per time, so repeats are harmless.
    else if (timer.timestamp < end - 1) this.moveTimers(start, end);
  }

  private moveTimers(start: number, end: number): void {
    if (this.spec.assigner.eventTime) {
      this.timers.registerEventTimeTimer(start, end - 1);
      const cleanup = this.cleanupTime(end);
      if (cleanup !== end - 1) this.timers.registerEventTimeTimer(start, cleanup);
    } else {
      this.timers.registerProcessingTimeTimer(start, end - 1);
    }
  }

  private drop(list: Entry[], entry: Entry): void {
    const i = list.indexOf(entry);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.windows.clear();
    else this.changedInPlace(this.windows, list);
  }

  private fire(start: number, end: number, acc: unknown): void {
    this.fireIn({ start, end }, acc);
  }

  /** Fires `window` for the current key with its contents `acc`. */
  private fireIn(window: TimeWindow, acc: unknown): void {
    this.outTs = maxTimestamp(window);
    const c = this.spec.contents;
    const f = this.spec.windowFunction;
    const key = this.backend.ctx.originalKey;
    if (f === undefined) {
      this.output.emit(this.result(acc), this.outTs);
      return;
    }
    // The function gets a copy of the element list, not the live state array: a window that
    // re-fires (allowed lateness) appends to that array, which would otherwise change results
    // already emitted from an earlier firing (records pass by reference within a thread).
    const elements = c.kind === 'list' ? (acc as unknown[]).slice()
      : c.kind === 'cogroup' ? [[(acc as unknown[][])[0]!.slice(), (acc as unknown[][])[1]!.slice()]]
      : [this.result(acc)];
    this.windowCtx.window = window;
    const r = f.process(key, this.windowCtx, elements, this.collector);
    if (r !== undefined) collectReturned(r, this.collector, 'process');
  }

  /**
   * The reduce or aggregate result of a firing. With allowed lateness the accumulator lives
   * on after firing and later records may update it in place: a copy is emitted (unless
   * object reuse is on), as Flink emits copies.
   */
  private result(acc: unknown): unknown {
    const c = this.spec.contents;
    const r = c.kind === 'aggregate' ? c.aggregate.getResult(acc) : acc;
    return this.eventTime && this.allowedLateness > 0 ? this.detached(r) : r;
  }

  /** Processing-time windows still open at the end of input fire now, so a bounded job loses nothing. */
  override finish(): void {
    if (!this.spec.assigner.eventTime) this.flushProcessingTimeWindows();
    super.finish();
  }

  /** Fires and drops every open processing-time window, earliest first. */
  private flushProcessingTimeWindows(): void {
    const pending: { key: string | number; kg: number; start: number }[] = [];
    for (const { key, keyGroup } of this.backend.keys(WINDOWS.name)) {
      this.backend.setCurrentNormalizedKey(key, keyGroup, undefined);
      for (const e of this.windows.value() ?? []) pending.push({ key, kg: keyGroup, start: e[0] });
    }
    pending.sort((a, b) => a.start - b.start);
    try {
      for (const p of pending) {
        this.backend.setCurrentNormalizedKey(p.key, p.kg, denormalize(p.key));
        const list = this.windows.value();
        const entry = find(list, p.start);
        if (entry === undefined) continue;
        this.fire(p.start, entry[1], entry[2]);
        this.drop(list!, entry);
      }
    } catch (e) {
      throw this.fail(e, 'window (end of input)');
    }
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
