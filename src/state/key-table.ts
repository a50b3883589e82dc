/**
 * A Map from normalized key to value, with Map's interface and semantics (SameValueZero keys,
 * insertion order, iterators that see later changes), built for the one thing a keyed job does
 * per record: look up a key that is mostly not in any cache. The heap backend keeps each key
 * group of each state in one (heap/group-map.ts), the disk backend its change log of incremental
 * checkpoints (disk/changes.ts); the disk backend's cache has a table of its own (disk/entry-table.ts).
 *
 * Why not a Map: with a million keys, a V8 Map lookup of a key string made by the record took
 * ~800 ns on this machine, 68 % of the keyed running count (bench/child.ts word-count, CPU
 * profile); this table's, ~560 ns (bench/key-table.ts: 847 against 564 ns). Each lookup is a
 * few dependent cache misses: a Map walks a bucket's chain (up to two entries per bucket on
 * average), loading every candidate's key string to compare it; here the index holds each
 * entry's 32-bit hash beside its position, so a candidate is compared only when its hash
 * matches, and linear probing keeps a probe's slots on one cache line.
 *
 * Layout, like a compact dict: `kv` holds key, value, key, value, ... in insertion order (a
 * deleted entry's key becomes HOLE); `idx` is an open-addressing index of [hash, entry]
 * pairs, hash 0 meaning an empty slot, deletions shifting later slots back (no tombstones).
 * The index stays at most 3/4 full counting holes; past that the table is rebuilt: holes
 * dropped (entries keep their order), the index sized to 2-4x the live entries.
 *
 * Iterators walk `kv` by entry number. Deleting leaves a hole and moves nothing, so iterating
 * while deleting (TTL cleanup) is as with a Map. A rebuild that drops holes renumbers entries:
 * it bumps `generation` and keeps the old-to-new numbering, through which an iterator made
 * before it continues where it was.
 */
import { mix32, murmurIntBits, murmurStringBits } from './murmur.ts';
import type { NormKey } from './key-groups.ts';

/** The key slot of a deleted entry: never a key (keys are strings and numbers). */
const HOLE: unique symbol = Symbol('deleted entry');
/** Index slots of a new or emptied table (a power of two). */
const MIN_SLOTS = 16;
/**
 * How full the index may get, holes counted. Linear probing with the hashes in the index stays
 * cheap well past half full (a probe reads neighbouring slots of one cache line, and compares
 * a key only on an equal hash); a rebuild sizes it to at most half full, so the index costs
 * 16-32 bytes per entry.
 */
const MAX_LOAD = 0.75;
/** The largest reserve() honoured: a hint must not allocate an index beyond what a table would grow to (16 MiB here). */
const MAX_RESERVE = 1 << 20;
/**
 * Seed of the table's hash. Key groups come from the key's murmur3 bits with seed 0
 * (key-groups.ts), so every key of one group shares those bits' low bits: used as they are, a
 * group's keys would crowd into 1/128 of its index. Mixed again with a seed they are spread.
 */
const SEED = 0x2f1c_a7b3;

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);

/**
 * A key's hash with the top bit set, so it is never 0 (the empty slot); slots are chosen by
 * the low bits. Equal keys hash equally: 0 and -0 alike ((k | 0) === k for both). NaN is never
 * a key (normalizeKey makes non-finite numbers strings), so === is SameValueZero here.
 * Strings and integers: from the bits their key group is computed from (keyBits), so the
 * record path hashes a key once (keyHashOfBits) and the backend's lookups take that hash.
 */
export function keyHash(key: NormKey): number {
  if (typeof key === 'string') return mixedBits(murmurStringBits(key));
  if ((key | 0) === key) return mixedBits(murmurIntBits(key));
  return doubleHash(key);
}

/** keyHash(key) for a key whose keyBits (key-groups.ts) are `bits`, without hashing the key again. */
export function keyHashOfBits(key: NormKey, bits: number): number {
  return typeof key === 'string' || (key | 0) === key ? mixedBits(bits) : doubleHash(key);
}

function mixedBits(bits: number): number {
  return mix32(bits ^ SEED) | 0x8000_0000;
}

/** A number that is not a 32-bit integer, by its 64 bits (its key group hashes its text, which costs more). */
function doubleHash(key: number): number {
  f64[0] = key;
  return mix32(u32[0]! ^ mix32(u32[1]! ^ SEED)) | 0x8000_0000;
}

/**
 * An entry array of `length` slots (0: empty) in V8's generic holey elements kind, kept for
 * good (kinds only ever widen). Left to itself, a table of number keys and values would start
 * as an array of small integers or of doubles and widen later: tables in different kinds make
 * every lookup site polymorphic (Nexmark q5, thousands of window tables: 25 % slower lookups
 * than a Map), and reading a number from a double array allocates it. Holey, not packed: an
 * array made at its final length (fillEmpty) can only be holey, and every table shares one
 * kind. A read then checks for a hole, one comparison beside the cache miss it waits for.
 */
function newEntries(length = 0): unknown[] {
  const kv: unknown[] = new Array(Math.max(1, length));
  kv[0] = HOLE;
  kv.length = length;
  return kv;
}

export class KeyTable<V = unknown> implements Map<NormKey, V> {
  /** [hash, entry number] per slot; hash 0: empty. Length 2 x slots. */
  private idx = new Int32Array(2 * MIN_SLOTS);
  private mask = MIN_SLOTS - 1;
  /** Entries (holes included) the index takes before a rebuild: MAX_LOAD of its slots. */
  private maxUsed = MIN_SLOTS * MAX_LOAD;
  /** key, value per entry in insertion order; a deleted entry's key is HOLE. Read by iterators. */
  kv: unknown[] = newEntries();
  private live = 0;
  /** Bumped when entries are renumbered (holes dropped, or cleared). */
  generation = 0;
  /** The last renumbering: old entry number -> the new number of the first live entry at or after it. */
  private renumbered: Int32Array | undefined;
  /**
   * The entry get() found last. A state update mostly follows a read of the same key (read,
   * change, write back), and set() then finds the entry without hashing or probing. Only a hint:
   * set() uses it when that entry's key is the key, which holds whatever happened since.
   */
  private lastFound = 0;

  get size(): number {
    return this.live;
  }

  /** Slots of the index (tests, diagnostics): it is rebuilt larger once `size` nears 3/4 of them. */
  get indexSlots(): number {
    return this.mask + 1;
  }

  get [Symbol.toStringTag](): string {
    return 'KeyTable';
  }

  /** The index slot holding `key` (hash `h`), or -1. */
  private slotOf(key: NormKey, h: number): number {
    const idx = this.idx;
    const kv = this.kv;
    const mask = this.mask;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const x = idx[2 * s]!;
      if (x === 0) return -1;
      if (x === h && kv[2 * idx[2 * s + 1]!] === key) return s;
    }
  }

  /**
   * Sizes the index of an empty table for `entries` entries (at most MAX_RESERVE), so that
   * filling it up to that many rebuilds nothing (a hint: more may come, growing it as usual).
   * Ignored while the entry array holds anything, deleted entries included. Why: a window's
   * state is a new table per key group for every window, and growing each from 16 slots to its
   * usual size took ~4 rebuilds a group a window.
   */
  reserve(entries: number): void {
    if (this.kv.length !== 0 || !(entries > 0)) return;
    if (entries > MAX_RESERVE) entries = MAX_RESERVE;
    let slots = MIN_SLOTS;
    while (Math.floor(slots * MAX_LOAD) < entries + 1) slots *= 2;
    if (slots === this.mask + 1) return;
    this.idx = new Int32Array(2 * slots);
    this.mask = slots - 1;
    this.maxUsed = Math.floor(slots * MAX_LOAD);
  }

  /**
   * Fills an empty table with `n` entries at once, keys[i] -> values[i] in that order: a
   * restored key group. The index is sized once and the entry array made at its final length.
   * Why: set() per key rebuilt the index ~13 times on the way to 80 K entries, and push grew the
   * entry array ~25 times, allocating about three times its size in fresh memory; on this
   * project's VMs a fresh 4 KiB page costs ~11 µs to touch, and the growth drove full GCs while a
   * 10 M-key restore made its GB of heap. A key given twice keeps its first place and its last
   * value, as set() does. Returns false, changing nothing, when the table is not empty.
   */
  fillEmpty(keys: ArrayLike<NormKey>, values: ArrayLike<unknown>, n: number): boolean {
    if (this.kv.length !== 0) return false;
    if (keys.length < n || values.length < n) throw new Error(`KeyTable.fillEmpty: ${n} entries asked, ${keys.length} keys and ${values.length} values given`);
    let slots = MIN_SLOTS;
    while (Math.floor(slots * MAX_LOAD) < n + 1) slots *= 2;
    this.idx = new Int32Array(2 * slots);
    this.mask = slots - 1;
    this.maxUsed = Math.floor(slots * MAX_LOAD);
    const kv = newEntries(2 * n);
    this.kv = kv; // slotOf below finds the keys placed so far in it
    let e = 0;
    for (let i = 0; i < n; i++) {
      const key = keys[i]!;
      const h = keyHash(key);
      const s = this.slotOf(key, h);
      if (s >= 0) {
        kv[2 * this.idx[2 * s + 1]! + 1] = values[i];
        continue;
      }
      kv[2 * e] = key === 0 ? 0 : key;
      kv[2 * e + 1] = values[i];
      this.place(h, e);
      e++;
    }
    if (e < n) kv.length = 2 * e; // keys given twice: the entries end here
    this.live = e;
    return true;
  }

  /** Replaces every live value by fn(value), in place: entries, order and iterators stay as they are. */
  mapValuesInPlace(fn: (v: V) => V): void {
    const kv = this.kv;
    for (let e = 0; e < kv.length; e += 2) if (kv[e] !== HOLE) kv[e + 1] = fn(kv[e + 1] as V);
  }

  get(key: NormKey): V | undefined {
    return this.getHashed(key, keyHash(key));
  }

  /** get(key), its keyHash `h` known (the current key's: KeyContext.hash). */
  getHashed(key: NormKey, h: number): V | undefined {
    const s = this.slotOf(key, h);
    if (s < 0) return undefined;
    const e = this.idx[2 * s + 1]!;
    this.lastFound = e;
    return this.kv[2 * e + 1] as V;
  }

  has(key: NormKey): boolean {
    return this.slotOf(key, keyHash(key)) >= 0;
  }

  /**
   * Prefetch in three passes over a chunk of a batch's keys (KeyedStateBackend.prefetch), each
   * a tight loop of loads that do not depend on each other, so the CPU has many cache misses
   * in flight at once: the keys' index slots, then their entries, then the entries' key
   * strings. `hashes` are keyHash of the keys, `tables[i]` the table of key i (or undefined);
   * `entries` and `keys` are scratch space (keys keeps at most n stale references: a chunk's).
   * Returns a number made from what it read, so that nothing is optimised away.
   */
  static touchAll(tables: (KeyTable<unknown> | undefined)[], hashes: Int32Array, n: number, entries: Int32Array, keys: unknown[]): number {
    let x = 0;
    for (let i = 0; i < n; i++) {
      const t = tables[i];
      if (t === undefined) continue;
      const e = t.idx[2 * (hashes[i]! & t.mask) + 1]!;
      entries[i] = e;
      x += e;
    }
    let m = 0;
    for (let i = 0; i < n; i++) {
      const t = tables[i];
      if (t === undefined) continue;
      keys[m++] = t.kv[2 * entries[i]!];
    }
    for (let i = 0; i < m; i++) {
      const k = keys[i];
      if (typeof k === 'string') x += k.length;
    }
    return x;
  }

  set(key: NormKey, value: V): this {
    const last = this.lastFound;
    // Keys are unique among the live entries and HOLE is no key: equal keys mean this entry.
    if (this.kv[2 * last] === key) {
      this.kv[2 * last + 1] = value;
      return this;
    }
    return this.put(key, keyHash(key), value);
  }

  /** set(key, value), its keyHash `h` known (see getHashed). */
  setHashed(key: NormKey, h: number, value: V): this {
    const last = this.lastFound;
    if (this.kv[2 * last] === key) {
      this.kv[2 * last + 1] = value;
      return this;
    }
    return this.put(key, h, value);
  }

  private put(key: NormKey, h: number, value: V): this {
    const s = this.slotOf(key, h);
    if (s >= 0) {
      this.kv[2 * this.idx[2 * s + 1]! + 1] = value;
      return this;
    }
    // Entries counted with holes: each one has a slot until the next rebuild drops it.
    if ((this.kv.length >> 1) + 1 > this.maxUsed) this.rebuild();
    const e = this.kv.length >> 1;
    this.kv.push(key === 0 ? 0 : key, value); // -0 is stored as 0, as a Map does
    this.live++;
    this.place(h, e);
    return this;
  }

  delete(key: NormKey): boolean {
    return this.deleteHashed(key, keyHash(key));
  }

  /** delete(key), its keyHash `h` known (see getHashed). */
  deleteHashed(key: NormKey, h: number): boolean {
    const s = this.slotOf(key, h);
    if (s < 0) return false;
    const e = this.idx[2 * s + 1]!;
    this.kv[2 * e] = HOLE;
    this.kv[2 * e + 1] = undefined;
    this.live--;
    this.unplace(s);
    return true;
  }

  clear(): void {
    // Every old entry number maps to 0: an iterator made before continues with what is added later, as a Map's does.
    this.renumber(new Int32Array((this.kv.length >> 1) + 1));
    this.kv = newEntries();
    this.live = 0;
    this.idx = new Int32Array(2 * MIN_SLOTS);
    this.mask = MIN_SLOTS - 1;
    this.maxUsed = MIN_SLOTS * MAX_LOAD;
  }

  /**
   * Calls fn for every live entry, in insertion order, without an iterator or an entry array per
   * entry (window panes read thousands of keys per firing). fn must not change the table: it is
   * read straight from the entry array, which a change could renumber under the loop.
   */
  visitReadOnly(fn: (value: V, key: NormKey) => void): void {
    const kv = this.kv;
    const generation = this.generation;
    const live = this.live;
    const used = kv.length;
    for (let i = 0; i < used; i += 2) {
      const k = kv[i];
      if (k !== HOLE) fn(kv[i + 1] as V, k as NormKey);
    }
    if (this.generation !== generation || this.kv !== kv || kv.length !== used || this.live !== live) throw new Error('KeyTable.visitReadOnly: the table changed while it was visited');
  }

  forEach(fn: (value: V, key: NormKey, map: Map<NormKey, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }

  entries(): MapIterator<[NormKey, V]> {
    return new EntryCursor<V>(this);
  }

  keys(): MapIterator<NormKey> {
    return new KeyCursor(this);
  }

  values(): MapIterator<V> {
    return new ValueCursor<V>(this);
  }

  [Symbol.iterator](): MapIterator<[NormKey, V]> {
    return this.entries();
  }

  /**
   * Where an iterator made at `generation` stands now: its next entry number `at` after the one
   * renumbering since. Two renumberings during one iteration need at least as many inserts as
   * the table held (each rebuild doubles what it takes); no caller does that, and guessing would
   * skip or repeat entries, so it is refused.
   */
  positionAfterRenumbering(at: number, generation: number): number {
    const r = this.renumbered;
    if (generation !== this.generation - 1 || r === undefined) {
      throw new Error(`KeyTable: renumbered ${this.generation - generation} times during one iteration (at most once is supported)`);
    }
    return r[Math.min(at, r.length - 1)]!;
  }

  /** Puts entry `e` with hash `h` in the first empty slot from its home. */
  private place(h: number, e: number): void {
    const idx = this.idx;
    const mask = this.mask;
    let s = h & mask;
    while (idx[2 * s] !== 0) s = (s + 1) & mask;
    idx[2 * s] = h;
    idx[2 * s + 1] = e;
  }

  /** Empties slot `s`, shifting back the slots after it whose probe passed through it. */
  private unplace(s: number): void {
    const idx = this.idx;
    const mask = this.mask;
    let hole = s;
    for (let j = (s + 1) & mask; idx[2 * j] !== 0; j = (j + 1) & mask) {
      const home = idx[2 * j]! & mask;
      // The entry at j may fill the hole when its home is not in (hole, j], cyclically.
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        idx[2 * hole] = idx[2 * j]!;
        idx[2 * hole + 1] = idx[2 * j + 1]!;
        hole = j;
      }
    }
    idx[2 * hole] = 0;
    idx[2 * hole + 1] = 0;
  }

  /**
   * Drops the holes (renumbering the entries, order kept) and sizes the index to 2-4x the live
   * entries plus one. The new index is filled from the old one's [hash, entry] pairs: no key is
   * read or hashed again (a rebuild of a large table read every key string, a cache miss each,
   * and hashed it: 114 ms of a 5 M-record keyed count over 1 M keys, profiled). Deleted entries
   * have no slot, so the old index holds exactly the live entries.
   */
  private rebuild(): void {
    const used = this.kv.length >> 1;
    const renumbered = this.live < used ? this.dropHoles(used) : undefined;
    const old = this.idx;
    let slots = MIN_SLOTS;
    while (slots < 2 * (this.live + 1)) slots *= 2;
    this.idx = new Int32Array(2 * slots);
    this.mask = slots - 1;
    this.maxUsed = Math.floor(slots * MAX_LOAD);
    let placed = 0;
    for (let s = 0; s < old.length; s += 2) {
      const h = old[s]!;
      if (h === 0) continue;
      const e = old[s + 1]!;
      this.place(h, renumbered === undefined ? e : renumbered[e]!);
      placed++;
    }
    if (placed !== this.live) throw new Error(`KeyTable: ${placed} entries in the index, ${this.live} counted`);
  }

  /** Drops the deleted entries; returns old entry number -> new (for a live entry, its own). */
  private dropHoles(used: number): Int32Array {
    const old = this.kv;
    const kv = newEntries();
    const map = new Int32Array(used + 1);
    let n = 0;
    for (let e = 0; e < used; e++) {
      map[e] = n;
      const k = old[2 * e];
      if (k === HOLE) continue;
      kv.push(k, old[2 * e + 1]);
      n++;
    }
    map[used] = n;
    if (n !== this.live) throw new Error(`KeyTable: ${n} live entries found, ${this.live} counted`);
    this.kv = kv;
    this.renumber(map);
    return map;
  }

  private renumber(map: Int32Array): void {
    this.renumbered = map;
    this.generation++;
  }
}

/**
 * A live iterator over a KeyTable, as a Map's: it sees entries added after it was made and
 * skips deleted ones. One subclass per kind, so each next() is monomorphic (snapshots iterate
 * millions of keys and values).
 */
abstract class Cursor<T> implements MapIterator<T> {
  private at = 0;
  private generation: number;
  constructor(private readonly table: KeyTable<unknown>) {
    this.generation = table.generation;
  }

  /** The entry number of the next live entry, or -1 at the end; moves past it. */
  protected advance(kv: unknown[]): number {
    const t = this.table;
    if (this.generation !== t.generation) {
      this.at = t.positionAfterRenumbering(this.at, this.generation);
      this.generation = t.generation;
    }
    const used = kv.length >> 1;
    for (let e = this.at; e < used; e++) {
      if (kv[2 * e] === HOLE) continue;
      this.at = e + 1;
      return e;
    }
    this.at = used;
    return -1;
  }

  protected get kv(): unknown[] {
    return this.table.kv;
  }

  abstract next(): IteratorResult<T, undefined>;

  [Symbol.iterator](): MapIterator<T> {
    return this;
  }
}

class KeyCursor extends Cursor<NormKey> {
  next(): IteratorResult<NormKey, undefined> {
    const kv = this.kv;
    const e = this.advance(kv);
    return e < 0 ? { value: undefined, done: true } : { value: kv[2 * e] as NormKey, done: false };
  }
}

class ValueCursor<V> extends Cursor<V> {
  next(): IteratorResult<V, undefined> {
    const kv = this.kv;
    const e = this.advance(kv);
    return e < 0 ? { value: undefined, done: true } : { value: kv[2 * e + 1] as V, done: false };
  }
}

class EntryCursor<V> extends Cursor<[NormKey, V]> {
  next(): IteratorResult<[NormKey, V], undefined> {
    const kv = this.kv;
    const e = this.advance(kv);
    return e < 0 ? { value: undefined, done: true } : { value: [kv[2 * e] as NormKey, kv[2 * e + 1] as V], done: false };
  }
}
