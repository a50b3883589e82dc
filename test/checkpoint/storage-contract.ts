/**
 * The checkpoint storage contract, one set of tests run over every implementation: the local
 * directory and in-memory storage (memory-storage.test.ts) and S3 on s3rver (s3-storage.test.ts).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childReference, schemeOf } from '../../src/checkpoint/names.ts';
import { METADATA_VERSION, type CheckpointMetadata } from '../../src/checkpoint/metadata.ts';
import type { CheckpointStorage } from '../../src/checkpoint/storage.ts';

export const JOB = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
/** Local directories made by the tests, removed at the end. */
export const roots: string[] = [];
afterAll(() => { for (const r of roots) rmSync(r, { recursive: true, force: true }); });

export function metadata(id: number, files: { file: string; fileSize: number }[], type: 'checkpoint' | 'savepoint' = 'checkpoint'): CheckpointMetadata {
  return {
    format: 'weir-checkpoint', version: METADATA_VERSION, jobId: JOB, jobName: 'memory test', checkpointId: id, type,
    timestamp: 1000 * id, completedAt: 1000 * id + 500,
    operators: [{
      id: 'op-keyed', name: 'Sums', uid: 'sums', parallelism: Math.max(1, files.length), maxParallelism: 128, keyed: true,
      subtasks: files.map((f, i) => ({ subtask: i, file: f.file, fileSize: f.fileSize, keyGroupRange: { start: i, end: i }, stateSize: f.fileSize })),
    }],
    enumerators: {}, stats: { stateSize: 0, subtasks: {} },
  };
}

/** Writes `numFiles` state files through the task side, then finalizes; returns the reference. */
export async function checkpoint(s: CheckpointStorage, id: number, numFiles = 2, chunks = 3): Promise<string> {
  const loc = await s.initCheckpoint(JOB, id);
  const files: { file: string; fileSize: number }[] = [];
  const streams = s.workerView.resolveLocation(loc.reference);
  for (let i = 0; i < numFiles; i++) {
    const file = `op-keyed-${i}.state`;
    const out = await streams.createStateStream(file);
    for (let c = 0; c < chunks; c++) await out.write([new Uint8Array([id, i, c]), new Uint8Array(5).fill(c)]);
    files.push({ file, fileSize: await out.close() });
  }
  await loc.finalize(metadata(id, files));
  return loc.reference;
}

export function storageContract(implementations: readonly [string, () => CheckpointStorage][]): void {
describe.each(implementations)('the storage contract: %s', (_name, make) => {
  it('lays out a job, writes state through streams, publishes metadata last and lists what verifies', async () => {
    const s = make();
    await s.initJob(JOB);
    expect(await s.jobs()).toEqual([JOB]);
    const ref = await checkpoint(s, 3);
    expect(ref).toBe(s.checkpointDir(JOB, 3));
    expect(s.checkpointOf(ref)).toEqual({ jobId: JOB, checkpointId: 3 });
    const v = await s.verify(ref);
    expect(v.ok && v.metadata.operators[0]!.subtasks.map((x) => x.fileSize)).toEqual([24, 24]);
    expect((await s.completed(JOB)).map((c) => c.path)).toEqual([ref]);
    expect((await s.latest())?.metadata.checkpointId).toBe(3);
  });

  it('reads state back by range through the task side', async () => {
    const s = make();
    const ref = await checkpoint(s, 1, 1);
    const h = await s.workerView.openState(childReference(ref, 'op-keyed-0.state'));
    try {
      expect(h.size).toBe(24);
      expect([...(await h.read(8, 3))]).toEqual([1, 0, 1]);
      await expect(h.read(20, 8)).rejects.toThrow(/cannot read 8 bytes at 20/);
    } finally {
      await h.close();
    }
  });

  it('ids: the highest triggered is recorded, never lowered, and seen without any checkpoint', async () => {
    const s = make();
    await s.initJob(JOB);
    await Promise.all([s.recordTriggered(JOB, 14), s.recordTriggered(JOB, 15), s.recordTriggered(JOB, 13)]);
    expect(await s.highestId(JOB)).toBe(15);
    await s.initCheckpoint(JOB, 20);
    expect(await s.highestId(JOB)).toBe(20);
  });

  it('discards metadata first, collects checkpoint directories without metadata, keeps the rest', async () => {
    const s = make();
    const a = await checkpoint(s, 1);
    await s.initCheckpoint(JOB, 2);
    await s.initCheckpoint(JOB, 3);
    const c = await checkpoint(s, 4);
    expect(await s.collectGarbage(JOB, new Set([3]))).toBe(1);
    expect((await s.completed(JOB)).map((x) => x.metadata.checkpointId)).toEqual([1, 4]);
    await s.discard(a);
    expect((await s.verify(a)).ok).toBe(false);
    expect((await s.completed(JOB)).map((x) => x.path)).toEqual([c]);
  });

  it('history: one JSON line per entry, torn lines reported by number', async () => {
    const s = make();
    await s.initJob(JOB);
    await s.appendHistory(JOB, { id: 1 });
    await s.appendHistory(JOB, { id: 2 });
    const h = await s.readHistory(JOB);
    expect(h.entries).toEqual([{ id: 1 }, { id: 2 }]);
    expect(h.unreadable).toEqual([]);
    expect(h.reference).toBe(childReference(s.jobDir(JOB), 'checkpoint-history.jsonl'));
  });

  it('savepoints: a fresh savepoint-<job6>-<hex> directory below the target, outside the checkpoints', async () => {
    const s = make();
    const target = schemeOf(s.root) !== undefined ? `${s.root}/savepoints` : join(s.root, '..', `${JOB}-sp`);
    if (schemeOf(s.root) === undefined) roots.push(target);
    const loc = await s.initSavepoint(target, JOB, 9);
    expect(loc.reference.startsWith(s.normalize(target) + '/savepoint-a1b2c3-')).toBe(true);
    const out = await s.workerView.resolveLocation(loc.reference).createStateStream('x-0.state');
    await out.write([new Uint8Array([1, 2, 3])]);
    const completed = await loc.finalize(metadata(9, [{ file: 'x-0.state', fileSize: await out.close() }], 'savepoint'));
    expect(completed.metadata.type).toBe('savepoint');
    expect((await s.verify(loc.reference)).ok).toBe(true);
    expect(await s.completed(JOB)).toEqual([]);
  });

  it('a stream takes plain names only, one write at a time, and abort removes what it wrote', async () => {
    const s = make();
    const loc = await s.initCheckpoint(JOB, 1);
    const streams = s.workerView.resolveLocation(loc.reference);
    await expect(streams.createStateStream('../escape')).rejects.toThrow(RangeError);
    const out = await streams.createStateStream('a.state');
    const first = out.write([new Uint8Array(10)]);
    await expect(out.write([new Uint8Array(1)])).rejects.toThrow(/one at a time/);
    await first;
    await out.abort();
    await expect(s.workerView.openState(childReference(loc.reference, 'a.state'))).rejects.toThrow();
    await expect(streams.createStateStream('a.state').then((o) => o.abort())).resolves.toBeUndefined();
  });
});
}
