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
 * Knowing that nothing else happened: the group's map says so itself (InsertTracking,
 * heap/group-map.ts), so no caller has to report a change and none can forget to. A KeyTable
 * keeps its entries in insertion order and only appends: the keys inserted since the cache was
 * filled are its entries from the count it held then, as long as no entry was removed (delete,
 * clear, TTL cleanup stop the tracking) and none renumbered. Nothing is recorded per insert.
 * Anything else (no tracking, a plain Map, a count that does not add up) re-encodes every key
 * into the cache, exactly as without it.
 *
 * Memory: the key characters once more (1 byte each as Latin-1, 2 as UTF-16) and the length
 * column (1 byte a key for keys under 256 characters), off the V8 heap, plus room of 1/16 at a
 * fill and 1/8 at an append: about 9-10 bytes a key of 8 characters, ~90-100 MB at 10 M keys.
 *
 * Segments: a column is a list of typed arrays in order, each full but the last, so that keys
 * appended go into the last one's room or a new one and nothing already cached is ever copied.
 * Why: on this project's 2-CPU VMs a first write to fresh memory costs a page fault per 4 KiB
 * (100 MB took 284 ms to write once and 5 ms to write again), and a contiguous column that
 * outgrew its buffer was copied whole into a new one. A young 1 M-key job's second checkpoint
 * spent 39-45 ms of its task thread so (its groups gained a fifth of their keys since the first),
 * and growing the first buffer instead (room of 1/2 at the first fill) cost a 10 M-key job's
 * first checkpoint ~110 ms more: room is cleared, and so touched, when the memory comes from
 * the allocator's free lists. Now that checkpoint's key columns take ~20 ms, ~13 of them reading
 * the new keys' strings.
 *
 * Invariant: what a segment holds is never written again while a view of it is out. Snapshots
 * write blocks from views of the segments (columnar-map.ts encodeMapColumnParts), and a write may
 * still be under way when the next snapshot appends. Appends write past what is held; a widening
 * or a join makes new segments; a fill (keep 0: the group lost a key since) reuses the first
 * segments in place only when no view of them is out (`views`, given back by the state file
 * once written: returnView), else makes new ones. Why reuse: a group with a removal between
 * checkpoints (TTL cleanup, state cleared per key) is filled again at every one, and new memory
 * each time would cost page faults for every key every checkpoint.
 *
 * state.backend.heap.snapshot-key-cache turns it off.
 */
import type { NormKey } from './key-groups.ts';
import type { StoredKeyColumn } from './columnar-block.ts';

/** A group's map that knows which keys were inserted since its key column was cached (heap/group-map.ts). */
export interface InsertTracking {
  /** The keys inserted since markFilled(), in order; undefined: unknown (every key is encoded again). */
  insertedSinceFill(): NormKey[] | undefined;
  /** The cache now holds every key of the map: inserts count from here. */
  markFilled(): void;
  /** Unknown until the next markFilled(). */
  forgetInserts(): void;
}

function tracking(g: ReadonlyMap<NormKey, unknown>): InsertTracking | undefined {
  return typeof (g as Partial<InsertTracking>).insertedSinceFill === 'function' ? (g as unknown as InsertTracking) : undefined;
}

export type CharColumn = Uint8Array | Uint16Array;
export type LenColumn = Uint8Array | Uint16Array | Uint32Array;

/** Segments a column may have; past it they are joined into one (a copy: rare, see room()). */
const MAX_SEGMENTS = 16;

/** Views of one cache's segments out. */
interface LentViews {
  out: number;
}

export class KeyColumnCache {
  count = 0;
  /** The keys' characters as Latin-1 bytes (all ≤ U+00FF) or UTF-16 code units (all segments alike): charCount of them, in order. */
  charSegments: CharColumn[] = [];
  charCount = 0;
  /** Their lengths, count of them in order, all segments of a width that holds the longest. */
  lenSegments: LenColumn[] = [];
  longest = 0;
  /**
   * Views of its current segments handed out (lendView) and not yet given back (returnView):
   * while any is, a fill makes new segments, and they get a count of their own. So views a file
   * never gives back (it failed or was aborted) hold up only the segments they saw.
   */
  views: LentViews = { out: 0 };

  /** Views of its current segments out (tests). */
  get lent(): number {
    return this.views.out;
  }

  get wide(): boolean {
    return this.charSegments.length > 0 && this.charSegments[0] instanceof Uint16Array;
  }

  /** Bytes held (metrics, tests). */
  get bytes(): number {
    let n = 0;
    for (const a of this.charSegments) n += a.byteLength;
    for (const a of this.lenSegments) n += a.byteLength;
    return n;
  }

  clear(): void {
    this.count = 0;
    this.charSegments = [];
    this.charCount = 0;
    this.lenSegments = [];
    this.longest = 0;
  }
}

/** What encodings with a cache did (tests, benchmarks): keys reused by the last one and by all, encodings whose counts did not add up, and views of caches out (lendView, returnView). */
export const cacheStats = { reusedKeys: 0, reusedTotal: 0, countMismatches: 0, viewsOut: 0 };

/**
 * The keys the cache lacks when the map has only gained keys since it was filled (possibly
 * none), else undefined: every key must be encoded again. Stops the tracking until the cache
 * is filled again (fillDone).
 */
export function pendingKeys(g: ReadonlyMap<NormKey, unknown>, c: KeyColumnCache): NormKey[] | undefined {
  const t = tracking(g);
  if (t === undefined) return undefined;
  const added = t.insertedSinceFill();
  t.forgetInserts(); // until fillDone: a failure in between leaves "unknown"
  if (added === undefined) return undefined;
  if (g.size !== c.count + added.length) {
    // Cannot happen while every removal goes through the map's own methods; if one did not,
    // the cached keys are not to be trusted: all are encoded again (the bytes stay right).
    cacheStats.countMismatches++;
    return undefined;
  }
  return added;
}

/** The cache no longer holds the map's keys (they are not strings): stop tracking its inserts. */
export function forgetInserts(g: ReadonlyMap<NormKey, unknown>): void {
  tracking(g)?.forgetInserts();
}

/** The cache now holds every key of the map: track inserts from here. */
export function fillDone(g: ReadonlyMap<NormKey, unknown>): void {
  tracking(g)?.markFilled();
}

/**
 * Room a new segment gets beyond the `size` elements it is made for, `total` being the
 * column's size with them: 1/16 of it at a fill (keep 0: a group's keys are often all there),
 * 1/8 at an append (a group that gained keys since its last snapshot mostly gains more; the
 * next appends fill the room, and a new segment is made only once they outgrow it). Room is
 * memory touched for nothing until used (the allocator clears it), so it stays small.
 */
function room(total: number, fill: boolean): number {
  return (fill ? total >>> 4 : total >>> 3) + 64;
}

/** Elements `segs` can hold: every segment full but the last. */
function capacity(segs: readonly { readonly length: number }[]): number {
  let n = 0;
  for (const a of segs) n += a.length;
  return n;
}

/**
 * Appends `src` to a column of segments holding `used` elements: into the last segment's room,
 * the rest into a new segment from `make` with room(). Element-wise, so a wider column takes
 * narrower elements exactly (and a narrower one wider elements that fit its width).
 */
function appendTo<T extends CharColumn | LenColumn>(segs: T[], used: number, src: CharColumn | LenColumn, make: (length: number) => T, fill: boolean): void {
  let from = 0;
  const last = segs[segs.length - 1];
  if (last !== undefined) {
    const at = used - (capacity(segs) - last.length);
    from = Math.min(last.length - at, src.length);
    if (from > 0) last.set(src.subarray(0, from), at);
  }
  if (from === src.length) return;
  const rest = src.length - from;
  const seg = make(rest + room(used + src.length, fill));
  seg.set(src.subarray(from));
  segs.push(seg);
  if (segs.length > MAX_SEGMENTS) joinSegments(segs, used + src.length, make);
}

/** Replaces the segments by one holding their `used` elements (and room for appends). */
function joinSegments<T extends CharColumn | LenColumn>(segs: T[], used: number, make: (length: number) => T): void {
  const one = make(used + room(used, false));
  copySegments(one, 0, segs, used);
  segs.length = 0;
  segs.push(one);
}

/** Copies the first `n` elements of a column of segments into `dst` from `at` (element-wise). */
export function copySegments(dst: CharColumn | LenColumn, at: number, segs: readonly (CharColumn | LenColumn)[], n: number): void {
  for (let i = 0; n > 0; i++) {
    const s = segs[i]!;
    const k = Math.min(s.length, n);
    dst.set(k === s.length ? s : s.subarray(0, k), at);
    at += k;
    n -= k;
  }
}

/** The same elements in typed arrays made by `make` (a wider kind: exact). */
function convertSegments<T extends CharColumn | LenColumn>(segs: readonly (CharColumn | LenColumn)[], make: (length: number) => T): T[] {
  return segs.map((s) => {
    const t = make(s.length);
    t.set(s);
    return t;
  });
}

const latin1Of = (n: number): CharColumn => new Uint8Array(n);
const utf16Of = (n: number): CharColumn => new Uint16Array(n);
const lensOf = [(n: number): LenColumn => new Uint8Array(n), (n: number): LenColumn => new Uint16Array(n), undefined, (n: number): LenColumn => new Uint32Array(n)] as const;

/**
 * Appends keys' characters (`chars[0, p)`, Latin-1 bytes or UTF-16 units) and lengths
 * (`lens[0, n)`) to the cache after its first `keep` keys (0: replaces them all), in UTF-16
 * if either side needs it (every segment widened then, as the length column when a new key is
 * longer than its width holds). What it holds stays where it is: appends fill the last
 * segment's room, then a new segment.
 */
export function appendColumns(c: KeyColumnCache, keep: number, chars: CharColumn, p: number, lens: LenColumn, n: number, longest: number): void {
  if (keep === 0) refill(c, chars instanceof Uint16Array, p, n, longest);
  if (keep !== c.count) throw new Error(`appending after ${keep} keys to a key column cache of ${c.count}`); // a bug: keys would be lost or doubled
  const fill = keep === 0;
  const wide = c.wide || chars instanceof Uint16Array;
  if (wide && !c.wide) c.charSegments = convertSegments(c.charSegments, utf16Of);
  appendTo(c.charSegments, c.charCount, chars.subarray(0, p), wide ? utf16Of : latin1Of, fill);
  c.charCount += p;
  if (longest > c.longest) c.longest = longest;
  const need = c.longest <= 0xff ? 1 : c.longest <= 0xffff ? 2 : 4;
  const lenOf = lensOf[need - 1]!;
  if (c.lenSegments.length > 0 && c.lenSegments[0]!.BYTES_PER_ELEMENT !== need) c.lenSegments = convertSegments(c.lenSegments, lenOf);
  appendTo(c.lenSegments, keep, lens.subarray(0, n), lenOf, fill); // element-wise: exact, each fits the width
  c.count = keep + n;
  cacheStats.reusedKeys = keep;
  cacheStats.reusedTotal += keep;
}

/**
 * Empties the cache for a fill of `p` characters (UTF-16 if `wide`) and `n` lengths up to
 * `longest`, keeping its first segments (their contents to be overwritten) when they are of
 * the kinds and sizes needed and no view of them is out.
 */
function refill(c: KeyColumnCache, wide: boolean, p: number, n: number, longest: number): void {
  const chars = c.charSegments[0];
  const lens = c.lenSegments[0];
  const width = longest <= 0xff ? 1 : longest <= 0xffff ? 2 : 4;
  const reusable = c.views.out === 0 && chars !== undefined && lens !== undefined && chars instanceof Uint16Array === wide && chars.length >= p && lens.BYTES_PER_ELEMENT === width && lens.length >= n;
  c.clear();
  if (!reusable) {
    c.views = { out: 0 }; // the new segments': views of the old ones are counted where they were
    return;
  }
  c.charSegments.push(chars);
  c.lenSegments.push(lens);
}

/** Which segments' count a view handed out is in (lendView), until it is given back (returnView). */
const lentViews = new WeakMap<Uint8Array, LentViews>();

/** A view of `c`'s segments going out to be written: `c` keeps them as they are until it comes back. */
export function lendView(c: KeyColumnCache, view: Uint8Array): void {
  lentViews.set(view, c.views);
  c.views.out++;
  cacheStats.viewsOut++;
}

/** Bytes written (a state file's piece): a view lent by a cache goes back to it; any other is ignored. */
export function returnView(view: Uint8Array): void {
  const count = lentViews.get(view);
  if (count === undefined) return;
  lentViews.delete(view);
  if (count.out <= 0) throw new Error('a key column view was given back twice'); // a bug: its segments may be reused while written
  count.out--;
  cacheStats.viewsOut--;
}

/**
 * Fills the cache from a restored block's key column (copied) and starts tracking the map's
 * inserts from there: `g` holds exactly that block's keys, in its order (a group filled from it,
 * checked by the caller). Why: a restored job's first full snapshot otherwise read every key
 * string again to fill the cache (at 10 M keys ~0.8 s more than the snapshots after it); the
 * block holds those very bytes.
 */
export function fillFromStored(c: KeyColumnCache, g: ReadonlyMap<NormKey, unknown>, col: StoredKeyColumn): void {
  if (g.size !== col.count) throw new Error(`a key column of ${col.count} keys for a group of ${g.size}`); // a bug: the column would not match the values
  const lens = col.lens;
  let longest = 0;
  for (let i = 0; i < col.count; i++) if (lens[i]! > longest) longest = lens[i]!;
  appendColumns(c, 0, col.chars, col.chars.length, lens, col.count, longest);
  fillDone(g);
}
