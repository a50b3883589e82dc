/**
 * Event time survives a restore (weir's answer to Flink's FLINK-5601, "Window operator does not
 * checkpoint watermarks"). A keyed operator's watermark goes into the checkpoint and the restored
 * operator starts there, so a record that was late before a failure is late after it too.
 *
 * Without it: a window fires and is purged, the checkpoint is taken, a record of that window
 * arrives late (dropped), the job fails; the restore replays the late record from the source's
 * checkpointed position into an operator at the minimum watermark, which opens the window again
 * and fires it a second time: the exactly-once sink commits the same window twice.
 *
 * The job runs in one thread; the source is replayable (its position is in the checkpoint) and
 * follows a script with punctuated watermarks, so what is late is decided by the data alone.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ExactlyOnceFileSink, TumblingEventTimeWindows, defineJob, runJob,
} from '../../src/index.ts';
import { punctuated, replayable, Signal, type ReplayStep } from './support.ts';

interface E { readonly k: string; readonly ts: number; readonly wm?: number }
type Step = ReplayStep<E>;

const work = mkdtempSync(join(tmpdir(), 'weir-wm-restore-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function committedLines(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => !f.startsWith('.'))
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l !== ''))
    .sort();
}

describe('event time across a restore', () => {
  it('a record late before the failure stays late after it: the purged window is not fired twice', async () => {
    const fired = new Signal();
    const checkpointedAfterFiring = new Signal();
    let failures = 0;
    let firstCheckpointAfterFiring: number | undefined;
    const script: Step[] = [
      { emit: { k: 'a', ts: 100 }, ts: 100 },
      // Event time passes 999: window [0, 1000) of key a fires and is purged.
      { emit: { k: 'a', ts: 1500, wm: 1499 }, ts: 1500 },
      // A checkpoint completes with the source positioned here and the window already fired.
      { waitFor: checkpointedAfterFiring },
      // Late for [0, 1000): dropped, and counted.
      { emit: { k: 'a', ts: 200 }, ts: 200 },
      { emit: { k: 'a', ts: 2500, wm: 2499 }, ts: 2500 },
      // The failure: the restore replays from the checkpoint, the late record included.
      { run: () => { if (failures++ === 0) throw new Error('injected failure after the late record'); } },
      { emit: { k: 'a', ts: 3500, wm: 3499 }, ts: 3500 },
    ];
    const out = join(work, 'out');
    const job = defineJob((env) => {
      env
        .fromSource(replayable(script), { name: 'script', watermarks: punctuated<E>() })
        .keyBy((e) => e.k)
        .window(TumblingEventTimeWindows.of(1000))
        .aggregate(
          { createAccumulator: () => 0, add: (_e: E, n: number) => n + 1, getResult: (n: number) => n },
          { process(k: string, ctx, [n], o) { o.collect({ k, start: ctx.window.start, n }); } },
        )
        .uid('windows')
        .process({
          processElement(v: { k: string; start: number; n: number }, _ctx, o) {
            fired.set();
            o.collect(v);
          },
          snapshotState({ checkpointId }: { checkpointId: number }) {
            if (fired.isSet && firstCheckpointAfterFiring === undefined) firstCheckpointAfterFiring = checkpointId;
          },
          notifyCheckpointComplete(id: number) {
            if (firstCheckpointAfterFiring !== undefined && id >= firstCheckpointAfterFiring) checkpointedAfterFiring.set();
          },
        })
        .uid('after-windows')
        .sinkTo(new ExactlyOnceFileSink(out, { compactBelow: 0 }))
        .uid('sink');
    });
    const result = await runJob(job, {
      workers: 1, parallelism: 1, stdout: () => {}, log: () => {},
      checkpoint: { interval: '20ms', dir: join(work, 'chk') },
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
    });
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(failures).toBe(2);
    expect(committedLines(out)).toEqual([
      '{"k":"a","start":0,"n":1}',
      '{"k":"a","start":1000,"n":1}',
      '{"k":"a","start":2000,"n":1}',
      '{"k":"a","start":3000,"n":1}',
    ]);
  }, 60_000);
});
