/**
 * Key groups and window starts are computed in integer arithmetic on the record path
 * (keyGroupOf on the hash's signed bits, windowStart by division). Both decide where state
 * lives in snapshots, so they must give exactly what the plain formulas give:
 * `murmur(key) % maxParallelism` and `(ts - offset) % size` with floor semantics. Golden values
 * were computed with the formulas before the change.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { windowStart } from '../../src/core/windows.ts';
import { denormalizeKey, hashNormalizedKey, keyGroupOf, normalizeKey, UPPER_BOUND_MAX_PARALLELISM } from '../../src/state/key-groups.ts';
import { murmurInt, murmurString } from '../../src/state/murmur.ts';

const MAX_PS = [1, 7, 128, 1000, 32768] as const;

/** [key, murmurString(normalized key) or null, murmurInt(key) or null, key group for each of MAX_PS]. */
const GOLDEN_KEYS: [string | number, number | null, number | null, ...number[]][] = [
  ['', 0, null, 0, 0, 0, 0, 0],
  ['a', 1867108634, null, 0, 6, 26, 634, 20762],
  ['k1234', 2239172427, null, 0, 2, 75, 427, 3915],
  ['w999999', 446633165, null, 0, 6, 77, 165, 5325],
  ['héllo wörld ✓', 562826414, null, 0, 3, 46, 414, 3246],
  ['\u0000x', 1259259414, null, 0, 0, 22, 414, 17942],
  [0, null, 593689054, 0, 0, 94, 54, 31198],
  [1, null, 4226891818, 0, 2, 42, 818, 16426],
  [-1, null, 1982413648, 0, 5, 80, 648, 15184],
  [42, null, 3160117731, 0, 1, 99, 731, 4579],
  [2147483647, null, 2641277762, 0, 4, 66, 762, 13122],
  [-2147483648, null, 2576668564, 0, 1, 20, 564, 22420],
  [1099511627776, null, null, 0, 3, 102, 950, 30310],
  [1.5, null, null, 0, 0, 111, 95, 22639],
  [-0.25, null, null, 0, 0, 122, 810, 29690],
  [1e300, null, null, 0, 4, 98, 602, 31842],
];

/** [ts, offset, size, window start]. */
const GOLDEN_STARTS: [number, number, number, number][] = [
  [1700000000123, 0, 1000, 1700000000000],
  [-1, 0, 1000, -1000],
  [-1000, 0, 1000, -1000],
  [5, 3, 4, 3],
  [1.5, 0, 1, 1],
  [-7.25, 0.5, 2, -7.5],
  [2 ** 53, 0, 1000, 9007199254740000],
  [-(2 ** 60), 0, 7, -(2 ** 60)],
];

/** The plain formula, as it was: the unsigned hash modulo max parallelism. */
function keyGroupReference(nk: string | number, maxP: number): number {
  return hashNormalizedKey(nk) % maxP;
}

function windowStartReference(ts: number, offset: number, size: number): number {
  const r = (ts - offset) % size;
  return ts - (r < 0 ? r + size : r);
}

describe('key group and window start arithmetic', () => {
  it('gives the golden hashes and key groups', () => {
    for (const [key, str, int, ...groups] of GOLDEN_KEYS) {
      const nk = normalizeKey(key);
      if (str !== null) expect(murmurString(nk as string), String(key)).toBe(str);
      if (int !== null) expect(murmurInt(key as number), String(key)).toBe(int);
      expect(MAX_PS.map((m) => keyGroupOf(nk, m)), String(key)).toEqual(groups);
    }
  });

  it('gives the golden window starts', () => {
    for (const [ts, offset, size, start] of GOLDEN_STARTS) expect(windowStart(ts, offset, size), `${ts} ${offset} ${size}`).toBe(start);
  });

  it('matches the plain formulas on random keys, max parallelisms, times and sizes', () => {
    const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 1_000_000));
    console.log(`key-group arithmetic seed=${seed} (replay with SEED=${seed})`);
    const rng = new Rng(seed);
    for (let i = 0; i < 20_000; i++) {
      const maxP = rng.bool(0.2) ? [1, 2, 128, 4096, UPPER_BOUND_MAX_PARALLELISM][rng.int(5)]! : 1 + rng.int(UPPER_BOUND_MAX_PARALLELISM);
      const key: string | number = rng.bool()
        ? String.fromCharCode(...Array.from({ length: rng.int(12) }, () => rng.int(rng.bool(0.9) ? 128 : 65536)))
        : rng.bool() ? (rng.nextUint32() | 0) : (rng.next() - 0.5) * 2 ** rng.int(60);
      const nk = normalizeKey(key);
      expect(keyGroupOf(nk, maxP), `key ${JSON.stringify(key)} maxP ${maxP}`).toBe(keyGroupReference(nk, maxP));
    }
    // Beyond the validated bound (e.g. a corrupt snapshot's value) the formula still holds.
    for (const m of [UPPER_BOUND_MAX_PARALLELISM + 1, 2 ** 31 + 5, 1.5]) {
      for (const k of ['a', 'k1234', 7, -3]) expect(keyGroupOf(k, m)).toBe(keyGroupReference(k, m));
    }
    for (let i = 0; i < 20_000; i++) {
      const size = rng.bool(0.1) ? rng.next() * 10 + 0.1 : 1 + Math.floor(rng.next() * 2 ** rng.int(40));
      const offset = rng.bool(0.5) ? 0 : rng.bool(0.1) ? rng.next() : Math.floor(rng.next() * size);
      const magnitude = 2 ** rng.int(60);
      const ts = rng.bool(0.1) ? (rng.next() - 0.5) * magnitude : Math.floor((rng.next() - 0.5) * magnitude);
      expect(windowStart(ts, offset, size), `ts ${ts} offset ${offset} size ${size}`).toBe(windowStartReference(ts, offset, size));
    }
  });
});

describe('composite keys', () => {
  const roundTrip = (k: unknown) => denormalizeKey(normalizeKey(k));

  it('read back as they were, and equal keys normalise alike', () => {
    for (const k of [['a', 1], { b: 2, a: [1, 'x'] }, [5n, '5', 5], ['\u0000x', { z: null }], [true, false, -0.5], [[]], {}]) {
      expect(roundTrip(k), JSON.stringify(k, (_, v) => (typeof v === 'bigint' ? `${v}n!` : v))).toEqual(k);
    }
    expect(normalizeKey({ a: 1, b: 2 })).toBe(normalizeKey({ b: 2, a: 1 }));
  });

  it('distinct keys stay distinct: a string that reads like a bigint, NaN and Infinity beside null', () => {
    const keys = [['5n'], [5n], [NaN], [Infinity], [-Infinity], [null], ['\u0000s5n'], ['\u0000fNaN']];
    const normal = keys.map((k) => normalizeKey(k));
    expect(new Set(normal).size).toBe(keys.length);
    for (const k of keys) expect(roundTrip(k)).toEqual(k);
  });

  it('undefined: left out of objects and null in arrays, as JSON.stringify writes them, and readable again', () => {
    expect(normalizeKey({ a: 1, b: undefined })).toBe(normalizeKey({ a: 1 }));
    expect(roundTrip(['a', undefined])).toEqual(['a', null]);
    expect(roundTrip({ region: 'eu', tenant: undefined })).toEqual({ region: 'eu' });
    // A hole of a sparse array is undefined: null, the key one thread sees and the one a record
    // that crossed threads (where the hole became undefined) sees. Before: ["eu",,7], not JSON.
    const sparse: unknown[] = [];
    sparse[0] = 'eu';
    sparse[2] = 7;
    expect(normalizeKey(sparse)).toBe(normalizeKey(['eu', undefined, 7]));
    expect(roundTrip(sparse)).toEqual(['eu', null, 7]);
  });

  it('values no key can hold are refused, naming what', () => {
    expect(() => normalizeKey([new Date(0)])).toThrow(/composite key holds a Date/);
    expect(() => normalizeKey({ m: new Map() })).toThrow(/composite key holds a Map/);
    expect(() => normalizeKey([() => 1])).toThrow(/composite key holds a function/);
    expect(() => normalizeKey([Symbol('s')])).toThrow(/composite key holds a symbol/);
  });
});
