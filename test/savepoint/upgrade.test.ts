/**
 * Upgrading a job through a savepoint (issue point 6, with the restore rules of point 3): v1
 * of the application is stopped with a savepoint; v2 removes an operator that has state
 * ("audit"), renames another and changes its function ("counts" -> "counter", same uid,
 * declared at another position in the job), and adds a stateful operator ("since"). Restoring
 * v2 fails with a message listing the removed operator until --allow-non-restored-state; then
 * the counts continue exactly where v1 left them, the new operator starts empty, and every
 * record is processed once across the two versions.
 *
 * Fixture: test/fixtures/jobs/savepoint-app.ts; per-key counts n = floor(i/4) + 1.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/index.ts';
import type { Out, Since } from '../fixtures/jobs/savepoint-app.ts';
import { fingerprint, fixture, producedIn, sleep, start, stopWithSavepoint, tempDir, waitRunning } from './helpers.ts';

const JOB = fixture('savepoint-app.ts');
const N = 5000;
const tmp = tempDir('sp-upgrade');
afterAll(() => tmp.cleanup());

const n = (i: number) => Math.floor(i / 4) + 1;

describe('upgrade: v1 -> savepoint -> v2', () => {
  it('drops the removed operator\'s state only when allowed, continues renamed operators by uid, starts new ones empty (workers: 2)', async () => {
    const h = await start(JOB, { workers: 2, parallelism: 2, args: ['v1', String(N), '1000'] });
    await waitRunning(h);
    await sleep(250);
    const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
    const v1 = await h.result;
    expect(v1.status).toBe('FINISHED');
    const done = await producedIn(sp, 'src', N);
    expect(done.size).toBeGreaterThan(0);
    expect(done.size).toBeLessThan(N);
    const v1Out = v1.collected<Out>('out').sort((a, b) => a.i - b.i);
    expect(v1Out).toEqual([...done].sort((a, b) => a - b).map((i) => ({ i, key: `k${i % 4}`, n: n(i), v: 'v1' })));

    // v2 without --allow-non-restored-state: refused, naming the operator whose state would be lost.
    const before = fingerprint(sp);
    await expect(
      runJob(JOB, { workers: 2, parallelism: 2, args: ['v2', String(N), '0'], from: sp, stdout: () => {}, log: () => {} }),
    ).rejects.toThrow(
      'the snapshot has state for operators this job does not have: "audit" (uid audit); give operators stable uid()s, or pass --allow-non-restored-state to drop that state',
    );
    expect(fingerprint(sp)).toEqual(before);

    // With it, at another parallelism: v2 continues.
    const v2 = await runJob(JOB, { workers: 2, parallelism: 3, args: ['v2', String(N), '0'], from: sp, allowNonRestoredState: true, stdout: () => {}, log: () => {} });
    expect(v2.status, v2.error?.message).toBe('FINISHED');
    const rest = [...Array(N).keys()].filter((i) => !done.has(i));
    // The changed function, on the restored counts: n continues (no key restarts at 1).
    expect(v2.collected<Out>('out').sort((a, b) => a.i - b.i)).toEqual(rest.map((i) => ({ i, key: `k${i % 4}`, n: n(i), v: 'v2', tenfold: n(i) * 10 })));
    // The new operator started empty: per key 1, 2, 3, ... over the records after the upgrade.
    const since = v2.collected<Since>('since');
    for (let k = 0; k < 4; k++) {
      const mine = since.filter((s) => s.key === `k${k}`).sort((a, b) => a.i - b.i);
      expect(mine.map((s) => s.i)).toEqual(rest.filter((i) => i % 4 === k));
      expect(mine.map((s) => s.since)).toEqual(mine.map((_, j) => j + 1));
    }
    // Every record once across both versions.
    expect([...v1Out.map((o) => o.i), ...v2.collected<Out>('out').map((o) => o.i)].sort((a, b) => a - b)).toEqual([...Array(N).keys()]);
    expect(fingerprint(sp), 'the savepoint is left as it was').toEqual(before);
  });
});
