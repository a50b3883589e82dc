/** A source's records-per-second limit (Flink's RateLimiterStrategy), on a manual clock. */
import { describe, expect, it } from 'vitest';
import { ManualClock, runJob, defineJob } from '../../src/index.ts';

describe('source rate limit', () => {
  it('never emits more than the rate allows, and still delivers every record', async () => {
    const clock = new ManualClock(1_000_000);
    const seen: { n: number; at: number }[] = [];
    let count = 0;
    const r = await runJob(
      defineJob((env) => {
        env
          .fromSource<number, { id: string; next: number }>(
            {
              name: 'numbers', bounded: true, planSplits: () => [{ id: 'all', next: 0 }],
              createReader: () => {
                let next = 0;
                return {
                  addSplits() {},
                  poll(out, max) {
                    for (let i = 0; i < max && next < 500; i++) out.collect(next++);
                    return next < 500 ? 'more' : 'end';
                  },
                  snapshotSplits: () => [],
                };
              },
            },
            { ratePerSecond: 100 },
          )
          .map((n: number) => {
            count++;
            seen.push({ n, at: clock.now() });
            // Time moves 10 ms per record processed: 100 records/s is exactly one record per step.
            clock.advance(10);
            return n;
          })
          .collect();
      }),
      { workers: 1, parallelism: 1, clock, stdout: () => {} },
    );
    expect(r.status).toBe('FINISHED');
    expect(r.collected<number>()).toEqual(Array.from({ length: 500 }, (_, i) => i));
    const start = seen[0]!.at;
    for (const s of seen) expect(s.n).toBeLessThanOrEqual(Math.floor(((s.at - start) * 100) / 1000));
    expect(count).toBe(500);
  });

  it('rejects a rate that is not a positive number', () => {
    return expect(
      runJob(defineJob((env) => void env.fromElements(1, 2).collect().env.fromFile('x.jsonl', { ratePerSecond: 0 })), { workers: 1 }),
    ).rejects.toThrow(/invalid job definition: source option "ratePerSecond" must be a positive number, got 0/);
  });
});
