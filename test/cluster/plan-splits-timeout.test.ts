/**
 * A source's planSplits may ask an external system that never answers: the attempt bounds it
 * (jobmanager.deploy.timeout) and fails with a timeout that names it, and a cancel while it
 * plans ends the job at once (before, the attempt awaited planning unbounded, and a cancel
 * could not reach it).
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob, type Source, type SourceSplit } from '../../src/index.ts';

function hangingSource(planned: { calls: number }): Source<number, SourceSplit> {
  return {
    name: 'never plans',
    bounded: true,
    planSplits: () => {
      planned.calls++;
      return new Promise<SourceSplit[]>(() => {});
    },
    createReader: () => ({ addSplits() {}, poll: () => 'end', snapshotSplits: () => [] }),
  };
}

describe('planning source splits', () => {
  it('is bounded by jobmanager.deploy.timeout: the job fails with a timeout naming it', async () => {
    const planned = { calls: 0 };
    const r = await runJob(defineJob((env) => void env.fromSource(hangingSource(planned)).collect()), {
      workers: 1, parallelism: 1, stdout: () => {}, log: () => {},
      jobManager: { deployTimeout: 300 },
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
    });
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toMatch(/the sources did not plan their splits within 0\.3 s \(jobmanager\.deploy\.timeout\)/);
    expect(planned.calls).toBe(2); // the restart planned again, and timed out again
  });

  it('gives way to a cancel', async () => {
    const planned = { calls: 0 };
    const ac = new AbortController();
    const job = runJob(defineJob((env) => void env.fromSource(hangingSource(planned)).collect()), {
      workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, signal: ac.signal,
    });
    const deadline = Date.now() + 20_000;
    while (planned.calls === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(planned.calls).toBe(1);
    ac.abort();
    const r = await job;
    expect(r.status).toBe('CANCELED');
  });
});
