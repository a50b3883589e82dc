/**
 * The interval join's buffers and cleanup timers are keyed state: a job that fails once and
 * restarts from a checkpoint gives exactly the result of a run without the failure.
 *
 * A checkpoint completes while the join holds records of both sides; after it, records arrive
 * that meet only the buffered ones, then the job fails. The restore replays the source from its
 * checkpointed position into a join whose buffers come back from the checkpoint: the pairs
 * that need the buffered records are there, once each (the exactly-once file sink commits only
 * what checkpoints cover). A lost buffer would lose them; a double replay would duplicate them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ExactlyOnceFileSink, defineJob, runJob } from '../../src/index.ts';
import { committedLines } from '../helpers/output.ts';
import { punctuated, replayable, Signal, signalCheckpointAfter, type ReplayStep } from './support.ts';

interface L { readonly side: 'L'; readonly k: string; readonly ts: number; readonly v: string; readonly wm?: number }
interface R { readonly side: 'R'; readonly k: string; readonly ts: number; readonly n: number; readonly wm?: number }
type Ev = L | R;

const l = (k: string, ts: number, v: string, wm?: number): ReplayStep<Ev> => ({ emit: wm === undefined ? { side: 'L', k, ts, v } : { side: 'L', k, ts, v, wm }, ts });
const r = (k: string, ts: number, n: number, wm?: number): ReplayStep<Ev> => ({ emit: wm === undefined ? { side: 'R', k, ts, n } : { side: 'R', k, ts, n, wm }, ts });

const work = mkdtempSync(join(tmpdir(), 'weir-ij-restore-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.each([1, 2])('interval join across a restore, join at parallelism %i', (parallelism) => {
  it('buffered records and their cleanup timers come back from the checkpoint; the result is exact', async () => {
    const checkpointed = new Signal();
    let failures = 0;
    // Bounds [0, 100]: a left record at t meets right records of its key in [t, t + 100].
    const script: ReplayStep<Ev>[] = [
      l('a', 10, 'A'), l('b', 20, 'B'), l('c', 30, 'C'),
      r('a', 15, 1), // A1
      r('z', 40, 0, 35), // watermark 35: nothing is due yet (the earliest cleanup is at 10 + 100 + 1)
      // A checkpoint completes now: A, B, C and 1 are in the join's buffers.
      { waitFor: checkpointed },
      r('b', 50, 2), // B2: B is only in the (restored) buffer
      r('b', 30, 9), // late (below the restored watermark 35): dropped, though B's interval holds it
      r('a', 105, 3), // A3
      l('a', 100, 'D'), // D3 (1 at 15 is outside [100, 200])
      { run: () => { if (failures++ === 0) throw new Error('injected failure with records buffered in the join'); } },
      r('c', 131, 4, 130), // outside C's [30, 130]; watermark 130
      r('c', 131, 5), // at the watermark, not late; outside C's interval too
      l('c', 131, 'E'), // E4, E5
    ];
    const out = join(work, `out-${parallelism}`);
    const job = defineJob((env) => {
      env.setParallelism(parallelism);
      const events = env.fromSource(replayable(script), { name: 'script', watermarks: punctuated<Ev>() }).uid('script');
      const left = events.filter((e): e is L => e.side === 'L').setParallelism(1).uid('left');
      const right = events.filter((e): e is R => e.side === 'R').setParallelism(1).uid('right');
      left.keyBy((x) => x.k).intervalJoin(right.keyBy((y) => y.k)).between(0, 100)
        .process({ processElement: (x, y) => [`${x.v}${y.n}`] })
        .uid('join')
        // One subtask: a barrier here after A1 left the join after the join's own snapshot
        // of that checkpoint, which therefore holds A, B, C and 1.
        .process<string>(signalCheckpointAfter(() => true, checkpointed))
        .setParallelism(1)
        .uid('after-join')
        .sinkTo(new ExactlyOnceFileSink(out, { compactBelow: 0 }))
        .uid('sink');
    });
    const result = await runJob(job, {
      workers: 1, parallelism, stdout: () => {}, log: () => {},
      checkpoint: { interval: '20ms', dir: join(work, `chk-${parallelism}`) },
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
    });
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(failures).toBe(2);
    expect(result.attempts).toBe(2);
    expect(committedLines(out).sort()).toEqual(['"A1"', '"A3"', '"B2"', '"D3"', '"E4"', '"E5"']);
  }, 60_000);
});
