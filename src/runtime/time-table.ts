/**
 * A map from finite numbers (timer timestamps) to values, for the timer queue (timers.ts).
 *
 * Why not a Map: timestamps in epoch milliseconds are beyond V8's small integers, so a Map keys
 * them as heap numbers, and each get, set or delete hashes and compares boxed doubles; measured
 * on 60 k timers at distinct times (a Nexmark auction's expiry each), a Map's get + set + delete
 * cost 250-400 ns per timer, more than the heap of timestamps. Its backing store is also
 * reallocated as it grows and shrinks, garbage that outlives young collections. Here the keys
 * are unboxed in a Float64Array, probed linearly from a mixed hash, and removed by shifting
 * later entries back (no tombstones), so the table's arrays change only when it doubles or halves.
 */

/** The slot marker of an empty slot: NaN is never a key (keys are finite). */
const EMPTY_KEY = Number.NaN;
const MIN_CAPACITY = 16;
/** The table halves when fewer than 1/SHRINK_BELOW of its slots hold keys (it doubles at 1/2) ... */
const SHRINK_BELOW = 16;
/** ... on the delete that makes more than SHRINK_AFTER_OPS x capacity deletes at that level since the last resize. */
const SHRINK_AFTER_OPS = 2;

export class TimeTable<V> {
  private keys = new Float64Array(MIN_CAPACITY).fill(EMPTY_KEY);
  private vals: (V | undefined)[] = new Array<V | undefined>(MIN_CAPACITY).fill(undefined);
  private mask = MIN_CAPACITY - 1;
  /** Deletes that left the table below its shrink level since the last resize. */
  private lowOps = 0;
  size = 0;

  /** Slots allocated (tests and diagnostics). */
  get capacity(): number {
    return this.keys.length;
  }

  get(key: number): V | undefined {
    const keys = this.keys;
    const mask = this.mask;
    for (let s = slotHash(key) & mask; ; s = (s + 1) & mask) {
      const k = keys[s]!;
      if (k === key) return this.vals[s];
      if (k !== k) return undefined; // NaN: an empty slot ends the probe
    }
  }

  set(key: number, value: V): void {
    if (!Number.isFinite(key)) throw new RangeError(`time table: key must be a finite number, got ${key}`);
    const keys = this.keys;
    const mask = this.mask;
    for (let s = slotHash(key) & mask; ; s = (s + 1) & mask) {
      const k = keys[s]!;
      if (k === key) {
        this.vals[s] = value;
        return;
      }
      if (k !== k) {
        keys[s] = key;
        this.vals[s] = value;
        // At most half full, so probes stay short and always reach an empty slot.
        if (++this.size * 2 > keys.length) this.resize(keys.length * 2);
        return;
      }
    }
  }

  delete(key: number): boolean {
    const keys = this.keys;
    const vals = this.vals;
    const mask = this.mask;
    let s = slotHash(key) & mask;
    for (; ; s = (s + 1) & mask) {
      const k = keys[s]!;
      if (k === key) break;
      if (k !== k) return false;
    }
    // Backward shift: move later entries of the probe run into the hole when their home slot
    // does not lie cyclically in (hole, their slot], so every key stays reachable from its home.
    let hole = s;
    for (let j = (s + 1) & mask; ; j = (j + 1) & mask) {
      const k = keys[j]!;
      if (k !== k) break;
      const home = slotHash(k) & mask;
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (between) continue;
      keys[hole] = k;
      vals[hole] = vals[j];
      hole = j;
    }
    keys[hole] = EMPTY_KEY;
    vals[hole] = undefined;
    this.size--;
    // Halved when nearly empty and only after a quiet spell: a burst of timers does not hold its
    // table for ever, while the swings of an ordinary job do not resize it back and forth (Nexmark
    // q9's pending timers drain from ~8 k to a few hundred at each watermark and refill: halving
    // at an eighth full, at once, resized its table ~40 times per million events).
    if (keys.length > MIN_CAPACITY && this.size * SHRINK_BELOW < keys.length && ++this.lowOps > SHRINK_AFTER_OPS * keys.length) {
      this.resize(keys.length / 2);
    }
    return true;
  }

  /** The values, in slot order (not insertion order). */
  *values(): IterableIterator<V> {
    const keys = this.keys;
    for (let s = 0; s < keys.length; s++) if (keys[s] === keys[s]) yield this.vals[s]!;
  }

  private resize(capacity: number): void {
    this.lowOps = 0;
    const oldKeys = this.keys;
    const oldVals = this.vals;
    this.keys = new Float64Array(capacity).fill(EMPTY_KEY);
    this.vals = new Array<V | undefined>(capacity).fill(undefined);
    this.mask = capacity - 1;
    const keys = this.keys;
    const mask = this.mask;
    for (let i = 0; i < oldKeys.length; i++) {
      const k = oldKeys[i]!;
      if (k !== k) continue;
      let s = slotHash(k) & mask;
      while (keys[s] === keys[s]) s = (s + 1) & mask;
      keys[s] = k;
      this.vals[s] = oldVals[i];
    }
  }
}

/**
 * A 32-bit hash of a finite number, equal for equal numbers (0 and -0 included). Integral
 * timestamps mix their low and high 32 bits; a fraction is truncated first (only spreading suffers).
 */
function slotHash(key: number): number {
  const lo = key >>> 0;
  const hi = (key / 4294967296) | 0;
  let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 15;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
