/** mapBounded: results in order, never more than `limit` calls in flight, a failure rejects. */
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
});
