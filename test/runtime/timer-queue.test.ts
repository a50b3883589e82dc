/**
 * The timer queue keeps one timer per timestamp without maps (session windows register a timer
 * per record at a distinct time) and turns a bucket into namespace -> key -> timer at the second
 * timer. Its behaviour must be the nested-map queue's it replaced, exactly: same dedupe, same
 * firing order within a timestamp (by namespace, then registration), same live set. Random
 * operations on both (seeded; the seed is printed, SEED=... replays it) are compared step by step.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { TimerQueue, type Timer } from '../../src/runtime/timers.ts';
import type { NormKey } from '../../src/state/key-groups.ts';

// ---- the queue before the single-timer buckets (commit f0f13db), as the reference ----
type Bucket = Map<string | number, Map<NormKey, Timer>>;

/** A binary min-heap of distinct numbers. */
class RefHeap {
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
class ReferenceQueue {
  private readonly buckets = new Map<number, Bucket>();
  private readonly heap = new RefHeap();
  size = 0;

  add(t: Timer): boolean {
    let b = this.buckets.get(t.timestamp);
    if (b === undefined) {
      b = new Map();
      this.buckets.set(t.timestamp, b);
      this.heap.push(t.timestamp);
    }
    let byKey = b.get(t.namespace);
    if (byKey === undefined) {
      byKey = new Map();
      b.set(t.namespace, byKey);
    } else if (byKey.has(t.key)) {
      return false;
    }
    byKey.set(t.key, t);
    this.size++;
    return true;
  }

  has(ts: number, ns: string | number, key: NormKey): boolean {
    return this.buckets.get(ts)?.get(ns)?.has(key) ?? false;
  }

  delete(ts: number, ns: string | number, key: NormKey): void {
    const b = this.buckets.get(ts);
    const byKey = b?.get(ns);
    if (byKey === undefined || !byKey.delete(key)) return;
    this.size--;
    if (byKey.size === 0) b!.delete(ns);
    // An emptied bucket stays in the heap; it is skipped when its time comes.
  }

  /** Earliest timestamp that still has timers. */
  peekTime(): number | undefined {
    for (;;) {
      const ts = this.heap.peek();
      if (ts === undefined) return undefined;
      const b = this.buckets.get(ts);
      if (b !== undefined && b.size > 0) return ts;
      this.heap.pop();
      this.buckets.delete(ts);
    }
  }

  /**
   * Removes and returns the next timer at or before `upTo`, or undefined. One at a time, so a
   * timer registered by a firing timer (at a due time) fires in the same pass.
   */
  pollDue(upTo: number): Timer | undefined {
    for (;;) {
      const ts = this.peekTime();
      if (ts === undefined || ts > upTo) return undefined;
      const b = this.buckets.get(ts)!;
      const [ns, byKey] = b.entries().next().value as [string | number, Map<NormKey, Timer>];
      const [key, t] = byKey.entries().next().value as [NormKey, Timer];
      byKey.delete(key);
      if (byKey.size === 0) b.delete(ns);
      this.size--;
      return t;
    }
  }

  *all(): IterableIterator<Timer> {
    for (const b of this.buckets.values()) for (const byKey of b.values()) yield* byKey.values();
  }
}


const describeTimer = (t: Timer | undefined) => (t === undefined ? 'none' : `${t.timestamp}/${t.namespace}/${String(t.key)}#${t.seq}`);

describe('timer queue (single-timer buckets) against the nested-map queue', () => {
  it('random registrations, deletions, lookups and polls: the same answers, order and live set', () => {
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    console.log(`timer queue seed=${seed} (replay with SEED=${seed})`);
    const rng = new Rng(seed);
    for (let round = 0; round < 10; round++) {
      const q = new TimerQueue();
      const ref = new ReferenceQueue();
      let seq = 0;
      let watermark = 0;
      // Few timestamps, namespaces and keys, so collisions (same bucket, same timer) are common.
      const spread = 1 + rng.int(40);
      for (let step = 0; step < 1000; step++) {
        const ts = watermark + rng.int(spread);
        const ns: string | number = rng.bool(0.5) ? '' : rng.int(3);
        const key: NormKey = rng.bool(0.5) ? `k${rng.int(4)}` : rng.int(4);
        const op = rng.int(10);
        const where = `seed ${seed}, round ${round}, step ${step}`;
        if (op < 5) {
          const t: Timer = { timestamp: ts, key, keyGroup: 0, originalKey: key, namespace: ns, seq: seq++ };
          expect(q.add(t), where).toBe(ref.add(t));
        } else if (op < 7) {
          q.delete(ts, ns, key);
          ref.delete(ts, ns, key);
        } else if (op < 8) {
          expect(q.has(ts, ns, key), where).toBe(ref.has(ts, ns, key));
        } else {
          watermark += rng.int(3);
          for (;;) {
            const a = q.pollDue(watermark);
            const b = ref.pollDue(watermark);
            expect(describeTimer(a), where).toBe(describeTimer(b));
            if (a === undefined) break;
          }
        }
        expect(q.size, where).toBe(ref.size);
        expect(q.peekTime(), where).toBe(ref.peekTime());
      }
      const live = (xs: Iterable<Timer>) => [...xs].map(describeTimer).sort();
      expect(live(q.all())).toEqual(live(ref.all()));
    }
  });

  it('with many deletes of distinct timestamps (compaction runs): the same answers, and memory follows the live timers', () => {
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    console.log(`timer queue compaction seed=${seed} (replay with SEED=${seed})`);
    const rng = new Rng(seed);
    const q = new TimerQueue();
    const ref = new ReferenceQueue();
    const registered: [number, string | number, NormKey][] = [];
    let seq = 0;
    let watermark = 0;
    for (let step = 0; step < 40_000; step++) {
      const where = `seed ${seed}, step ${step}`;
      const op = rng.int(100);
      if (op < 48 || registered.length === 0) {
        const ts = watermark + 1 + rng.int(20_000);
        const ns: string | number = rng.bool(0.8) ? '' : rng.int(2);
        const key: NormKey = rng.bool(0.5) ? `k${rng.int(3)}` : rng.int(3);
        const t: Timer = { timestamp: ts, key, keyGroup: 0, originalKey: key, namespace: ns, seq: seq++ };
        expect(q.add(t), where).toBe(ref.add(t));
        registered.push([ts, ns, key]);
      } else if (op < 98) {
        const [ts, ns, key] = registered.splice(rng.int(registered.length), 1)[0]!;
        q.delete(ts, ns, key);
        ref.delete(ts, ns, key);
      } else {
        watermark += rng.int(200);
        for (;;) {
          const a = q.pollDue(watermark);
          expect(describeTimer(a), where).toBe(describeTimer(ref.pollDue(watermark)));
          if (a === undefined) break;
        }
      }
      expect(q.size, where).toBe(ref.size);
    }
    expect(q.peekTime()).toBe(ref.peekTime());
    const live = (xs: Iterable<Timer>) => [...xs].map(describeTimer).sort();
    expect(live(q.all())).toEqual(live(ref.all()));
    for (;;) {
      const a = q.pollDue(Number.MAX_SAFE_INTEGER);
      expect(describeTimer(a)).toBe(describeTimer(ref.pollDue(Number.MAX_SAFE_INTEGER)));
      if (a === undefined) break;
    }
  });

  it('an inactivity timeout (delete the previous timer, register a later one, per record) holds a bounded number of timestamps', () => {
    const q = new TimerQueue();
    for (let i = 0; i < 200_000; i++) {
      if (i > 0) q.delete(3_600_000 + i - 1, '', 'k');
      q.insert(3_600_000 + i, '', 'k', 0, 'k', i);
    }
    expect(q.size).toBe(1);
    // Before: every deleted timestamp stayed until its time (200,000 here).
    expect(q.heldTimestamps).toBeLessThanOrEqual(2 * 1025);
    expect(q.pollDue(Number.MAX_SAFE_INTEGER)?.timestamp).toBe(3_600_000 + 199_999);
    expect(q.pollDue(Number.MAX_SAFE_INTEGER)).toBeUndefined();
  });
});
