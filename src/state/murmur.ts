/**
 * MurmurHash3 (x86, 32-bit) over the UTF-16 code units of a string, and a finaliser for
 * integers. Key groups are derived from these hashes, and key groups are persisted in
 * snapshots, so these functions must never change: a different hash would send restored
 * keys to the wrong subtask.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function mixK(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

function mixH(h: number, k: number): number {
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** The finaliser, as a signed 32-bit int (the unsigned hash is its `>>> 0`). */
function fmix(h: number, length: number): number {
  return mix32(h ^ length);
}

/**
 * murmur3's 32-bit finaliser alone (signed result): spreads every input bit over the output.
 * Also what the state tables and the disk backend's key filter mix their hashes with.
 */
export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * The bits of murmurString(s, seed) as a signed 32-bit int. The key path uses these: an
 * unsigned result of 2^31 or more is no integer to V8's fast paths, so it would be boxed
 * when returned and its `%` done in floating point.
 */
export function murmurStringBits(s: string, seed = 0): number {
  let h = seed | 0;
  const n = s.length;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    h = mixH(h, mixK(s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16)));
  }
  if (i < n) h ^= mixK(s.charCodeAt(i));
  return fmix(h, n * 2);
}

/** Hash of a string, two code units per 32-bit block. Result is an unsigned 32-bit int. */
export function murmurString(s: string, seed = 0): number {
  return murmurStringBits(s, seed) >>> 0;
}

/** The bits of murmurInt(code) as a signed 32-bit int (see murmurStringBits). */
export function murmurIntBits(code: number): number {
  return fmix(mixH(0, mixK(code | 0)), 4);
}

/** Hash of a 32-bit integer (Flink's MathUtils.murmurHash shape). Unsigned result. */
export function murmurInt(code: number): number {
  return murmurIntBits(code) >>> 0;
}
