/**
 * Restore modes (issue point 3): with no-claim (the default) weir never deletes or changes the
 * snapshot it restored, and the first checkpoint after the restore stands alone (the snapshot
 * can be deleted and that checkpoint still restores every key exactly); with claim, weir owns
 * the snapshot and deletes it once the first checkpoint after the restore has completed.
 * Operators match by uid: state restores into the operator with the same uid, an operator
 * without state in the snapshot starts empty (upgrade.test.ts covers renamed, added and
 * removed operators).
 *
 * Fixture: test/fixtures/jobs/savepoint-app.ts (v1); per-key counts n = floor(i/4) + 1.
 */
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSnapshot } from '../../src/checkpoint/inspect.ts';
import { runJob } from '../../src/index.ts';
import type { Out } from '../fixtures/jobs/savepoint-app.ts';
import { api, checkpointNow, fingerprint, fixture, producedIn, sleep, start, stopWithSavepoint, tempDir, waitRunning } from './helpers.ts';

const JOB = fixture('savepoint-app.ts');
const N = 5000;
const tmp = tempDir('sp-restore');
afterAll(() => tmp.cleanup());

const n = (i: number) => Math.floor(i / 4) + 1;
const outs = (is: Iterable<number>): Out[] => [...is].sort((a, b) => a - b).map((i) => ({ i, key: `k${i % 4}`, n: n(i), v: 'v1' }));

/** A savepoint of v1 taken by a stop, and the records it covers. */
let base: { path: string; done: Set<number> };
beforeAll(async () => {
  const h = await start(JOB, { workers: 1, parallelism: 2, args: ['v1', String(N), '1000'] });
  await waitRunning(h);
  await sleep(150);
  const path = await stopWithSavepoint(h, tmp.fresh('sp'));
  expect((await h.result).status).toBe('FINISHED');
  base = { path, done: await producedIn(path) };
  expect(base.done.size).toBeGreaterThan(0);
});

/** Runs v1 from `from`, takes one checkpoint on request, and cancels (the checkpoint is kept). */
async function restoreAndCheckpoint(from: string, claimMode: 'claim' | 'no-claim' | undefined, chk: string, around: { before?(): void; after?(): Promise<void> } = {}) {
  const h = await start(JOB, {
    workers: 1, parallelism: 2, args: ['v1', String(N), '1000'], from, ...(claimMode ? { claimMode } : {}),
    checkpoint: { interval: '1 h', dir: chk, retention: 'retain-on-cancel' },
  });
  await waitRunning(h);
  await sleep(100);
  around.before?.();
  const id = await checkpointNow(h);
  expect(typeof id).toBe('number');
  await around.after?.();
  expect((await api(h.base, 'PATCH')).status).toBe(202);
  const result = await h.result;
  expect(result.status).toBe('CANCELED');
  return { result, checkpoint: join(chk, h.jobId, `chk-${id}`), id };
}

describe('restore modes', () => {
  it('no-claim (default): the savepoint is never touched, and the first checkpoint after it restores on its own once the savepoint is gone', async () => {
    const sp = tmp.fresh('copy');
    cpSync(base.path, sp, { recursive: true });
    const before = fingerprint(sp);
    const chk = tmp.fresh('chk');
    const r = await restoreAndCheckpoint(sp, undefined, chk);
    expect(r.result.checkpoints.lastRestore?.path).toBe(sp);
    expect(fingerprint(sp)).toEqual(before);
    // Checkpoint ids continue after the savepoint's.
    expect(r.id).toBeGreaterThan((await openSnapshot(sp)).checkpointId);
    // The checkpoint does not refer to the savepoint: delete it and restore from the checkpoint.
    expect(readFileSync(join(r.checkpoint, '_metadata'), 'utf8')).not.toContain(sp);
    rmSync(sp, { recursive: true });
    const done = await producedIn(r.checkpoint);
    for (const i of base.done) expect(done.has(i)).toBe(true);
    const resumed = await runJob(JOB, { workers: 1, parallelism: 2, args: ['v1', String(N), '0'], from: r.checkpoint, stdout: () => {}, log: () => {} });
    expect(resumed.status, resumed.error?.message).toBe('FINISHED');
    expect(resumed.collected<Out>('out').sort((a, b) => a.i - b.i)).toEqual(outs([...Array(N).keys()].filter((i) => !done.has(i))));
  });

  it('no-claim: a job that restores, takes checkpoints and finishes (its checkpoints deleted, retention none) leaves the savepoint as it was (workers: 2)', async () => {
    const before = fingerprint(base.path);
    const chk = tmp.fresh('chk');
    const r = await runJob(JOB, {
      workers: 2, parallelism: 2, args: ['v1', String(N), '0'], from: base.path, claimMode: 'no-claim',
      checkpoint: { interval: 10, dir: chk, numRetained: 1, retention: 'none' }, stdout: () => {}, log: () => {},
    });
    expect(r.status, r.error?.message).toBe('FINISHED');
    expect(r.checkpoints.counts.completed).toBeGreaterThan(0);
    expect(r.collected<Out>('out').sort((a, b) => a.i - b.i)).toEqual(outs([...Array(N).keys()].filter((i) => !base.done.has(i))));
    expect(fingerprint(base.path)).toEqual(before);
  });

  it('claim: weir owns the savepoint and deletes it once the first checkpoint after the restore completes', async () => {
    const sp = tmp.fresh('claimed');
    cpSync(base.path, sp, { recursive: true });
    const chk = tmp.fresh('chk');
    const before = fingerprint(sp);
    const r = await restoreAndCheckpoint(sp, 'claim', chk, {
      before: () => expect(fingerprint(sp), 'kept until a checkpoint completes').toEqual(before),
      after: async () => {
        for (let i = 0; i < 300 && existsSync(sp); i++) await sleep(10);
      },
    });
    expect(existsSync(sp), 'the claimed savepoint is deleted after the first checkpoint').toBe(false);
    // The checkpoint that replaced it restores exactly.
    const done = await producedIn(r.checkpoint);
    const resumed = await runJob(JOB, { workers: 1, parallelism: 2, args: ['v1', String(N), '0'], from: r.checkpoint, stdout: () => {}, log: () => {} });
    expect(resumed.status).toBe('FINISHED');
    expect(resumed.collected<Out>('out').sort((a, b) => a.i - b.i)).toEqual(outs([...Array(N).keys()].filter((i) => !done.has(i))));
  });

  it('claim: until a checkpoint completes the claimed savepoint stays (a job cancelled before its first checkpoint leaves it whole)', async () => {
    const sp = tmp.fresh('claimed');
    cpSync(base.path, sp, { recursive: true });
    const before = fingerprint(sp);
    const h = await start(JOB, {
      workers: 1, parallelism: 2, args: ['v1', String(N), '1000'], from: sp, claimMode: 'claim',
      checkpoint: { interval: '1 h', dir: tmp.fresh('chk'), retention: 'retain-on-cancel' },
    });
    await waitRunning(h);
    await sleep(100);
    expect(fingerprint(sp)).toEqual(before);
    expect((await api(h.base, 'PATCH')).status).toBe(202);
    expect((await h.result).status).toBe('CANCELED');
    expect(fingerprint(sp)).toEqual(before);
  });
});
