/**
 * A key group's string-key column as its last full snapshot encoded it, kept for the next
 * (columnar-map.ts encodes a group's keys from it).
 *
 * Why: encoding a snapshot of 10 M keys spent most of its time reading each key string
 * (scattered over a GB-sized heap) and copying its characters; between two checkpoints most
 * groups keep their keys and only values change. A Map iterates in insertion order, so a
 * group whose keys were only updated iterates the same keys in the same order, and one that
 * also gained keys has the old ones first: the column is the same bytes, or the same bytes
 * plus the new keys'.
 *
 * Why it cannot be stale: the cache holds the key strings themselves, in iteration order,
 * and every encoding checks the Map's keys against them (`===`: the same string object
 * compares by pointer, without reading its characters; a different one compares by
 * content, so the check is exact whatever happened to the Map). The longest matching
 * prefix is reused; the keys after it (new, or after a delete, a clear or a re-insert)
 * are encoded again. No mutation path (handles, TTL cleanup, restore) has to report
 * anything, so none can be forgotten. The check costs one pass over the Map's keys
 * without touching the strings (~4 ns a key against ~25 ns to encode one).
 *
 * Memory: the key characters once more (1 byte each as Latin-1, 2 as UTF-16), the length
 * column (1 byte a key for keys under 256 characters) and a reference per key (8 bytes
 * without pointer compression): about 9 + the key length in bytes a key, ~170 MB at 10 M
 * keys of 8 characters. state.backend.heap.snapshot-key-cache turns it off.
 *
 * The references are held in arrays of CHUNK keys made at their full size: one array per
 * group would be above V8's regular object size (large object space: fresh pages, and every
 * append past its capacity copies the whole array, in every group at the same checkpoint).
 */
import type { NormKey } from './key-groups.ts';

const SHIFT = 13;
/** Keys per array of references: 64 KiB, below V8's large-object threshold (128 KiB). */
const CHUNK = 1 << SHIFT;
const MASK = CHUNK - 1;

const NO_BYTES = new Uint8Array(0);

export class KeyColumnCache {
  /** The keys encoded (strings), in the Map's iteration order: key i is chunks[i >> SHIFT][i & MASK]. */
  chunks: NormKey[][] = [];
  count = 0;
  /** Their characters as Latin-1 bytes (all ≤ U+00FF) or UTF-16 code units; capacity ≥ charCount. */
  chars: Uint8Array | Uint16Array = NO_BYTES;
  charCount = 0;
  /** Their lengths, in a width that holds the longest; capacity ≥ count. */
  lens: Uint8Array | Uint16Array | Uint32Array = NO_BYTES;
  longest = 0;

  get wide(): boolean {
    return this.chars instanceof Uint16Array;
  }

  /** Bytes held besides the strings (metrics, tests): characters, lengths and the references. */
  get bytes(): number {
    return this.chars.byteLength + this.lens.byteLength + 8 * CHUNK * this.chunks.length;
  }

  /** The keys held, in order (tests). */
  keyList(): NormKey[] {
    const out: NormKey[] = [];
    for (let i = 0; i < this.count; i++) out.push(this.chunks[i >>> SHIFT]![i & MASK]!);
    return out;
  }

  clear(): void {
    this.chunks = [];
    this.count = 0;
    this.chars = NO_BYTES;
    this.charCount = 0;
    this.lens = NO_BYTES;
    this.longest = 0;
  }
}

/** Keys reused from the cache by the last fillKeyColumn (tests, benchmarks). */
export let reusedKeys = 0;

/** Lengths of the keys being appended (module scratch, reused). */
let added = new Uint32Array(1 << 12);

/**
 * Brings the cache up to date with the Map's keys: keeps the longest prefix it already holds,
 * encodes the rest. False (and the cache cleared) at a key that is not a string: the caller
 * encodes the group without it.
 */
export function fillKeyColumn(g: ReadonlyMap<NormKey, unknown>, c: KeyColumnCache): boolean {
  const it = g.keys();
  const old = c.count;
  const chunks = c.chunks;
  let chunk = chunks.length > 0 ? chunks[0]! : [];
  let i = 0;
  let j = 0;
  let first: NormKey | undefined;
  let more = false;
  // A Map iterator has no return(): after the break, append() goes on where this stopped.
  for (const k of it) {
    if (i >= old) {
      first = k;
      more = true;
      break;
    }
    if (j === CHUNK) {
      chunk = chunks[i >>> SHIFT]!;
      j = 0;
    }
    if (k !== chunk[j]) {
      first = k;
      more = true;
      break;
    }
    i++;
    j++;
  }
  reusedKeys = i;
  if (i < old) truncate(c, i);
  if (!more) return true;
  if (!append(c, first!, it, g.size)) {
    c.clear();
    return false;
  }
  return true;
}

/** Keeps the first `n` keys. */
function truncate(c: KeyColumnCache, n: number): void {
  c.chunks.length = (n + MASK) >>> SHIFT;
  if ((n & MASK) !== 0) c.chunks[n >>> SHIFT]!.fill(undefined as unknown as NormKey, n & MASK); // let the removed keys go
  c.count = n;
  const ln = c.lens;
  let p = 0;
  let longest = 0;
  for (let i = 0; i < n; i++) {
    const len = ln[i]!;
    p += len;
    if (len > longest) longest = len;
  }
  c.charCount = p;
  c.longest = longest;
  if (c.wide) {
    // The column is UTF-16 only while some key needs it (the block says Latin-1 otherwise).
    const ch = c.chars as Uint16Array;
    let or = 0;
    for (let k = 0; k < p; k++) or |= ch[k]!;
    if (or <= 0xff) {
      const narrow = new Uint8Array(ch.length);
      narrow.set(ch.subarray(0, p)); // element-wise: exact, every unit is ≤ 0xff
      c.chars = narrow;
    }
  }
  // Lengths keep their width; the encoder narrows them if the longest key went away.
}

/**
 * Appends `first` and the rest of `it`: the references, characters and lengths, in one pass
 * over the Map (the first snapshot of a group appends all its keys). False at a key that is
 * not a string.
 */
function append(c: KeyColumnCache, first: NormKey, it: Iterator<NormKey> & Iterable<NormKey>, size: number): boolean {
  const from = c.count;
  if (added.length < size - from) added = new Uint32Array(Math.max(size - from, 2 * added.length));
  if (!appendKey(c, first, from)) return false;
  // The loop keeps its state in locals (a call per key, or fields written per key, ran at half the speed).
  const chunks = c.chunks;
  const ln = added;
  let n = c.count;
  let j = n - ((chunks.length - 1) << SHIFT); // CHUNK when the last array is full
  let chunk = chunks[chunks.length - 1]!;
  let ch8 = c.chars instanceof Uint8Array ? c.chars : undefined;
  let ch16 = ch8 === undefined ? (c.chars as Uint16Array) : undefined;
  let p = c.charCount;
  let longest = c.longest;
  for (const k of it) {
    if (typeof k !== 'string') return false;
    if (j === CHUNK) {
      chunk = newChunk(chunks);
      j = 0;
    }
    chunk[j++] = k;
    const len = k.length;
    if (ch8 !== undefined) {
      if (p + len > ch8.length) ch8 = grow8(c, ch8, p, len);
      let or = 0;
      for (let x = 0; x < len; x++) {
        const u = k.charCodeAt(x);
        or |= u;
        ch8[p + x] = u;
      }
      if (or > 0xff) {
        ch16 = widen(c, ch8, p);
        ch8 = undefined;
      }
    }
    if (ch16 !== undefined) {
      if (p + len > ch16.length) ch16 = grow16(c, ch16, p, len);
      for (let x = 0; x < len; x++) ch16[p + x] = k.charCodeAt(x);
    }
    p += len;
    ln[n - from] = len;
    if (len > longest) longest = len;
    n++;
  }
  c.count = n;
  c.charCount = p;
  c.longest = longest;
  finishLengths(c, from);
  return true;
}

/** The first key appended (sets up the chunk and the character column's kind), through the same path as the rest. */
function appendKey(c: KeyColumnCache, k: NormKey, from: number): boolean {
  if (typeof k !== 'string') return false;
  const n = c.count;
  const chunk = (n & MASK) === 0 ? newChunk(c.chunks) : c.chunks[n >>> SHIFT]!;
  chunk[n & MASK] = k;
  const len = k.length;
  let p = c.charCount;
  let or = 0;
  for (let x = 0; x < len; x++) or |= k.charCodeAt(x);
  if (or > 0xff && c.chars instanceof Uint8Array) widen(c, c.chars, p);
  const ch = c.chars;
  if (p + len > ch.length) (ch instanceof Uint8Array ? grow8 : grow16)(c, ch as never, p, len);
  for (let x = 0; x < len; x++) c.chars[p + x] = k.charCodeAt(x);
  p += len;
  added[n - from] = len;
  if (len > c.longest) c.longest = len;
  c.charCount = p;
  c.count = n + 1;
  return true;
}

function newChunk(chunks: NormKey[][]): NormKey[] {
  const a = new Array<NormKey>(CHUNK); // its full size at once (never grown, never copied)
  chunks.push(a);
  return a;
}

function grow8(c: KeyColumnCache, ch: Uint8Array, p: number, len: number): Uint8Array {
  const bigger = new Uint8Array(Math.max(p + len, 2 * ch.length, 1024));
  bigger.set(ch.subarray(0, p));
  c.chars = bigger;
  return bigger;
}

function grow16(c: KeyColumnCache, ch: Uint16Array, p: number, len: number): Uint16Array {
  const bigger = new Uint16Array(Math.max(p + len, 2 * ch.length, 1024));
  bigger.set(ch.subarray(0, p));
  c.chars = bigger;
  return bigger;
}

/** The characters so far as UTF-16 (a key needs it): element-wise, exact. */
function widen(c: KeyColumnCache, ch: Uint8Array, p: number): Uint16Array {
  const wide = new Uint16Array(Math.max(ch.length, 1024));
  wide.set(ch.subarray(0, p));
  c.chars = wide;
  return wide;
}

/** Lengths of keys [from, count) from the scratch into the cache's column, widened first if a new key needs it; lets slack go. */
function finishLengths(c: KeyColumnCache, from: number): void {
  const n = c.count;
  const need = c.longest <= 0xff ? 1 : c.longest <= 0xffff ? 2 : 4;
  if (c.lens.length < n || c.lens.BYTES_PER_ELEMENT < need) {
    const cap = c.lens.length >= n ? c.lens.length : n + (n >>> 4) + 64;
    const ln = need === 1 ? new Uint8Array(cap) : need === 2 ? new Uint16Array(cap) : new Uint32Array(cap);
    ln.set(c.lens.subarray(0, from)); // element-wise: widening is exact
    c.lens = ln;
  }
  c.lens.set(added.subarray(0, n - from), from); // element-wise: exact, each fits the width
  // Slack from growing is let go (held until the next snapshot, in every group); some is kept for appends.
  const p = c.charCount;
  if (c.chars.length > p + (p >>> 3) + 256) c.chars = c.chars.slice(0, p + (p >>> 4) + 64);
}
