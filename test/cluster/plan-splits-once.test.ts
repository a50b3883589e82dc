/**
 * A restart with no checkpoint to restore (the job failed before its first one completed)
 * reads the splits the job's first attempt planned, not a new plan: a source that starts at
 * its stream's newest record (Kinesis, JetStream and Redis at 'latest') would otherwise plan a
 * later start, and the records that arrived between the two plans were never read.
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob, type Source, type SourceSplit } from '../../src/index.ts';

interface FromSplit extends SourceSplit {
  readonly from: number;
}

/** Each plan starts 100 further on, as "the newest record" moves on while records arrive. */
function latestSource(planned: { calls: number }): Source<number, FromSplit> {
  return {
    name: 'from latest',
    bounded: true,
    planSplits: () => [{ id: 'stream', from: 100 * planned.calls++ }],
    createReader: () => {
      const splits: FromSplit[] = [];
      return {
        addSplits: (s: FromSplit[]) => void splits.push(...s),
        poll(out) {
          const s = splits.shift();
          if (s === undefined) return 'end';
          for (let i = 0; i < 3; i++) out.collect(s.from + i);
          return 'more';
        },
        snapshotSplits: () => splits.slice(),
      };
    },
  };
}

describe('a restart without a checkpoint', () => {
  it('reads the splits the first attempt planned (before: planned again, 100 records on: 0, 1 and 2 never read)', async () => {
    const planned = { calls: 0 };
    const failed = { once: false };
    const r = await runJob(defineJob((env) => {
      env.fromSource(latestSource(planned))
        .map((x) => {
          if (!failed.once) {
            failed.once = true;
            throw new Error('fails once, before any checkpoint');
          }
          return x;
        })
        .collect();
    }), {
      workers: 1, parallelism: 1, stdout: () => {}, log: () => {},
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
    });
    expect(r.status).toBe('FINISHED');
    expect(r.collected()).toEqual([0, 1, 2]);
    expect(planned.calls).toBe(1);
  });
});
