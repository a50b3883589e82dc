/**
 * Batches between threads: the columnar encoding round-trips every batch exactly (values,
 * field order, timestamps, key groups and key hashes, -0, NaN, non-ASCII strings), batches that do not fit
 * it go to msgpack, and msgpack batches from before (kept in checkpoints) still decode.
 */
import { describe, expect, it } from 'vitest';
import { decodeBatch, decodeValue, encodeBatch, encodeBatchMsgpack, encodeValue } from '../../src/core/codec.ts';
import { packStored, unpackStored } from '../../src/state/disk/stored-value.ts';
import { COLUMNAR_TAG } from '../../src/core/batch-codec.ts';
import { NO_TIMESTAMP, type Batch } from '../../src/core/batch.ts';
import { Rng } from '../../src/index.ts';
import { testSeed } from '../api/util.ts';

/** Same values, same own field order, same number signs (toEqual alone treats -0 as 0 and ignores key order). */
function expectSame(back: Batch, batch: Batch): void {
  expect(back.values).toEqual(batch.values);
  expect(back.timestamps).toEqual(batch.timestamps);
  expect(back.keyGroups).toEqual(batch.keyGroups);
  expect(back.keyHashes).toEqual(batch.keyHashes);
  for (let i = 0; i < batch.values.length; i++) {
    const v = batch.values[i];
    const b = back.values[i];
    if (typeof v === 'object' && v !== null) {
      expect(Object.keys(b as object)).toEqual(Object.keys(v));
      for (const k of Object.keys(v)) expect(Object.is((b as Record<string, unknown>)[k], (v as Record<string, unknown>)[k]) || typeof (v as Record<string, unknown>)[k] === 'object').toBe(true);
    } else {
      expect(Object.is(b, v)).toBe(true);
    }
    expect(Object.is(back.timestamps[i], batch.timestamps[i])).toBe(true);
  }
}

function roundTrip(batch: Batch, columnar: boolean): Batch {
  const bytes = encodeBatch(batch);
  expect(bytes[0] === COLUMNAR_TAG, 'columnar encoding').toBe(columnar);
  expect(bytes.byteOffset).toBe(0);
  expect(bytes.byteLength).toBe(bytes.buffer.byteLength); // owns its buffer: transferable as is
  const back = decodeBatch(bytes);
  expectSame(back, batch);
  return back;
}

describe('batch encoding between threads', () => {
  it('encodes records of one shape as columns', () => {
    const values = [{ key: 'w1', count: 1 }, { key: 'w22', count: 2 }, { key: '', count: -3 }];
    roundTrip({ values, timestamps: values.map(() => NO_TIMESTAMP) }, true);
    roundTrip({ values, timestamps: [1, 2, 3], keyGroups: [0, 127, 65535] }, true);
    roundTrip({ values, timestamps: [1, 2, 3], keyGroups: [0, 127, 65535], keyHashes: [-2_147_483_648, 0, 2_147_483_647] }, true);
  });

  it('key hashes travel only beside key groups; a batch without them is a version 1 batch, as before', () => {
    const values = [{ key: 'w1', count: 1 }, { key: 'w2', count: 2 }];
    const plain = encodeBatch({ values, timestamps: [1, 2], keyGroups: [3, 4] });
    expect([plain[1], plain[2]]).toEqual([1, 2]); // version 1, flags: key groups
    const hashed = encodeBatch({ values, timestamps: [1, 2], keyGroups: [3, 4], keyHashes: [-7, 9] });
    expect([hashed[1], hashed[2]]).toEqual([2, 6]); // version 2, flags: key groups and hashes
    // Hashes without key groups, or not one per record, are left out: the receiver hashes itself.
    expect(decodeBatch(encodeBatch({ values, timestamps: [1, 2], keyHashes: [-7, 9] })).keyHashes).toBeUndefined();
    expect(decodeBatch(encodeBatch({ values, timestamps: [1, 2], keyGroups: [3, 4], keyHashes: [-7] })).keyHashes).toBeUndefined();
    // The msgpack encoding (records that do not fit columns) leaves them out too.
    const odd = decodeBatch(encodeBatch({ values: [[1], [2]], timestamps: [1, 2], keyGroups: [3, 4], keyHashes: [-7, 9] }));
    expect([odd.keyGroups, odd.keyHashes]).toEqual([[3, 4], undefined]);
    // Bad input: a flag for hashes without key groups, or in a version 1 batch, is refused.
    const noGroups = hashed.slice();
    noGroups[2] = 4;
    expect(() => decodeBatch(noGroups)).toThrow(/key hashes without key groups/);
    const v1 = hashed.slice();
    v1[1] = 1;
    expect(() => decodeBatch(v1)).toThrow(/key hashes without key groups or in a version 1 batch/);
  });

  it('keeps number kinds, signs and special values exactly', () => {
    const values = [
      { i: 1, f: 0.5, b: true, s: 'a' },
      { i: -2_147_483_648, f: -0, b: false, s: 'é€😀' },
      { i: 2_147_483_647, f: Number.NaN, b: true, s: '\uFEFFbom' },
      { i: 0, f: Number.POSITIVE_INFINITY, b: false, s: 'x'.repeat(100) },
    ];
    roundTrip({ values, timestamps: [0, -0, Number.NaN, 5] }, true);
    // -0 among int32 values is not an int32
    roundTrip({ values: [{ n: 1 }, { n: -0 }], timestamps: [0, 0] }, true);
    // -0 after 0 in a constant-looking timestamp column
    roundTrip({ values: [1, 2], timestamps: [0, -0] }, true);
    roundTrip({ values: [1, 2], timestamps: [-0, -0] }, true);
  });

  it('carries fields of other types as msgpack columns, and primitives as one column', () => {
    const values = [
      { k: 'a', when: new Date(5), tags: ['x'], nested: { a: 1 }, maybe: null, big: 10n, u: undefined },
      { k: 'b', when: new Date(6), tags: [], nested: { a: 2 }, maybe: 3, big: -1n, u: 1 },
    ];
    roundTrip({ values, timestamps: [1, 2] }, true);
    roundTrip({ values: ['a', 'bé', ''], timestamps: [1, 1, 1] }, true);
    roundTrip({ values: [1, 2.5, -0], timestamps: [1, 1, 1] }, true);
    roundTrip({ values: [true, false], timestamps: [1, 1] }, true);
  });

  it('reuses its columns across batches of one shape without mixing them up', () => {
    // The writer keeps each shape's column arrays at their longest length between batches:
    // a shorter batch after a longer one must carry only its own records, in every column kind.
    const long = Array.from({ length: 50 }, (_, i) => ({ s: `k${i}`, n: i, x: { i } }));
    const short = [{ s: 'z', n: -1, x: { i: -1 } }, { s: 'y', n: 7.5, x: { i: 9 } }];
    roundTrip({ values: long, timestamps: long.map((_, i) => i) }, true);
    roundTrip({ values: short, timestamps: [1, 1] }, true);
    // a batch that is not columnar midway (a later record of another shape) leaves nothing behind
    roundTrip({ values: [...short, { s: 'a', n: 1 }], timestamps: [1, 2, 3] }, false);
    roundTrip({ values: short.slice(1), timestamps: [NO_TIMESTAMP] }, true);
  });

  it('falls back to msgpack when records differ in shape or are not plain objects', () => {
    roundTrip({ values: [{ a: 1, b: 2 }, { b: 2, a: 1 }], timestamps: [1, 2] }, false); // field order
    roundTrip({ values: [{ a: 1 }, { a: 1, b: 2 }], timestamps: [1, 2] }, false); // extra field
    roundTrip({ values: [{ a: 1, b: 2 }, { a: 1 }], timestamps: [1, 2] }, false); // missing field
    roundTrip({ values: [{ a: 1 }, 'x'], timestamps: [1, 2] }, false);
    roundTrip({ values: [[1, 2], [3]], timestamps: [1, 2] }, false);
    roundTrip({ values: [null, null], timestamps: [1, 2] }, false);
    // What msgpack did with these before, it still does (exactly the same bytes).
    const inherited = Object.create({ hidden: 1 }) as Record<string, unknown>;
    inherited.a = 1;
    for (const values of [
      [{ s: 'ok' }, { s: 'lone \uD800 surrogate' }], // UTF-8 cannot carry it
      [{ a: 1 }, inherited],
      JSON.parse('[{"__proto__": 1, "a": 2}]') as unknown[], // an own field named __proto__
    ]) {
      const batch = { values, timestamps: values.map(() => 1) };
      expect(encodeBatch(batch)).toEqual(encodeBatchMsgpack(batch));
    }
  });

  it('keeps Buffers Buffers and other byte arrays as they are, in batches and in snapshot values', () => {
    // msgpack's bin type alone gave back a Uint8Array: toString() of "hi" became "104,105" once
    // a record crossed a thread or a restore.
    const values = [{ b: Buffer.from('hi'), u: new Uint8Array([1, 2]) }, { b: Buffer.from(''), u: new Uint8Array(0) }];
    for (const batch of [{ values, timestamps: [1, 2] }, { values: [...values, 'not a record'], timestamps: [1, 2, 3] }]) {
      const back = decodeBatch(encodeBatch(batch)).values as { b: Buffer; u: Uint8Array }[];
      expect(Buffer.isBuffer(back[0]!.b) && Buffer.isBuffer(back[1]!.b)).toBe(true);
      expect(back[0]!.b.toString('utf8')).toBe('hi');
      expect(Buffer.isBuffer(back[0]!.u)).toBe(false);
      expect(back[0]!.u).toEqual(new Uint8Array([1, 2]));
    }
    const snap = decodeValue<{ b: Buffer; u: Uint8Array; inner: Buffer[] }>(encodeValue({ b: Buffer.from('state'), u: new Uint8Array([3]), inner: [Buffer.from([0, 255])] }));
    expect(Buffer.isBuffer(snap.b) && Buffer.isBuffer(snap.inner[0])).toBe(true);
    expect(snap.b.toString()).toBe('state');
    expect([...snap.inner[0]!]).toEqual([0, 255]);
    expect(Buffer.isBuffer(snap.u)).toBe(false);
    const stored = unpackStored(packStored({ b: Buffer.from('disk') })) as { b: Buffer };
    expect(Buffer.isBuffer(stored.b)).toBe(true);
    expect(stored.b.toString()).toBe('disk');
  });

  it('copes with field names that are not identifiers', () => {
    const values = [{ 'a-b': 1, 'the key': 'x', '0': true }, { 'a-b': 2, 'the key': 'y', '0': false }];
    roundTrip({ values, timestamps: [1, 2] }, true);
  });

  it('still decodes msgpack batches (in-flight data in checkpoints written before)', () => {
    const batch = { values: [{ key: 'w1', count: 1 }], timestamps: [7], keyGroups: [3] };
    const old = encodeBatchMsgpack(batch);
    expect(old[0]).not.toBe(COLUMNAR_TAG);
    expectSame(decodeBatch(old), batch);
  });

  it('decodes bytes at any offset (blocks read back from a state file)', () => {
    const batch = { values: [{ key: 'w1', n: 1.5 }, { key: 'w2', n: 2 }], timestamps: [7, 8], keyGroups: [3, 4] };
    const bytes = encodeBatch(batch);
    for (let shift = 1; shift < 8; shift++) {
      const host = new Uint8Array(bytes.length + shift);
      host.set(bytes, shift);
      expectSame(decodeBatch(host.subarray(shift)), batch);
    }
  });

  it('round-trips random batches (seeded)', () => {
    const seed = testSeed('batch-codec');
    const rng = new Rng(seed);
    // ASCII, then BMP below the surrogates, then astral code points (surrogate pairs in UTF-16)
    const codePoint = (): number => [() => 0x20 + rng.int(0x5f), () => 0x80 + rng.int(0xd800 - 0x80), () => 0x10000 + rng.int(0x1000)][rng.int(4) % 3]!();
    const str = (): string => String.fromCodePoint(...Array.from({ length: rng.int(40) }, codePoint));
    for (let round = 0; round < 200; round++) {
      const n = 1 + rng.int(300);
      const fields = ['id', 'name', 'score', 'ok', 'extra'].slice(0, 1 + rng.int(5));
      const kinds = fields.map(() => rng.int(6));
      const values: unknown[] = [];
      for (let i = 0; i < n; i++) {
        const o: Record<string, unknown> = {};
        fields.forEach((f, j) => {
          const k = kinds[j] === 5 ? rng.int(5) : kinds[j];
          o[f] = k === 0 ? rng.int(1e6) - 5e5 : k === 1 ? rng.next() * 1e9 : k === 2 ? str() : k === 3 ? rng.int(2) === 0 : { x: rng.int(9) };
        });
        values.push(o);
      }
      const constTs = rng.int(2) === 0;
      const timestamps = values.map(() => (constTs ? NO_TIMESTAMP : rng.int(1e12)));
      const keyGroups = rng.int(2) === 0 ? values.map(() => rng.int(32768)) : undefined;
      const keyHashes = keyGroups !== undefined && rng.int(2) === 0 ? values.map(() => rng.nextUint32() | 0) : undefined;
      const batch: Batch = keyGroups === undefined ? { values, timestamps } : keyHashes === undefined ? { values, timestamps, keyGroups } : { values, timestamps, keyGroups, keyHashes };
      roundTrip(batch, true);
    }
  });
});
