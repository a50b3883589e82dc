/** The same job gives the same results at any parallelism and on any number of workers. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runModule, sorted } from '../helpers/run.ts';

const job = fileURLToPath(new URL('../fixtures/jobs/windowed-totals.ts', import.meta.url));

describe('parallelism and worker parity', () => {
  const configs = [
    { parallelism: 1, workers: 1 },
    { parallelism: 4, workers: 1 },
    { parallelism: 1, workers: 2 },
    { parallelism: 4, workers: 2 },
  ];
  it('window results, keyed running totals and rolling reduces agree across p=1/4 and w=1/2', async () => {
    const results = [];
    for (const c of configs) {
      const r = await runModule(job, { ...c, args: ['20000'] });
      // A rolling reduce's intermediate values depend on arrival order; its final value per key does not.
      const final = new Map<string, number>();
      for (const x of r.collected<{ key: string; value: number }>('rolling')) final.set(x.key, Math.max(final.get(x.key) ?? 0, x.value));
      results.push({ c, windows: sorted(r.collected('windows')), rolling: r.collected('rolling').length, crossed: sorted([...final]) });
    }
    const base = results[0]!;
    // Sanity: the job produced real output, and every record landed in exactly one window.
    expect(base.windows.length).toBeGreaterThan(500);
    const counted = (base.windows as { count: number }[]).reduce((a, w) => a + w.count, 0);
    expect(counted).toBe(20_000);
    expect(base.rolling).toBe(20_000);
    expect(base.crossed.length).toBe(37);
    for (const r of results.slice(1)) {
      expect({ c: r.c, windows: r.windows }).toEqual({ c: r.c, windows: base.windows });
      expect({ c: r.c, rolling: r.rolling, crossed: r.crossed }).toEqual({ c: r.c, rolling: base.rolling, crossed: base.crossed });
    }
  });
});
