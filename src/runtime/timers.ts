/**
 * Keyed timers: event-time timers fire when the watermark passes them, processing-time
 * timers when the clock does. A timer is (key, namespace, timestamp) and registering the
 * same one twice keeps one, as in Flink.
 *
 * Timers are bucketed by timestamp (many keys usually share one: the end of a window), so
 * the priority queue holds distinct timestamps only, and a timer is found through nested
 * maps timestamp -> namespace -> key with no string building on the record path. Timers of
 * one timestamp fire in registration order (by namespace first), so results do not depend
 * on hashing.
 */
import type { KeyedStateBackend } from '../state/backend.ts';
import type { NormKey } from '../state/key-groups.ts';

export interface Timer {
  readonly timestamp: number;
  readonly key: NormKey;
  readonly keyGroup: number;
  readonly originalKey: unknown;
  /** '' for user timers; a window id for window timers. */
  readonly namespace: string | number;
  /** Registration order, kept in snapshots so a restore fires in the same order. */
  readonly seq: number;
}

/**
 * The timers of one timestamp. Most timestamps hold one timer (a session window's end, a
 * per-record deadline): that one is stored as itself, with no maps; a second timer at the same
 * time turns the bucket into namespace -> key -> timer. EMPTY marks a timestamp whose timers
 * were all deleted while it is still in the heap, so registering there again does not push it twice.
 */
type Nested = Map<string | number, Map<NormKey, Timer>>;
type Bucket = Timer | Nested;
const EMPTY: Nested = new Map();

function isTimer(b: Bucket): b is Timer {
  return !(b instanceof Map);
}

/** A binary min-heap of distinct numbers. */
class NumberHeap {
  private readonly a: number[] = [];
  get size(): number {
    return this.a.length;
  }
  peek(): number | undefined {
    return this.a[0];
  }
  push(x: number): void {
    const a = this.a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]! <= x) break;
      a[i] = a[p]!;
      i = p;
    }
    a[i] = x;
  }
  pop(): number | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      let i = 0;
      const n = a.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && a[r]! < a[l]! ? r : l;
        if (a[c]! >= last) break;
        a[i] = a[c]!;
        i = c;
      }
      a[i] = last;
    }
    return top;
  }
}

/** Timers of one time domain. */
export class TimerQueue {
  private readonly buckets = new Map<number, Bucket>();
  private readonly heap = new NumberHeap();
  size = 0;

  add(t: Timer): boolean {
    const b = this.buckets.get(t.timestamp);
    if (b === undefined || b === EMPTY) {
      if (b === undefined) this.heap.push(t.timestamp);
      this.buckets.set(t.timestamp, t);
    } else if (isTimer(b)) {
      if (b.namespace === t.namespace && b.key === t.key) return false;
      // Registration order stays: the first timer's namespace and key come first.
      const nested: Nested = new Map([[b.namespace, new Map([[b.key, b]])]]);
      this.buckets.set(t.timestamp, nested);
      if (!addNested(nested, t)) return false;
    } else if (!addNested(b, t)) {
      return false;
    }
    this.size++;
    return true;
  }

  has(ts: number, ns: string | number, key: NormKey): boolean {
    const b = this.buckets.get(ts);
    if (b === undefined) return false;
    return isTimer(b) ? b.namespace === ns && b.key === key : (b.get(ns)?.has(key) ?? false);
  }

  delete(ts: number, ns: string | number, key: NormKey): void {
    const b = this.buckets.get(ts);
    if (b === undefined) return;
    if (isTimer(b)) {
      if (b.namespace !== ns || b.key !== key) return;
      // The timestamp stays in the heap; it is skipped when its time comes.
      this.buckets.set(ts, EMPTY);
    } else {
      const byKey = b.get(ns);
      if (byKey === undefined || !byKey.delete(key)) return;
      if (byKey.size === 0) b.delete(ns);
    }
    this.size--;
  }

  /** Earliest timestamp that still has timers. */
  peekTime(): number | undefined {
    for (;;) {
      const ts = this.heap.peek();
      if (ts === undefined) return undefined;
      const b = this.buckets.get(ts);
      if (b !== undefined && (isTimer(b) || b.size > 0)) return ts;
      this.heap.pop();
      this.buckets.delete(ts);
    }
  }

  /**
   * Removes and returns the next timer at or before `upTo`, or undefined. One at a time, so a
   * timer registered by a firing timer (at a due time) fires in the same pass.
   */
  pollDue(upTo: number): Timer | undefined {
    const ts = this.peekTime();
    if (ts === undefined || ts > upTo) return undefined;
    const b = this.buckets.get(ts)!;
    this.size--;
    if (isTimer(b)) {
      this.buckets.set(ts, EMPTY);
      return b;
    }
    const [ns, byKey] = b.entries().next().value as [string | number, Map<NormKey, Timer>];
    const [key, t] = byKey.entries().next().value as [NormKey, Timer];
    byKey.delete(key);
    if (byKey.size === 0) b.delete(ns);
    return t;
  }

  *all(): IterableIterator<Timer> {
    for (const b of this.buckets.values()) {
      if (isTimer(b)) yield b;
      else for (const byKey of b.values()) yield* byKey.values();
    }
  }
}

/** Adds `t` to a nested bucket; false when that (namespace, key) is there already. */
function addNested(b: Nested, t: Timer): boolean {
  let byKey = b.get(t.namespace);
  if (byKey === undefined) {
    byKey = new Map();
    b.set(t.namespace, byKey);
  } else if (byKey.has(t.key)) {
    return false;
  }
  byKey.set(t.key, t);
  return true;
}

export interface TimerTarget {
  onEventTime(timer: Timer): void;
  onProcessingTime(timer: Timer): void;
}

export class InternalTimerService {
  private readonly eventTimers = new TimerQueue();
  private readonly procTimers = new TimerQueue();
  private seq = 0;
  private scheduled: { at: number; cancel(): void } | undefined;
  currentWatermark = Number.MIN_SAFE_INTEGER;

  constructor(
    private readonly backend: KeyedStateBackend,
    private readonly target: TimerTarget,
    private readonly now: () => number,
    private readonly scheduleMail: (atMs: number, fn: () => void) => { cancel(): void },
  ) {}

  registerEventTimeTimer(namespace: string | number, timestamp: number): void {
    this.register(this.eventTimers, namespace, timestamp);
  }

  registerProcessingTimeTimer(namespace: string | number, timestamp: number): void {
    if (this.register(this.procTimers, namespace, timestamp)) this.reschedule();
  }

  deleteEventTimeTimer(namespace: string | number, timestamp: number): void {
    this.eventTimers.delete(timestamp, namespace, this.backend.ctx.key);
  }

  deleteProcessingTimeTimer(namespace: string | number, timestamp: number): void {
    this.procTimers.delete(timestamp, namespace, this.backend.ctx.key);
  }

  private register(q: TimerQueue, namespace: string | number, timestamp: number): boolean {
    if (!Number.isFinite(timestamp)) throw new RangeError(`timer timestamp must be a finite number, got ${timestamp}`);
    const ctx = this.backend.ctx;
    if (q.has(timestamp, namespace, ctx.key)) return false;
    return q.add({ timestamp, key: ctx.key, keyGroup: ctx.keyGroup, originalKey: ctx.originalKey, namespace, seq: this.seq++ });
  }

  /** Fires every event-time timer at or before the watermark. */
  advanceWatermark(watermark: number): void {
    this.currentWatermark = watermark;
    for (;;) {
      const t = this.eventTimers.pollDue(watermark);
      if (t === undefined) break;
      this.backend.setCurrentNormalizedKey(t.key, t.keyGroup, t.originalKey);
      this.target.onEventTime(t);
    }
  }

  /** Fires processing-time timers that are due; called from the mailbox. */
  fireProcessingTimers(now = this.now()): void {
    this.scheduled = undefined;
    for (;;) {
      const t = this.procTimers.pollDue(now);
      if (t === undefined) break;
      this.backend.setCurrentNormalizedKey(t.key, t.keyGroup, t.originalKey);
      this.target.onProcessingTime(t);
    }
    this.reschedule();
  }

  /** Keeps exactly one clock wake-up pending, for the earliest processing-time timer. */
  private reschedule(): void {
    const next = this.procTimers.peekTime();
    if (next === undefined) {
      this.scheduled?.cancel();
      this.scheduled = undefined;
      return;
    }
    if (this.scheduled !== undefined && this.scheduled.at <= next) return;
    this.scheduled?.cancel();
    const handle = this.scheduleMail(next, () => this.fireProcessingTimers());
    this.scheduled = { at: next, cancel: () => handle.cancel() };
  }

  /** Re-registers a timer from a snapshot (the key may be outside the current key context). */
  restoreTimer(domain: 'event' | 'processing', timestamp: number, key: NormKey, keyGroup: number, originalKey: unknown, namespace: string | number): void {
    const q = domain === 'event' ? this.eventTimers : this.procTimers;
    if (q.has(timestamp, namespace, key)) return;
    q.add({ timestamp, key, keyGroup, originalKey, namespace, seq: this.seq++ });
    if (domain === 'processing') this.reschedule();
  }

  numEventTimers(): number {
    return this.eventTimers.size;
  }
  numProcessingTimers(): number {
    return this.procTimers.size;
  }
  /** Live timers, for snapshots. */
  eventTimersList(): Timer[] {
    return [...this.eventTimers.all()];
  }
  processingTimersList(): Timer[] {
    return [...this.procTimers.all()];
  }
  dispose(): void {
    this.scheduled?.cancel();
    this.scheduled = undefined;
  }
}
