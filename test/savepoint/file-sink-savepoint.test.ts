/**
 * The exactly-once file sink (local directory) and an intermediate savepoint (the job goes on):
 * the savepoint commits nothing, so its pending files wait for the next checkpoint's commit or
 * for a job started from it. A restore from a checkpoint before the savepoint (the job's own
 * restart, `--from latest`, or `--from` that checkpoint) kept them, and a later restore from the
 * savepoint commits them: every record once.
 * Before: that restore deleted them as pending files of a checkpoint that never completed, and
 * the restore from the savepoint found them gone, took them as committed and said nothing: the
 * records between the checkpoint and the savepoint were missing (3,300 of 20,000 in the audit's
 * run).
 *
 * Fixture: test/fixtures/jobs/ids-to-files.ts (ids from a paced generator into the sink).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/index.ts';
import { committedLines } from '../helpers/output.ts';
import { api, checkpointNow, fixture, savepoint, sleep, start, tempDir, waitRunning, type Handle } from './helpers.ts';

const JOB = fixture('ids-to-files.ts');
const N = 20_000;
const tmp = tempDir('sp-file-sink');
afterAll(() => tmp.cleanup());

const cancel = async (h: Handle) => {
  await api(`${h.base}?mode=cancel`, 'PATCH');
  expect((await h.result).status).toBe('CANCELED');
};

describe('the local file sink after an intermediate savepoint', () => {
  it('a restore from a checkpoint before it keeps its pending files (with a log line), and a restore from it then commits them: every id once', async () => {
    const out = tmp.fresh('out');
    const chk = tmp.fresh('chk');
    const ids = () => committedLines(out).map((l) => (JSON.parse(l) as { id: number }).id).sort((a, b) => a - b);
    // Checkpoints by hand only (an hour apart otherwise).
    const manual = { interval: 3_600_000, dir: chk };
    const a = await start(JOB, { workers: 1, parallelism: 2, args: [out, String(N), '4000'], checkpoint: manual });
    await waitRunning(a);
    await sleep(800);
    const c1 = await checkpointNow(a);
    await sleep(800);
    const sp = await savepoint(a, tmp.fresh('sp'));
    await cancel(a);
    const committed = ids().length;
    expect(committed, 'the premise: the checkpoint committed some ids').toBeGreaterThan(0);
    expect(readdirSync(out).filter((n) => n.endsWith('.pending')).length, 'the premise: the savepoint left pending files').toBeGreaterThan(0);

    // Back to the checkpoint before the savepoint, then stopped before a checkpoint of its own.
    const b = await start(JOB, { workers: 1, parallelism: 2, args: [out, String(N), '4000'], from: join(chk, readdirSync(chk)[0]!, `chk-${c1}`), checkpoint: manual });
    await waitRunning(b);
    // Its recovery runs beside the running job: cancelled once both subtasks said what they kept
    // (a cancel at a fixed 300 ms could come first on a loaded machine, as in s3-file-sink-savepoint).
    const isKept = (l: string) => l.includes('kept') && l.includes(`pending file(s) of savepoints taken after checkpoint ${c1}`);
    for (let i = 0; i < 300 && b.logs.filter(isKept).length < 2; i++) await sleep(100);
    await cancel(b);
    expect(ids().length, 'nothing committed by the second run').toBe(committed);
    const keptLines = b.logs.filter(isKept).length;

    const logs: string[] = [];
    const r = await runJob(JOB, { workers: 1, parallelism: 3, args: [out, String(N), '0'], from: sp, checkpoint: { interval: 300, dir: chk }, stdout: () => {}, log: (l) => logs.push(l) });
    expect(r.status, r.error?.message).toBe('FINISHED');
    const got = ids();
    expect(got.length - new Set(got).size, 'ids twice').toBe(0);
    expect(N - new Set(got).size, 'ids missing').toBe(0);
    expect(got).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(keptLines, 'the second run said it kept the savepoint\'s pending files, one line per subtask').toBe(2);
    expect(readdirSync(out).filter((n) => n.startsWith('.part')), 'no pending file left').toEqual([]);
  }, 120_000);
});
