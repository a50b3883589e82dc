import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { runModule } from './helpers/run.ts';

const job = fileURLToPath(new URL('./fixtures/jobs/keyed-sum.ts', import.meta.url));

describe('worker threads', () => {
  it('runs a keyed job on two workers', async () => {
    const r = await runModule(job, { workers: 2, parallelism: 4, args: ['2000'] });
    const last = new Map<string, number>();
    for (const s of r.collected<{ key: string; value: number }>('sums')) last.set(s.key, Math.max(last.get(s.key) ?? 0, s.value));
    expect(r.collected('sums')).toHaveLength(2000);
    expect(last.size).toBe(50);
  });
});
