/**
 * Keyed timers: event-time timers fire when the watermark passes them, processing-time
 * timers when the clock does. A timer is (key, namespace, timestamp) and registering the
 * same one twice keeps one, as in Flink. Timers fire in timestamp order, ties in
 * registration order, so results do not depend on Map iteration order.
 */
import type { HeapKeyedStateBackend, NormKey } from '../state/heap-keyed-backend.ts';

export interface Timer {
  readonly timestamp: number;
  readonly key: NormKey;
  readonly keyGroup: number;
  readonly originalKey: unknown;
  /** '' for user timers; a window id for window timers. */
  readonly namespace: string | number;
  readonly seq: number;
}

/** A binary min-heap of timers ordered by (timestamp, seq). */
export class TimerHeap {
  private readonly items: Timer[] = [];
  get size(): number {
    return this.items.length;
  }
  peek(): Timer | undefined {
    return this.items[0];
  }
  push(t: Timer): void {
    const a = this.items;
    a.push(t);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }
  pop(): Timer | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l]!, a[m]!)) m = l;
        if (r < a.length && before(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
  toArray(): readonly Timer[] {
    return this.items;
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.timestamp < b.timestamp || (a.timestamp === b.timestamp && a.seq < b.seq);
}

function timerId(ts: number, ns: string | number, key: NormKey): string {
  return `${ts}\u0001${ns}\u0001${typeof key === 'number' ? 'n' + key : key}`;
}

export interface TimerTarget {
  onEventTime(timer: Timer): void;
  onProcessingTime(timer: Timer): void;
}

export class InternalTimerService {
  private readonly eventTimers = new TimerHeap();
  private readonly procTimers = new TimerHeap();
  private readonly eventIds = new Map<string, Timer>();
  private readonly procIds = new Map<string, Timer>();
  private seq = 0;
  private scheduled: { at: number; cancel(): void } | undefined;
  currentWatermark = Number.MIN_SAFE_INTEGER;

  constructor(
    private readonly backend: HeapKeyedStateBackend,
    private readonly target: TimerTarget,
    private readonly now: () => number,
    private readonly scheduleMail: (atMs: number, fn: () => void) => { cancel(): void },
  ) {}

  registerEventTimeTimer(namespace: string | number, timestamp: number): void {
    this.register(this.eventTimers, this.eventIds, namespace, timestamp);
  }

  registerProcessingTimeTimer(namespace: string | number, timestamp: number): void {
    this.register(this.procTimers, this.procIds, namespace, timestamp);
    this.reschedule();
  }

  deleteEventTimeTimer(namespace: string | number, timestamp: number): void {
    this.eventIds.delete(timerId(timestamp, namespace, this.backend.ctx.key));
  }

  deleteProcessingTimeTimer(namespace: string | number, timestamp: number): void {
    this.procIds.delete(timerId(timestamp, namespace, this.backend.ctx.key));
  }

  private register(heap: TimerHeap, ids: Map<string, Timer>, namespace: string | number, timestamp: number): void {
    if (!Number.isFinite(timestamp)) throw new RangeError(`timer timestamp must be a finite number, got ${timestamp}`);
    const ctx = this.backend.ctx;
    const id = timerId(timestamp, namespace, ctx.key);
    if (ids.has(id)) return;
    const t: Timer = { timestamp, key: ctx.key, keyGroup: ctx.keyGroup, originalKey: ctx.originalKey, namespace, seq: this.seq++ };
    ids.set(id, t);
    heap.push(t);
  }

  /** Fires every event-time timer at or before the watermark. */
  advanceWatermark(watermark: number): void {
    this.currentWatermark = watermark;
    const heap = this.eventTimers;
    for (;;) {
      const t = heap.peek();
      if (t === undefined || t.timestamp > watermark) break;
      heap.pop();
      const id = timerId(t.timestamp, t.namespace, t.key);
      if (this.eventIds.get(id) !== t) continue; // deleted, or replaced after deletion
      this.eventIds.delete(id);
      this.backend.setCurrentNormalizedKey(t.key, t.keyGroup, t.originalKey);
      this.target.onEventTime(t);
    }
  }

  /** Fires processing-time timers that are due; called from the mailbox. */
  fireProcessingTimers(now = this.now()): void {
    this.scheduled = undefined;
    const heap = this.procTimers;
    for (;;) {
      const t = heap.peek();
      if (t === undefined || t.timestamp > now) break;
      heap.pop();
      const id = timerId(t.timestamp, t.namespace, t.key);
      if (this.procIds.get(id) !== t) continue;
      this.procIds.delete(id);
      this.backend.setCurrentNormalizedKey(t.key, t.keyGroup, t.originalKey);
      this.target.onProcessingTime(t);
    }
    this.reschedule();
  }

  /** Keeps exactly one clock wake-up pending, for the earliest live processing-time timer. */
  private reschedule(): void {
    let t = this.procTimers.peek();
    while (t !== undefined && this.procIds.get(timerId(t.timestamp, t.namespace, t.key)) !== t) {
      this.procTimers.pop();
      t = this.procTimers.peek();
    }
    if (t === undefined) {
      this.scheduled?.cancel();
      this.scheduled = undefined;
      return;
    }
    if (this.scheduled !== undefined && this.scheduled.at <= t.timestamp) return;
    this.scheduled?.cancel();
    const at = t.timestamp;
    const handle = this.scheduleMail(at, () => this.fireProcessingTimers());
    this.scheduled = { at, cancel: () => handle.cancel() };
  }

  /** Re-registers a timer from a snapshot (the key may be outside the current key context). */
  restoreTimer(domain: 'event' | 'processing', timestamp: number, key: NormKey, keyGroup: number, originalKey: unknown, namespace: string | number): void {
    const heap = domain === 'event' ? this.eventTimers : this.procTimers;
    const ids = domain === 'event' ? this.eventIds : this.procIds;
    const id = timerId(timestamp, namespace, key);
    if (ids.has(id)) return;
    const t: Timer = { timestamp, key, keyGroup, originalKey, namespace, seq: this.seq++ };
    ids.set(id, t);
    heap.push(t);
    if (domain === 'processing') this.reschedule();
  }

  numEventTimers(): number {
    return this.eventIds.size;
  }
  numProcessingTimers(): number {
    return this.procIds.size;
  }
  /** Live timers, for snapshots. */
  eventTimersList(): Timer[] {
    return [...this.eventIds.values()];
  }
  processingTimersList(): Timer[] {
    return [...this.procIds.values()];
  }
  dispose(): void {
    this.scheduled?.cancel();
    this.scheduled = undefined;
  }
}
