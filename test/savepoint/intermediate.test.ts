/**
 * An intermediate savepoint commits no sink output (as in Flink since 1.15): recovery after a
 * failure starts from the latest checkpoint, never from a savepoint, so output committed at a
 * savepoint newer than that checkpoint would have to be written again. Before, the sink
 * committed at every savepoint, and the restart from the older checkpoint found output
 * committed past it and refused to start (or, allowed to, wrote it twice).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { committedLines } from '../helpers/output.ts';
import { api, checkpointNow, fixture, savepoint, sleep, start, tempDir, waitRunning } from './helpers.ts';

const JOB = fixture('savepoint-then-failure.ts');
const N = 3000;
const tmp = tempDir('sp-intermediate');
afterAll(() => tmp.cleanup());

describe('an intermediate savepoint', () => {
  it('commits nothing: a failure after it restarts from the checkpoint before it, and the output is exact', async () => {
    const out = tmp.fresh('out');
    const trigger = join(tmp.dir, 'fail-now');
    // No periodic checkpoint (an hour apart): the test takes one by hand, then the savepoint.
    const h = await start(JOB, {
      workers: 1, parallelism: 1, args: [out, trigger, String(N), '1000'],
      checkpoint: { interval: 3_600_000, dir: tmp.fresh('chk') }, restartStrategy: { type: 'fixed-delay', attempts: 2, delay: 0 },
    });
    await waitRunning(h);
    await sleep(200);
    expect(await checkpointNow(h)).toBeGreaterThan(0);
    await sleep(100); // its commit follows the completion
    const atCheckpoint = committedLines(out).length;
    await sleep(300);
    await savepoint(h, tmp.fresh('sp'));
    await sleep(100);
    // The records between the checkpoint and the savepoint are not committed by the savepoint.
    expect(committedLines(out).length, 'committed after the savepoint').toBe(atCheckpoint);
    writeFileSync(trigger, '');
    const r = await h.result;
    expect(r.status, r.error?.message).toBe('FINISHED');
    expect(r.attempts, 'one restart, from the checkpoint').toBe(2);
    expect(atCheckpoint, 'the checkpoint committed the records before it').toBeGreaterThan(0);
    const ids = committedLines(out).map((l) => Number(JSON.parse(l)));
    expect(ids.sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
  });
});
