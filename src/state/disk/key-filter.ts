/**
 * Which keys a state may have in the store: a Bloom filter (two bit positions per key, by the key's hash) that
 * the write-back cache sets for every key it writes, so a read of a key the state never wrote
 * (the first record of a new key, the common case when keys do not fit the cache) skips the
 * store's point get. "Maybe" is always safe: a key removed from the store keeps its bits, and
 * a full filter only answers "maybe" more often.
 *
 * Only for a state whose store id was new when it was registered: nothing else writes under
 * that id (a restored or migrated state's entries were written by the restore, not by the
 * cache, so those states have no filter and always read the store).
 */

import { mix32 } from '../murmur.ts';

/** The filter's size at most (bytes per state). */
const MAX_FILTER_BYTES = 1 << 20;
/** Bits per entry the cache holds: the filter is sized for a state some times its cache. */
const BITS_PER_CACHE_ENTRY = 128;

/**
 * Blocked: both of a key's bits are in one 32-bit word, so a check or an add is one memory
 * access where two independent positions were two cache misses in a filter of up to 1 MiB
 * (the filter's checks and adds were ~4 % of the task's thread on 1 M uniformly drawn keys).
 * The price is a slightly higher false-positive rate, a store get that finds nothing.
 */
export class KeyFilter {
  private words: Uint32Array | undefined;
  private readonly mask: number;

  constructor(cacheEntries: number) {
    let bytes = 64;
    const want = Math.min(MAX_FILTER_BYTES, (cacheEntries * BITS_PER_CACHE_ENTRY) / 8);
    while (bytes < want) bytes *= 2;
    this.mask = bytes / 4 - 1;
  }

  /** Notes that the key whose hash is `h` (keyHash, ../key-table.ts) is (or may be) in the store. */
  add(h: number): void {
    const words = (this.words ??= new Uint32Array(this.mask + 1));
    words[mix32(h) & this.mask]! |= bitsOf(h);
  }

  /** False only when no key with hash `h` was ever added. */
  mayHave(h: number): boolean {
    const words = this.words;
    if (words === undefined) return false;
    const b = bitsOf(h);
    return (words[mix32(h) & this.mask]! & b) === b;
  }
}

/** The key's two bits in its word, from the hash's low ten bits (the word's index is from all its bits, mixed). */
function bitsOf(h: number): number {
  return (1 << (h & 31)) | (1 << ((h >>> 5) & 31));
}
