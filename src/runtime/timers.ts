/**
 * Keyed timers: event-time timers fire when the watermark passes them, processing-time
 * timers when the clock does. A timer is (key, namespace, timestamp) and registering the
 * same one twice keeps one, as in Flink.
 *
 * Timers are bucketed by timestamp (many keys usually share one: the end of a window), so
 * the priority queue holds distinct timestamps only, and a timer is found through
 * timestamp -> namespace -> key (a TimeTable, then Maps) with no string building on the record
 * path. Timers of
 * one timestamp fire in registration order (by namespace first), so results do not depend
 * on hashing.
 */
import type { KeyedStateBackend } from '../state/backend.ts';
import { denormalizeKey, type NormKey } from '../state/key-groups.ts';
import { TimeTable } from './time-table.ts';
import { MAX_WATERMARK } from './events.ts';

export interface Timer {
  readonly timestamp: number;
  readonly key: NormKey;
  readonly keyGroup: number;
  readonly originalKey: unknown;
  /** '' for user timers; a window id for window timers. */
  readonly namespace: string | number;
  /**
   * Registration order, kept in snapshots: a restore registers the timers again in this order.
   * A timestamp's timers fire grouped by namespace, in the order the namespaces were first
   * registered, so after a restore the grouping can differ when a namespace's first timer was
   * deleted before the snapshot (Flink leaves the order of timers of one timestamp open too).
   */
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
  private a: number[] = [];
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
  /** Keeps the numbers `keep` accepts (O(n): an ascending array is a heap). */
  retain(keep: (x: number) => boolean): void {
    this.a = this.a.filter(keep).sort((x, y) => x - y);
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

/**
 * Timestamps whose timers were all deleted before their time kept in the heap and the table,
 * past which (and past half the heap) they are removed at once. Without it, a job that deletes
 * and registers a timer per record (an inactivity timeout) kept every deleted timestamp until
 * its time came: memory grew with the deletes (~30 bytes each; a 1 h timeout at 10 k records/s,
 * ~1 GB), not with the live timers, as Flink's timer queue does.
 */
const MAX_STALE_TIMESTAMPS = 1024;

/** Timers of one time domain. */
export class TimerQueue {
  /** Timestamp -> its bucket (time-table.ts: epoch-ms keys unboxed, no Map churn). */
  private readonly buckets = new TimeTable<Bucket>();
  private readonly heap = new NumberHeap();
  /** Timestamps in the heap whose bucket is empty (their timers deleted). */
  private stale = 0;
  size = 0;

  add(t: Timer): boolean {
    return this.insert(t.timestamp, t.namespace, t.key, t.keyGroup, t.originalKey, t.seq);
  }

  /**
   * Adds the timer (timestamp, namespace, key) unless it is there already (false then). One
   * lookup of the timestamp, and the timer object is made only when added: a window operator
   * registers the same end-of-window timer for every record of its window.
   */
  insert(timestamp: number, namespace: string | number, key: NormKey, keyGroup: number, originalKey: unknown, seq: number): boolean {
    const b = this.buckets.get(timestamp);
    if (b === undefined || b === EMPTY) {
      if (b === undefined) this.heap.push(timestamp);
      else this.stale--;
      this.buckets.set(timestamp, { timestamp, key, keyGroup, originalKey, namespace, seq });
    } else if (isTimer(b)) {
      if (b.namespace === namespace && b.key === key) return false;
      // Registration order stays: the first timer's namespace and key come first.
      const nested: Nested = new Map([[b.namespace, new Map([[b.key, b]])]]);
      this.buckets.set(timestamp, nested);
      addNested(nested, { timestamp, key, keyGroup, originalKey, namespace, seq });
    } else {
      // Several timers at this time already (rare): checked before the timer is made.
      if (b.get(namespace)?.has(key) === true) return false;
      if (b.size === 0) this.stale--;
      addNested(b, { timestamp, key, keyGroup, originalKey, namespace, seq });
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
      // The timestamp stays in the heap; it is skipped when its time comes, or compacted away.
      this.buckets.set(ts, EMPTY);
      this.stale++;
    } else {
      const byKey = b.get(ns);
      if (byKey === undefined || !byKey.delete(key)) return;
      if (byKey.size === 0) b.delete(ns);
      if (b.size === 0) this.stale++;
    }
    this.size--;
    if (this.stale > MAX_STALE_TIMESTAMPS && 2 * this.stale > this.heap.size) this.compact();
  }

  /** Removes the timestamps whose timers were all deleted from the heap and the table. */
  private compact(): void {
    const buckets = this.buckets;
    this.heap.retain((ts) => {
      const b = buckets.get(ts)!;
      if (isTimer(b) || b.size > 0) return true;
      buckets.delete(ts);
      return false;
    });
    this.stale = 0;
  }

  /** Timestamps held (live or stale), for tests of the memory bound. */
  get heldTimestamps(): number {
    return this.heap.size;
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
      if (b !== undefined) this.stale--;
    }
  }

  /**
   * Removes and returns the next timer at or before `upTo`, or undefined. One at a time, so a
   * timer registered by a firing timer (at a due time) fires in the same pass.
   */
  pollDue(upTo: number): Timer | undefined {
    // A timestamp leaves the heap and the map as soon as its last timer is taken (not at the
    // next look), so a lone timer costs one lookup here; a timer registered at that time by a
    // firing timer pushes the timestamp again and still fires in this pass.
    for (;;) {
      const ts = this.heap.peek();
      if (ts === undefined || ts > upTo) return undefined;
      const b = this.buckets.get(ts);
      // Every timestamp in the heap has its bucket (EMPTY once its timers were deleted).
      if (b === undefined) throw new Error(`timer queue: timestamp ${ts} is in the heap without a bucket`);
      if (isTimer(b)) {
        this.dropTop(ts);
        this.size--;
        return b;
      }
      if (b.size === 0) {
        this.dropTop(ts);
        this.stale--;
        continue;
      }
      const [ns, byKey] = b.entries().next().value as [string | number, Map<NormKey, Timer>];
      const [key, t] = byKey.entries().next().value as [NormKey, Timer];
      byKey.delete(key);
      if (byKey.size === 0) b.delete(ns);
      if (b.size === 0) this.dropTop(ts);
      this.size--;
      return t;
    }
  }

  /** Removes `ts`, the heap's top, from the heap and the map. */
  private dropTop(ts: number): void {
    const popped = this.heap.pop();
    if (popped !== ts) throw new Error(`timer queue: the heap's top ${popped} is not ${ts}`);
    this.buckets.delete(ts);
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

/**
 * The key a firing timer hands out: an object key as a checkpoint gives it back (properties
 * sorted), whether or not the job was restored since the timer was registered (timer blocks
 * keep only the normalised key); any other key as the selector gave it. Made when the timer
 * fires (at most once per timer), not when it is registered (once per record in many jobs).
 */
function keyOfTimer(t: Timer): unknown {
  const k = t.key;
  return typeof k === 'string' && k.charCodeAt(0) === 0 && k.charCodeAt(1) === 0x6a ? denormalizeKey(k) : t.originalKey;
}

/** Processing-time timers fired by one mail; those due beyond wait for the outputs' room. */
const PROC_TIMERS_PER_MAIL = 1024;

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
    /** Runs fn when the task's outputs have room (OperatorEnvironment.outputMail); absent, timers due fire all at once. */
    private readonly continueLater?: (fn: () => void) => void,
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
    if (!q.insert(timestamp, namespace, ctx.key, ctx.keyGroup, ctx.originalKey, this.seq)) return false;
    this.seq++;
    return true;
  }

  /**
   * Fires every event-time timer at or before the watermark; at the end of event time
   * (MAX_WATERMARK) every timer, also those registered past it (Number.MAX_VALUE, the
   * JavaScript spelling of Flink's "a timer at Long.MAX_VALUE fires at the end").
   */
  advanceWatermark(watermark: number): void {
    this.currentWatermark = watermark;
    const due = watermark >= MAX_WATERMARK ? Number.POSITIVE_INFINITY : watermark;
    for (;;) {
      const t = this.eventTimers.pollDue(due);
      if (t === undefined) break;
      this.backend.setCurrentNormalizedKey(t.key, t.keyGroup, keyOfTimer(t));
      this.target.onEventTime(t);
    }
  }

  /**
   * Stops firing processing-time timers: the task's input has ended (Flink quiesces the
   * processing-time service there). A timer firing while the task waits for its final
   * checkpoint emitted records after the operator had finished, and exactly-once sinks committed
   * them, depending on timing.
   */
  quiesce(): void {
    this.quiesced = true;
    this.dispose();
  }
  private quiesced = false;

  /** Fires processing-time timers that are due; called from the mailbox. */
  fireProcessingTimers(now = this.now()): void {
    this.scheduled = undefined;
    if (this.quiesced) return;
    for (let fired = 0; ; fired++) {
      if (fired === PROC_TIMERS_PER_MAIL && this.continueLater !== undefined && this.procTimers.peekTime()! <= now) {
        // More are due: the rest once the outputs have room again, so that what they emit
        // waits for the output as a record from the input does (bounded), not in a queue.
        let cancelled = false;
        this.scheduled = { at: now, cancel: () => void (cancelled = true) };
        this.continueLater(() => {
          if (!cancelled) this.fireProcessingTimers();
        });
        return;
      }
      const t = this.procTimers.pollDue(now);
      if (t === undefined) break;
      this.backend.setCurrentNormalizedKey(t.key, t.keyGroup, keyOfTimer(t));
      this.target.onProcessingTime(t);
    }
    this.reschedule();
  }

  /** Keeps exactly one clock wake-up pending, for the earliest processing-time timer. */
  private reschedule(): void {
    if (this.quiesced) return;
    const next = this.procTimers.peekTime();
    if (next === undefined) {
      this.scheduled?.cancel();
      this.scheduled = undefined;
      return;
    }
    if (this.scheduled !== undefined && this.scheduled.at <= next) return;
    this.scheduled?.cancel();
    const now = this.now();
    if (next <= now && this.continueLater !== undefined) {
      // Due already (restored timers that came due while the job was down, or one registered
      // in the past): they fire before the task's next input, as Flink fires them first from
      // its mailbox. Through the clock they waited for a slice of steps in which the restored
      // input could reach its end, which quiesces the timers: they never fired (the audit: 10
      // of 10 timers lost after a restore).
      let cancelled = false;
      this.scheduled = { at: now, cancel: () => void (cancelled = true) };
      this.continueLater(() => {
        if (!cancelled) this.fireProcessingTimers();
      });
      return;
    }
    const handle = this.scheduleMail(next, () => this.fireProcessingTimers());
    this.scheduled = { at: next, cancel: () => handle.cancel() };
  }

  /** Re-registers a timer from a snapshot (the key may be outside the current key context). */
  restoreTimer(domain: 'event' | 'processing', timestamp: number, key: NormKey, keyGroup: number, originalKey: unknown, namespace: string | number): void {
    const q = domain === 'event' ? this.eventTimers : this.procTimers;
    if (!q.insert(timestamp, namespace, key, keyGroup, originalKey, this.seq)) return;
    this.seq++;
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
