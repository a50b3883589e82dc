/**
 * Sliding event-time windows kept as panes: slices of one slide each, per key. A record
 * updates the one pane it falls in, not every window that holds it (size / slide of them: 5
 * for Nexmark q5's 10 s windows sliding by 2 s); a window that fires merges its panes'
 * accumulators per key (Flink SQL's slice sharing for hopping windows). Firing reads each pane
 * once per window, so the work per record falls from size / slide state updates to one, plus
 * (size / slide) x (keys per pane) / (records per pane) reads at firing: a gain whenever keys
 * repeat within a slide (q5: 18,400 bids over 1,280 auctions per 2 s pane).
 *
 * Used only where it cannot change a result: the aggregate has merge() and declares itself
 * commutative (panes merge in time order, not in the records' arrival order, which an
 * order-sensitive aggregate such as "the last record to arrive" tells apart), and its
 * accumulator is a primitive (number, bigint, string, boolean), so merging panes cannot alter
 * a pane that later windows still read; the window size is a whole number of slides. merge()
 * must give what one accumulator of both inputs' records would (as session windows need). Semantics are the window-major path's (Flink's
 * WindowOperator with the default event-time trigger): a window fires when the watermark
 * reaches end - 1, again per late record within the allowed lateness, and is gone past
 * end - 1 + lateness; a record is late when every window it falls in is gone. A pane lives as
 * long as the last window that holds it, the one starting at the pane.
 */
import type { AggregateFunction } from '../../core/functions.ts';
import { ValueStateDescriptor, type ValueState } from '../../core/state.ts';
import { windowStart, type TimeWindow, type WindowAssigner } from '../../core/windows.ts';
import type { KeyedStateBackend } from '../../state/backend.ts';
import { denormalizeKey as denormalize, type NormKey } from '../../state/key-groups.ts';
import { checkCombined } from './basic.ts';

/** Keyed state of one pane: "__p<pane start>" (window-major windows are "__w<start>"). */
export const PANE_STATE_PREFIX = '__p';

/** What the panes need from their window operator. */
export interface PaneOwner {
  readonly backend: KeyedStateBackend;
  watermark(): number;
  /** Emits the result of `window` for the current key (one window object may serve many keys). */
  fire(window: TimeWindow, acc: unknown): void;
  late(value: unknown, ts: number): void;
}

interface Pane {
  readonly start: number;
  readonly name: string;
  /** The pane's accumulator per key. */
  readonly state: ValueState<unknown>;
}

function isPrimitive(v: unknown): boolean {
  const t = typeof v;
  return t === 'number' || t === 'bigint' || t === 'string' || t === 'boolean';
}

export class PaneWindows {
  /** Whether windows of `assigner` aggregated by `agg` can be kept as panes (see the file's comment). */
  static eligible(assigner: WindowAssigner, agg: AggregateFunction<unknown, unknown, unknown> | undefined): boolean {
    if (assigner.kind !== 'sliding' || !assigner.eventTime || assigner.size % assigner.slide !== 0) return false;
    if (agg === undefined || typeof agg.merge !== 'function' || agg.commutative !== true) return false;
    return isPrimitive(agg.createAccumulator());
  }

  private readonly panes = new Map<number, Pane>();
  /** Starts of live panes, ascending. */
  private readonly paneStarts: number[] = [];
  /** Starts of windows with a pane that have not fired yet, ascending, each once. */
  private readonly pending: number[] = [];
  /** The pane the last record went to: records of one slide are mostly consecutive. */
  private lastPane: Pane | undefined;
  private readonly merged = new Map<NormKey, unknown>();
  /** Adds one pane's accumulator of a key to `merged` (fireWindow). */
  private readonly mergeIn = (v: unknown, key: NormKey): void => {
    if (v === undefined) return;
    const a = this.merged.get(key);
    this.merged.set(key, a === undefined ? v : this.agg.merge!(a, v));
  };

  constructor(
    private readonly owner: PaneOwner,
    private readonly agg: AggregateFunction<unknown, unknown, unknown>,
    private readonly size: number,
    private readonly slide: number,
    private readonly offset: number,
    private readonly lateness: number,
  ) {
    if (!(size > 0 && slide > 0 && size % slide === 0)) throw new RangeError(`panes: window size ${size} is not a whole number of slides of ${slide}`);
  }

  /** Panes of a restored snapshot (its states named "__p<start>"), at the restored watermark. */
  restore(names: readonly string[]): void {
    const wm = this.owner.watermark();
    for (const name of names) {
      const start = Number(name.slice(PANE_STATE_PREFIX.length));
      if (name.startsWith(PANE_STATE_PREFIX) && Number.isFinite(start)) this.pane(start, wm);
    }
  }

  /** A record of the current key, with event time `ts`. */
  add(v: unknown, ts: number): void {
    const wm = this.owner.watermark();
    const size = this.size;
    const start = windowStart(ts, this.offset, this.slide);
    // The last window holding the pane starts at the pane: past it, every window is gone.
    if (start + size - 1 + this.lateness <= wm) {
      this.owner.late(v, ts);
      return;
    }
    let p = this.lastPane;
    if (p === undefined || p.start !== start) this.lastPane = p = this.pane(start, wm);
    const acc = p.state.value();
    const agg = this.agg;
    const next = checkCombined(agg.add(v, acc === undefined ? agg.createAccumulator() : acc), 'aggregate');
    if (!isPrimitive(next)) {
      throw new TypeError('a sliding window aggregate whose createAccumulator() returns a primitive must keep it primitive: add() returned an object');
    }
    if (next !== acc) p.state.update(next);
    // The first window holding the pane ends at the pane's end: before that none has fired.
    if (start + this.slide - 1 <= wm) this.fireLate(start, wm);
  }

  /** Fires the windows the watermark reached, then drops the panes no live window holds. */
  advance(wm: number): void {
    const pending = this.pending;
    const size = this.size;
    while (pending.length > 0 && pending[0]! + size - 1 <= wm) this.fireWindow(pending.shift()!);
    const starts = this.paneStarts;
    while (starts.length > 0 && starts[0]! + size - 1 + this.lateness <= wm) {
      const p = this.panes.get(starts.shift()!)!;
      this.panes.delete(p.start);
      this.owner.backend.dropState(p.name);
      if (this.lastPane === p) this.lastPane = undefined;
    }
  }

  /** The live pane starting at `start`, created (with its windows pending) on first use. */
  private pane(start: number, wm: number): Pane {
    let p = this.panes.get(start);
    if (p !== undefined) return p;
    const name = PANE_STATE_PREFIX + start;
    p = { start, name, state: this.owner.backend.getValueState(new ValueStateDescriptor<unknown>(name)) };
    // Panes mostly see the same keys: sized like the newest live pane (as window-major windows).
    const newest = this.paneStarts.length === 0 ? undefined : this.panes.get(this.paneStarts[this.paneStarts.length - 1]!);
    if (newest !== undefined) this.owner.backend.presizeLike?.(name, newest.name);
    this.panes.set(start, p);
    insertSorted(this.paneStarts, start);
    for (let s = start; s > start - this.size; s -= this.slide) {
      if (s + this.size - 1 > wm) insertSorted(this.pending, s);
    }
    return p;
  }

  /**
   * A record went to a pane some of whose windows already fired and are still within the
   * allowed lateness: each fires again for this key, later windows first, as the window-major
   * path (and Flink's per-window trigger) does.
   */
  private fireLate(pane: number, wm: number): void {
    const size = this.size;
    for (let s = pane; s > pane - size; s -= this.slide) {
      if (s + size - 1 <= wm && s + size - 1 + this.lateness > wm) this.owner.fire({ start: s, end: s + size }, this.mergeCurrentKey(s));
    }
  }

  /** The current key's accumulator over the panes of window [s, s + size). */
  private mergeCurrentKey(s: number): unknown {
    let acc: unknown;
    for (let q = s; q < s + this.size; q += this.slide) {
      const v = this.panes.get(q)?.state.value();
      if (v !== undefined) acc = acc === undefined ? v : this.agg.merge!(acc, v);
    }
    return acc;
  }

  /** Window [s, s + size): every key of its panes, key group by key group, merged and fired. */
  private fireWindow(s: number): void {
    const panes: Pane[] = [];
    for (let q = s; q < s + this.size; q += this.slide) {
      const p = this.panes.get(q);
      if (p !== undefined) panes.push(p);
    }
    if (panes.length === 0) return;
    const backend = this.owner.backend;
    const merged = this.merged;
    const mergeIn = this.mergeIn;
    const { start, end } = backend.keyGroupRange;
    const window: TimeWindow = { start: s, end: s + this.size };
    for (let kg = start; kg <= end; kg++) {
      merged.clear();
      for (const p of panes) {
        // Panes hold primitives and have no TTL: read as stored where the backend can
        // (visitGroup), not key by key through the current key and a lookup each.
        if (backend.visitGroup?.(p.name, kg, mergeIn) === true) continue;
        for (const key of backend.keysInGroup(p.name, kg)) {
          backend.setCurrentNormalizedKey(key, kg, undefined);
          mergeIn(p.state.value(), key);
        }
      }
      for (const [key, acc] of merged) {
        backend.setCurrentNormalizedKey(key, kg, denormalize(key));
        this.owner.fire(window, acc);
      }
    }
    merged.clear();
  }
}

/** Inserts `x` into ascending `a` unless present (short arrays: the open panes and windows). */
function insertSorted(a: number[], x: number): void {
  let at = a.length;
  while (at > 0 && a[at - 1]! > x) at--;
  if (at > 0 && a[at - 1] === x) return;
  a.splice(at, 0, x);
}
