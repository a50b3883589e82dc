/**
 * The timer queue's timestamp table (open addressing on a Float64Array, deletion by backward
 * shift, doubling and halving) answers as a Map does: random sets, gets and deletes on both
 * (seeded; the seed is printed, WEIR_TEST_SEED=... replays it) compared step by step, over key sets that
 * collide a lot (few distinct keys, runs of neighbouring timestamps) and that grow and shrink the
 * table many times.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { TimeTable } from '../../src/runtime/time-table.ts';
import { testSeed } from '../api/util.ts';

const EPOCH_MS = 1_764_000_000_000;

describe('time table against a Map', () => {
  it('random sets, gets and deletes: the same answers, size and contents', () => {
    const seed = testSeed('time table');
    const rng = new Rng(seed);
    for (let round = 0; round < 20; round++) {
      const t = new TimeTable<number>();
      const m = new Map<number, number>();
      // Keys: epoch milliseconds in a window of `spread`, plus a few odd ones (negative, fractional, zero).
      const spread = 1 + rng.int(round % 2 === 0 ? 50 : 5000);
      const odd = [0, -1, -1.5, 0.25, -4294967296, 2 ** 40 + 3];
      const key = () => (rng.bool(0.05) ? odd[rng.int(odd.length)]! : EPOCH_MS + rng.int(spread));
      // Phases that fill and then drain, so the table doubles and halves.
      for (let step = 0; step < 4000; step++) {
        const filling = Math.floor(step / 500) % 2 === 0;
        const k = key();
        const where = `seed ${seed}, round ${round}, step ${step}, key ${k}`;
        const op = rng.int(10);
        if (op < (filling ? 6 : 2)) {
          t.set(k, step);
          m.set(k, step);
        } else if (op < 8) {
          expect(t.delete(k), where).toBe(m.delete(k));
        } else {
          expect(t.get(k), where).toBe(m.get(k));
        }
        expect(t.size, where).toBe(m.size);
      }
      for (const [k, v] of m) expect(t.get(k), `seed ${seed}, round ${round}, key ${k}`).toBe(v);
      expect([...t.values()].sort((a, b) => a - b)).toEqual([...m.values()].sort((a, b) => a - b));
    }
  });

  it('-0 and 0 are one key, as in a Map; a non-finite key is refused', () => {
    const t = new TimeTable<string>();
    t.set(0, 'zero');
    expect(t.get(-0)).toBe('zero');
    t.set(-0, 'minus zero');
    expect(t.size).toBe(1);
    expect(t.get(0)).toBe('minus zero');
    expect(t.delete(-0)).toBe(true);
    expect(t.size).toBe(0);
    expect(() => t.set(Number.NaN, 'x')).toThrow(/finite number, got NaN/);
    expect(() => t.set(Number.POSITIVE_INFINITY, 'x')).toThrow(/finite number, got Infinity/);
    expect(t.get(Number.NaN)).toBeUndefined();
  });

  it('100 k distinct timestamps in and out: every one found, then the table empty; it shrinks only after a spell of low use', () => {
    const t = new TimeTable<number>();
    for (let i = 0; i < 100_000; i++) t.set(EPOCH_MS + i * 7, i);
    for (let i = 0; i < 100_000; i++) expect(t.get(EPOCH_MS + i * 7)).toBe(i);
    for (let i = 0; i < 100_000; i += 2) expect(t.delete(EPOCH_MS + i * 7)).toBe(true);
    for (let i = 0; i < 100_000; i++) expect(t.get(EPOCH_MS + i * 7)).toBe(i % 2 === 0 ? undefined : i);
    // Half the keys gone: the table keeps its size (it halves only when nearly empty) ...
    expect(t.capacity).toBe(262_144);
    for (let i = 1; i < 100_000; i += 2) expect(t.delete(EPOCH_MS + i * 7)).toBe(true);
    expect(t.size).toBe(0);
    // ... nor when just emptied (a job's pending timers drain and refill at every watermark) ...
    expect(t.capacity).toBe(262_144);
    // ... but used on at a low level for a while, it halves back to its smallest.
    for (let i = 0; i < 1_100_000; i++) {
      t.set(i % 3, i);
      t.delete(i % 3);
    }
    expect(t.size).toBe(0);
    expect(t.capacity).toBe(16);
    expect([...t.values()]).toEqual([]);
  });
});
