import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { Rng } from '../src/index.ts';
import { runModule } from './helpers/run.ts';

const job = fileURLToPath(new URL('./fixtures/jobs/keyed-sum.ts', import.meta.url));
const N = 2000;

/** What the fixture generates: record i is drawn from Rng(seed 7, index i), key first, then value. */
function inputByKey(): Map<string, number[]> {
  const byKey = new Map<string, number[]>();
  for (let i = 0; i < N; i++) {
    const rng = new Rng(7, i);
    const key = `k${rng.int(50)}`;
    const value = rng.int(100);
    let l = byKey.get(key);
    if (l === undefined) byKey.set(key, (l = []));
    l.push(value);
  }
  return byKey;
}

describe('worker threads', () => {
  it('runs a keyed job on two workers: every key sums exactly its own records, each once', async () => {
    const r = await runModule(job, { workers: 2, parallelism: 4, args: [String(N)] });
    const want = inputByKey();
    expect(want.size).toBe(50); // the fixture's keys k0..k49 all occur in 2000 records

    const got = new Map<string, number[]>();
    for (const s of r.collected<{ key: string; value: number }>('sums')) {
      let l = got.get(s.key);
      if (l === undefined) got.set(s.key, (l = []));
      l.push(s.value);
    }
    expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
    for (const [key, values] of want) {
      const sums = got.get(key)!;
      // One running sum per record of the key, in the order the key's reducer emitted them:
      // the last one is the key's total.
      expect(sums, key).toHaveLength(values.length);
      expect(sums.at(-1), key).toBe(values.reduce((a, b) => a + b, 0));
      // The running sums grow by exactly the key's values (in the order the records arrived,
      // which interleaves the source subtasks): each record counted once, no other key's.
      const steps = sums.map((s, i) => s - (i === 0 ? 0 : sums[i - 1]!));
      expect(steps.slice().sort((a, b) => a - b), key).toEqual(values.slice().sort((a, b) => a - b));
    }
  });
});
