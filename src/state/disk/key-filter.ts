/**
 * Which keys a state may have in the store: a Bloom filter (two bit positions per key) that
 * the write-back cache sets for every key it writes, so a read of a key the state never wrote
 * (the first record of a new key, the common case when keys do not fit the cache) skips the
 * store's point get. "Maybe" is always safe: a key removed from the store keeps its bits, and
 * a full filter only answers "maybe" more often.
 *
 * Only for a state whose store id was new when it was registered: nothing else writes under
 * that id (a restored or migrated state's entries were written by the restore, not by the
 * cache, so those states have no filter and always read the store).
 */
import type { NormKey } from '../key-groups.ts';

/** The filter's size at most (bytes per state). */
const MAX_FILTER_BYTES = 1 << 20;
/** Bits per entry the cache holds: the filter is sized for a state some times its cache. */
const BITS_PER_CACHE_ENTRY = 128;

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);

/** A 32-bit FNV-1a hash of the key (numbers by their bits; 0 and -0 alike, as the store does). */
function hashKey(key: NormKey): number {
  let h = 0x811c9dc5;
  if (typeof key === 'number') {
    f64[0] = key === 0 ? 0 : key;
    h = Math.imul(h ^ u32[0]!, 0x01000193);
    h = Math.imul(h ^ u32[1]!, 0x01000193);
  } else {
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  }
  return h >>> 0;
}

export class KeyFilter {
  private bits: Uint8Array | undefined;
  private readonly mask: number;

  constructor(cacheEntries: number) {
    let bytes = 64;
    const want = Math.min(MAX_FILTER_BYTES, (cacheEntries * BITS_PER_CACHE_ENTRY) / 8);
    while (bytes < want) bytes *= 2;
    this.mask = bytes * 8 - 1;
  }

  /** Notes that the key is (or may be) in the store. */
  add(key: NormKey): void {
    const bits = (this.bits ??= new Uint8Array((this.mask + 1) >>> 3));
    const h1 = hashKey(key);
    const h2 = second(h1);
    const a = h1 & this.mask;
    const b = h2 & this.mask;
    bits[a >>> 3]! |= 1 << (a & 7);
    bits[b >>> 3]! |= 1 << (b & 7);
  }

  /** False only when the key was never added. */
  mayHave(key: NormKey): boolean {
    const bits = this.bits;
    if (bits === undefined) return false;
    const h1 = hashKey(key);
    const a = h1 & this.mask;
    if ((bits[a >>> 3]! & (1 << (a & 7))) === 0) return false;
    const b = second(h1) & this.mask;
    return (bits[b >>> 3]! & (1 << (b & 7))) !== 0;
  }
}

/** A second hash from the first (murmur3's finaliser). */
function second(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
