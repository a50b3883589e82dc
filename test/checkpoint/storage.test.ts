/**
 * Local checkpoint storage: the directory layout, the atomic metadata write, what makes a
 * checkpoint verify (and every way it can fail to), how completed()/latest() skip broken
 * checkpoints in favour of the previous good one, and garbage collection of attempts that
 * never wrote their metadata.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { METADATA_FILE, METADATA_VERSION, parseMetadata, serializeMetadata, type CheckpointMetadata } from '../../src/checkpoint/metadata.ts';
import { StateFileWriter } from '../../src/checkpoint/state-file.ts';
import { LocalCheckpointStorage, verifyCheckpoint } from '../../src/checkpoint/storage.ts';

let root: string;
let storage: LocalCheckpointStorage;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'weir-storage-'));
  storage = new LocalCheckpointStorage(root);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const JOB = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

function metadata(id: number, files: { file: string; fileSize: number }[] = [], over: Partial<CheckpointMetadata> = {}): CheckpointMetadata {
  return {
    format: 'weir-checkpoint',
    version: METADATA_VERSION,
    jobId: JOB,
    jobName: 'storage test',
    checkpointId: id,
    type: 'checkpoint',
    timestamp: 1000 * id,
    completedAt: 1000 * id + 500,
    operators: [
      {
        id: 'op-keyed', name: 'Sums', uid: 'sums', parallelism: Math.max(1, files.length), maxParallelism: 128, keyed: true,
        subtasks: files.map((f, i) => ({ subtask: i, file: f.file, fileSize: f.fileSize, keyGroupRange: { start: i, end: i }, stateSize: f.fileSize })),
      },
      { id: 'op-src', name: 'Source', uid: undefined, parallelism: 1, maxParallelism: 128, keyed: false, subtasks: [{ subtask: 0, inline: 'AAEC', stateSize: 3 }] },
    ],
    enumerators: { 'op-src': [] },
    stats: { stateSize: 3, subtasks: {} },
    ...over,
  };
}

/** A complete checkpoint: state files (real ones) first, then the metadata through finalize(). */
/** Rewrites a checkpoint's metadata body through `change`, checksum included (as a hand edit would). */
function rewrite(dir: string, change: (body: any) => void): void {
  const outer = JSON.parse(readFileSync(join(dir, METADATA_FILE), 'utf8'));
  change(outer.body);
  writeFileSync(join(dir, METADATA_FILE), serializeMetadata(outer.body));
}

async function complete(id: number, numFiles = 2, jobId = JOB, over: Partial<CheckpointMetadata> = {}): Promise<string> {
  const location = await storage.initCheckpoint(jobId, id);
  const dir = location.reference;
  const files: { file: string; fileSize: number }[] = [];
  for (let i = 0; i < numFiles; i++) {
    const file = `op-keyed-${i}.state`;
    const w = await StateFileWriter.create(await storage.workerView.resolveLocation(dir).createStateStream(file));
    w.addBlock(`k/sum/${i}`, new Uint8Array([id, i, 1, 2, 3]));
    files.push({ file, fileSize: await w.close({ id }) });
  }
  await location.finalize(metadata(id, files, { jobId, ...over }));
  return dir;
}

describe('layout', () => {
  it('<dir>/<job-id>/chk-<n>/_metadata, with shared/ and taskowned/ next to the checkpoints', async () => {
    await storage.initJob(JOB);
    expect(statSync(join(root, JOB, 'shared')).isDirectory()).toBe(true);
    expect(statSync(join(root, JOB, 'taskowned')).isDirectory()).toBe(true);
    const dir = await complete(3);
    expect(dir).toBe(join(root, JOB, 'chk-3'));
    expect(storage.checkpointDir(JOB, 3)).toBe(dir);
    expect(storage.jobDir(JOB)).toBe(join(root, JOB));
    expect(readdirSync(dir).sort()).toEqual(['_metadata', 'op-keyed-0.state', 'op-keyed-1.state']);
    expect(await storage.jobs()).toEqual([JOB]);
  });

  it('the root is resolved: a relative directory gives absolute paths', () => {
    const s = new LocalCheckpointStorage('some/relative/dir');
    expect(s.root.startsWith('/')).toBe(true);
    expect(s.checkpointDir('j', 1)).toBe(join(s.root, 'j', 'chk-1'));
  });

  it('initJob fails clearly when the directory cannot be used', async () => {
    const file = join(root, 'a-file');
    writeFileSync(file, 'not a directory');
    const s = new LocalCheckpointStorage(file);
    await expect(s.initJob(JOB)).rejects.toThrow(new RegExp(`checkpoint directory ${file} is not usable`));
  });

  it('appendHistory appends one JSON line per entry', async () => {
    await storage.initJob(JOB);
    await storage.appendHistory(JOB, { id: 1, status: 'COMPLETED' });
    await storage.appendHistory(JOB, { id: 2, status: 'FAILED' });
    const lines = readFileSync(join(root, JOB, 'checkpoint-history.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toEqual([{ id: 1, status: 'COMPLETED' }, { id: 2, status: 'FAILED' }]);
  });
});

describe('finalize', () => {
  it('writes the metadata atomically: no temp file is left and the result verifies', async () => {
    const dir = await complete(1);
    expect(existsSync(join(dir, `${METADATA_FILE}.tmp`))).toBe(false);
    const v = await verifyCheckpoint(dir);
    expect(v.ok).toBe(true);
    if (v.ok) {
      expect(v.metadata.checkpointId).toBe(1);
      expect(v.metadata.jobId).toBe(JOB);
      expect(v.metadata.operators[0]!.subtasks.map((s) => s.file)).toEqual(['op-keyed-0.state', 'op-keyed-1.state']);
    }
    // The metadata file on its own parses back to exactly what was written.
    const files = ['op-keyed-0.state', 'op-keyed-1.state'].map((file) => ({ file, fileSize: statSync(join(dir, file)).size }));
    expect(parseMetadata(readFileSync(join(dir, METADATA_FILE), 'utf8'), 'x')).toEqual(metadata(1, files));
  });

  it('finalize over a leftover temp file from a crashed attempt still produces verified metadata', async () => {
    const location = await storage.initCheckpoint(JOB, 4);
    const dir = location.reference;
    writeFileSync(join(dir, `${METADATA_FILE}.tmp`), '{"sha256": "torn');
    await location.finalize(metadata(4));
    expect(existsSync(join(dir, `${METADATA_FILE}.tmp`))).toBe(false);
    expect((await verifyCheckpoint(dir)).ok).toBe(true);
  });
});

describe('verifyCheckpoint rejects', () => {
  async function reason(dir: string): Promise<string> {
    const v = await verifyCheckpoint(dir);
    expect(v.ok).toBe(false);
    return (v as { reason: string }).reason;
  }

  it('a directory without metadata (only a temp file)', async () => {
    const dir = (await storage.initCheckpoint(JOB, 1)).reference;
    writeFileSync(join(dir, `${METADATA_FILE}.tmp`), serializeMetadata(metadata(1)));
    expect(await reason(dir)).toBe('no metadata');
  });

  it('torn JSON', async () => {
    const dir = await complete(1);
    const text = readFileSync(join(dir, METADATA_FILE), 'utf8');
    writeFileSync(join(dir, METADATA_FILE), text.slice(0, Math.floor(text.length / 2)));
    const r = await reason(dir);
    expect(r).toContain(join(dir, METADATA_FILE));
    expect(r).toMatch(/not valid JSON/);
  });

  it('an empty metadata file', async () => {
    const dir = await complete(1);
    writeFileSync(join(dir, METADATA_FILE), '');
    expect(await reason(dir)).toMatch(/not valid JSON/);
  });

  it('a checksum mismatch (the body was changed after the digest)', async () => {
    const dir = await complete(1);
    const outer = JSON.parse(readFileSync(join(dir, METADATA_FILE), 'utf8'));
    outer.body.checkpointId = 2;
    writeFileSync(join(dir, METADATA_FILE), JSON.stringify(outer));
    expect(await reason(dir)).toMatch(/checksum mismatch/);
  });

  it('a newer metadata version, with a message saying so', async () => {
    const dir = (await storage.initCheckpoint(JOB, 1)).reference;
    writeFileSync(join(dir, METADATA_FILE), serializeMetadata({ ...metadata(1), version: METADATA_VERSION + 1 }));
    const r = await reason(dir);
    expect(r).toContain(`written by a newer weir (metadata version ${METADATA_VERSION + 1}, this weir reads up to ${METADATA_VERSION})`);
  });

  it('JSON that is not weir metadata', async () => {
    const dir = (await storage.initCheckpoint(JOB, 1)).reference;
    writeFileSync(join(dir, METADATA_FILE), JSON.stringify({ hello: 'world' }));
    expect(await reason(dir)).toMatch(/not a weir checkpoint/);
    writeFileSync(join(dir, METADATA_FILE), serializeMetadata({ ...metadata(1), format: 'flink' as 'weir-checkpoint' }));
    expect(await reason(dir)).toMatch(/unknown format "flink"/);
  });

  it('a missing state file, naming the file and the operator', async () => {
    const dir = await complete(1);
    rmSync(join(dir, 'op-keyed-1.state'));
    expect(await reason(dir)).toBe('state file op-keyed-1.state of operator "Sums" is missing');
  });

  it('a truncated state file, with both sizes', async () => {
    const dir = await complete(1);
    const size = statSync(join(dir, 'op-keyed-0.state')).size;
    truncateSync(join(dir, 'op-keyed-0.state'), size - 5);
    expect(await reason(dir)).toBe(`state file op-keyed-0.state of operator "Sums" has ${size - 5} bytes, expected ${size} (truncated)`);
  });
});

describe('completed() and latest()', () => {
  it('list verifying checkpoints oldest first (by id, not by name order)', async () => {
    for (const id of [10, 2, 9]) await complete(id);
    const all = await storage.completed(JOB);
    expect(all.map((c) => c.metadata.checkpointId)).toEqual([2, 9, 10]);
    expect(all.map((c) => c.path)).toEqual([2, 9, 10].map((id) => join(root, JOB, `chk-${id}`)));
    expect((await storage.latest())?.metadata.checkpointId).toBe(10);
  });

  it('skip a bad newest checkpoint with a log line naming its path and reason, and pick the previous good one', async () => {
    await complete(1);
    await complete(2);
    const bad = await complete(3);
    truncateSync(join(bad, 'op-keyed-1.state'), 10);
    const logs: string[] = [];
    const all = await storage.completed(JOB, (l) => logs.push(l));
    expect(all.map((c) => c.metadata.checkpointId)).toEqual([1, 2]);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toContain(bad);
    expect(logs[0]).toMatch(/op-keyed-1\.state.*has 10 bytes.*truncated/);

    const logs2: string[] = [];
    const latest = await storage.latest((l) => logs2.push(l));
    expect(latest?.metadata.checkpointId).toBe(2);
    expect(latest?.path).toBe(join(root, JOB, 'chk-2'));
    expect(logs2.join('\n')).toContain(bad);
  });

  it('skip torn, mismatching and newer-version metadata, each logged with its reason', async () => {
    await complete(1);
    const torn = await complete(2);
    writeFileSync(join(torn, METADATA_FILE), '{"sha256":"ab');
    const mismatch = await complete(3);
    const outer = JSON.parse(readFileSync(join(mismatch, METADATA_FILE), 'utf8'));
    outer.body.jobName = 'tampered';
    writeFileSync(join(mismatch, METADATA_FILE), JSON.stringify(outer));
    const newer = (await storage.initCheckpoint(JOB, 4)).reference;
    writeFileSync(join(newer, METADATA_FILE), serializeMetadata({ ...metadata(4), version: 99 }));
    const logs: string[] = [];
    const latest = await storage.latest((l) => logs.push(l));
    expect(latest?.metadata.checkpointId).toBe(1);
    expect(logs).toHaveLength(3);
    const byPath = (p: string) => logs.find((l) => l.includes(p + '/') || l.includes(p + ':'))!;
    expect(byPath(torn)).toMatch(/not valid JSON/);
    expect(byPath(mismatch)).toMatch(/checksum mismatch/);
    expect(byPath(newer)).toMatch(/newer weir \(metadata version 99/);
  });

  it('skip, with their reasons, checkpoints whose checksummed metadata is malformed, names a file outside the checkpoint, or is not a small regular file (a FIFO, a link to /dev/zero); the listing never fails for one', async () => {
    await complete(1);
    const notArray = await complete(2);
    rewrite(notArray, (b) => (b.operators = {}));
    const escapes = await complete(3);
    rewrite(escapes, (b) => (b.operators[0].subtasks[0].file = '../../../../etc/passwd'));
    const fifo = await complete(4);
    rmSync(join(fifo, METADATA_FILE));
    execFileSync('mkfifo', [join(fifo, METADATA_FILE)]);
    const zero = await complete(5);
    rmSync(join(zero, METADATA_FILE));
    symlinkSync('/dev/zero', join(zero, METADATA_FILE));
    const logs: string[] = [];
    const all = await storage.completed(JOB, (l) => logs.push(l));
    // Before: "metadata.operators is not iterable" or "not a relative name inside its parent"
    // failed the whole listing (--from latest, restarts, weir checkpoints); the FIFO hung it.
    expect(all.map((c) => c.metadata.checkpointId)).toEqual([1]);
    const byPath = (p: string) => logs.find((l) => l.includes(p + '/') || l.includes(p + ':'))!;
    expect(byPath(notArray)).toMatch(/operators must be an array \(not a checkpoint weir wrote\)/);
    expect(byPath(escapes)).toMatch(/state file "\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd" of operator/);
    expect(byPath(fifo)).toMatch(/is not a regular file/);
    expect(byPath(zero)).toMatch(/is not a regular file/);
  });

  it('skip checkpoints whose metadata gives key groups a restore would silently drop state by (out of range, missing, overlapping, a bad max parallelism), a savepoint naming an incremental chain, or times and sizes no listing can print (before: restored with the state dropped, state inspect called present keys absent, weir checkpoints failed)', async () => {
    await complete(1);
    const cases: [number, (b: any) => void, RegExp][] = [
      [2, (b) => (b.operators[0].subtasks[1].keyGroupRange = { start: 64, end: 128 }), /subtasks\[1\]: keyGroupRange \{"start":64,"end":128\} is not a range of key groups 0\.\.127/],
      [3, (b) => delete b.operators[0].subtasks[1].keyGroupRange, /subtasks\[1\]: keyed state without a keyGroupRange/],
      [4, (b) => (b.operators[0].subtasks[1].keyGroupRange = { start: 0, end: 5 }), /subtasks\[1\]: keyGroupRange overlaps that of operators\[0\]\.subtasks\[0\]/],
      [5, (b) => (b.operators[0].maxParallelism = 1e9), /maxParallelism 1000000000 is not between 1 and 32768/],
      [6, (b) => (b.operators[0].subtasks[0].keyGroupRange = { start: 'a', end: 3 }), /keyGroupRange \{"start":"a","end":3\} is not a range/],
      [7, (b) => { b.type = 'savepoint'; b.operators[0].subtasks[0].chain = [{ name: 'x', size: 1 }]; }, /a savepoint is self-contained and names no incremental chain/],
      // And what `weir checkpoints` prints of a retained one (before: "Invalid time value", "reading 'stateSize'").
      [8, (b) => (b.completedAt = 1e20), /timestamp and completedAt must be times \(ms since the epoch\)/],
      [9, (b) => delete b.stats, /stats\.stateSize must be a count/],
    ];
    const dirs = new Map<number, string>();
    for (const [id, change] of cases) {
      const dir = await complete(id);
      rewrite(dir, change);
      dirs.set(id, dir);
    }
    const logs: string[] = [];
    expect((await storage.completed(JOB, (l) => logs.push(l))).map((c) => c.metadata.checkpointId)).toEqual([1]);
    for (const [id, , why] of cases) expect(logs.find((l) => l.includes(dirs.get(id)!)), `case ${id}`).toMatch(why);
  });

  it('do not log directories of attempts that never wrote metadata (normal garbage)', async () => {
    await complete(1);
    await storage.initCheckpoint(JOB, 2);
    const logs: string[] = [];
    expect((await storage.completed(JOB, (l) => logs.push(l))).map((c) => c.metadata.checkpointId)).toEqual([1]);
    expect(logs).toEqual([]);
  });

  it('latest() looks at every job under the root and picks the newest completion', async () => {
    const other = 'ffffffffffffffffffffffffffffffff';
    await complete(5, 1, JOB, { completedAt: 10_000 });
    await complete(2, 1, other, { completedAt: 20_000 });
    const latest = await storage.latest();
    expect(latest?.metadata.jobId).toBe(other);
    expect(latest?.path).toBe(join(root, other, 'chk-2'));
  });

  it('latest() takes a job\'s highest checkpoint id even when an older one completed later by the clock', async () => {
    // The clock set back between two checkpoints, or a subsumed checkpoint whose metadata was
    // written after the newer one completed and whose deletion a kill cut short.
    await complete(11, 1, JOB, { completedAt: 50_000 });
    await complete(12, 1, JOB, { completedAt: 40_000 });
    const other = 'ffffffffffffffffffffffffffffffff';
    await complete(3, 1, other, { completedAt: 30_000 });
    expect((await storage.latest())?.path).toBe(join(root, JOB, 'chk-12'));
  });

  it('no job directory, or nothing verifying: empty and undefined', async () => {
    expect(await storage.completed(JOB)).toEqual([]);
    expect(await storage.latest()).toBeUndefined();
    expect(await new LocalCheckpointStorage(join(root, 'missing')).latest()).toBeUndefined();
    await storage.initCheckpoint(JOB, 1);
    expect(await storage.latest()).toBeUndefined();
  });

  it('ignore entries that are not chk-<n> directories', async () => {
    await storage.initJob(JOB);
    await complete(1);
    mkdirSync(join(root, JOB, 'chk-x'));
    writeFileSync(join(root, JOB, 'chk-x', METADATA_FILE), serializeMetadata(metadata(77)));
    mkdirSync(join(root, JOB, 'savepoint-1'));
    writeFileSync(join(root, JOB, 'savepoint-1', METADATA_FILE), serializeMetadata(metadata(78)));
    expect((await storage.completed(JOB)).map((c) => c.metadata.checkpointId)).toEqual([1]);
  });
});

describe('highestId', () => {
  it('is the highest chk-<n> ever created, with or without metadata, 0 for none', async () => {
    expect(await storage.highestId(JOB)).toBe(0);
    await complete(3);
    await storage.initCheckpoint(JOB, 11); // an aborted attempt still used its id
    await complete(7);
    mkdirSync(join(root, JOB, 'chk-99x'));
    expect(await storage.highestId(JOB)).toBe(11);
  });

  it('keeps the highest triggered id when triggers overlap (a periodic checkpoint and the final one)', async () => {
    await storage.initJob(JOB);
    // Started in the same tick, as when a bounded job's final checkpoint is triggered while a
    // periodic one is still being recorded; once these shared one temp file and one failed.
    await Promise.all([storage.recordTriggered(JOB, 14), storage.recordTriggered(JOB, 15), storage.recordTriggered(JOB, 13)]);
    expect(readFileSync(join(root, JOB, 'last-checkpoint-id'), 'utf8')).toBe('15');
    expect(await storage.highestId(JOB)).toBe(15);
    expect(readdirSync(join(root, JOB)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('highestId and its record', () => {
  it('a record that cannot be read fails, naming it, instead of being taken for none (ids went back to the highest directory left)', async () => {
    await storage.initJob(JOB);
    await storage.recordTriggered(JOB, 15);
    rmSync(join(root, JOB, 'last-checkpoint-id'));
    mkdirSync(join(root, JOB, 'last-checkpoint-id')); // not a file: reading it fails
    await complete(3);
    await expect(storage.highestId(JOB)).rejects.toThrow(/last-checkpoint-id/);
  });
});

describe('collectSharedGarbage', () => {
  /** chk-<id> whose one keyed subtask restores from shared files `chain`; its metadata written as given (or as it should be). */
  async function chained(id: number, chain: string[], metadataText?: string): Promise<string> {
    const dir = (await storage.initCheckpoint(JOB, id)).reference;
    const m = metadata(id);
    const withChain: CheckpointMetadata = {
      ...m,
      operators: [{ ...m.operators[0]!, parallelism: 1, subtasks: [{ subtask: 0, keyGroupRange: { start: 0, end: 127 }, stateSize: 5, chain: chain.map((name, i) => ({ name, size: 5, checkpointId: id, kind: i === 0 ? 'base' as const : 'delta' as const })) }] }, m.operators[1]!],
    };
    writeFileSync(join(dir, METADATA_FILE), metadataText ?? serializeMetadata(withChain));
    return dir;
  }
  function sharedFiles(...names: string[]): void {
    for (const n of names) writeFileSync(join(root, JOB, 'shared', n), 'state');
  }
  const sharedNow = (): string[] => readdirSync(join(root, JOB, 'shared')).sort();

  it('deletes the shared files no checkpoint names, keeps those a checkpoint names', async () => {
    await storage.initJob(JOB);
    await chained(2, ['b1', 'd2']);
    sharedFiles('b1', 'd2', 'orphan');
    expect(await storage.collectSharedGarbage(JOB)).toBe(1);
    expect(sharedNow()).toEqual(['b1', 'd2']);
  });

  it('deletes nothing when a checkpoint\'s metadata cannot be read (before: its chain was deleted, the checkpoint lost)', async () => {
    await storage.initJob(JOB);
    await chained(2, ['b1', 'd2']);
    const unreadable = await chained(3, ['b1', 'd3']);
    // A read error that is not "missing": the metadata path is a directory (EISDIR).
    rmSync(join(unreadable, METADATA_FILE));
    mkdirSync(join(unreadable, METADATA_FILE));
    sharedFiles('b1', 'd2', 'd3', 'orphan');
    await expect(storage.collectSharedGarbage(JOB)).rejects.toThrow(/EISDIR/);
    expect(sharedNow()).toEqual(['b1', 'd2', 'd3', 'orphan']);
  });

  it('deletes nothing when a checkpoint\'s metadata does not parse (a newer weir\'s, after a rollback)', async () => {
    await storage.initJob(JOB);
    await chained(3, [], serializeMetadata({ ...metadata(3), version: METADATA_VERSION + 1 }));
    sharedFiles('b3', 'd3');
    await expect(storage.collectSharedGarbage(JOB)).rejects.toThrow(/shared files kept: .*chk-3/);
    expect(sharedNow()).toEqual(['b3', 'd3']);
  });
});

describe('collectGarbage', () => {
  it('removes chk directories without metadata and nothing else', async () => {
    await storage.initJob(JOB);
    await storage.appendHistory(JOB, { id: 1 });
    const good = await complete(1);
    const noMeta = (await storage.initCheckpoint(JOB, 2)).reference;
    writeFileSync(join(noMeta, 'op-keyed-0.state'), 'partial');
    const onlyTmp = (await storage.initCheckpoint(JOB, 3)).reference;
    writeFileSync(join(onlyTmp, `${METADATA_FILE}.tmp`), 'half');
    const kept = (await storage.initCheckpoint(JOB, 4)).reference; // in progress right now: the caller keeps it
    const good5 = await complete(5);
    const removed = await storage.collectGarbage(JOB, new Set([4]));
    expect(removed).toBe(2);
    expect(existsSync(noMeta)).toBe(false);
    expect(existsSync(onlyTmp)).toBe(false);
    expect(existsSync(kept)).toBe(true);
    expect(existsSync(good)).toBe(true);
    expect(existsSync(good5)).toBe(true);
    expect(readdirSync(good).sort()).toEqual(['_metadata', 'op-keyed-0.state', 'op-keyed-1.state']);
    expect(readdirSync(join(root, JOB)).sort()).toEqual(['checkpoint-history.jsonl', 'chk-1', 'chk-4', 'chk-5', 'shared', 'taskowned']);
    expect((await storage.completed(JOB)).map((c) => c.metadata.checkpointId)).toEqual([1, 5]);
  });

  it('is a no-op without a job directory', async () => {
    expect(await storage.collectGarbage('nope')).toBe(0);
  });

  it('a checkpoint being discarded is never seen half-deleted (reported as corrupt) by a concurrent listing', async () => {
    const logs: string[] = [];
    for (let round = 0; round < 10; round++) {
      const dir = await complete(100 + round, 40);
      const discarding = storage.discard(dir);
      // List while the discard runs, on every turn until it is done.
      let done = false;
      void discarding.then(() => (done = true));
      while (!done) await storage.completed(JOB, (l) => logs.push(l));
      expect(existsSync(dir)).toBe(false);
    }
    expect(logs).toEqual([]);
  });

  it('discard removes a whole checkpoint directory', async () => {
    const dir = await complete(1);
    await storage.discard(dir);
    expect(existsSync(dir)).toBe(false);
    await storage.discard(dir); // idempotent
  });
});
