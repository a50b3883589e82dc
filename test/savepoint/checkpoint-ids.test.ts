/**
 * Checkpoint ids of a run that restores another run's checkpoint (`--from` a path, no-claim: the
 * run has a job id of its own) continue after every id that run triggered in the same
 * checkpoint storage, savepoints included. Those savepoints commit nothing, so a sink's progress
 * past the restored checkpoint can only be this run's: with ids reused, the new run's commit of
 * the savepoint's id looked like the savepoint's own, and a later restore from the savepoint
 * passed the committed-output check and skipped the savepoint's output as committed (Redis
 * Streams, real server: 1,498 of 20,000 records missing, no log line). Now the restore is
 * refused, naming both ids, as for any output committed past a restored snapshot.
 *
 * Fixture: test/fixtures/jobs/ids-to-redis.ts.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/index.ts';
import { decodeSnapshot, api, checkpointNow, fixture, savepoint, sleep, start, tempDir, waitRunning, type Handle } from './helpers.ts';

const JOB = fixture('ids-to-redis.ts');
const N = 20_000;
const tmp = tempDir('sp-ids');
const suffix = `${process.pid}_${Math.floor(Math.random() * 1e9)}`;
const stream = `weir:test:sp-ids:${suffix}`;
afterAll(async () => {
  const r = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  await r.connect();
  await r.del(stream);
  r.disconnect();
  tmp.cleanup();
});

const cancel = async (h: Handle) => {
  await api(`${h.base}?mode=cancel`, 'PATCH');
  expect((await h.result).status).toBe('CANCELED');
};

describe('checkpoint ids after a restore of another run\'s checkpoint', () => {
  it('go past the savepoints that run took, so a restore from such a savepoint after output was committed is refused, not silently partial', async () => {
    const chk = tmp.fresh('chk');
    const jobId = `ids-${suffix}`;
    // Checkpoints by hand only (an hour apart otherwise).
    const manual = { interval: 3_600_000, dir: chk };
    const a = await start(JOB, { workers: 1, parallelism: 2, args: [stream, jobId, String(N), '4000'], checkpoint: manual });
    await waitRunning(a);
    await sleep(500);
    const c1 = await checkpointNow(a);
    await sleep(500);
    const sp = await savepoint(a, tmp.fresh('sp'));
    await cancel(a);
    const spId = (await decodeSnapshot(sp)).metadata.checkpointId;
    expect(spId).toBeGreaterThan(c1);

    // Another run from the checkpoint (same checkpoint directory, a job id of its own) commits a checkpoint.
    const b = await start(JOB, { workers: 1, parallelism: 2, args: [stream, jobId, String(N), '4000'], from: join(chk, readdirSync(chk)[0]!, `chk-${c1}`), checkpoint: manual });
    await waitRunning(b);
    await sleep(300);
    const own = await checkpointNow(b);
    await sleep(300);
    await cancel(b);
    // Before: the savepoint's id again.
    expect(own, 'the second run\'s checkpoint id').toBeGreaterThan(spId);

    const r = await runJob(JOB, { workers: 1, parallelism: 2, args: [stream, jobId, String(N), '0'], from: sp, checkpoint: { interval: 300, dir: chk }, stdout: () => {}, log: () => {} }).then(
      (x) => x.error?.message ?? `ran: ${x.status}`,
      (e: Error) => e.message,
    );
    expect(r).toMatch(new RegExp(`already committed the output of checkpoint ${own}, but the job restores checkpoint ${spId}`));
  }, 120_000);
});
