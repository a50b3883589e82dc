/**
 * The exactly-once file sink on S3 (s3rver in this process): part files are multipart uploads
 * that stay open across checkpoints (full parts uploaded, the tail in the checkpoint), become
 * objects only when the checkpoint that closes them commits, are completed from the
 * checkpoint's parts and tail after a restore, and orphan uploads are aborted. Rolling by size,
 * age and inactivity on a fake clock: with a checkpoint every second, the number of files is
 * the rolling policy's. The commit protocol's decisions are tested as pure functions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { resolveS3Config, type S3Settings } from '../../src/checkpoint/s3/settings.ts';
import {
  commitRecordName, decideCompletion, keptForSavepoints, openRecordName, parseCommitRecordName, parseOpenRecordName, staleCommitRecords, staleOpenRecords, opensToComplete, orphanUploads, parsePartKey, parseSavepointMarkerName, savepointHeldKeys, savepointMarkerName, staleSavepointMarkers,
} from '../../src/connectors/file/s3/protocol.ts';
import { S3SinkStorage } from '../../src/connectors/file/s3/s3-storage.ts';
import { csv, jsonLines, type ByteWriter } from '../../src/connectors/file/formats.ts';
import { rollAfterWrite, rollAtBarrier, rollBeforeWrite } from '../../src/connectors/file/rolling.ts';
import type { SinkContext } from '../../src/core/sink.ts';
import { ExactlyOnceFileSink, ManualClock, type FileCommittable } from '../../src/index.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';
import { runInline } from '../helpers/run.ts';

const MiB = 1024 * 1024;
const PART = 5 * MiB;

const SEED = Number(process.env.SEED ?? Math.floor(Math.random() * 1e9));
console.log(`[s3-file-sink] seed=${SEED} (replay with SEED=${SEED})`);
/** mulberry32: a small seeded generator in [0, 1). */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
/** Characters of 1 to 4 UTF-8 bytes, and ones JSON escapes. */
const ALPHABET = ['a', 'Z', '7', ' ', '"', '\\', '\n', '\u0001', 'é', 'ß', '€', '中', '😀', '\ud800'];
function randomText(rnd: () => number, length: number): string {
  let chunk = '';
  for (let i = 0; i < Math.min(length, 97); i++) chunk += ALPHABET[Math.floor(rnd() * ALPHABET.length)]!;
  return length <= chunk.length ? chunk : chunk.repeat(Math.ceil(length / chunk.length)).slice(0, length);
}

describe('decisions (pure)', () => {
  it('rolling: size after a write, age and inactivity before a write and at a barrier, per checkpoint only when asked', () => {
    const policy = { maxPartSize: 100, rolloverMs: 60_000, inactivityMs: 10_000, onCheckpoint: false };
    expect(rollAfterWrite({ size: 99, openedAt: 0, lastWriteAt: 0 }, policy)).toBeUndefined();
    expect(rollAfterWrite({ size: 100, openedAt: 0, lastWriteAt: 0 }, policy)).toBe('size');
    expect(rollBeforeWrite({ size: 1, openedAt: 0, lastWriteAt: 55_000 }, 59_999, policy)).toBeUndefined();
    expect(rollBeforeWrite({ size: 1, openedAt: 0, lastWriteAt: 55_000 }, 60_000, policy)).toBe('time');
    expect(rollBeforeWrite({ size: 1, openedAt: 0, lastWriteAt: 5_000 }, 15_000, policy)).toBe('inactivity');
    expect(rollAtBarrier({ size: 1, openedAt: 0, lastWriteAt: 1_000 }, 2_000, policy)).toBeUndefined();
    expect(rollAtBarrier({ size: 1, openedAt: 0, lastWriteAt: 1_000 }, 11_000, policy)).toBe('inactivity');
    expect(rollAtBarrier({ size: 1, openedAt: 0, lastWriteAt: 1_000 }, 2_000, { ...policy, onCheckpoint: true })).toBe('checkpoint');
  });

  it('commit records: one object per checkpoint id, the older single record still read; a subtask\'s lower ones (and its older single record) go after a higher one, never a higher one or another subtask\'s', () => {
    expect(commitRecordName(3, 17)).toBe('.weir-committed-3-17');
    expect(parseCommitRecordName('out', 'out/.weir-committed-3-17')).toEqual({ subtask: 3, checkpointId: 17 });
    expect(parseCommitRecordName('out', 'out/.weir-committed-3')).toEqual({ subtask: 3, checkpointId: undefined });
    expect(parseCommitRecordName('', '.weir-committed-0-1')).toEqual({ subtask: 0, checkpointId: 1 });
    expect(parseCommitRecordName('out', 'other/.weir-committed-3-17')).toBeUndefined();
    expect(parseCommitRecordName('out', 'out/.weir-committed-3-17.tmp')).toBeUndefined();
    const keys = ['out/.weir-committed-1', 'out/.weir-committed-1-4', 'out/.weir-committed-1-9', 'out/.weir-committed-1-12', 'out/.weir-committed-10-2', 'out/part-1-aa-0.jsonl'];
    expect(staleCommitRecords('out', keys, 1, 9)).toEqual(['out/.weir-committed-1', 'out/.weir-committed-1-4']);
    expect(staleCommitRecords('out', keys, 10, 9)).toEqual(['out/.weir-committed-10-2']);
  });

  it('records of open parts: one object per change; after a newer one the subtask\'s lower ones (and its older single record) go, all of them once nothing is open; never another subtask\'s', () => {
    expect(openRecordName(2, 7)).toBe('.weir-open-2-7');
    expect(parseOpenRecordName('out', 'out/.weir-open-2-7')).toEqual({ subtask: 2, checkpointId: 7 });
    expect(parseOpenRecordName('out', 'out/.weir-open-2')).toEqual({ subtask: 2, checkpointId: undefined });
    expect(parseOpenRecordName('out', 'out/.weir-committed-2-7')).toBeUndefined();
    const keys = ['out/.weir-open-2', 'out/.weir-open-2-3', 'out/.weir-open-2-7', 'out/.weir-open-2-9', 'out/.weir-open-20-1'];
    expect(staleOpenRecords('out', keys, 2, 7)).toEqual(['out/.weir-open-2', 'out/.weir-open-2-3']);
    expect(staleOpenRecords('out', keys, 2, undefined)).toEqual(['out/.weir-open-2', 'out/.weir-open-2-3', 'out/.weir-open-2-7', 'out/.weir-open-2-9']);
  });

  it('completion: idempotent (object there, upload gone), tail-only files are one PUT, an upload gone is lost, a listed upload missing a part fails', () => {
    expect(decideCompletion({ parts: 2, tailBytes: 0, listed: [1, 2, 3], objectExists: false })).toEqual({ step: 'complete', uploadTail: false });
    expect(decideCompletion({ parts: 2, tailBytes: 5, listed: [1, 2], objectExists: false })).toEqual({ step: 'complete', uploadTail: true });
    expect(decideCompletion({ parts: 2, tailBytes: 5, listed: undefined, objectExists: true })).toEqual({ step: 'already' });
    expect(decideCompletion({ parts: 2, tailBytes: 0, listed: undefined, objectExists: false }).step).toBe('lost');
    // A listed upload without a recorded part is a wrong answer: failed (retried), never declared lost and aborted.
    expect(decideCompletion({ parts: 2, tailBytes: 0, listed: [2], objectExists: false })).toEqual({ step: 'fail', reason: 'part 1 of its multipart upload is missing from the listing of its parts' });
    expect(decideCompletion({ parts: 0, tailBytes: 5, listed: undefined, objectExists: false })).toEqual({ step: 'put' });
    expect(decideCompletion({ parts: 0, tailBytes: 5, listed: undefined, objectExists: true })).toEqual({ step: 'already' });
    expect(decideCompletion({ parts: 0, tailBytes: 0, listed: undefined, objectExists: false })).toEqual({ step: 'nothing' });
  });

  it('completion: an object shorter than the state holds was completed from an earlier state since (a restore of an earlier checkpoint): refused, not taken as done', () => {
    const at = (objectBytes: number, expectedBytes?: number) => decideCompletion({ parts: 2, tailBytes: 5, listed: undefined, objectExists: true, objectBytes, expectedBytes }).step;
    expect(at(90, 100)).toBe('overwritten');
    expect(decideCompletion({ parts: 0, tailBytes: 5, listed: undefined, objectExists: true, objectBytes: 3, expectedBytes: 5 }).step).toBe('overwritten');
    // The same state again (a repeated commit), a later state (duplicates accepted), an older checkpoint's committable (no size): as before.
    expect(at(100, 100)).toBe('already');
    expect(at(120, 100)).toBe('already');
    expect(at(90)).toBe('already');
  });

  it('a restore completes the newest state of each open part, not one a complete committable closes', () => {
    const opens = [{ key: 'a', checkpointId: 3 }, { key: 'a', checkpointId: 4 }, { key: 'b', checkpointId: 4 }, { key: 'c', checkpointId: 2 }];
    expect(opensToComplete(opens, new Set(['b']))).toEqual([{ key: 'a', checkpointId: 4 }, { key: 'c', checkpointId: 2 }]);
  });

  it('orphans: owned subtasks\' part uploads, not a live writer\'s, not named by the restored checkpoint', () => {
    expect(parsePartKey('out', 'out/part-3-abcd-7.jsonl')).toEqual({ subtask: 3, run: 'abcd' });
    expect(parsePartKey('out', 'other/part-3-abcd-7.jsonl')).toBeUndefined();
    expect(parsePartKey('', 'part-0-ff-0.jsonl')).toEqual({ subtask: 0, run: 'ff' });
    const u = (key: string) => ({ key, uploadId: key.toUpperCase() });
    const uploads = [u('out/part-0-aa-0.jsonl'), u('out/part-0-bb-0.jsonl'), u('out/part-1-aa-0.jsonl'), u('out/part-2-aa-0.jsonl'), u('out/part-0-cc-1.jsonl'), u('out/notes.txt')];
    const owns = (sub: number) => sub === 0 || sub >= 2; // subtask 0 of parallelism 2
    expect(orphanUploads(uploads, 'out', owns, new Set(['cc']), new Set(['out/part-0-bb-0.jsonl'])).map((x) => x.key)).toEqual(['out/part-0-aa-0.jsonl', 'out/part-2-aa-0.jsonl']);
  });

  it('uploads an intermediate savepoint holds: named in its marker, kept by orphan cleanup; a marker goes once none of its uploads is left', () => {
    expect(savepointMarkerName(1, 'ab12', 7)).toBe('.weir-savepoint-1-ab12-7');
    expect(parseSavepointMarkerName('out', 'out/.weir-savepoint-1-ab12-7')).toEqual({ subtask: 1, run: 'ab12', savepointId: 7 });
    expect(parseSavepointMarkerName('out', 'out/.weir-savepoint-1-ab12-7.tmp')).toBeUndefined();
    // Only files whose upload holds parts: one held as a tail alone is written from the savepoint.
    const c = (final: string, parts: number) => ({ final, s3: { parts } });
    expect(savepointHeldKeys([c('out/b', 1), c('out/a', 2), c('out/t', 0), c('out/a', 3), { final: 'local' }])).toEqual(['out/a', 'out/b']);
    const u = (key: string) => ({ key, uploadId: key.toUpperCase() });
    const marker = (sub: number, run: string, savepointId: number, keys: string[]) => ({ key: `out/${savepointMarkerName(sub, run, savepointId)}`, subtask: sub, run, savepointId, keys });
    const markers = [marker(0, 'aa', 5, ['out/part-0-aa-1.jsonl']), marker(1, 'bb', 6, ['out/part-1-bb-0.jsonl', 'out/part-0-aa-1.jsonl'])];
    const orphans = [u('out/part-0-aa-0.jsonl'), u('out/part-0-aa-1.jsonl'), u('out/part-1-bb-0.jsonl')];
    expect(keptForSavepoints(orphans, markers)).toEqual({ abort: [orphans[0]], kept: [orphans[1], orphans[2]], savepoints: [5, 6] });
    expect(keptForSavepoints(orphans, [])).toEqual({ abort: orphans, kept: [], savepoints: [] });
    // A key the restore just completed (an open part of the restored checkpoint): its other uploads are extras.
    expect(keptForSavepoints(orphans, markers, new Set(['out/part-0-aa-1.jsonl']))).toEqual({ abort: [orphans[0], orphans[1]], kept: [orphans[2]], savepoints: [6] });
    // Stale: owned, not a live writer's (its uploads may not exist yet), no upload of its keys left.
    const all = () => true;
    expect(staleSavepointMarkers(markers, new Set(['out/part-1-bb-0.jsonl']), all, new Set())).toEqual([markers[0]]);
    expect(staleSavepointMarkers(markers, new Set(), all, new Set())).toEqual(markers);
    expect(staleSavepointMarkers(markers, new Set(), (sub) => sub === 1, new Set())).toEqual([markers[1]]);
    expect(staleSavepointMarkers(markers, new Set(), all, new Set(['aa']))).toEqual([markers[1]]);
  });
});

describe('formats written straight into a part (encodeInto)', () => {
  /** A ByteWriter collecting what it is given. */
  function collector(): ByteWriter & { bytes(): Buffer } {
    const chunks: Buffer[] = [];
    return {
      writeString: (x) => void chunks.push(Buffer.from(x)),
      writeByte: (b) => void chunks.push(Buffer.from([b])),
      write: (b) => void chunks.push(Buffer.from(b)),
      bytes: () => Buffer.concat(chunks),
    };
  }

  it(`the same bytes as encode(), batch by batch, for JSON lines (default and a format function) and CSV with a header (seed ${SEED})`, () => {
    const rnd = seeded(SEED);
    const formats = [jsonLines(), jsonLines((v) => `<${JSON.stringify(v)}>`), csv({ columns: ['a', 'b'] }), csv({ columns: ['b'], delimiter: '€', header: false })];
    for (const format of formats) {
      const [a, b] = [format.open('x'), format.open('x')];
      for (let batch = 0; batch < 20; batch++) {
        const values = Array.from({ length: Math.floor(rnd() * 20) }, () => ({ a: randomText(rnd, Math.floor(rnd() * 40)), b: rnd() < 0.5 ? Math.floor(rnd() * 1e6) : { x: randomText(rnd, 3) } }));
        const out = collector();
        b.encodeInto!(values, () => {}, out);
        expect(out.bytes().equals(Buffer.from(a.encode(values, () => {})!)), `${format.name}, batch ${batch}, seed ${SEED}`).toBe(true);
      }
    }
  });
});

describe('on s3rver', () => {
  let server: S3TestServer;
  let store: S3ObjectStore;
  let settings: S3Settings;
  let n = 0;
  beforeAll(async () => {
    server = await startS3Server();
    settings = { ...server.settings, uploadPartSize: PART };
    store = new S3ObjectStore(resolveS3Config(settings));
  });
  afterAll(async () => {
    await store?.close();
    await server?.close();
  });

  /** A fresh prefix per test. */
  function out(): string {
    return `s3://${server.bucket}/out-${n++}`;
  }
  let logged: string[] = [];
  function ctx(clock = new ManualClock(0), subtaskIndex = 0, parallelism = 1, restoredCheckpointId?: number): SinkContext {
    return { subtaskIndex, parallelism, attemptNumber: restoredCheckpointId === undefined ? 0 : 1, now: () => clock.now(), restoredCheckpointId, log: (l) => logged.push(l) };
  }
  const ts = (k: number) => new Array<number>(k).fill(0);
  const prefixOf = (ref: string) => ref.slice(`s3://${server.bucket}/`.length);

  /** Committed objects under the prefix (part files), name -> content. */
  async function objects(ref: string): Promise<Map<string, string>> {
    const prefix = prefixOf(ref);
    const listed = await store.list(server.bucket, `${prefix}/part-`);
    const outMap = new Map<string, string>();
    for (const o of [...listed.objects].sort((a, b) => (a.key < b.key ? -1 : 1))) outMap.set(o.key.slice(prefix.length + 1), Buffer.from((await store.getObject(server.bucket, o.key))!).toString('utf8'));
    return outMap;
  }
  async function uploads(ref: string): Promise<string[]> {
    return (await store.listMultipartUploads(server.bucket, `${prefixOf(ref)}/`)).map((u) => u.key.slice(prefixOf(ref).length + 1)).sort();
  }
  /** Lines of `bytes` bytes each (the line end included), numbered from `from`. */
  function lines(from: number, count: number, bytes = 1024): string[] {
    return Array.from({ length: count }, (_, i) => `${String(from + i).padStart(8, '0')}`.padEnd(bytes - 3, 'x'));
  }
  const body = (xs: readonly string[]) => xs.map((x) => JSON.stringify(x) + '\n').join('');
  /** Writes in batches of 256 records (256 KiB), as a task hands them over. */
  function write(w: { write(v: readonly string[], t: readonly number[]): void }, xs: readonly string[]): void {
    for (let i = 0; i < xs.length; i += 256) w.write(xs.slice(i, i + 256), ts(Math.min(256, xs.length - i)));
  }

  it('a part stays open across checkpoints as one upload: full parts uploaded, the tail in the checkpoint, an object only once the rolled part commits', async () => {
    const ref = out();
    const clock = new ManualClock(0);
    const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings, maxPartSize: 14 * MiB });
    const w = sink.createWriter(ctx(clock));
    const c = sink.createCommitter(ctx(clock));
    const first = lines(0, 6 * 1024); // 6 MiB: one 5 MiB+ part goes up, the rest waits
    write(w, first);
    const c1 = w.prepareCommit(1);
    await w.whenPrepared?.(1);
    expect(c1).toHaveLength(1);
    expect(c1[0]!.s3).toMatchObject({ kind: 'open', parts: 1, checkpointId: 1 });
    const tail1 = Buffer.from(c1[0]!.s3!.tail!, 'base64');
    expect(tail1.byteLength).toBeLessThan(PART);
    expect(tail1.byteLength).toBeGreaterThan(0);
    await c.commit(c1, 1);
    expect(await objects(ref)).toEqual(new Map()); // nothing visible: the part is still open
    expect(await uploads(ref)).toHaveLength(1);
    expect(await sink.lastCommittedCheckpoint()).toBeUndefined(); // nothing committed yet
    clock.advance(1000);
    const second = lines(first.length, 9 * 1024); // reaches 14 MiB: rolled by size
    write(w, second.slice(0, 4096));
    const c2 = w.prepareCommit(2);
    await w.whenPrepared?.(2);
    expect(c2[0]!.s3).toMatchObject({ kind: 'open', checkpointId: 2 });
    expect(c2[0]!.final).toBe(c1[0]!.final); // the same file, one checkpoint later
    clock.advance(1000);
    write(w, second.slice(4096));
    const c3 = w.prepareCommit(3);
    await w.whenPrepared?.(3);
    expect(c3.map((x) => x.s3!.kind)).toEqual(['complete', 'open']);
    await c.commit(c3, 3);
    const objs = await objects(ref);
    expect(objs.size).toBe(1);
    const [name, content] = [...objs][0]!;
    expect(`${prefixOf(ref)}/${name}`).toBe(c1[0]!.final);
    expect(content.length).toBeGreaterThanOrEqual(14 * MiB);
    expect(content).toBe(body([...first, ...second]).slice(0, content.length));
    expect(await sink.lastCommittedCheckpoint()).toBe(3);
    // Committing again (a restore repeats the commit) changes nothing.
    await c.commit(c3, 3);
    await new ExactlyOnceFileSink<string>(ref, { s3: settings }).createCommitter(ctx()).commit(c3, 3);
    expect(await objects(ref)).toEqual(objs);
    w.close?.();
  });

  it('with a checkpoint every second for 10 minutes, the number of files is set by rolling (age 60 s), not by the 600 checkpoints', async () => {
    const ref = out();
    const clock = new ManualClock(0);
    const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings, rolloverInterval: '60 s', inactivityInterval: '30 s' });
    const w = sink.createWriter(ctx(clock));
    const c = sink.createCommitter(ctx(clock));
    const written: string[] = [];
    for (let chk = 1; chk <= 600; chk++) {
      // Two records a second, except a quiet spell of 40 s (rolled by inactivity) from 400 s.
      if (chk < 400 || chk > 440) {
        const xs = [`r${2 * chk}`, `r${2 * chk + 1}`];
        w.write(xs, ts(2));
        written.push(...xs);
      }
      clock.advance(1000);
      const list = w.prepareCommit(chk);
      await w.whenPrepared?.(chk);
      await c.commit(list, chk);
    }
    w.finish?.();
    const last = w.prepareCommit(601);
    await w.whenPrepared?.(601);
    await c.commit(last, 601);
    const objs = await objects(ref);
    // 0..400 s: files of 60 s (6 full ones and 40 s closed by the quiet spell), 441..600 s: 60, 60, 40 at the end.
    expect(objs.size).toBe(10);
    const got = [...objs.values()].flatMap((t) => t.split('\n').filter((l) => l !== '')).sort();
    expect(got).toEqual(written.map((x) => JSON.stringify(x)).sort());
    expect(await uploads(ref)).toEqual([]);
    w.close?.();
  });

  it('a restore completes the open part from the checkpoint\'s parts and tail (the file ends at the checkpoint) and aborts what the failed attempt left', async () => {
    const ref = out();
    const clock = new ManualClock(0);
    const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings, maxPartSize: 10 * MiB });
    const w = sink.createWriter(ctx(clock));
    const c = sink.createCommitter(ctx(clock));
    const before = lines(0, 6 * 1024);
    write(w, before);
    const c1 = w.prepareCommit(1);
    await w.whenPrepared?.(1);
    await c.commit(c1, 1);
    // After checkpoint 1 the attempt goes on: more parts of the same upload, a second file, then it dies.
    const after = lines(before.length, 12 * 1024);
    write(w, after); // rolls at 10 MiB: the first upload gets a part 2, a second file starts and uploads a part
    w.prepareCommit(2); // checkpoint 2 never completes
    await w.whenPrepared?.(2);
    expect(await uploads(ref)).toHaveLength(2);
    // A new process restores checkpoint 1 (a new sink: nothing known in memory).
    logged = [];
    const restored = new ExactlyOnceFileSink<string>(ref, { s3: settings, maxPartSize: 10 * MiB });
    const rctx = ctx(new ManualClock(0), 0, 1, 1);
    await restored.recover(rctx, 1, c1, c1);
    const objs = await objects(ref);
    expect([...objs.values()]).toEqual([body(before)]);
    expect(await uploads(ref)).toEqual([]);
    expect(logged.join('\n')).toMatch(/aborted 1 multipart upload/);
    expect(await restored.lastCommittedCheckpoint()).toBe(1);
    // Recovering again (the restored attempt failed too) finds it done and changes nothing.
    await restored.recover(rctx, 1, c1, c1);
    expect(await objects(ref)).toEqual(objs);
    w.close?.();
  });

  it('a part with no full part uploaded is one PUT of its tail on restore; a restore at another parallelism completes what its share names', async () => {
    const ref = out();
    const sink = new ExactlyOnceFileSink<number>(ref, { s3: settings });
    const w0 = sink.createWriter(ctx(new ManualClock(0), 0, 2));
    const w1 = sink.createWriter(ctx(new ManualClock(0), 1, 2));
    w0.write([1, 2], ts(2));
    w1.write([3], ts(1));
    const all: FileCommittable[] = [...w0.prepareCommit(5), ...w1.prepareCommit(5)];
    expect(all.map((x) => x.s3!.parts)).toEqual([0, 0]);
    w0.close?.();
    w1.close?.();
    // Rescaled to 1: subtask 0 gets both states.
    await new ExactlyOnceFileSink<number>(ref, { s3: settings }).recover(ctx(new ManualClock(0), 0, 1, 5), 5, all, all);
    expect([...(await objects(ref)).values()].sort()).toEqual(['1\n2\n', '3\n']);
    expect(await uploads(ref)).toEqual([]);
  });

  it('a fresh start aborts uploads earlier runs left (not its own writer\'s), without a restore', async () => {
    const ref = out();
    const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings });
    const w = sink.createWriter(ctx());
    w.write(lines(0, 5 * 1024 + 1), ts(5 * 1024 + 1));
    w.prepareCommit(1);
    await w.whenPrepared?.(1);
    w.close?.();
    expect(await uploads(ref)).toHaveLength(1);
    logged = [];
    const again = new ExactlyOnceFileSink<string>(ref, { s3: settings });
    const w2 = again.createWriter(ctx());
    w2.write(lines(0, 5 * 1024 + 1), ts(5 * 1024 + 1)); // this writer's upload starts at once
    w2.prepareCommit(1);
    await w2.whenPrepared?.(1);
    for (let i = 0; i < 100 && !logged.some((l) => l.includes('aborted')); i++) await new Promise((r) => setTimeout(r, 20));
    expect(logged.join('\n')).toMatch(/aborted 1 multipart upload/);
    const left = await uploads(ref);
    expect(left).toHaveLength(1);
    expect(`${prefixOf(ref)}/${left[0]}`).toBe(w2.prepareCommit(2)[0]!.final); // its own upload is left alone
    w2.close?.();
  });

  it('a fresh start is refused (one line naming the prefix and the ways out) while a completed checkpoint of an earlier run holds an open upload there; the upload stays and a restore completes it (before: aborted by the fresh start, the checkpoint\'s records lost)', async () => {
    const ref = out();
    const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings });
    const w = sink.createWriter(ctx());
    const c = sink.createCommitter(ctx());
    const xs = lines(0, 5 * 1024 + 10);
    write(w, xs);
    const cp1 = w.prepareCommit(1); // one whole part uploaded, the rest in the checkpoint's tail
    await w.whenPrepared?.(1);
    expect(cp1.map((x) => [x.s3?.kind, x.s3?.parts])).toEqual([['open', 1]]);
    await c.commit(cp1, 1); // checkpoint 1 completed: nothing visible, the upload is the checkpoint's
    w.close?.(); // the run is killed
    expect(await uploads(ref)).toHaveLength(1);
    const job = (env: Parameters<Parameters<typeof runInline>[0]>[0]) => {
      env.fromGenerator((i) => `x${i}`, { count: 10 }).sinkTo(new ExactlyOnceFileSink<string>(ref));
    };
    const refused = await runInline(job, { s3: settings }).then(() => 'ran', (e: Error) => e.message);
    expect(refused).toBe(
      `sink "exactly-once files ${ref}": ${ref} holds 1 multipart upload(s) with records not visible yet (open part files) that completed checkpoint 1 (and any later one) of an earlier run holds, and a start without a restore would abort them: ` +
      'restore that run\'s latest checkpoint or savepoint with --from, write to another prefix, or start fresh all the same with --allow-duplicate-output (the uploads are aborted: that run\'s snapshots then restore without their records)',
    );
    expect(await uploads(ref), 'the upload is left alone').toHaveLength(1);
    // Restored (the way the refusal points): the file is completed from the checkpoint, whole.
    await new ExactlyOnceFileSink<string>(ref, { s3: settings }).recover(ctx(new ManualClock(0), 0, 1, 1), 1, cp1, cp1);
    expect([...(await objects(ref)).values()]).toEqual([body(xs)]);
    expect(await uploads(ref)).toEqual([]);
    expect(await sink.freshStartRefusal(), 'completed: nothing stands in the way any more').toBeUndefined();
  });

  it('the record of open parts is written when the set of open parts changes, not at every checkpoint, and goes once none is open; with duplicates accepted a fresh start only warns', async () => {
    const ref = out();
    const clock = new ManualClock(0);
    const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings });
    const w = sink.createWriter(ctx(clock));
    const c = sink.createCommitter(ctx(clock));
    const marker = `${prefixOf(ref)}/.weir-open-0`;
    const puts = () => server.requests.filter((r) => r.method === 'PUT' && r.path.includes(`/${marker}-`)).length;
    const records = async () => (await store.list(server.bucket, marker)).objects.map((o) => o.key);
    const before = puts();
    for (let chk = 1; chk <= 5; chk++) {
      write(w, lines(chk * 10, 3));
      const list = w.prepareCommit(chk);
      await w.whenPrepared?.(chk);
      await c.commit(list, chk);
    }
    expect(puts() - before, 'one part open through 5 checkpoints: written once').toBe(1);
    expect(await records()).toEqual([`${marker}-1`]);
    // No upload holds the open part yet (its bytes are all in the tail): a fresh start destroys nothing.
    expect(await sink.freshStartRefusal()).toBeUndefined();
    w.finish?.(); // the end of input rolls the part: its commit completes it, nothing is open any more
    const last = w.prepareCommit(6);
    await w.whenPrepared?.(6);
    await c.commit(last, 6);
    w.close?.();
    expect(await records(), 'the record goes when nothing is open').toEqual([]);

    // Another run's checkpoint holds an upload, and that run is killed: a start with duplicates accepted warns, and goes on.
    const ref2 = out();
    const w2 = new ExactlyOnceFileSink<string>(ref2, { s3: settings }).createWriter(ctx());
    const c2 = new ExactlyOnceFileSink<string>(ref2, { s3: settings }).createCommitter(ctx());
    write(w2, lines(0, 5 * 1024 + 1));
    const l1 = w2.prepareCommit(1);
    await w2.whenPrepared?.(1);
    await c2.commit(l1, 1);
    w2.close?.();
    const warned: string[] = [];
    const r = await runInline((env) => {
      env.fromGenerator((i) => `x${i}`, { count: 10 }).sinkTo(new ExactlyOnceFileSink<string>(ref2));
    }, { s3: settings, allowDuplicateOutput: true, log: (l) => warned.push(l) });
    expect(r.status).toBe('FINISHED');
    expect(warned.filter((l) => l.startsWith('weir: warning: sink'))).toEqual([expect.stringMatching(/holds 1 multipart upload.*\(started fresh all the same: --allow-duplicate-output\)$/)]);
  });

  for (const committer of ['the writer\'s own (it knows the upload)', 'another thread\'s (it lists the uploads)'] as const) {
    it(`a CreateMultipartUpload whose answer was lost (the SDK's retry made a second upload): the commit by ${committer} aborts the other upload of the key (before: left open for good)`, async () => {
      const ref = out();
      const clock = new ManualClock(0);
      let lost = 0;
      server.fault = (r) => (r.method === 'POST' && r.query.includes('uploads') && r.path.includes(`/${prefixOf(ref)}/`) && lost++ === 0 ? { kind: 'lose-answer' } : undefined);
      try {
        const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings });
        const w = sink.createWriter(ctx(clock));
        const xs = lines(0, 5 * 1024 + 7);
        write(w, xs); // a whole part: the upload is created (twice: the first answer is lost)
        await w.whenPrepared?.(0);
        w.finish?.();
        const list = w.prepareCommit(1);
        await w.whenPrepared?.(1);
        expect(lost, 'the premise: one creation answered 503 and was retried').toBe(2);
        expect(await uploads(ref), 'the premise: two uploads of one key').toHaveLength(2);
        logged = [];
        const c = committer.startsWith('the writer') ? sink.createCommitter(ctx(clock)) : new ExactlyOnceFileSink<string>(ref, { s3: settings }).createCommitter(ctx(clock));
        await c.commit(list, 1);
        w.close?.();
        expect([...(await objects(ref)).values()]).toEqual([body(xs)]);
        expect(await uploads(ref)).toEqual([]);
        expect(logged.join('\n')).toMatch(/aborted 1 other multipart upload\(s\) of s3:\/\/.*\(a retried creation's\)/);
      } finally {
        server.fault = () => undefined;
      }
    });
  }

  it('through a job with checkpoints: every record committed exactly once, one file per subtask (rolling by age is longer than the job), no upload left', async () => {
    const ref = out();
    const work = mkdtempSync(join(tmpdir(), 'weir-s3-sink-'));
    try {
      const count = 3000;
      // 1 s of input with a checkpoint every 30 ms: several checkpoints even on a loaded machine.
      const r = await runInline(
        (env) => {
          env.fromGenerator((i) => ({ i }), { count, ratePerSecond: 3_000 }).sinkTo(new ExactlyOnceFileSink<{ i: number }>(ref));
        },
        { parallelism: 2, checkpoint: { interval: 30, dir: join(work, 'chk') }, s3: settings },
      );
      expect(r.checkpoints.counts.completed).toBeGreaterThanOrEqual(3);
      const objs = await objects(ref);
      expect(objs.size).toBe(2);
      const got = [...objs.values()].flatMap((t) => t.split('\n').filter((l) => l !== '')).sort();
      expect(got).toEqual(Array.from({ length: count }, (_, i) => JSON.stringify({ i })).sort());
      expect(await uploads(ref)).toEqual([]);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('through a job without checkpoints: everything is committed at the end of input once its parts are up (before: parts still uploading were found missing, the whole output lost)', async () => {
    const ref = out();
    const count = 20_000;
    const logs: string[] = [];
    const r = await runInline(
      (env) => {
        env.fromGenerator((i) => ({ i, pad: 'x'.repeat(200) }), { count }).sinkTo(new ExactlyOnceFileSink<{ i: number }>(ref));
      },
      { parallelism: 1, s3: settings, log: (l) => logs.push(l) },
    );
    expect(r.status).toBe('FINISHED');
    const got = [...(await objects(ref)).values()].flatMap((t) => t.split('\n').filter((l) => l !== ''));
    expect(got.length, logs.filter((l) => /lost/.test(l)).join('\n')).toBe(count);
    expect(await uploads(ref)).toEqual([]);
  });

  it('a slow store pushes back on the task instead of failing it: unavailable at 8 parts waiting, woken when an upload ends, every line committed', async () => {
    const ref = out();
    let wakes = 0;
    const c = { ...ctx(), wake: () => void wakes++ };
    const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings, maxPartSize: 256 * MiB });
    const w = sink.createWriter(c);
    // Every part upload takes 400 ms: the writer's input outruns the store.
    server.fault = (r) => (r.method === 'PUT' && r.query.includes('partNumber') ? { kind: 'delay', ms: 400 } : undefined);
    const all: string[] = [];
    try {
      // As a task does: a batch only while the writer has room (bounded: 12 parts' worth at most).
      while (w.isAvailable!() && all.length < 12 * (PART / 1024)) {
        const batch = lines(all.length, 256);
        write(w, batch);
        all.push(...batch);
      }
      expect(w.isAvailable!()).toBe(false);
      expect(all.length * 1024).toBeGreaterThanOrEqual(8 * PART); // 8 parts wait: it pushes back there, it does not fail
      expect(all.length * 1024).toBeLessThan(10 * PART);
      expect(wakes).toBe(0);
      for (let i = 0; i < 200 && wakes === 0; i++) await new Promise((res) => setTimeout(res, 25));
      expect(wakes).toBe(1);
      expect(w.isAvailable!()).toBe(true);
      write(w, lines(all.length, 256));
      all.push(...lines(all.length, 256));
    } finally {
      server.fault = () => undefined;
    }
    w.finish?.();
    const c1 = w.prepareCommit(1);
    await w.whenPrepared?.(1);
    await sink.createCommitter(ctx()).commit(c1, 1);
    const objs = await objects(ref);
    expect([...objs.values()].join('')).toBe(body(all));
    w.close?.();
  });

  it('a part upload that keeps failing declines the checkpoint (whenPrepared rejects, naming the output) and fails the writer at its next call', async () => {
    const ref = out();
    const sink = new ExactlyOnceFileSink<string>(ref, { s3: settings });
    const w = sink.createWriter(ctx());
    server.fault = (r) => (r.method === 'PUT' && r.query.includes('partNumber') ? { kind: 'fail', status: 503 } : undefined);
    try {
      write(w, lines(0, 5 * 1024 + 1));
      w.prepareCommit(1);
      await expect(w.whenPrepared?.(1)).rejects.toThrow(new RegExp(`exactly-once file sink ${ref}: an upload failed: s3 upload part .*HTTP 503`));
      expect(() => w.write(['x'], ts(1))).toThrow(/an upload failed/);
    } finally {
      server.fault = () => undefined;
      w.close?.();
    }
  });

  it(`records are encoded straight into whole parts, cut anywhere (inside a multi-byte character's record, a record larger than a part); every part but an upload's last is exactly the part size; a restore from any checkpoint ends the output there (seed ${SEED})`, async () => {
    const rnd = seeded(SEED);
    const ref = out();
    const options = { s3: settings, maxPartSize: 12 * MiB };
    const sink = new ExactlyOnceFileSink<unknown>(ref, options);
    const w = sink.createWriter(ctx());
    const c = sink.createCommitter(ctx());
    const reference = jsonLines().open('reference');
    const expected: Buffer[] = [];
    let expectedBytes = 0;
    const checkpoints: { id: number; list: FileCommittable[]; bytes: number }[] = [];
    let id = 0;
    /** A barrier; the checkpoint completes only if a restore picks it (or a later one), below. */
    const checkpoint = async () => {
      const list = w.prepareCommit(++id);
      await w.whenPrepared?.(id);
      checkpoints.push({ id, list, bytes: expectedBytes });
    };
    while (expectedBytes < 26 * MiB) {
      const values = Array.from({ length: 1 + Math.floor(rnd() * 300) }, () => {
        const r = rnd();
        const text = randomText(rnd, r < 0.0005 ? PART + Math.floor(rnd() * PART) : Math.floor(rnd() * (r < 0.5 ? 80 : 9000)));
        return rnd() < 0.5 ? text : { text, n: Math.floor(rnd() * 1e9) };
      });
      w.write(values, ts(values.length));
      const bytes = Buffer.from(reference.encode(values, () => {})!);
      expected.push(bytes);
      expectedBytes += bytes.byteLength;
      if (rnd() < 0.25 || id === 0) await checkpoint();
    }
    if (checkpoints.length < 2) await checkpoint();
    expect(checkpoints.length).toBeGreaterThan(1);
    // Checkpoints up to k complete (each committed), the process dies, a new one restores k.
    // (It dies once its requests have answered: s3rver's ListParts, emulated in test/helpers, cannot list a part being written.)
    await w.whenPrepared?.(id);
    const written = server.requests.length;
    const k = checkpoints[Math.floor(rnd() * checkpoints.length)]!;
    for (const x of checkpoints.slice(0, checkpoints.indexOf(k) + 1)) await c.commit(x.list, x.id);
    const restored = new ExactlyOnceFileSink<unknown>(ref, options);
    await restored.recover(ctx(new ManualClock(0), 0, 1, k.id), k.id, k.list, k.list);
    const objs = await objects(ref);
    const byCounter = [...objs.keys()].sort((x, y) => Number(/-(\d+)\.jsonl$/.exec(x)![1]) - Number(/-(\d+)\.jsonl$/.exec(y)![1]));
    expect(byCounter.length).toBeGreaterThanOrEqual(1);
    const got = Buffer.concat(await Promise.all(byCounter.map(async (name) => Buffer.from((await store.getObject(server.bucket, `${prefixOf(ref)}/${name}`))!))));
    const want = Buffer.concat(expected).subarray(0, k.bytes);
    expect(got.byteLength, `restored checkpoint ${k.id} of ${checkpoints.length}, seed ${SEED}`).toBe(want.byteLength);
    expect(got.equals(want), `restored checkpoint ${k.id}, seed ${SEED}`).toBe(true);
    expect(await uploads(ref)).toEqual([]);
    // Every part the writer uploaded was exactly the part size, but an upload's last one (a closed file's end).
    const sizes = new Map<string, Map<number, number>>();
    for (const r of server.requests.slice(0, written)) {
      const q = new URLSearchParams(r.query);
      if (r.method !== 'PUT' || !r.path.startsWith(`/${server.bucket}/${prefixOf(ref)}/`) || q.get('partNumber') === null) continue;
      const m = sizes.get(q.get('uploadId')!) ?? new Map<number, number>();
      m.set(Number(q.get('partNumber')), r.bytes);
      sizes.set(q.get('uploadId')!, m);
    }
    expect(sizes.size).toBeGreaterThanOrEqual(1);
    for (const m of sizes.values()) {
      const last = Math.max(...m.keys());
      for (const [n, bytes] of m) if (n !== last) expect(bytes, `part ${n}, seed ${SEED}`).toBe(PART);
    }
    w.close?.();
  });

  it('a write that fails part-way (the format function throws) leaves the writer unusable: the next write and the next barrier fail too', () => {
    const ref = out();
    const sink = new ExactlyOnceFileSink<number>(ref, { s3: settings, format: (v) => {
      if (v === 3) throw new Error('no threes');
      return String(v);
    } });
    const w = sink.createWriter(ctx());
    w.write([1, 2], ts(2));
    expect(() => w.write([4, 3, 5], ts(3))).toThrow(/no threes/);
    expect(() => w.write([6], ts(1))).toThrow(/an earlier write failed part-way \(.*no threes/);
    expect(() => w.prepareCommit(1)).toThrow(/an earlier write failed part-way/);
    w.close?.();
  });

  it('S3 settings are checked when the sink is built', () => {
    expect(() => new ExactlyOnceFileSink(`s3://${server.bucket}/x`, { s3: { endpoint: 'ftp://nope' } })).toThrow(/S3 endpoint must be an http/);
    expect(() => new ExactlyOnceFileSink('s3://B/x')).toThrow(/not an S3 bucket name/);
    expect(new ExactlyOnceFileSink(`s3://${server.bucket}/x`).outputDir).toBeUndefined();
    expect(new ExactlyOnceFileSink(`s3://${server.bucket}/x`).storage).toBeInstanceOf(S3SinkStorage);
  });

  it('a task\'s view of the storage (forTask) has a client of its own signal and shares everything else with the storage', () => {
    const base = new S3SinkStorage(`s3://${server.bucket}/view`, server.settings);
    const plain: SinkContext = { subtaskIndex: 0, parallelism: 1, attemptNumber: 0, now: () => 0, restoredCheckpointId: undefined, log: () => {} };
    expect(base.forTask(plain)).toBe(base);
    const view = base.forTask({ ...plain, signal: new AbortController().signal });
    expect(view).not.toBe(base);
    expect(view.store).not.toBe(base.store);
    expect(view.store.counts).toBe(base.store.counts);
    // What one learns the other knows: the same maps, whichever side writes.
    const key = 'view/part-0-r-0.jsonl';
    const known = view.track(key);
    expect((base as unknown as { known: Map<string, unknown> }).known.get(key)).toBe(known);
    view.liveRuns.add('r');
    expect(base.liveRuns.has('r')).toBe(true);
    view.liveRuns.delete('r');
    // The view's only own field is its client: a method that assigned a field on it would make one.
    expect(Object.getOwnPropertyNames(view)).toEqual(['store']);
  });
});
