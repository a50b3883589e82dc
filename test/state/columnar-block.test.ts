/** Block format 3: every kind of key and value column round-trips exactly; damage is refused. */
import { describe, expect, it } from 'vitest';
import { COLUMNAR_FORMAT, columnarSize, decodeColumns, encodeColumns, storedKeyColumn } from '../../src/state/columnar-block.ts';
import { encodeValue } from '../../src/core/codec.ts';
import { decodeGroupColumns, groupSize } from '../../src/state/state-codec.ts';
import { Rng } from '../../src/index.ts';
import { testSeed } from '../api/util.ts';

function roundTrip(keys: (string | number)[], values: unknown[]): Uint8Array {
  const bytes = encodeColumns(keys, values);
  expect(bytes[0]).toBe(COLUMNAR_FORMAT);
  expect(columnarSize(bytes)).toBe(keys.length);
  const back = decodeColumns(bytes);
  expect(back.keys).toEqual(keys);
  expect(back.values).toEqual(values);
  for (let i = 0; i < values.length; i++) expect(Object.is(back.values[i], values[i]) || typeof values[i] === 'object').toBe(true);
  return bytes;
}

describe('columnar state blocks', () => {
  it('round-trips every key layout: latin1, UTF-16 (lone surrogates too), int32, float64, mixed', () => {
    roundTrip([], []);
    roundTrip(['w1', 'w22', '', 'é'.repeat(300), '\u0000j[1,2]'], [1, 2, 3, 4, 5]);
    roundTrip(['日本', 'a', '\ud800', 'x\udc00y', '😀'], [1, 2, 3, 4, 5]);
    roundTrip(['k'.repeat(70_000), 'short'], [1, 2]);
    roundTrip([0, -1, 2 ** 31 - 1, -(2 ** 31)], [1, 1, 1, 1]);
    roundTrip([0.5, 2 ** 40, -3], [1, 2, 3]);
    roundTrip(['a', 1, 'b', 2.5], [1, 2, 3, 4]);
  });

  it('round-trips every value layout: uint8, uint16, int32, float64 (-0, NaN, ±Infinity) and anything else', () => {
    roundTrip(['a', 'b'], [0, 255]);
    roundTrip(['a', 'b'], [0, 65535]);
    roundTrip(['a', 'b', 'c'], [-1, 2 ** 31 - 1, -(2 ** 31)]);
    roundTrip(['a', 'b', 'c', 'd', 'e', 'f'], [2 ** 31, 0.25, -0, Number.NaN, Infinity, -Infinity]);
    roundTrip(['a', 'b', 'c', 'd'], [{ sum: 1, n: [1, 2] }, 'text', true, 7]);
    roundTrip([1, 2], [[1, 2, 3], new Map([['x', 1]])]);
  });

  it('is no bigger than msgpack for small string keys with small counts', () => {
    const keys = Array.from({ length: 10_000 }, (_, i) => 'w' + i);
    const values = keys.map((_, i) => i % 200);
    const bytes = roundTrip(keys, values);
    expect(bytes.length).toBeLessThanOrEqual(encodeValue([keys, values]).length);
  });

  it('decodes from any alignment (blocks sit at arbitrary offsets in a state file)', () => {
    const bytes = encodeColumns(['a', 'bb', 'ccc'], [1.5, 2.5, 3.5]);
    for (let shift = 1; shift < 8; shift++) {
      const host = new Uint8Array(bytes.length + shift);
      host.set(bytes, shift);
      expect(decodeColumns(host.subarray(shift))).toEqual({ keys: ['a', 'bb', 'ccc'], values: [1.5, 2.5, 3.5] });
    }
  });

  it('decodes from a Buffer view at any alignment (a state stream may hand out slices of one larger buffer)', () => {
    const long = 'k'.repeat(300); // 2-byte lengths: an unaligned column of its own
    const keys = [long, 'a', long + 'b'];
    for (const values of [[1.5, 2.5, 3.5], [1, 70_000, -3], [1, 2, 300]]) {
      const bytes = encodeColumns(keys, values);
      for (let shift = 1; shift < 8; shift++) {
        // Data before the block that would be misread as the block's columns.
        const host = Buffer.alloc(bytes.length + shift, 0xab);
        host.set(bytes, shift);
        expect(decodeColumns(host.subarray(shift)), `shift ${shift}`).toEqual({ keys, values });
      }
    }
  });

  it('round-trips random columns (seeded)', () => {
    const seed = testSeed('columnar-block');
    const rng = new Rng(seed);
    for (let round = 0; round < 200; round++) {
      const n = rng.int(50);
      const kind = rng.int(4);
      const keys: (string | number)[] = [];
      const values: unknown[] = [];
      for (let i = 0; i < n; i++) {
        keys.push(kind === 0 ? String.fromCharCode(...Array.from({ length: rng.int(6) }, () => rng.int(kind === 0 && rng.int(2) ? 0xffff : 0x100))) : kind === 1 ? rng.int(1e6) - 5e5 : kind === 2 ? rng.next() * 1e9 : rng.int(2) ? 's' + i : i);
        const vk = rng.int(5);
        values.push(vk === 0 ? rng.int(256) : vk === 1 ? rng.int(70_000) : vk === 2 ? rng.int(2 ** 31) - 2 ** 30 : vk === 3 ? rng.next() : { v: rng.int(10) });
      }
      roundTrip(keys, values);
    }
  });

  it('refuses inconsistent blocks with a message instead of returning wrong entries', () => {
    const good = encodeColumns(['a', 'bb'], [1, 2]);
    const badFormat = good.slice();
    badFormat[0] = 9;
    expect(() => decodeColumns(badFormat)).toThrow(/not a columnar state block/);
    const badCount = good.slice();
    new DataView(badCount.buffer).setUint32(4, 3, true);
    expect(() => decodeColumns(badCount)).toThrow(/corrupt columnar state block/);
    const badLengths = good.slice();
    badLengths[16 + 3 + 1] = 1; // after the header and the 3 key bytes, the second key's length: 2 -> 1
    expect(() => decodeColumns(badLengths)).toThrow(/key lengths add up to 2 of 3/);
    expect(() => decodeColumns(good.subarray(0, 10))).toThrow(/not a columnar state block/);
  });

  it('gives a block\'s string-key column as stored (what a restore fills the key column cache from), at any alignment; nothing for other keys or damage', () => {
    const text = (col: NonNullable<ReturnType<typeof storedKeyColumn>>): string[] => {
      const out: string[] = [];
      let at = 0;
      for (let i = 0; i < col.count; i++) {
        out.push(String.fromCharCode(...col.chars.subarray(at, at + col.lens[i]!)));
        at += col.lens[i]!;
      }
      return out;
    };
    for (const keys of [['w1', 'w22', '', 'é'.repeat(300)], ['日本', 'a', 'x\udc00y'], ['k'.repeat(70_000), 'short']]) {
      const block = encodeColumns(keys, keys.map((_, i) => i));
      for (const shift of [0, 1, 3]) {
        const at = new Uint8Array(block.length + shift);
        at.set(block, shift);
        const col = storedKeyColumn(at.subarray(shift))!;
        expect(col.count).toBe(keys.length);
        expect(col.chars instanceof Uint16Array).toBe(keys.some((k) => /[^\u0000-\u00ff]/.test(k)));
        expect(text(col)).toEqual(keys);
      }
    }
    expect(storedKeyColumn(encodeColumns([1, 2], [1, 2]))).toBeUndefined();
    expect(storedKeyColumn(encodeColumns(['a', 2], [1, 2]))).toBeUndefined();
    const badLengths = encodeColumns(['a', 'bb'], [1, 2]);
    badLengths[16 + 3 + 1] = 1;
    expect(storedKeyColumn(badLengths)).toBeUndefined();
    expect(storedKeyColumn(badLengths.subarray(0, 10))).toBeUndefined();
  });
});

describe('decodeGroupColumns reads every block format', () => {
  it('1 (pairs), 2 (two msgpack arrays) and 3 (columns) give the same entries; a newer format is refused', () => {
    const keys = ['a', 'b', 7];
    const values = [1, { x: 2 }, 'three'];
    expect(decodeGroupColumns(encodeValue(keys.map((k, i) => [k, values[i]])), 1)).toEqual({ keys, values });
    expect(decodeGroupColumns(encodeValue([keys, values]), 2)).toEqual({ keys, values });
    expect(decodeGroupColumns(encodeColumns(keys, values), 3)).toEqual({ keys, values });
    expect(groupSize(encodeColumns(keys, values), 3)).toBe(3);
    expect(() => decodeGroupColumns(encodeColumns(keys, values), 4)).toThrow(/unknown state block format 4; the snapshot was written by a newer weir/);
  });
});
