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
 * column (1 byte a key for keys under 256 characters), off the V8 heap, plus up to 1/16 for
 * appends: about 9-10 bytes a key of 8 characters, ~90-100 MB at 10 M keys.
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

const NO_BYTES = new Uint8Array(0);

export class KeyColumnCache {
  count = 0;
  /** The keys' characters as Latin-1 bytes (all ≤ U+00FF) or UTF-16 code units; capacity ≥ charCount. */
  chars: Uint8Array | Uint16Array = NO_BYTES;
  charCount = 0;
  /** Their lengths, in a width that holds the longest; capacity ≥ count. */
  lens: Uint8Array | Uint16Array | Uint32Array = NO_BYTES;
  longest = 0;

  get wide(): boolean {
    return this.chars instanceof Uint16Array;
  }

  /** Bytes held (metrics, tests). */
  get bytes(): number {
    return this.chars.byteLength + this.lens.byteLength;
  }

  clear(): void {
    this.count = 0;
    this.chars = NO_BYTES;
    this.charCount = 0;
    this.lens = NO_BYTES;
    this.longest = 0;
  }
}

/** What encodings with a cache did (tests, benchmarks): keys reused by the last one and by all, and encodings whose counts did not add up. */
export const cacheStats = { reusedKeys: 0, reusedTotal: 0, countMismatches: 0 };

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
 * Room a new column buffer gets beyond the `size` elements it holds now: 1/2 for a group that
 * grows, 1/16 for one whose keys are likely all there (a restored group, one encoded afresh
 * after a removal). Growing are groups that gained keys since their last snapshot (an append)
 * and groups filled for the first time: a young job's, whose first checkpoints see most groups
 * gain a fifth or more. Every regrowth copies the whole column into new memory, whose first
 * write costs a page fault per 4 KiB (on this project's 2-CPU VMs 100 MB took 284 ms to write
 * once and 5 ms to write again): with 1/16 at the first fill, a young 1 M-key job's second
 * checkpoint spent ~26 ms of its task thread copying every group's column (5 M-record keyed
 * count, checkpoints every second). With 1/16 for appends, a group growing 1.5 % a checkpoint
 * was copied every 4-5 checkpoints. Room never written costs no page: a large buffer is mapped
 * on its own, and a small one from fresh heap memory is not cleared.
 */
function room(size: number, growing: boolean): number {
  return (growing ? size >>> 1 : size >>> 4) + 64;
}

/**
 * Appends keys' characters (`chars[0, p)`, Latin-1 bytes or UTF-16 units) and lengths
 * (`lens[0, n)`) to the cache after its first `keep` keys (0: replaces them all), in UTF-16
 * if either side needs it; the length column widened if a new key needs it. Buffers are kept
 * when large enough (a group re-encoded every checkpoint allocates nothing), else made with
 * room for the next appends: more when the group is `growing` (room()).
 */
export function appendColumns(c: KeyColumnCache, keep: number, chars: Uint8Array | Uint16Array, p: number, lens: Uint8Array | Uint16Array | Uint32Array, n: number, longest: number, growing: boolean): void {
  const kept = keep === 0 ? 0 : c.charCount;
  if (keep === 0) {
    c.longest = 0;
    if (c.wide && !(chars instanceof Uint16Array)) c.chars = NO_BYTES; // back to Latin-1
  }
  const total = kept + p;
  const wide = (keep !== 0 && c.wide) || chars instanceof Uint16Array;
  if (c.chars.length < total || wide !== c.wide) {
    const cap = Math.max(total + room(total, growing), wide === c.wide ? c.chars.length : 0);
    const ch = wide ? new Uint16Array(cap) : new Uint8Array(cap);
    ch.set(c.chars.subarray(0, kept)); // element-wise: widening is exact
    c.chars = ch;
  }
  c.chars.set(chars.subarray(0, p), kept);
  c.charCount = total;
  if (longest > c.longest) c.longest = longest;
  const count = keep + n;
  const need = c.longest <= 0xff ? 1 : c.longest <= 0xffff ? 2 : 4;
  if (c.lens.length < count || c.lens.BYTES_PER_ELEMENT !== need) {
    const cap = Math.max(count + room(count, growing), c.lens.BYTES_PER_ELEMENT === need ? c.lens.length : 0);
    const ln = need === 1 ? new Uint8Array(cap) : need === 2 ? new Uint16Array(cap) : new Uint32Array(cap);
    ln.set(c.lens.subarray(0, keep)); // element-wise: exact, each fits the width
    c.lens = ln;
  }
  c.lens.set(lens.subarray(0, n), keep); // element-wise: exact, each fits the width
  c.count = count;
  cacheStats.reusedKeys = keep;
  cacheStats.reusedTotal += keep;
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
  appendColumns(c, 0, col.chars, col.chars.length, lens, col.count, longest, false);
  fillDone(g);
}
