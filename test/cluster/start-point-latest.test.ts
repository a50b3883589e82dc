/**
 * `--from latest` in a checkpoint directory several jobs share (one job file run per tenant):
 * the job of this run's name is resumed, never another job's checkpoint (before: the newest of
 * any job was taken, restored under that job's id, and its next checkpoint replaced that job's).
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseLatest, resolveStartPoint } from '../../src/cluster/start-point.ts';
import { LocalCheckpointStorage } from '../../src/checkpoint/local/local-storage.ts';
import { METADATA_VERSION } from '../../src/checkpoint/metadata.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import { checkpoint, JOB, roots } from '../checkpoint/storage-contract.ts';
import type { CompletedCheckpointRef } from '../../src/checkpoint/storage.ts';

function ref(jobId: string, jobName: string, completedAt: number): CompletedCheckpointRef {
  return { path: `/chk/${jobId}/chk-1`, metadata: { jobId, jobName, completedAt, checkpointId: 1 } } as unknown as CompletedCheckpointRef;
}

describe('--from latest chooses the job of this name', () => {
  const a = ref('aaa', 'tenant-A', 100);
  const b = ref('bbb', 'tenant-B', 200);

  it('the job of the same name, even when another job checkpointed later', () => {
    expect(chooseLatest([a, b], 'tenant-A', '/chk')).toEqual({ pick: a });
    expect(chooseLatest([a, b], 'tenant-B', '/chk')).toEqual({ pick: b });
  });

  it('no job of that name among several: none picked, the others named (latest refuses, latest-or-empty starts fresh); several of it: refused, naming them', () => {
    expect(chooseLatest([a, b], 'tenant-C', '/chk')).toEqual({ pick: undefined, others: '"tenant-A" (job aaa), "tenant-B" (job bbb)' });
    const a2 = ref('ccc', 'tenant-A', 300);
    expect(chooseLatest([a, b, a2], 'tenant-A', '/chk')).toEqual({
      error: '--from latest: 2 jobs named "tenant-A" have checkpoints in /chk: "tenant-A" (job aaa), "tenant-A" (job ccc); name one with --from <its checkpoint directory>',
    });
  });

  it('a directory of only another job is not resumed (before: taken as this job renamed; a new tenant took over the one there, its checkpoints replaced); none is nothing', () => {
    expect(chooseLatest([a], 'tenant-B', '/chk')).toEqual({ pick: undefined, others: '"tenant-A" (job aaa)' });
    expect(chooseLatest([a], 'tenant-A', '/chk')).toEqual({ pick: a });
    expect(chooseLatest([], 'tenant-A', '/chk')).toEqual({ pick: undefined });
  });
});

describe('--from latest and a checkpoint a newer weir wrote', () => {
  it('is refused naming it, not skipped for an older one (before: the older restored, or the job started fresh, with a log line only)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-newer-'));
    roots.push(root);
    const storage = new LocalCheckpointStorage(root);
    await checkpoint(storage, 8);
    const newest = await checkpoint(storage, 9);
    rewriteMetadata(newest, (b) => {
      b.version = METADATA_VERSION + 1;
    });
    const logs: string[] = [];
    for (const from of ['latest', 'latest-or-empty'] as const) {
      const e = await resolveStartPoint({ from, claimMode: undefined, jobName: 'memory test' }, storage, storageResolver(storage), (l) => logs.push(l)).then(() => undefined, (x: Error) => x);
      expect(e?.message).toMatch(new RegExp(`^--from ${from}: .*chk-9.*written by a newer weir .*; run a weir that reads it, or name an older checkpoint with --from`));
    }
    // Named explicitly, the older one restores.
    const older = await resolveStartPoint({ from: join(root, JOB, 'chk-8'), claimMode: undefined }, storage, storageResolver(storage), () => {});
    expect(older.snapshot?.metadata.checkpointId).toBe(8);
  });
});

/** A fresh checkpoint root (removed at the end) and its storage. */
function sharedRoot(prefix: string): { root: string; storage: LocalCheckpointStorage } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  roots.push(root);
  return { root, storage: new LocalCheckpointStorage(root) };
}

/** Copies job JOB's directory as job `id`, named "tenant B", its chk-`checkpointId` rewritten so (and by `change`). */
function copyAsOtherJob(root: string, id: string, checkpointId: number, change: (body: Record<string, unknown>) => void = () => {}): void {
  cpSync(join(root, JOB), join(root, id), { recursive: true });
  rewriteMetadata(join(root, id, `chk-${checkpointId}`), (b) => {
    b.jobId = id;
    b.jobName = 'tenant B';
    change(b);
  });
}

/** Rewrites a checkpoint's _metadata body (and its checksum). */
function rewriteMetadata(dir: string, change: (body: Record<string, unknown>) => void): void {
  const file = join(dir, '_metadata');
  const o = JSON.parse(readFileSync(file, 'utf8')) as { sha256: string; body: Record<string, unknown> };
  change(o.body);
  o.sha256 = createHash('sha256').update(JSON.stringify(o.body)).digest('hex');
  writeFileSync(file, JSON.stringify(o));
}

describe('--from latest and checkpoints that fail their check', () => {
  it('a job whose every checkpoint fails its check is refused by latest and latest-or-empty alike (before: taken for a job with none; latest-or-empty started it fresh, its input read and output written again)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-only-bad-'));
    roots.push(root);
    const storage = new LocalCheckpointStorage(root);
    const only = await checkpoint(storage, 4);
    const state = readdirSync(only).find((f) => f.endsWith('.state'))!;
    truncateSync(join(only, state), statSync(join(only, state)).size - 3);
    for (const from of ['latest', 'latest-or-empty'] as const) {
      const logs: string[] = [];
      const e = await resolveStartPoint({ from, claimMode: undefined, jobName: 'memory test' }, storage, storageResolver(storage), (l) => logs.push(l)).then(() => undefined, (x: Error) => x);
      expect(e?.message).toBe(`--from ${from}: job ${JOB} in ${root} has checkpoints, none of which can be restored (see the lines above), and it may be this job; restore one by hand once repaired (--from <its directory>), or remove that job's directory to start fresh`);
      expect(logs.some((l) => l.startsWith(`weir: skipping checkpoint ${only}`))).toBe(true);
    }
  });

  it('another job\'s checkpoint a newer weir wrote, in a shared directory, does not stop this job resuming (before: every job of the directory was refused, naming the other\'s)', async () => {
    const { root, storage } = sharedRoot('weir-newer-other-');
    await checkpoint(storage, 5);
    copyAsOtherJob(root, 'ffffffffffffffffffffffffffffffff', 5, (b) => {
      b.version = METADATA_VERSION + 1;
    });
    const p = await resolveStartPoint({ from: 'latest', claimMode: undefined, jobName: 'memory test' }, storage, storageResolver(storage), () => {});
    expect(p.snapshot?.metadata.jobId).toBe(JOB);
    // The other tenant itself is still refused.
    const e = await resolveStartPoint({ from: 'latest', claimMode: undefined, jobName: 'tenant B' }, storage, storageResolver(storage), () => {}).then(() => undefined, (x: Error) => x);
    expect(e?.message).toMatch(/written by a newer weir/);
  });
});

describe('--from latest reads the newest checkpoint first', () => {
  it('the newest that verifies is taken without checking the older ones; a broken newest falls back to the one before it, logged', async () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-newest-first-'));
    roots.push(root);
    const storage = new LocalCheckpointStorage(root);
    const older = await checkpoint(storage, 6);
    const newest = await checkpoint(storage, 7);
    // The older one is broken: it is not looked at, so nothing is logged about it.
    const olderState = readdirSync(older).find((f) => f.endsWith('.state'))!;
    truncateSync(join(older, olderState), 1);
    const logs: string[] = [];
    const p = await resolveStartPoint({ from: 'latest', claimMode: undefined, jobName: 'memory test' }, storage, storageResolver(storage), (l) => logs.push(l));
    expect(p.snapshot?.path).toBe(newest);
    expect(logs.filter((l) => l.includes('skipping checkpoint'))).toEqual([]);
    // The newest broken too: neither restores.
    const newestState = readdirSync(newest).find((f) => f.endsWith('.state'))!;
    truncateSync(join(newest, newestState), 1);
    await expect(resolveStartPoint({ from: 'latest', claimMode: undefined, jobName: 'memory test' }, storage, storageResolver(storage), () => {})).rejects.toThrow(/none of which can be restored/);
  });
});

describe('--from latest reads another job\'s newest checkpoint only as far as its name', () => {
  it('another tenant\'s broken checkpoint is neither verified nor logged, nor refuses a new tenant (before: every job\'s newest was verified whole, a request per state file, and a broken one of another name refused latest-or-empty as "may be this job")', async () => {
    const { root, storage } = sharedRoot('weir-other-unchecked-');
    await checkpoint(storage, 5);
    const other = 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee';
    copyAsOtherJob(root, other, 5);
    const otherState = readdirSync(join(root, other, 'chk-5')).find((f) => f.endsWith('.state'))!;
    truncateSync(join(root, other, 'chk-5', otherState), 1);
    const logs: string[] = [];
    const p = await resolveStartPoint({ from: 'latest', claimMode: undefined, jobName: 'memory test' }, storage, storageResolver(storage), (l) => logs.push(l));
    expect(p.snapshot?.metadata.jobId).toBe(JOB);
    expect(logs.filter((l) => l.includes('skipping checkpoint'))).toEqual([]);
    // A new tenant with no checkpoint of its own starts fresh; the broken one is not its.
    const fresh = await resolveStartPoint({ from: 'latest-or-empty', claimMode: undefined, jobName: 'tenant C' }, storage, storageResolver(storage), (l) => logs.push(l));
    expect(fresh.snapshot).toBeUndefined();
    expect(logs.filter((l) => l.includes('skipping checkpoint'))).toEqual([]);
    // The tenant itself still has its checkpoint verified, and refused.
    await expect(resolveStartPoint({ from: 'latest', claimMode: undefined, jobName: 'tenant B' }, storage, storageResolver(storage), () => {})).rejects.toThrow(/none of which can be restored/);
    // Without a name (every job is a candidate) each newest is verified: the broken one is logged.
    const unnamed: string[] = [];
    const any = await resolveStartPoint({ from: 'latest', claimMode: undefined }, storage, storageResolver(storage), (l) => unnamed.push(l));
    expect(any.snapshot?.metadata.jobId).toBe(JOB);
    expect(unnamed.some((l) => l.startsWith(`weir: skipping checkpoint ${join(root, other, 'chk-5')}`))).toBe(true);
  });
});
