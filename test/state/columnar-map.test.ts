/**
 * encodeMapColumns writes a Map straight into a format-3 block: the very bytes
 * encodeColumns gives for the Map's keys and values (so checkpoints stay readable by every
 * version that reads format 3), for every key and value layout, group sizes past the scratch
 * columns' initial capacity, and state kinds whose values go through an encoder.
 */
import { describe, expect, it } from 'vitest';
import { decodeColumns, encodeColumns } from '../../src/state/columnar-block.ts';
import { encodeMapColumns, joinParts } from '../../src/state/columnar-map.ts';
import { KeyColumnCache } from '../../src/state/key-column-cache.ts';
import { encodeGroup, stateValueEncoder } from '../../src/state/state-codec.ts';
import type { NormKey } from '../../src/state/key-groups.ts';
import { KeyTable } from '../../src/state/key-table.ts';
import { ListStateDescriptor, MapStateDescriptor, Rng, ValueStateDescriptor } from '../../src/index.ts';
import { testSeed } from '../api/util.ts';

function sameAsColumns(m: Map<NormKey, unknown>, enc?: (v: unknown) => unknown): void {
  const keys = [...m.keys()];
  const values = [...m.values()].map((v) => (enc === undefined ? v : enc(v)));
  const bytes = encodeMapColumns(m, enc);
  expect(Buffer.from(bytes).equals(Buffer.from(encodeColumns(keys, values)))).toBe(true);
  const back = decodeColumns(bytes);
  expect(back.keys).toEqual(keys);
  expect(back.values).toEqual(values);
}

const mapOf = (keys: NormKey[], values: unknown[]) => new Map<NormKey, unknown>(keys.map((k, i) => [k, values[i]]));

describe('encodeMapColumns', () => {
  it('gives encodeColumns’ bytes for every key and value layout', () => {
    sameAsColumns(new Map());
    sameAsColumns(mapOf(['w1', 'w22', '', 'é'.repeat(300), '\u0000j[1,2]'], [1, 2, 3, 4, 5]));
    sameAsColumns(mapOf(['日本', 'a', '\ud800', 'x\udc00y', '😀'], [1, 2, 3, 4, 5]));
    sameAsColumns(mapOf(['k'.repeat(70_000), 'short'], [1, 2]));
    sameAsColumns(mapOf([0, -1, 2 ** 31 - 1, -(2 ** 31)], [1, 1, 1, 1]));
    sameAsColumns(mapOf([0.5, 2 ** 40, -3], [1, 2, 3]));
    sameAsColumns(mapOf(['a', 1, 'b', 2.5], [1, 2, 3, 4]));
    sameAsColumns(mapOf([1, 'a'], [1, 2]));
    sameAsColumns(mapOf(['a', 'b'], [0, 255]));
    sameAsColumns(mapOf(['a', 'b'], [0, 65535]));
    sameAsColumns(mapOf(['a', 'b', 'c'], [-1, 2 ** 31 - 1, -(2 ** 31)]));
    sameAsColumns(mapOf(['a', 'b', 'c', 'd', 'e', 'f'], [2 ** 31, 0.25, -0, Number.NaN, Infinity, -Infinity]));
    sameAsColumns(mapOf(['a', 'b', 'c', 'd'], [7, { sum: 1, n: [1, 2] }, 'text', true]));
    sameAsColumns(mapOf([1, 2], [[1, 2, 3], new Map([['x', 1]])]));
  });

  it('grows its scratch columns for large groups and long keys, and stays exact after', () => {
    const big = new Map<NormKey, unknown>();
    for (let i = 0; i < 100_000; i++) big.set('key-' + i, i % 300);
    sameAsColumns(big);
    const long = new Map<NormKey, unknown>([['x'.repeat(5_000_000), 1], ['y', 2]]);
    sameAsColumns(long);
    const ints = new Map<NormKey, unknown>();
    for (let i = 0; i < 50_000; i++) ints.set(i * 7 - 1000, i * 0.5);
    sameAsColumns(ints);
    sameAsColumns(mapOf(['a', 'é'], [1, 2]));
  });

  it('gives encodeColumns’ bytes for random maps (seeded)', () => {
    const seed = testSeed('columnar-map');
    const rng = new Rng(seed);
    for (let round = 0; round < 300; round++) {
      const n = rng.int(round % 10 === 0 ? 5000 : 60);
      const kind = rng.int(4);
      const vk = rng.int(6);
      const m = new Map<NormKey, unknown>();
      for (let i = 0; i < n; i++) {
        const key = kind === 0 ? String.fromCharCode(...Array.from({ length: rng.int(6) }, () => rng.int(rng.int(4) === 0 ? 0xffff : 0x100)))
          : kind === 1 ? rng.int(1e6) - 5e5 : kind === 2 ? rng.next() * 1e9 : rng.int(2) ? 's' + i : i;
        const v = vk === 0 ? rng.int(256) : vk === 1 ? rng.int(70_000) : vk === 2 ? rng.int(2 ** 31) - 2 ** 30 : vk === 3 ? rng.next() : vk === 4 ? -rng.int(3) : rng.int(4) === 0 ? { v: rng.int(10) } : rng.int(100);
        m.set(key, v);
      }
      sameAsColumns(m);
    }
  });

  it('gives encodeColumns’ bytes for KeyTables read through their entry array, deleted entries skipped (seeded)', () => {
    const seed = testSeed('columnar-map-keytable');
    const rng = new Rng(seed);
    for (let round = 0; round < 200; round++) {
      const t = new KeyTable<unknown>();
      const n = rng.int(round % 10 === 0 ? 5000 : 80);
      const vk = rng.int(4);
      for (let i = 0; i < n; i++) {
        const key = rng.int(8) === 0 ? 'é' + i : rng.int(20) === 0 ? '日' + i : 'k' + rng.int(2 * n + 1);
        t.set(key, vk === 0 ? rng.int(256) : vk === 1 ? rng.next() : vk === 2 ? -rng.int(70_000) : rng.int(5) === 0 ? { v: i } : i);
        if (rng.int(4) === 0) t.delete('k' + rng.int(2 * n + 1)); // holes, some rebuilt away
      }
      const keys = [...t.keys()];
      const values = [...t.values()];
      const bytes = encodeMapColumns(t);
      expect(Buffer.from(bytes).equals(Buffer.from(encodeColumns(keys, values))), `round ${round}, seed ${seed}`).toBe(true);
      expect(decodeColumns(bytes).keys).toEqual(keys);
    }
  });

  it('encodes every state kind as its value encoder says (encodeGroup)', () => {
    const cases = [
      [new ValueStateDescriptor<number>('plain'), mapOf(['a', 'b'], [1, 2])],
      [new ValueStateDescriptor<number>('ttl', { ttl: { ttlMs: 1000 } }), mapOf(['a', 'b'], [{ v: 1, t: 5 }, { v: 2, t: 6 }])],
      [new ListStateDescriptor<number>('list'), mapOf(['a', 'b'], [[1, 2], [3]])],
      [new MapStateDescriptor<string, number>('map'), mapOf([1, 2], [new Map([['x', 1]]), new Map()])],
    ] as const;
    for (const [d, m] of cases) {
      const enc = stateValueEncoder(d);
      const expected = Buffer.from(encodeColumns([...m.keys()], [...m.values()].map(enc)));
      expect(Buffer.from(joinParts(encodeGroup(d, m))).equals(expected), d.name).toBe(true);
      // With a key column cache (string keys), in pieces whose key columns are the cache's: the same bytes, filled and reused.
      const cache = new KeyColumnCache();
      for (const round of ['fill', 'reuse']) {
        const parts = encodeGroup(d, m, cache);
        if (typeof [...m.keys()][0] === 'string') expect(Array.isArray(parts), `${d.name} ${round}`).toBe(true);
        expect(Buffer.from(joinParts(parts)).equals(expected), `${d.name} ${round}`).toBe(true);
      }
    }
    expect(decodeColumns(joinParts(encodeGroup(cases[0][0], undefined)))).toEqual({ keys: [], values: [] });
  });
});
