/**
 * Key groups: the unit in which keyed state is partitioned, snapshotted and moved on
 * rescaling. keyGroup = hash(key) mod maxParallelism; subtask i of p owns the contiguous
 * range [ceil(i*maxP/p), ceil((i+1)*maxP/p)). Same arithmetic as Flink's
 * KeyGroupRangeAssignment, so the behaviour on rescaling matches its documentation.
 */
import { murmurInt, murmurIntBits, murmurString, murmurStringBits } from './murmur.ts';
import type { KeyGroupRange } from '../core/checkpoint-format.ts';

export const UPPER_BOUND_MAX_PARALLELISM = 32768;
export const DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 128;

export type KeyPrimitive = string | number | boolean | bigint;

/** A key as state backends store it (see normalizeKey): a string or a number, usable as a Map key. */
export type NormKey = string | number;


function roundUpToPowerOfTwo(x: number): number {
  if (x <= 1) return 1;
  return 2 ** Math.ceil(Math.log2(x));
}

export function defaultMaxParallelism(parallelism: number): number {
  return Math.min(
    Math.max(roundUpToPowerOfTwo(parallelism + Math.floor(parallelism / 2)), DEFAULT_LOWER_BOUND_MAX_PARALLELISM),
    UPPER_BOUND_MAX_PARALLELISM,
  );
}

/**
 * A key as a string or number usable as a Map key, injectively: strings and finite numbers
 * are used as they are (a string that happens to start with NUL is escaped); anything else
 * gets a NUL-prefixed canonical string, so two equal composite keys (arrays, plain objects)
 * land in the same state slot and never collide with a user's string key.
 */
export function normalizeKey(key: unknown): NormKey {
  const t = typeof key;
  if (t === 'string') return (key as string).charCodeAt(0) === 0 ? '\u0000s' + (key as string) : (key as string);
  if (t === 'number') return Number.isFinite(key as number) ? (key as number) : '\u0000f' + String(key);
  if (t === 'boolean') return (key as boolean) ? '\u0000b1' : '\u0000b0';
  if (t === 'bigint') return '\u0000n' + String(key);
  if (key === null || key === undefined || t === 'function' || t === 'symbol') {
    throw new TypeError(`key selector returned ${String(key)}; keys must be strings, numbers, booleans, bigints, or arrays/objects of those`);
  }
  return '\u0000j' + canonicalJson(key);
}

/** Inverse of normalizeKey, used when state restored from a snapshot needs the user's key. */
export function denormalizeKey(k: NormKey): unknown {
  if (typeof k === 'number' || k.charCodeAt(0) !== 0) return k;
  const tag = k[1];
  const rest = k.slice(2);
  switch (tag) {
    case 's': return rest;
    case 'f': return Number(rest);
    case 'b': return rest === '1';
    case 'n': return BigInt(rest);
    case 'j': return JSON.parse(rest, (_k, v) => (typeof v === 'string' ? decodeInner(v) : v));
    default: throw new Error(`corrupt normalised key ${JSON.stringify(k)}`);
  }
}

/** How a bigint inside a composite key is written (a JSON string "<digits>n"). */
const BIGINT_TEXT = /^-?\d+n$/;

/**
 * A composite key (arrays and plain objects of strings, numbers, booleans, bigints and null)
 * as canonical JSON: object keys sorted, properties holding undefined left out and undefined
 * in an array (or a hole of a sparse one) written as null (as JSON.stringify does), and every value read back as it was
 * written (decodeInner): a bigint as "<digits>n", a number that JSON cannot hold (NaN,
 * Infinity) as "\u0000f<number>", and a string that would read as either escaped as
 * "\u0000s<string>". Before, undefined made text that did not parse (a restore of its timers
 * failed for good), NaN and Infinity were written as null, and the string "5n" read back as
 * 5n: distinct keys shared state. Anything else (a Date, a Map, a function) is refused: as
 * JSON every Date was {}, one key.
 */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) {
    // By index, not map(): map skips the holes of a sparse array, and ["eu",,7] is not JSON.
    const parts = new Array<string>(v.length);
    for (let i = 0; i < v.length; i++) parts[i] = canonicalJson(v[i]);
    return '[' + parts.join(',') + ']';
  }
  switch (typeof v) {
    case 'string':
      return JSON.stringify(BIGINT_TEXT.test(v) || v.charCodeAt(0) === 0 ? '\u0000s' + v : v);
    case 'number':
      return Number.isFinite(v) ? JSON.stringify(v) : JSON.stringify('\u0000f' + String(v));
    case 'bigint':
      return `"${v}n"`;
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
      return 'null';
    case 'object': {
      if (v === null) return 'null';
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) throw new TypeError(`a composite key holds a ${(v as object).constructor?.name ?? 'non-plain object'}; keys hold strings, numbers, booleans, bigints, null, and arrays and plain objects of those`);
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
      return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(o[k])).join(',') + '}';
    }
    default:
      throw new TypeError(`a composite key holds a ${typeof v}; keys hold strings, numbers, booleans, bigints, null, and arrays and plain objects of those`);
  }
}

/** A string value of canonicalJson's text, read back (see canonicalJson). */
function decodeInner(v: string): unknown {
  if (v.charCodeAt(0) === 0) {
    if (v[1] === 's') return v.slice(2);
    if (v[1] === 'f') return Number(v.slice(2));
    return v;
  }
  return BIGINT_TEXT.test(v) ? BigInt(v.slice(0, -1)) : v;
}

/** Hash of a normalised key. Integers take the integer path; everything else hashes its string. */
export function hashNormalizedKey(k: string | number): number {
  if (typeof k === 'number') {
    if ((k | 0) === k) return murmurInt(k);
    return murmurString(String(k));
  }
  return murmurString(k);
}

/**
 * hashNormalizedKey(k) % maxParallelism, computed on the hash's signed 32-bit bits in integer
 * arithmetic (this runs once per record on every keyed exchange and keyed operator).
 */
export function keyGroupOf(normalizedKey: string | number, maxParallelism: number): number {
  return keyGroupOfBits(keyBits(normalizedKey), maxParallelism);
}

/**
 * The bits of hashNormalizedKey(k) as a signed 32-bit int: what a key's group is computed from,
 * and (mixed again) its slot in the heap backend's tables (keyHashOfBits, key-table.ts), so a
 * record's key string is hashed once.
 */
export function keyBits(k: string | number): number {
  return typeof k !== 'number' ? murmurStringBits(k) : (k | 0) === k ? murmurIntBits(k) : murmurStringBits(String(k));
}

/** The key group of a key whose keyBits are `bits`. */
export function keyGroupOfBits(bits: number, maxParallelism: number): number {
  return unsignedMod(bits, maxParallelism);
}

/**
 * (h >>> 0) % m for a signed 32-bit h. A power of two (the default max parallelism, 128, and
 * Flink's defaults) is its low bits: no division, where this runs for every record twice (the
 * sender's partitioning and the receiver's key). Else split into 16-bit halves:
 * ((hi % m) * 2^16 + lo) % m is the same number and stays below 2^31 for m <= 2^15
 * (UPPER_BOUND_MAX_PARALLELISM).
 */
function unsignedMod(h: number, m: number): number {
  if ((m | 0) === m && m >= 1 && m <= UPPER_BOUND_MAX_PARALLELISM) {
    if ((m & (m - 1)) === 0) return h & (m - 1);
    return ((((h >>> 16) % m) << 16) | (h & 0xffff)) % m;
  }
  return (h >>> 0) % m;
}

export function operatorIndexForKeyGroup(maxParallelism: number, parallelism: number, keyGroup: number): number {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

export function keyGroupRangeForSubtask(maxParallelism: number, parallelism: number, index: number): KeyGroupRange {
  if (parallelism > maxParallelism) {
    throw new RangeError(`parallelism ${parallelism} exceeds max parallelism ${maxParallelism}`);
  }
  const start = Math.ceil((index * maxParallelism) / parallelism);
  const end = Math.ceil(((index + 1) * maxParallelism) / parallelism) - 1;
  return { start, end };
}

export function validateMaxParallelism(maxP: number, where: string): void {
  if (!Number.isInteger(maxP) || maxP < 1 || maxP > UPPER_BOUND_MAX_PARALLELISM) {
    throw new RangeError(`${where}: max parallelism must be an integer in [1, ${UPPER_BOUND_MAX_PARALLELISM}], got ${maxP}`);
  }
}

/**
 * Kinds of keys, as bits (keyKindBit): what a keyed operator records of the keys its state
 * holds, so that a job restored with a key selector of another type (numbers where strings
 * were) is refused instead of reading none of its restored state (Flink refuses a changed key
 * serializer). Composite keys are one kind whatever their shape.
 */
export const KEY_KINDS = ['string', 'number', 'boolean', 'bigint', 'composite'] as const;
export type KeyKind = (typeof KEY_KINDS)[number];

/** The bit of a normalised key's kind (a bit of KEY_KINDS' index); cheap enough for every record. */
export function keyKindBit(k: NormKey): number {
  if (typeof k === 'number') return 2;
  if (k.charCodeAt(0) !== 0) return 1;
  switch (k.charCodeAt(1)) {
    case 0x73: return 1; // s: a string starting with NUL
    case 0x66: return 2; // f: a number that is not finite
    case 0x62: return 4; // b
    case 0x6e: return 8; // n
    default: return 16; // j: composite
  }
}

/** The kinds in a mask of keyKindBit bits, by name. */
export function keyKindNames(mask: number): KeyKind[] {
  return KEY_KINDS.filter((_, i) => (mask & (1 << i)) !== 0);
}

/** The mask of kinds named (names not known are ignored: a newer snapshot's kinds check nothing). */
export function keyKindMask(names: readonly string[]): number {
  let m = 0;
  for (const n of names) {
    const i = (KEY_KINDS as readonly string[]).indexOf(n);
    if (i >= 0) m |= 1 << i;
  }
  return m;
}
