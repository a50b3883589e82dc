/**
 * collect() gathers a small result in the job's client (the main thread): it holds at most
 * 1,000,000 records per sink, then the job fails naming the sink and what to use instead. Before,
 * a collect() on an endless source under weir run (which never reads it) grew without bound.
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob } from '../../src/index.ts';

describe('collect() bound', () => {
  it('more than 1,000,000 records in one collect() sink fail the job with a line saying so; 1,000,000 are taken', async () => {
    const run = (count: number) => runJob(defineJob((env) => {
      env.setRestartStrategy({ type: 'none' });
      env.fromGenerator((i) => i, { count }).collect('all');
    }), { workers: 1, stdout: () => {}, log: () => {} });
    const over = await run(1_000_100);
    expect(over.status).toBe('FAILED');
    expect(over.error?.message).toContain("collect('all') would hold more than 1,000,000 records in memory");
    const at = await run(1_000_000);
    expect(at.status).toBe('FINISHED');
    expect(at.collected('all')).toHaveLength(1_000_000);
  }, 60_000);
});
