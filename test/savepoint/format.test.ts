/**
 * Savepoints of a running job (issue point 1): what a savepoint holds (job name, operator ids,
 * uids and names, parallelism, max parallelism, each state's serializer name and version,
 * values in their serializer's encoding, paths relative to the savepoint itself), that it is
 * self-contained and relocatable (moved elsewhere, a restore from the new place continues
 * every key's state), that taking one leaves the job running, that it never subsumes a
 * checkpoint, and that weir never deletes it (not when checkpoints are subsumed, not when
 * the job is cancelled or finishes).
 *
 * Fixture: test/fixtures/jobs/savepoint-app.ts (v1): per-key counts n = floor(i/4) + 1.
 */
import { existsSync, readdirSync, readFileSync, renameSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lookupValue, summarize } from '../../src/checkpoint/inspect.ts';
import { verifyCheckpoint } from '../../src/checkpoint/storage.ts';
import { runJob } from '../../src/index.ts';
import type { Out } from '../fixtures/jobs/savepoint-app.ts';
import { api, checkpointNow, decodeSnapshot, fingerprint, fixture, producedIn, savepoint, sleep, start, tempDir, waitRunning } from './helpers.ts';

const JOB = fixture('savepoint-app.ts');
const N = 2000;
const tmp = tempDir('sp-format');
afterAll(() => tmp.cleanup());

const expectedN = (i: number) => Math.floor(i / 4) + 1;


describe('a savepoint of a running job', () => {
  it('holds job name, operators and serializers, never subsumes a checkpoint, and is kept when checkpoints are subsumed and the job is cancelled', async () => {
    const chk = tmp.fresh('chk');
    const spDir = tmp.fresh('savepoints');
    // Checkpoints only on request (the interval is far away), one retained, kept on cancel.
    const h = await start(JOB, {
      workers: 1, parallelism: 2, args: ['v1', '1000000', '500'],
      checkpoint: { interval: '1 h', dir: chk, numRetained: 1, retention: 'retain-on-cancel' },
    });
    await waitRunning(h);
    await sleep(150);
    const c1 = await checkpointNow(h);
    expect(typeof c1).toBe('number');
    const chk1 = join(chk, h.jobId, `chk-${c1}`);
    expect((await verifyCheckpoint(chk1)).ok).toBe(true);

    const sp = await savepoint(h, spDir);
    expect(sp.startsWith(spDir + '/')).toBe(true);
    expect(basename(sp)).toMatch(new RegExp(`^savepoint-${h.jobId.slice(0, 6)}-[0-9a-f]+$`));
    expect(h.logs.some((l) => l.includes(`completed at ${sp}`))).toBe(true);
    // The savepoint did not subsume the checkpoint before it.
    expect((await verifyCheckpoint(chk1)).ok, 'the checkpoint before the savepoint is still there').toBe(true);
    const spPrint = fingerprint(sp);

    // The job keeps running after a savepoint.
    expect((await api(h.base)).body['state']).toBe('RUNNING');

    // A newer checkpoint subsumes the older checkpoint (num-retained 1), never the savepoint.
    const c2 = await checkpointNow(h);
    expect(c2).toBeGreaterThan(c1);
    for (let i = 0; i < 200 && existsSync(chk1); i++) await sleep(10);
    expect(existsSync(chk1), 'the older checkpoint is subsumed').toBe(false);
    expect(fingerprint(sp)).toEqual(spPrint);

    expect((await api(h.base, 'PATCH')).status).toBe(202);
    const result = await h.result;
    expect(result.status).toBe('CANCELED');
    expect(fingerprint(sp), 'weir never deletes or changes a savepoint').toEqual(spPrint);
    // The savepoint is no checkpoint of the job: the checkpoint storage has only chk-c2.
    expect(readdirSync(join(chk, h.jobId)).filter((d) => d.startsWith('chk-'))).toEqual([`chk-${c2}`]);

    // What it holds.
    const text = readFileSync(join(sp, '_metadata'), 'utf8');
    const snap = await decodeSnapshot(sp);
    const m = snap.metadata;
    expect(m.format).toBe('weir-checkpoint');
    expect(m.version).toBe(1);
    expect(m.type).toBe('savepoint');
    expect(m.jobId).toBe(h.jobId);
    expect(m.jobName).toBe('savepoint app v1');
    expect(m.checkpointId).toBeGreaterThan(c1);
    expect(m.checkpointId).toBeLessThan(c2);
    const byUid = (uid: string) => snap.operator(uid);
    expect([byUid('src'), byUid('audit'), byUid('counts')].map((o) => [o.name, o.parallelism, o.maxParallelism, o.keyed])).toEqual([
      ['generator', 2, 128, false], ['audit', 2, 128, false], ['counts', 2, 128, true],
    ]);
    for (const o of m.operators) expect(o.id).toMatch(/^[0-9a-f]{32}$/);
    // Self-contained: file paths are relative names inside the savepoint; no absolute path anywhere.
    const files = m.operators.flatMap((o) => o.subtasks.flatMap((s) => (s.file ? [s.file] : [])));
    expect(files.length).toBe(2); // one state file per keyed subtask
    for (const f of files) expect(f).not.toContain('/');
    expect(text).not.toContain(tmp.dir);
    expect(readdirSync(sp).sort()).toEqual(['_metadata', ...files].sort());

    const summary = await summarize(sp);
    const counts = summary.operators.find((o) => o.uid === 'counts')!;
    expect(counts.states.map((s) => [s.name, s.kind, s.serializer])).toEqual([['count', 'value', { name: 'app.count', version: 1 }]]);
    expect(counts.states[0]!.keys).toBe(4);
    const audit = summary.operators.find((o) => o.uid === 'audit')!;
    expect(audit.operatorState).toEqual([{ name: 'seen', distribution: 'split', items: 2, serializer: { name: 'weir.plain', version: 1 } }]);
    // Values are stored in their serializer's encoding ({n}), not the backend's in-memory form.
    const produced = await producedIn(sp);
    for (let k = 0; k < 4; k++) {
      const want = [...produced].filter((i) => i % 4 === k).length;
      const v = await lookupValue(sp, 'counts', 'count', `k${k}`);
      expect(v.found).toBe(want > 0);
      if (want > 0) expect(v.value).toEqual({ n: want });
    }
  });

  it('is relocatable: moved to another folder, a restore from there continues every key exactly (workers: 2)', async () => {
    const spDir = tmp.fresh('savepoints');
    const h = await start(JOB, { workers: 2, parallelism: 2, args: ['v1', String(N), '500'], checkpoint: { savepointDir: spDir } });
    await waitRunning(h);
    await sleep(200);
    const sp = await savepoint(h, undefined); // into the configured savepoint directory
    expect(sp.startsWith(spDir + '/')).toBe(true);
    expect((await api(h.base)).body['state']).toBe('RUNNING');
    expect((await api(h.base, 'PATCH')).status).toBe(202);
    expect((await h.result).status).toBe('CANCELED');
    const produced = await producedIn(sp, 'src', N);
    expect(produced.size).toBeGreaterThan(0);
    expect(produced.size).toBeLessThan(N);

    const elsewhere = join(tmp.fresh('moved'), 'deeper');
    mkdirSync(elsewhere, { recursive: true });
    const moved = join(elsewhere, 'my-savepoint');
    renameSync(sp, moved);
    expect(existsSync(sp)).toBe(false);
    const movedPrint = fingerprint(moved);

    const resumed = await runJob(JOB, { workers: 2, parallelism: 2, args: ['v1', String(N), '0'], from: moved, stdout: () => {}, log: () => {} });
    expect(resumed.status, resumed.error?.message).toBe('FINISHED');
    expect(resumed.checkpoints.lastRestore?.path).toBe(moved);
    const out = resumed.collected<Out>('out').sort((a, b) => a.i - b.i);
    const rest = [...Array(N).keys()].filter((i) => !produced.has(i));
    expect(out).toEqual(rest.map((i) => ({ i, key: `k${i % 4}`, n: expectedN(i), v: 'v1' })));
    expect(fingerprint(moved), 'restoring (no-claim) leaves the savepoint as it was').toEqual(movedPrint);
  });
});
