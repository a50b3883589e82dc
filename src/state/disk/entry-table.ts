/**
 * The disk backend's cache index: a state's cached and pending entries by key, in an
 * open-addressing table of the entries themselves.
 *
 * Why not a KeyTable (../key-table.ts) as before: a cache of keys that do not fit it churns.
 * With uniformly drawn keys nearly every record inserts an entry and evicts another, and a
 * KeyTable's delete leaves a hole in its insertion-ordered entry array that a rebuild must
 * sweep, hashes the evicted key's string again to find it, and a miss followed by an insert
 * hashes and probes the key twice. Here the slot array holds the entry, the entry holds its
 * key's hash (computed once, when the record's key first reaches the cache), deletion shifts
 * later slots back (no tombstones, no holes, no rebuild but growth), and nothing keeps an
 * order the cache does not need. Profile of the keyed count over 1 M uniformly drawn keys
 * (bench/child.ts word-count weir-1 1000000 1000000 backend=disk): the KeyTable's get, set,
 * delete, hashing and rebuilds were ~16 % of the task's thread.
 */
import type { NormKey } from '../key-groups.ts';

/** What the table needs of an entry: its key and that key's hash (never 0: keyHash sets the top bit). */
export interface Keyed {
  readonly key: NormKey;
  readonly hash: number;
}

const MIN_SLOTS = 16;
/** Slots used at most before the table doubles (linear probing stays short below it). */
const MAX_LOAD = 0.75;

export class EntryTable<E extends Keyed> {
  /** Each slot's entry hash (0: empty), beside `slots`: a probe compares hashes on one cache line. */
  private hashes = new Int32Array(MIN_SLOTS);
  private slots: (E | undefined)[] = new Array<E | undefined>(MIN_SLOTS).fill(undefined);
  private mask = MIN_SLOTS - 1;
  private live = 0;

  get size(): number {
    return this.live;
  }

  /** The entry of `key` (whose hash is `h`), or undefined. */
  get(key: NormKey, h: number): E | undefined {
    const hashes = this.hashes;
    const mask = this.mask;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const x = hashes[s]!;
      if (x === 0) return undefined;
      if (x === h) {
        const e = this.slots[s]!;
        if (e.key === key) return e;
      }
    }
  }

  /** Adds an entry whose key is not in the table (the caller looked it up first). */
  insert(e: E): void {
    if (e.hash === 0) throw new Error('EntryTable: an entry hash is never 0');
    if (this.live + 1 > (this.mask + 1) * MAX_LOAD) this.grow();
    this.place(e);
    this.live++;
  }

  /** Removes this entry (found by identity); false if it is not in the table. */
  delete(e: E): boolean {
    const hashes = this.hashes;
    const slots = this.slots;
    const mask = this.mask;
    const h = e.hash;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const x = hashes[s]!;
      if (x === 0) return false;
      if (x === h && slots[s] === e) {
        this.unplace(s);
        this.live--;
        return true;
      }
    }
  }

  clear(): void {
    this.hashes = new Int32Array(MIN_SLOTS);
    this.slots = new Array<E | undefined>(MIN_SLOTS).fill(undefined);
    this.mask = MIN_SLOTS - 1;
    this.live = 0;
  }

  private place(e: E): void {
    const hashes = this.hashes;
    const mask = this.mask;
    let s = e.hash & mask;
    while (hashes[s] !== 0) s = (s + 1) & mask;
    hashes[s] = e.hash;
    this.slots[s] = e;
  }

  /** Empties slot `s`, shifting back the entries after it whose probe passed through it. */
  private unplace(s: number): void {
    const hashes = this.hashes;
    const slots = this.slots;
    const mask = this.mask;
    let hole = s;
    for (let j = (s + 1) & mask; hashes[j] !== 0; j = (j + 1) & mask) {
      const home = hashes[j]! & mask;
      // The entry at j may fill the hole when its home is not in (hole, j], cyclically.
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        hashes[hole] = hashes[j]!;
        slots[hole] = slots[j];
        hole = j;
      }
    }
    hashes[hole] = 0;
    slots[hole] = undefined;
  }

  private grow(): void {
    const oldSlots = this.slots;
    const n = 2 * (this.mask + 1);
    this.hashes = new Int32Array(n);
    this.slots = new Array<E | undefined>(n).fill(undefined);
    this.mask = n - 1;
    let placed = 0;
    for (const e of oldSlots) {
      if (e === undefined) continue;
      this.place(e);
      placed++;
    }
    if (placed !== this.live) throw new Error(`EntryTable: ${placed} entries placed, ${this.live} counted`);
  }
}
