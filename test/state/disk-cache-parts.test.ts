/**
 * Parts of the disk backend's write path, each against what it replaces: the cache's entry
 * table against a Map (seeded random inserts, lookups and deletes through growth and
 * back-shifting deletes), the batch's number encoding against msgpack's (byte for byte), and
 * the reusable read key against encodeStoreKey.
 */
import { describe, expect, it } from 'vitest';
import { EntryTable } from '../../src/state/disk/entry-table.ts';
import { encodeStoreKey, scratchStoreKey } from '../../src/state/disk/keys.ts';
import { packStored, STORED_NUMBER_MAX_BYTES, writeStoredNumber } from '../../src/state/disk/stored-value.ts';
import { keyHash } from '../../src/state/key-table.ts';
import type { NormKey } from '../../src/state/key-groups.ts';
import { Rng } from '../../src/index.ts';
import { testSeed } from '../api/util.ts';

interface E {
  readonly key: NormKey;
  readonly hash: number;
  v: number;
}

describe('disk cache parts', () => {
  it('the entry table holds what a Map holds through random inserts and deletes (seeded)', () => {
    const rng = new Rng(testSeed('entry-table'));
    const t = new EntryTable<E>();
    const m = new Map<NormKey, E>();
    // Few distinct keys and numbers among them: long probe runs, deletes that shift entries back.
    const keyOf = (i: number): NormKey => (i % 5 === 0 ? i / 5 - 40 : `k${i}`);
    for (let step = 0; step < 60_000; step++) {
      const k = keyOf(rng.int(step < 30_000 ? 3000 : 300));
      const h = keyHash(k);
      const found = t.get(k, h);
      expect(found).toBe(m.get(k));
      if (found === undefined) {
        if (rng.int(3) > 0) {
          const e = { key: k, hash: h, v: step };
          t.insert(e);
          m.set(k, e);
        }
      } else if (rng.int(2) === 0) {
        expect(t.delete(found)).toBe(true);
        expect(t.delete(found)).toBe(false);
        m.delete(k);
      }
      expect(t.size).toBe(m.size);
    }
    for (const [k, e] of m) expect(t.get(k, keyHash(k))).toBe(e);
    // An entry equal in key but not the one in the table is not deleted.
    const [k0, e0] = [...m][0]!;
    expect(t.delete({ key: k0, hash: e0.hash, v: -1 })).toBe(false);
    expect(t.get(k0, e0.hash)).toBe(e0);
    t.clear();
    expect(t.size).toBe(0);
    expect(t.get(k0, e0.hash)).toBeUndefined();
  });

  it('numbers go into a batch exactly as msgpack packs them', () => {
    const rng = new Rng(testSeed('stored-number'));
    const edges = [0, -0, 1, 0x3f, 0x40, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffffffff, 0x100000000,
      -1, -0x20, -0x21, -0x80, -0x81, -0x8000, -0x8001, -0x80000000, -0x80000001, 0.5, -2.25, 1e300, -1e-300,
      Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, Number.NaN, Infinity, -Infinity];
    const nums = [...edges];
    for (let i = 0; i < 5000; i++) {
      const scale = 2 ** rng.int(40);
      nums.push(Math.floor((rng.next() - 0.5) * scale), (rng.next() - 0.5) * scale);
    }
    const b = new Uint8Array(STORED_NUMBER_MAX_BYTES + 3);
    for (const n of nums) {
      const end = writeStoredNumber(b, 3, n);
      expect([...b.subarray(3, end)], String(n)).toEqual([...packStored(n)]);
    }
  });

  it('a read key equals encodeStoreKey, for short, long, non-Latin-1 and number keys', () => {
    const keys: NormKey[] = ['', 'k1', 'k12345', 'é-latin1', 'x'.repeat(32), 'y'.repeat(33), 'snow ☃', 'a\ud800', 0, -0, 1.5, -7];
    for (const k of keys) {
      for (const [kg, id] of [[0, 1], [127, 2], [0xffff, 0xffff]] as const) {
        expect([...scratchStoreKey(kg, id, k)], String(k)).toEqual([...encodeStoreKey(kg, id, k)]);
      }
    }
    // Reused between calls of one length: valid until the next.
    const a = scratchStoreKey(1, 1, 'ab');
    scratchStoreKey(2, 2, 'cd');
    expect([...a]).toEqual([...encodeStoreKey(2, 2, 'cd')]);
  });
});
