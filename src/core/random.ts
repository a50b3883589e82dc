/**
 * A small, fast seeded PRNG (sfc32 seeded through splitmix32). The generator source reseeds
 * it per record from (seed, index), so record i is the same whatever the parallelism or
 * the restart: determinism does not depend on which subtask produced it.
 */
function splitmix32(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  let z = x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

export class Rng {
  private a = 0;
  private b = 0;
  private c = 0;
  private d = 1;
  /** Position set by reseed() and not applied yet: seeding is deferred to the first draw. */
  private pendingSeed = 0;
  private pendingIndex = 0;
  private pending = false;
  constructor(seed = 0, index = 0) {
    this.reseed(seed, index);
  }
  /**
   * Positions the generator at stream (seed, index). Costs three stores: the seeding itself
   * happens on the first draw, so records that never draw a random number pay nothing.
   */
  reseed(seed: number, index: number): this {
    this.pendingSeed = seed;
    this.pendingIndex = index;
    this.pending = true;
    return this;
  }
  private applySeed(): void {
    this.pending = false;
    const seed = this.pendingSeed;
    const index = this.pendingIndex;
    const lo = index >>> 0;
    const hi = Math.floor(index / 4294967296) >>> 0;
    this.a = splitmix32(seed ^ 0x5bd1e995);
    this.b = splitmix32(lo ^ this.a);
    this.c = splitmix32(hi ^ this.b ^ 0x27d4eb2f);
    this.d = splitmix32(this.c ^ lo) | 1;
  }
  /**
   * The last draw as an int32 (step() sets it). Why a field: a uint32 returned from a call
   * that is not inlined is a new HeapNumber (most exceed the small-integer range); int(n)
   * reads the field instead, so drawing a small integer allocates nothing. In the window-count
   * benchmark's generator that was 8 bytes of garbage a record (a heap profile).
   */
  private t = 0;
  /** Advances the generator one draw (sfc32), leaving it in `t`. */
  private step(): void {
    if (this.pending) this.applySeed();
    let a = this.a, b = this.b, c = this.c, d = this.d;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    this.a = a; this.b = b; this.c = c; this.d = d;
    this.t = t;
  }
  /** A uint32. */
  nextUint32(): number {
    this.step();
    return this.t >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.step();
    return (this.t >>> 0) / 4294967296;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    this.step();
    return Math.floor(((this.t >>> 0) / 4294967296) * n);
  }
  /** An integer in [min, max]. */
  range(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  bool(pTrue = 0.5): boolean {
    return this.next() < pTrue;
  }
}
