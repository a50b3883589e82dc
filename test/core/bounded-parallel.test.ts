/** mapBounded: results in order, never more than `limit` calls in flight, a failure rejects and starts no further call. */
import { describe, expect, it } from 'vitest';
import { mapBounded } from '../../src/core/bounded-parallel.ts';

describe('mapBounded', () => {
  it('keeps the items\' order and at most `limit` calls in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const out = await mapBounded(Array.from({ length: 50 }, (_, i) => i), 4, async (x) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, (x * 7) % 5));
      inFlight--;
      return x * 2;
    });
    expect(out).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
    expect(most).toBe(4);
    expect(await mapBounded([], 4, async (x) => x)).toEqual([]);
    await expect(mapBounded([1, 2, 3], 2, async (x) => { if (x === 2) throw new Error('boom'); return x; })).rejects.toThrow('boom');
    await expect(mapBounded([1], 0, async (x) => x)).rejects.toThrow('limit must be a positive integer');
  });

  it('starts no call after one failed, and rejects once those in flight have settled', async () => {
    const started: number[] = [];
    let settled = 0;
    const run = mapBounded(Array.from({ length: 20 }, (_, i) => i), 3, async (x) => {
      started.push(x);
      await new Promise((r) => setTimeout(r, x === 1 ? 1 : 20));
      settled++;
      if (x === 1) throw new Error('block 1 unreadable');
      return x;
    });
    await expect(run).rejects.toThrow('block 1 unreadable');
    // 0, 1 and 2 started at once; 1 failed first, so nothing after it started.
    expect(started).toEqual([0, 1, 2]);
    expect(settled).toBe(3);
  });
});
