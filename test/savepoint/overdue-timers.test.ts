/**
 * Processing-time timers that came due while the job was down fire right after the restore,
 * before the restored input goes on (Flink fires them first from its mailbox). Before, they were
 * put on the clock, which runs after a slice of task steps: a restored source with little input
 * left reached its end of input first, the end of input quiesced the timers and they never fired
 * (the audit: 10 of 10 lost at parallelism 1, 9 of 20 through the CLI rescaled to 3).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { defineJob, runJob, ValueStateDescriptor, type JobResult, type StreamExecutionEnvironment } from '../../src/index.ts';
import { runThenStop, sleep, tempDir } from './helpers.ts';

const tmp = tempDir('sp-overdue-timers');
afterAll(() => tmp.cleanup());

const KEYS = 10;
/** Records in all: the first run stops with a savepoint before it has emitted them (50 a second, stopped after ~0.5 s). */
const RECORDS = 40;
const REGISTERED = new ValueStateDescriptor<boolean>('registered');

function build(timerAtMs: number, ratePerSecond?: number) {
  return (env: StreamExecutionEnvironment) => {
    env.fromGenerator((i) => ({ i }), { count: RECORDS, ...(ratePerSecond !== undefined ? { ratePerSecond } : {}) })
      .uid('src')
      .keyBy((r) => `k${r.i % KEYS}`)
      .process<string>({
        processElement(_r, ctx) {
          // Once per key, across the restore: a record after it would otherwise register the timer again.
          const registered = ctx.getState(REGISTERED);
          if (registered.value() === true) return;
          registered.update(true);
          ctx.timerService().registerProcessingTimeTimer(timerAtMs);
        },
        onTimer(_ts, ctx, out) {
          out.collect(ctx.getCurrentKey() as string);
        },
      })
      .uid('timers')
      .collect('fired');
  };
}

/** Runs the first job for `ms` and stops it with a savepoint (not drained: the timers go into it unfired). */
const stopped = (timerAtMs: number, ms: number): Promise<{ sp: string; result: JobResult }> =>
  runThenStop(defineJob(build(timerAtMs, 50)), { workers: 1 }, ms, tmp.fresh('sp'));

describe('processing-time timers due while the job was down', () => {
  for (const parallelism of [1, 3]) {
    it(`fire once each right after the restore, though the restored input ends at once (parallelism 1 -> ${parallelism})`, async () => {
      const timerAtMs = Date.now() + 2500;
      const first = await stopped(timerAtMs, 500);
      expect(Date.now(), 'the first run stopped before its timers were due').toBeLessThan(timerAtMs);
      expect(first.result.collected<string>('fired')).toEqual([]);
      await sleep(Math.max(0, timerAtMs - Date.now()) + 100);

      const second = await runJob(defineJob(build(timerAtMs)), { workers: 1, parallelism, from: first.sp, stdout: () => {}, log: () => {} });
      expect(second.status, second.error?.message).toBe('FINISHED');
      const fired = second.collected<string>('fired').sort();
      const expected = Array.from({ length: KEYS }, (_, k) => `k${k}`).sort();
      expect(fired).toEqual(expected);
    }, 30_000);
  }
});
