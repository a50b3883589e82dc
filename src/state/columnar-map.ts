/**
 * Encodes a key group's Map straight into a format-3 block (columnar-block.ts), the same
 * bytes encodeColumns(keys, values) gives, without the intermediate arrays and strings.
 *
 * Why: a snapshot of 10 M keys has key groups of ~80 K entries. Gathering them into arrays,
 * joining the keys into one string and allocating per-group columns made objects above V8's
 * regular object size (~128 KB: two arrays and a string per group), which go to the large
 * object space: fresh pages each time, and allocation that drives incremental marking of the
 * whole (GB-sized) heap. Per key that was 3-4x the cost of a group of 8 K entries. Here a
 * pass over the Map's keys writes their characters (Latin-1 bytes, or UTF-16 code units
 * once a key needs them) and lengths into scratch typed arrays reused across groups (off the
 * V8 heap), a pass over its values writes numbers likewise, and the block is assembled from
 * them with native copies into memory the caller provides (block-pool.ts for snapshots).
 * Anything outside the fast layouts (mixed key types) takes encodeColumns' path. With the
 * group's key column cache (key-column-cache.ts: full heap snapshots), string keys already
 * encoded by the last snapshot are copied from it and only the keys inserted since are read.
 */
import { encodeValue } from '../core/codec.ts';
import { align8, encodeColumns, HEADER, KeyKind, typedValues, VALUE_WIDTH, ValueKind, writeColumnarHeader } from './columnar-block.ts';
import type { NormKey } from './key-groups.ts';
import { appendColumns, fillDone, forgetInserts, lendView, pendingKeys, returnView, type KeyColumnCache } from './key-column-cache.ts';
import { KeyTable } from './key-table.ts';

/** Scratch columns above this size are let go after use (one huge group must not pin memory). */
const KEEP_SCRATCH_BYTES = 8 << 20;

/** Scratch columns of the group being encoded: key characters as Latin-1 or UTF-16, key lengths, numeric keys and values. */
let latin1 = new Uint8Array(1 << 17);
let utf16 = new Uint16Array(1 << 10);
let lens = new Uint32Array(1 << 12);
let nums = new Float64Array(1 << 12);
let vals = new Float64Array(1 << 12);

/** What the passes found besides the columns (module fields: no object per group). */
let charCount = 0;
let wideChars = false;
let longestKey = 0;
let intKeys = true;
let vMin = 0;
let vMax = 0;
let intValues = true;
/** Where assemble takes the string-key columns from (the scratch columns), and the group's cache when its keys come from there (assembleParts). */
let srcChars: Uint8Array | Uint16Array = latin1;
let srcLens: Uint8Array | Uint16Array | Uint32Array = lens;
let cacheSrc: KeyColumnCache | undefined;

export type Alloc = (size: number) => Uint8Array;
const fresh: Alloc = (size) => new Uint8Array(size);

/**
 * The block of a Map's entries, values passed through `enc` (the state's value encoder) when
 * given, in memory from `alloc` (every byte is written). `enc` must not encode another group
 * meanwhile (scratch columns are shared): value encoders are serializers, never touching state.
 * With `cache` (the group's, from its last encoding), string keys come from it, brought up to
 * date first (key-column-cache.ts): the same bytes, without reading the keys it still holds.
 */
export function encodeMapColumns(g: ReadonlyMap<NormKey, unknown>, enc?: (v: unknown) => unknown, alloc: Alloc = fresh, cache?: KeyColumnCache): Uint8Array {
  // The pieces in memory of their own: pooled memory is handed back only by the file that writes it.
  const parts = encodeMapColumnParts(g, enc, cache === undefined ? alloc : fresh, cache);
  const block = joinParts(parts, alloc);
  if (Array.isArray(parts)) for (const piece of parts) returnView(piece); // copied: the cache may reuse its segments
  return block;
}

/**
 * The block of encodeMapColumns as the pieces it is written in, in order: one piece, or with
 * the group's cache its header, the cache's key columns themselves (views of its segments, not
 * copies), padding and the values. Why: the key columns are most of a block's bytes (8-character
 * keys and small numbers: ~80 %), and copying them into block memory was most of assembling a
 * block, in fresh memory at a job's first checkpoint. The views stay valid until written: a
 * cache never changes what it holds while a view of it is out (lent here, given back by the state
 * file: returnView); it appends past it or starts new segments (key-column-cache.ts).
 */
export function encodeMapColumnParts(g: ReadonlyMap<NormKey, unknown>, enc: ((v: unknown) => unknown) | undefined, alloc: Alloc, cache: KeyColumnCache | undefined): Uint8Array | Uint8Array[] {
  const n = g.size;
  if (lens.length < n) {
    const size = Math.max(n, lens.length * 2);
    lens = new Uint32Array(size);
    nums = new Float64Array(size);
    vals = new Float64Array(size);
  }
  cacheSrc = undefined;
  try {
    // One small loop per column and key type: each stays monomorphic and keeps its state in
    // registers (one forEach callback writing captured variables ran at half the speed).
    const first = n === 0 ? '' : g.keys().next().value!;
    const stringKeys = typeof first === 'string';
    let keysOk: boolean;
    if (stringKeys && cache !== undefined) {
      keysOk = cachedKeyColumn(g, cache);
    } else {
      if (cache !== undefined) {
        // Number keys: nothing to keep (numberKeyColumn is a typed copy already).
        if (cache.count > 0) cache.clear();
        forgetInserts(g);
      }
      keysOk = stringKeys ? latin1KeyColumn(g) || utf16KeyColumn(g) : numberKeyColumn(g);
    }
    if (!keysOk) return viaArrays(g, enc);
    const packed = enc === undefined ? numberValueColumn(g) : encodedValueColumn(g, enc);
    return cacheSrc !== undefined ? assembleParts(cacheSrc, n, packed, alloc) : assemble(n, stringKeys, packed, alloc);
  } finally {
    if (latin1.byteLength > KEEP_SCRATCH_BYTES) latin1 = new Uint8Array(1 << 17);
    if (utf16.byteLength > KEEP_SCRATCH_BYTES) utf16 = new Uint16Array(1 << 10);
    if (lens.byteLength > KEEP_SCRATCH_BYTES) {
      lens = new Uint32Array(1 << 12);
      nums = new Float64Array(1 << 12);
      vals = new Float64Array(1 << 12);
    }
  }
}

/**
 * String keys from the group's cache (key-column-cache.ts): the keys inserted since it was
 * filled are encoded and appended when the Map says nothing else changed, else every key is
 * encoded and replaces what it held. False (cache cleared) at a key that is not a string.
 */
function cachedKeyColumn(g: ReadonlyMap<NormKey, unknown>, c: KeyColumnCache): boolean {
  const pending = pendingKeys(g, c);
  const ok = pending === undefined ? latin1KeyColumn(g) || utf16KeyColumn(g) : addedKeyColumn(pending);
  if (!ok) {
    c.clear();
    return false;
  }
  const keep = pending === undefined ? 0 : c.count;
  appendColumns(c, keep, srcChars, charCount, lens, g.size - keep, longestKey);
  if (c.count !== g.size) throw new Error(`key column cache holds ${c.count} keys for a group of ${g.size}`); // a bug: the column would not match the values
  fillDone(g);
  cacheSrc = c;
  charCount = c.charCount;
  wideChars = c.wide;
  longestKey = c.longest;
  return true;
}

/**
 * The keys inserted since the cache was filled (usually few), as latin1KeyColumn and
 * utf16KeyColumn encode a Map's: Latin-1 unless one needs UTF-16. An array of their own (a
 * loop taking either a Map or an array ran the Map's at half the speed).
 *
 * Its two loops are functions of their own, each followed by nothing but stores and a return.
 * V8 replaces a long loop on the stack (OSR) during a long first call (thousands of keys a
 * group gained between two checkpoints); code after that loop had never run, so the OSR code
 * had no type feedback for it and deoptimized there. Node 20's V8 keeps that OSR code and enters
 * it again from later calls' loops: written as one function, calls kept deoptimizing at the
 * comparison after the first loop and copied the characters in unoptimized code (512
 * deoptimizations of the same code at the same place in one 5 M-record word count: 128 key
 * groups, 4 checkpoints).
 */
function addedKeyColumn(keys: readonly NormKey[]): boolean {
  if (!scanAddedKeys(keys)) return false;
  const chars = scannedChars;
  const wide = scannedOr > 0xff;
  if (wide ? utf16.length < chars : latin1.length < chars) {
    if (wide) utf16 = new Uint16Array(chars);
    else latin1 = new Uint8Array(chars);
  }
  const ch = wide ? utf16 : latin1;
  charCount = copyAddedKeys(keys, ch);
  wideChars = wide;
  longestKey = scannedLongest;
  srcChars = ch;
  srcLens = lens;
  return true;
}

/** What scanAddedKeys found: characters in all, their bits or-ed together, the longest key. */
let scannedChars = 0;
let scannedOr = 0;
let scannedLongest = 0;

/** The keys' lengths into the scratch column; false at a key that is not a string. */
function scanAddedKeys(keys: readonly NormKey[]): boolean {
  const n = keys.length;
  const ln = lens;
  let chars = 0;
  let or = 0;
  let longest = 0;
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    if (typeof k !== 'string') return false;
    const len = k.length;
    for (let j = 0; j < len; j++) or |= k.charCodeAt(j);
    chars += len;
    ln[i] = len;
    if (len > longest) longest = len;
  }
  scannedChars = chars;
  scannedOr = or;
  scannedLongest = longest;
  return true;
}

/** The keys' characters into `ch` (each fits: scanAddedKeys looked); returns how many. */
function copyAddedKeys(keys: readonly NormKey[], ch: Uint8Array | Uint16Array): number {
  const n = keys.length;
  let p = 0;
  for (let i = 0; i < n; i++) {
    const k = keys[i] as string;
    for (let j = 0; j < k.length; j++) ch[p++] = k.charCodeAt(j);
  }
  return p;
}

/**
 * Key characters as Latin-1 bytes, and lengths, into the scratch columns; false at a key
 * that is not a string or has a character above U+00FF (then utf16KeyColumn starts over).
 */
function latin1KeyColumn(g: ReadonlyMap<NormKey, unknown>): boolean {
  if (g instanceof KeyTable) return latin1KeyColumnOfEntries(g.kv);
  let ch = latin1;
  const ln = lens;
  let p = 0;
  let or = 0;
  let longest = 0;
  let i = 0;
  for (const k of g.keys()) {
    if (typeof k !== 'string') return false;
    const len = k.length;
    if (p + len > ch.length) {
      latin1 = new Uint8Array(Math.max(p + len, 2 * ch.length));
      latin1.set(ch.subarray(0, p));
      ch = latin1;
    }
    for (let j = 0; j < len; j++) {
      const c = k.charCodeAt(j);
      or |= c;
      ch[p++] = c;
    }
    if (or > 0xff) return false;
    ln[i++] = len;
    if (len > longest) longest = len;
  }
  charCount = p;
  wideChars = false;
  longestKey = longest;
  srcChars = latin1;
  srcLens = lens;
  return true;
}

/**
 * latin1KeyColumn over a KeyTable's entry array (key, value, ... in insertion order, the order
 * its iterators give; a deleted entry's key is a symbol, never a key). Walking the array
 * directly instead of through the table's iterator: 10 M keys in 152 against 200 ms (a tsx
 * micro-benchmark, 128 tables of 78 K keys), on the task's thread at a full snapshot.
 */
function latin1KeyColumnOfEntries(kv: readonly unknown[]): boolean {
  let ch = latin1;
  const ln = lens;
  let p = 0;
  let or = 0;
  let longest = 0;
  let i = 0;
  const used = kv.length;
  for (let e = 0; e < used; e += 2) {
    const k = kv[e];
    if (typeof k !== 'string') {
      if (typeof k === 'symbol') continue; // a deleted entry
      return false;
    }
    const len = k.length;
    if (p + len > ch.length) {
      latin1 = new Uint8Array(Math.max(p + len, 2 * ch.length));
      latin1.set(ch.subarray(0, p));
      ch = latin1;
    }
    for (let j = 0; j < len; j++) {
      const c = k.charCodeAt(j);
      or |= c;
      ch[p++] = c;
    }
    if (or > 0xff) return false;
    ln[i++] = len;
    if (len > longest) longest = len;
  }
  charCount = p;
  wideChars = false;
  longestKey = longest;
  srcChars = latin1;
  srcLens = lens;
  return true;
}

/** Key characters as UTF-16 code units, and lengths, into the scratch columns; false at a key that is not a string. */
function utf16KeyColumn(g: ReadonlyMap<NormKey, unknown>): boolean {
  let ch = utf16;
  const ln = lens;
  let p = 0;
  let longest = 0;
  let i = 0;
  for (const k of g.keys()) {
    if (typeof k !== 'string') return false;
    const len = k.length;
    if (p + len > ch.length) {
      utf16 = new Uint16Array(Math.max(p + len, 2 * ch.length));
      utf16.set(ch.subarray(0, p));
      ch = utf16;
    }
    for (let j = 0; j < len; j++) ch[p++] = k.charCodeAt(j);
    ln[i++] = len;
    if (len > longest) longest = len;
  }
  charCount = p;
  wideChars = true;
  longestKey = longest;
  srcChars = utf16;
  srcLens = lens;
  return true;
}

/** Numeric keys into the scratch column; false at a key that is not a number. */
function numberKeyColumn(g: ReadonlyMap<NormKey, unknown>): boolean {
  const nm = nums;
  let int = true;
  let i = 0;
  for (const k of g.keys()) {
    if (typeof k !== 'number') return false;
    nm[i++] = k;
    if (int && ((k | 0) !== k || (k === 0 && 1 / k < 0))) int = false;
  }
  intKeys = int;
  return true;
}

/** Values as held into the scratch column; every value (for msgpack) once one is not a number. */
function numberValueColumn(g: ReadonlyMap<NormKey, unknown>): unknown[] | undefined {
  if (g instanceof KeyTable) return numberValueColumnOfEntries(g.kv, g.kv.length !== 2 * g.size);
  const vl = vals;
  let int = true;
  let min = 0;
  let max = 0;
  let i = 0;
  for (const v of g.values()) {
    if (typeof v !== 'number') return [...g.values()];
    vl[i++] = v;
    if (int) {
      if ((v | 0) !== v || (v === 0 && 1 / v < 0)) int = false;
      else if (v < min) min = v;
      else if (v > max) max = v;
    }
  }
  intValues = int;
  vMin = min;
  vMax = max;
  return undefined;
}

/**
 * numberValueColumn over a KeyTable's entry array (see latin1KeyColumnOfEntries): 10 M values
 * in 23 against 47 ms through the iterator (the same micro-benchmark).
 */
function numberValueColumnOfEntries(kv: readonly unknown[], holes: boolean): unknown[] | undefined {
  const vl = vals;
  let int = true;
  let min = 0;
  let max = 0;
  let i = 0;
  const used = kv.length;
  for (let e = 0; e < used; e += 2) {
    // Only a table with deleted entries has keys to look at: `typeof` loads each key's map, a
    // cache miss per key string scattered over the heap (half this loop's time at 1 M keys).
    if (holes && typeof kv[e] === 'symbol') continue; // a deleted entry
    const v = kv[e + 1];
    if (typeof v !== 'number') return liveValues(kv);
    vl[i++] = v;
    if (int) {
      if ((v | 0) !== v || (v === 0 && 1 / v < 0)) int = false;
      else if (v < min) min = v;
      else if (v > max) max = v;
    }
  }
  intValues = int;
  vMin = min;
  vMax = max;
  return undefined;
}

/** The live values of a KeyTable's entry array, in order (for msgpack: not all numbers). */
function liveValues(kv: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  for (let e = 0; e < kv.length; e += 2) if (typeof kv[e] !== 'symbol') out.push(kv[e + 1]);
  return out;
}

/** Values through the state's encoder: numbers into the scratch column, else every value (for msgpack). */
function encodedValueColumn(g: ReadonlyMap<NormKey, unknown>, enc: (v: unknown) => unknown): unknown[] | undefined {
  const vl = vals;
  let int = true;
  let min = 0;
  let max = 0;
  let packed: unknown[] | undefined;
  let i = 0;
  for (const raw of g.values()) {
    const v = enc(raw);
    if (packed !== undefined) {
      packed.push(v);
    } else if (typeof v !== 'number') {
      packed = [];
      for (let j = 0; j < i; j++) packed.push(vl[j]);
      packed.push(v);
    } else {
      vl[i++] = v;
      if (int) {
        if ((v | 0) !== v || (v === 0 && 1 / v < 0)) int = false;
        else if (v < min) min = v;
        else if (v > max) max = v;
      }
    }
  }
  intValues = int;
  vMin = min;
  vMax = max;
  return packed;
}

/** Keys of both types (rare): the generic encoder over arrays (values encoded again: serializers are pure). */
function viaArrays(g: ReadonlyMap<NormKey, unknown>, enc: ((v: unknown) => unknown) | undefined): Uint8Array {
  const keys: NormKey[] = [];
  const values: unknown[] = [];
  g.forEach((v, k) => {
    keys.push(k);
    values.push(enc === undefined ? v : enc(v));
  });
  return encodeColumns(keys, values);
}

/** The value column's kind: packed, or the narrowest typed column that holds the values. */
function valueKind(packed: unknown[] | undefined): ValueKind {
  return packed !== undefined ? ValueKind.Packed
    : !intValues ? ValueKind.Float64
    : vMin >= 0 && vMax <= 0xff ? ValueKind.Uint8
    : vMin >= 0 && vMax <= 0xffff ? ValueKind.Uint16
    : ValueKind.Int32;
}

/** The width of a string key column's lengths. */
function lenWidthOf(longest: number): number {
  return longest <= 0xff ? 1 : longest <= 0xffff ? 2 : 4;
}

/** Writes the value column (`vk`, or `valueBytes` when packed) at `at` of `out`, which must be 8-byte aligned in its buffer. */
function writeValues(out: Uint8Array, at: number, vk: ValueKind, valueBytes: Uint8Array | undefined, n: number): void {
  if (valueBytes !== undefined) out.set(valueBytes, at);
  else typedValues(vk, out.buffer, out.byteOffset + at, n).set(vals.subarray(0, n));
}

/** The block from the scratch columns, in one piece. */
function assemble(n: number, stringKeys: boolean, packed: unknown[] | undefined, alloc: Alloc): Uint8Array {
  const p = charCount;
  const kk = !stringKeys ? (intKeys ? KeyKind.Int32 : KeyKind.Float64) : wideChars ? KeyKind.Utf16 : KeyKind.Latin1;
  const keyLen = kk === KeyKind.Latin1 ? p : kk === KeyKind.Utf16 ? 2 * p : kk === KeyKind.Int32 ? 4 * n : 8 * n;
  const lenWidth = !stringKeys ? 0 : lenWidthOf(longestKey);
  const lenBytes = n * lenWidth;
  const vk = valueKind(packed);
  const valueBytes = packed !== undefined ? encodeValue(packed) : undefined;
  const keysEnd = HEADER + keyLen + lenBytes;
  const valuesAt = align8(keysEnd);
  const total = valuesAt + (valueBytes !== undefined ? valueBytes.length : n * VALUE_WIDTH[vk as 0 | 1 | 2 | 3]);
  const out = alloc(total);
  // Typed views of the columns need the block's own offset in its buffer (a multiple of 8).
  const base = out.byteOffset;
  if (base % 8 !== 0) throw new Error(`a block must start 8-byte aligned, got offset ${base}`);
  writeColumnarHeader(out, kk, lenWidth, vk, n, keyLen, lenBytes);
  switch (kk) {
    case KeyKind.Latin1: out.set(srcChars.subarray(0, p), HEADER); break;
    case KeyKind.Utf16: new Uint16Array(out.buffer, base + HEADER, p).set(srcChars.subarray(0, p)); break; // little-endian, as Buffer's 'utf16le'
    case KeyKind.Int32: new Int32Array(out.buffer, base + HEADER, n).set(nums.subarray(0, n)); break;
    default: new Float64Array(out.buffer, base + HEADER, n).set(nums.subarray(0, n)); break;
  }
  if (stringKeys) {
    const at = HEADER + keyLen;
    const ln = srcLens.subarray(0, n);
    // Narrowing is exact (every length fits the width). The length column starts wherever
    // the keys end: wider lengths go through an aligned copy, or as bytes when already that width.
    if (lenWidth === 1) out.set(ln, at);
    else if (ln.BYTES_PER_ELEMENT === lenWidth) out.set(new Uint8Array(ln.buffer, ln.byteOffset, n * lenWidth), at);
    else out.set(new Uint8Array((lenWidth === 2 ? Uint16Array.from(ln) : Uint32Array.from(ln)).buffer), at);
  }
  out.fill(0, keysEnd, valuesAt); // padding: pooled memory holds older bytes
  writeValues(out, valuesAt, vk, valueBytes, n);
  return out;
}

/** Padding between a block's key columns and its values (up to 7 bytes), shared: never written. */
const ZEROS = new Uint8Array(8);

/**
 * The block of a group whose string keys are in its cache `c`, as pieces: the header and the
 * values in memory from `alloc`, the key columns as views of the cache's segments.
 */
function assembleParts(c: KeyColumnCache, n: number, packed: unknown[] | undefined, alloc: Alloc): Uint8Array[] {
  const p = c.charCount;
  const wide = c.wide;
  const keyLen = wide ? 2 * p : p;
  const lenWidth = lenWidthOf(c.longest);
  const lenBytes = n * lenWidth;
  const vk = valueKind(packed);
  const valueBytes = packed !== undefined ? encodeValue(packed) : undefined;
  const keysEnd = HEADER + keyLen + lenBytes;
  const head = alloc(HEADER);
  writeColumnarHeader(head, wide ? KeyKind.Utf16 : KeyKind.Latin1, lenWidth, vk, n, keyLen, lenBytes);
  const parts = [head];
  segmentBytes(parts, c, c.charSegments, p);
  segmentBytes(parts, c, c.lenSegments, n, lenWidth);
  if (align8(keysEnd) > keysEnd) parts.push(ZEROS.subarray(0, align8(keysEnd) - keysEnd));
  const values = alloc(valueBytes !== undefined ? valueBytes.length : n * VALUE_WIDTH[vk as 0 | 1 | 2 | 3]);
  if (values.byteOffset % 8 !== 0) throw new Error(`a value column must start 8-byte aligned, got offset ${values.byteOffset}`);
  writeValues(values, 0, vk, valueBytes, n);
  parts.push(values);
  return parts;
}

/**
 * Pushes the bytes of the first `n` elements of a column of segments (UTF-16 as little-endian,
 * as Buffer's 'utf16le'), one view per segment; `width`: the element width the block wants,
 * which the segments must have (the cache keeps its lengths at the width of its longest key).
 */
function segmentBytes(parts: Uint8Array[], c: KeyColumnCache, segs: readonly (Uint8Array | Uint16Array | Uint32Array)[], n: number, width?: number): void {
  for (let i = 0; n > 0; i++) {
    const s = segs[i]!;
    if (width !== undefined && s.BYTES_PER_ELEMENT !== width) throw new Error(`a key column cache keeps ${s.BYTES_PER_ELEMENT}-byte lengths for ${width}-byte ones`); // a bug: the block would be misread
    const k = Math.min(s.length, n);
    const view = new Uint8Array(s.buffer, s.byteOffset, k * s.BYTES_PER_ELEMENT);
    lendView(c, view);
    parts.push(view);
    n -= k;
  }
}

/** The pieces of a block in one piece (one piece as it is). */
export function joinParts(parts: Uint8Array | readonly Uint8Array[], alloc: Alloc = fresh): Uint8Array {
  if (parts instanceof Uint8Array) return parts;
  let total = 0;
  for (const x of parts) total += x.byteLength;
  const out = alloc(total);
  let at = 0;
  for (const x of parts) {
    out.set(x, at);
    at += x.byteLength;
  }
  return out;
}
