/**
 * KeyTable (the heap backend's map of one key group) against a Map as the oracle: seeded random
 * sets, updates, deletes, clears and lookups over string and number keys (0 and -0, floats,
 * integers beyond 32 bits, long and non-Latin-1 strings, strings beginning with U+0000 as
 * normalized keys do), checking size, every lookup and the iteration order after each step;
 * and live iterators advanced in step with a Map's while both are changed, through the rebuilds
 * that drop deleted entries and renumber the rest.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { KeyTable, keyHash } from '../../src/state/key-table.ts';
import { keyGroupOf, type NormKey } from '../../src/state/key-groups.ts';
import { testSeed } from '../api/util.ts';

function randomKey(rng: Rng, universe: number): NormKey {
  const i = rng.int(universe);
  switch (i % 8) {
    case 0: return i;
    case 1: return -i - 0.5;
    case 2: return i * 2 ** 33;
    case 3: return `w${i}`;
    case 4: return `\u0000s${i}`;
    case 5: return `ключ-${i}-${'x'.repeat(i % 50)}`;
    case 6: return i % 16 === 6 ? -0 : 0;
    default: return `${i}`; // a digit string is not the number
  }
}

function expectSame(t: KeyTable, m: Map<NormKey, unknown>, where: string): void {
  expect(t.size, where).toBe(m.size);
  expect([...t], where).toEqual([...m]);
  expect([...t.keys()], where).toEqual([...m.keys()]);
  expect([...t.values()], where).toEqual([...m.values()]);
}

describe('KeyTable', () => {
  it('behaves as a Map under seeded random changes (size, lookups, order)', () => {
    const seed = testSeed('key-table random');
    const rng = new Rng(seed);
    for (let round = 0; round < 20; round++) {
      const t = new KeyTable();
      const m = new Map<NormKey, unknown>();
      const universe = rng.pick([4, 40, 400, 4000]);
      if (round % 2 === 1) t.reserve(rng.int(2 * universe)); // a size hint, right or wrong, changes nothing but the index's size
      const steps = rng.range(100, 3000);
      for (let step = 0; step < steps; step++) {
        const k = randomKey(rng, universe);
        const op = rng.int(100);
        const where = `seed ${seed}, round ${round}, step ${step}, key ${String(k)}`;
        if (op < 50) {
          const v = { step };
          expect(t.set(k, v), where).toBe(t);
          m.set(k, v);
        } else if (op < 85) {
          expect(t.delete(k), where).toBe(m.delete(k));
        } else if (op < 99) {
          expect(t.get(k), where).toBe(m.get(k));
          expect(t.has(k), where).toBe(m.has(k));
        } else {
          t.clear();
          m.clear();
        }
        expect(t.size, where).toBe(m.size);
        if (step % 97 === 0) expectSame(t, m, where);
      }
      expectSame(t, m, `seed ${seed}, round ${round}, end`);
      for (const k of m.keys()) expect(t.get(k)).toBe(m.get(k));
    }
  });

  it('reserve(n) sizes an empty table\'s index for n entries (no rebuild while filling it) and is ignored once it held any', () => {
    const grown = new KeyTable<number>();
    const slotsSeen = new Set<number>();
    for (let i = 0; i < 1000; i++) {
      grown.set(`k${i}`, i);
      slotsSeen.add(grown.indexSlots);
    }
    expect(slotsSeen.size).toBeGreaterThan(3); // without a hint it grows step by step

    const t = new KeyTable<number>();
    t.reserve(1000);
    const slots = t.indexSlots;
    expect(slots).toBeGreaterThanOrEqual(1000 / 0.75);
    expect(slots).toBeLessThanOrEqual(4096);
    for (let i = 0; i < 1000; i++) t.set(`k${i}`, i);
    expect(t.indexSlots).toBe(slots);
    t.set('one more', -1); // past the hint: grows as usual
    expect(t.get('k999')).toBe(999);
    expect(t.get('one more')).toBe(-1);

    const used = new KeyTable<number>();
    used.set('a', 1);
    used.delete('a');
    const before = used.indexSlots;
    used.reserve(5000);
    expect(used.indexSlots).toBe(before);
  });

  it('fillEmpty(keys, values, n) gives the table set() would, in one go: order, lookups, keys given twice, later changes (seeded)', () => {
    const seed = testSeed('key-table fillEmpty');
    const rng = new Rng(seed);
    for (let round = 0; round < 60; round++) {
      const where = `seed ${seed}, round ${round}`;
      const n = round === 0 ? 0 : rng.int(3) === 0 ? rng.range(1, 20) : rng.range(100, 5000);
      // Mostly distinct keys, as a snapshot's block holds; some rounds repeat a few.
      const universe = rng.int(4) === 0 ? Math.max(1, n >> 1) : 1_000_000;
      const keys: NormKey[] = [];
      const values: unknown[] = [];
      for (let i = 0; i < n; i++) {
        keys.push(randomKey(rng, universe));
        values.push(rng.int(2) === 0 ? i : { i });
      }
      const t = new KeyTable();
      const m = new Map<NormKey, unknown>();
      expect(t.fillEmpty(keys, values, n), where).toBe(true);
      for (let i = 0; i < n; i++) m.set(keys[i]!, values[i]);
      expectSame(t, m, where);
      for (const k of m.keys()) expect(t.get(k), where).toBe(m.get(k));
      // Sized once: filling n entries needs no rebuild, so n more sets fit before the next.
      expect(t.indexSlots, where).toBeGreaterThanOrEqual(Math.ceil((m.size + 1) / 0.75));
      // Then an ordinary table: inserts, deletes (with the rebuilds they bring), lookups.
      for (let step = 0; step < 2 * n + 50; step++) {
        const k = rng.int(3) === 0 ? keys[rng.int(Math.max(1, n))] ?? 'x' : randomKey(rng, 2_000_000);
        if (rng.int(4) === 0) expect(t.delete(k), where).toBe(m.delete(k));
        else {
          t.set(k, step);
          m.set(k, step);
        }
      }
      expectSame(t, m, `${where}, after changes`);
      // Only an empty table is filled: one that holds entries, or held some, is left as it was.
      if (t.kv.length > 0) {
        const before = [...t];
        expect(t.fillEmpty(['new'], [1], 1), where).toBe(false);
        expect([...t], where).toEqual(before);
      }
    }
    expect(() => new KeyTable().fillEmpty(['a'], [], 1)).toThrow(/1 entries asked, 1 keys and 0 values/);
  });

  it('iterators are live, as a Map\'s: they see later inserts, skip deleted entries, and survive a renumbering', () => {
    const seed = testSeed('key-table iterators');
    const rng = new Rng(seed);
    let renumbered = 0;
    for (let round = 0; round < 200; round++) {
      const t = new KeyTable();
      const m = new Map<NormKey, unknown>();
      // At least 64 entries before iterating (44 or more stay live below): a rebuild sizes the
      // index to at least twice the live entries and the next comes at 3/4 full, half as many
      // inserts later, so the changes below renumber the entries once at most (see positionAfterRenumbering).
      const base = rng.range(64, 200);
      for (let i = 0; i < base; i++) {
        t.set(`k${i}`, i);
        m.set(`k${i}`, i);
      }
      for (let i = 0; i < base; i += rng.range(1, 3)) {
        t.delete(`k${i}`); // holes: the next rebuild renumbers
        m.delete(`k${i}`);
      }
      const ti = t.entries();
      const mi = m.entries();
      for (let step = 0; step < 20; step++) {
        const where = `seed ${seed}, round ${round}, step ${step}`;
        expect(ti.next(), where).toEqual(mi.next());
        const k = rng.bool(0.5) ? `k${rng.int(base)}` : `n${round}-${step}-${rng.int(1000)}`;
        if (rng.bool(0.6)) {
          t.set(k, step);
          m.set(k, step);
        } else {
          t.delete(k);
          m.delete(k);
        }
        // Inserts that force a rebuild (and so a renumbering) while the iterator is half way.
        if (step === 10) {
          for (let i = 0; t.generation === 0 && i < 4 * base; i++) {
            t.set(`fill-${i}`, i);
            m.set(`fill-${i}`, i);
          }
        }
      }
      for (let r = ti.next(), s = mi.next(); ; r = ti.next(), s = mi.next()) {
        expect(r, `seed ${seed}, round ${round}, rest`).toEqual(s);
        if (r.done === true) break;
      }
      if (t.generation > 0) renumbered++;
    }
    expect(renumbered).toBeGreaterThan(150); // the iterations crossed a renumbering
  });

  it('an iterator made before clear() goes on with what is added after, as a Map\'s', () => {
    const t = new KeyTable();
    const m = new Map<NormKey, unknown>();
    for (const x of [t, m]) {
      x.set('a', 1).set('b', 2);
    }
    const ti = t.keys();
    const mi = m.keys();
    expect(ti.next()).toEqual(mi.next());
    t.clear();
    m.clear();
    t.set('c', 3);
    m.set('c', 3);
    expect([...ti]).toEqual([...mi]);
    expect([...mi]).toEqual([]);
  });

  it('refuses, rather than guesses, an iteration across two renumberings', () => {
    const t = new KeyTable();
    for (let i = 0; i < 8; i++) t.set(i, i);
    const it = t.keys();
    it.next();
    t.clear();
    t.set(1, 1);
    t.clear();
    expect(() => it.next()).toThrow(/renumbered 2 times during one iteration/);
  });

  it('hashes keys independently of their key group: the keys of one group spread over the index', () => {
    // Every key of key group 5 of 128; the table's low bits must still differ between them.
    const keys: string[] = [];
    for (let i = 0; keys.length < 4096; i++) if (keyGroupOf(`w${i}`, 128) === 5) keys.push(`w${i}`);
    const buckets = new Set(keys.map((k) => keyHash(k) & 8191));
    expect(buckets.size).toBeGreaterThan(2500); // ~3,200 expected for 4,096 random draws into 8,192
    expect(keyHash(0)).toBe(keyHash(-0));
    for (const k of [0, 1, -1, 0.5, 2 ** 40, '', 'a', '\u0000s']) expect(keyHash(k)).not.toBe(0);
  });

  it('forEach, has, get and delete of absent keys, and the size of an emptied table', () => {
    const t = new KeyTable();
    expect(t.get('x')).toBeUndefined();
    expect(t.delete('x')).toBe(false);
    t.set('x', undefined);
    expect(t.has('x')).toBe(true);
    expect(t.size).toBe(1);
    const seen: [unknown, NormKey][] = [];
    t.set(2, 'two');
    t.forEach((v, k) => seen.push([v, k]));
    expect(seen).toEqual([[undefined, 'x'], ['two', 2]]);
    t.delete('x');
    t.delete(2);
    expect(t.size).toBe(0);
    expect([...t]).toEqual([]);
    expect(Object.prototype.toString.call(t)).toBe('[object KeyTable]');
  });

  it('visitReadOnly visits the live entries in insertion order and refuses a visitor that changes the table', () => {
    const t = new KeyTable<number>();
    for (let i = 0; i < 100; i++) t.set(i % 3 === 0 ? i : `s${i}`, i);
    for (let i = 0; i < 100; i += 7) t.delete(i % 3 === 0 ? i : `s${i}`);
    const seen: [NormKey, number][] = [];
    t.visitReadOnly((v, k) => seen.push([k, v]));
    expect(seen).toEqual([...t.entries()]);
    expect(() => t.visitReadOnly((_v, k) => t.delete(k))).toThrow(/changed while it was visited/);
    const u = new KeyTable<number>();
    u.set('a', 1);
    expect(() => u.visitReadOnly(() => u.set('b', 2))).toThrow(/changed while it was visited/);
  });
});

