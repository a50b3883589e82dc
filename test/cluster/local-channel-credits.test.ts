/**
 * A channel whose producer and consumer share a thread gets one credit unless the job sets
 * `credits` (channel.ts, LOCAL_CHANNEL_CREDITS): in one thread a second buffer never lets the
 * producer work while the consumer does, it only keeps another batch of records alive. Measured
 * here by what the records say themselves: the generator counts what it made, the keyed
 * function downstream (another task of the same thread) what it took, and the difference is
 * what waits in between. Before, every same-thread channel had 4 credits and 5 batches waited
 * (4 credited, 1 in the backlog):
 * the source sends a watermark after each batch (here: punctuated, one per poll), the consumer
 * spends a step on it, and the source uses that step to get one batch further ahead, until its
 * credits run out.
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob, WatermarkStrategy, type KeyedProcessFunction } from '../../src/index.ts';
import { DEFAULT_BATCH_SIZE } from '../../src/core/batch.ts';

const RECORDS = 40 * DEFAULT_BATCH_SIZE;

/** Records made and taken so far, and the most that were ever in between (one thread: plain variables). */
const seen = { made: 0, taken: 0, maxWaiting: 0 };

const counter: KeyedProcessFunction<number, number, number> = {
  processElement(v, _ctx, out) {
    seen.taken++;
    seen.maxWaiting = Math.max(seen.maxWaiting, seen.made - seen.taken);
    out.collect(v);
  },
};

const job = defineJob((env) => {
  env
    .fromGenerator((i) => {
      seen.made++;
      return i;
    }, {
      count: RECORDS,
      watermarks: WatermarkStrategy.forGenerator<number>(() => ({
        onEvent: (_v, ts, out) => out.emitWatermark(ts),
        onPeriodicEmit: () => {},
      })).withTimestampAssigner((i) => i),
    })
    .keyBy((i) => i % 97)
    .process(counter)
    .addSink(() => {});
});

async function maxWaiting(credits: number | undefined): Promise<number> {
  seen.made = seen.taken = seen.maxWaiting = 0;
  const r = await runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, ...(credits !== undefined ? { credits } : {}) });
  expect(r.status).toBe('FINISHED');
  expect(seen.taken).toBe(RECORDS);
  return seen.maxWaiting;
}

describe('channels within one thread', () => {
  it('hold at most two batches between two tasks by default', async () => {
    // The one credited, and one more in the backlog: a producer without credit may still take
    // its next step while nothing waits in its backlog (that step's output then does).
    expect(await maxWaiting(undefined)).toBeLessThanOrEqual(2 * DEFAULT_BATCH_SIZE);
  });

  it("take the job's credits setting when it is given", async () => {
    // Four credits (what every channel had before) let the source run four batches ahead of the keyed task, and one in its backlog.
    expect(await maxWaiting(4)).toBeGreaterThan(4 * DEFAULT_BATCH_SIZE);
  });
});
