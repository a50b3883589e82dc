/**
 * Checkpoint storage on S3, against s3rver (a real S3 API server in this process): the storage
 * contract every implementation keeps, multipart uploads of large state files, and what it
 * does when the server fails, is slow or is gone: clear STORAGE errors naming the place, never
 * a credential, and a checkpoint that does not exist unless its metadata was written last.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childReference, metadataReference } from '../../src/checkpoint/names.ts';
import { S3CheckpointStorage } from '../../src/checkpoint/s3/s3-storage.ts';
import { S3FileSystem } from '../../src/checkpoint/s3/s3-file-system.ts';
import { parseS3Reference, resolveS3Config, type S3Settings } from '../../src/checkpoint/s3/settings.ts';
import { errorCode } from '../../src/core/errors.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';
import { checkpoint, JOB, storageContract } from './storage-contract.ts';

let server: S3TestServer;
const opened: S3CheckpointStorage[] = [];
let prefixes = 0;

beforeAll(async () => { server = await startS3Server(); });
afterAll(async () => {
  for (const s of opened) await s.close();
  await server?.close();
});

/** A storage under a fresh prefix of the test bucket. */
function make(settings: S3Settings = {}): S3CheckpointStorage {
  const s = S3CheckpointStorage.create(`s3://${server.bucket}/run-${++prefixes}/chk`, resolveS3Config({ ...server.settings, ...settings }));
  opened.push(s);
  return s;
}

storageContract([['s3 (s3rver)', () => make()]]);

describe('S3 storage', () => {
  it('a state file larger than a part is a multipart upload, invisible until closed, read back whole and by range', async () => {
    const s = make({ uploadPartSize: 5 * 1024 * 1024 });
    const loc = await s.initCheckpoint(JOB, 1);
    const out = await s.workerView.resolveLocation(loc.reference).createStateStream('big.state');
    const chunk = new Uint8Array(1024 * 1024);
    for (let i = 0; i < 12; i++) await out.write([chunk.fill(i)]);
    const file = childReference(loc.reference, 'big.state');
    // Two parts are up, the tail is buffered; no object under the key yet.
    await expect(s.workerView.openState(file)).rejects.toThrow(/does not exist/);
    expect(server.requests.filter((r) => r.query.includes('partNumber=')).length).toBeGreaterThanOrEqual(2);
    expect(await out.close()).toBe(12 * 1024 * 1024);
    const h = await s.workerView.openState(file);
    expect(h.size).toBe(12 * 1024 * 1024);
    expect([...(await h.read(5 * 1024 * 1024 - 1, 2))]).toEqual([4, 5]);
    expect([...(await h.read(12 * 1024 * 1024 - 1, 1))]).toEqual([11]);
    await h.close();
  });

  it('a multipart completion whose answer was lost is retried by the client; the retry\'s NoSuchUpload is success when the object is whole (before: the state file failed)', async () => {
    const s = make({ uploadPartSize: 5 * 1024 * 1024, retryMaxAttempts: 3 });
    const loc = await s.initCheckpoint(JOB, 1);
    const out = await s.workerView.resolveLocation(loc.reference).createStateStream('lost-answer.state');
    for (let i = 0; i < 6; i++) await out.write([new Uint8Array(1024 * 1024).fill(i)]);
    let completes = 0;
    server.fault = (r) => (r.method === 'POST' && r.query.includes('uploadId=') && completes++ === 0 ? { kind: 'lose-answer' } : undefined);
    try {
      expect(await out.close()).toBe(6 * 1024 * 1024);
    } finally {
      server.fault = () => undefined;
    }
    expect(completes).toBe(2);
    const h = await s.workerView.openState(childReference(loc.reference, 'lost-answer.state'));
    expect(h.size).toBe(6 * 1024 * 1024);
    expect([...(await h.read(6 * 1024 * 1024 - 1, 1))]).toEqual([5]);
    await h.close();
  });

  it('a small state file is one PUT; the metadata is the last PUT of a checkpoint', async () => {
    const s = make();
    const before = server.requests.length;
    const ref = await checkpoint(s, 1, 3);
    const puts = server.requests.slice(before).filter((r) => r.method === 'PUT');
    const { key } = parseS3Reference(ref);
    expect(puts.map((r) => r.path.slice(`/${server.bucket}/`.length))).toEqual([
      `${key}/`, `${key}/op-keyed-0.state`, `${key}/op-keyed-1.state`, `${key}/op-keyed-2.state`, `${key}/_metadata`,
    ]);
  });

  it('throttling and 5xx are retried with backoff: a request failing once succeeds', async () => {
    const s = make({ retryMaxAttempts: 3 });
    let failures = 0;
    server.fault = (r) => (r.method === 'PUT' && r.path.endsWith('/_metadata') && failures++ < 1 ? { kind: 'fail', status: 503 } : undefined);
    try {
      const ref = await checkpoint(s, 1);
      expect((await s.verify(ref)).ok).toBe(true);
      expect(failures).toBe(2);
    } finally {
      server.fault = () => undefined;
    }
  });

  it('a request failing every attempt: finalize rejects with STORAGE naming the object, and there is no checkpoint', async () => {
    const s = make({ retryMaxAttempts: 2 });
    server.fault = (r) => (r.method === 'PUT' && r.path.endsWith('/_metadata') ? { kind: 'fail', status: 500 } : undefined);
    try {
      const e = await checkpoint(s, 1).catch((x: unknown) => x);
      expect(errorCode(e)).toBe('STORAGE');
      expect((e as Error).message).toMatch(/^s3 put s3:\/\/weir-test\/run-\d+\/chk\/a1b2c3d4e5f60718293a4b5c6d7e8f90\/chk-1\/_metadata failed: .*HTTP 500.*\(after 2 attempts\)/);
      expect((e as Error).message).not.toMatch(/S3RVER/);
    } finally {
      server.fault = () => undefined;
    }
    expect(await s.completed(JOB)).toEqual([]);
    expect(await s.collectGarbage(JOB)).toBe(1);
  });

  it('a checkpoint the server fails to answer for is an error, never taken for absent: --from latest does not start fresh, garbage collection deletes nothing', async () => {
    const s = make({ retryMaxAttempts: 2 });
    const ref = await checkpoint(s, 1);
    // Reads of the metadata fail (GET and HEAD): taken for "no metadata", the job would start
    // fresh and write its output again, and the collector would delete a good checkpoint.
    server.fault = (r) => ((r.method === 'GET' || r.method === 'HEAD') && r.path.endsWith('/chk-1/_metadata') ? { kind: 'fail', status: 500 } : undefined);
    try {
      const e = await s.latest().catch((x: unknown) => x);
      expect(errorCode(e)).toBe('STORAGE');
      expect((e as Error).message).toMatch(/^cannot read s3:\/\/weir-test\/run-\d+\/chk\/.*\/chk-1\/_metadata: .*HTTP 500/);
      await expect(s.collectGarbage(JOB)).rejects.toThrow(/chk-1\/_metadata/);
    } finally {
      server.fault = () => undefined;
    }
    expect((await s.latest())?.path).toBe(ref);
  });

  it('a slow request times out (s3.request.timeout) and fails with STORAGE', async () => {
    const s = make({ requestTimeout: 300, retryMaxAttempts: 1 });
    server.fault = (r) => (r.method === 'PUT' && r.path.endsWith('/_metadata') ? { kind: 'delay', ms: 3000 } : undefined);
    try {
      const e = await checkpoint(s, 1).catch((x: unknown) => x);
      expect(errorCode(e)).toBe('STORAGE');
      expect((e as Error).message).toMatch(/_metadata failed: .*(Timeout|timed out|timeout)/i);
    } finally {
      server.fault = () => undefined;
    }
  });

  it('the server gone: a clear STORAGE error; back again, the same storage works', async () => {
    const s = make({ retryMaxAttempts: 2, requestTimeout: 1000 });
    await checkpoint(s, 1);
    await server.stop();
    try {
      const e = await checkpoint(s, 2).catch((x: unknown) => x);
      expect(errorCode(e)).toBe('STORAGE');
      expect((e as Error).message).toMatch(/s3 put s3:\/\/weir-test\/.*failed: .*ECONNREFUSED|connect/i);
    } finally {
      await server.start();
    }
    await checkpoint(s, 3);
    expect((await s.completed(JOB)).map((c) => c.metadata.checkpointId)).toEqual([1, 3]);
  });

  it('wrong credentials: the error says the request was refused and never shows the key or the secret', async () => {
    // s3rver checks the access key id (SigV4 signatures it does not verify).
    const s = make();
    const saved = [process.env.AWS_ACCESS_KEY_ID, process.env.AWS_SECRET_ACCESS_KEY];
    process.env.AWS_ACCESS_KEY_ID = 'AKIAWRONGWRONGWRONG1';
    process.env.AWS_SECRET_ACCESS_KEY = 'not-the-secret-0123456789';
    try {
      const e = await s.initJob(JOB).catch((x: unknown) => x);
      expect(errorCode(e)).toBe('STORAGE');
      expect((e as Error).message).toMatch(/checkpoint directory s3:\/\/weir-test\/run-\d+\/chk is not usable: s3 put .* failed: InvalidAccessKeyId, HTTP 403/);
      expect((e as Error).message).not.toContain('not-the-secret');
      expect((e as Error).message).not.toContain('AKIAWRONG');
    } finally {
      [process.env.AWS_ACCESS_KEY_ID, process.env.AWS_SECRET_ACCESS_KEY] = saved;
    }
  });

  it('a missing bucket: initJob fails clearly', async () => {
    const s = S3CheckpointStorage.create('s3://no-such-bucket/chk', resolveS3Config(server.settings));
    opened.push(s);
    await expect(s.initJob(JOB)).rejects.toThrow(/checkpoint directory s3:\/\/no-such-bucket\/chk is not usable: .*NoSuchBucket/);
  });

  it('bad references and settings are refused with one clear line', () => {
    expect(() => parseS3Reference('s3://Bad_Bucket/x')).toThrow(/"Bad_Bucket" is not an S3 bucket name/);
    expect(() => parseS3Reference('s3://bucket/a//b')).toThrow(/empty, "\." or "\.\." segments/);
    expect(() => resolveS3Config({ endpoint: 'ftp://x' })).toThrow(/S3 endpoint must be an http\(s\) URL/);
    expect(() => resolveS3Config({ endpoint: 'http://user:secret@127.0.0.1:9000' })).toThrow(/must not carry credentials/);
    expect(() => resolveS3Config({ endpoint: 'http://user:secret@127.0.0.1:9000' })).not.toThrow(/secret/);
    expect(() => resolveS3Config({ uploadPartSize: 1024 })).toThrow(/S3 upload part size/);
    expect(() => resolveS3Config({ retryMaxAttempts: 0 })).toThrow(/S3 request attempts/);
    expect(() => resolveS3Config({ bogus: 1 } as S3Settings)).toThrow(/unknown S3 setting "bogus"/);
  });

  it('discard deletes the metadata first, then every object of the checkpoint', async () => {
    const s = make();
    const ref = await checkpoint(s, 1);
    const before = server.requests.length;
    await s.discard(ref);
    const deletes = server.requests.slice(before).filter((r) => r.method === 'DELETE' || r.method === 'POST');
    expect(deletes[0]!.path.endsWith('/_metadata')).toBe(true);
    expect(await s.files.size(metadataReference(ref))).toBeUndefined();
    expect(await s.files.list(ref)).toEqual([]);
  });
});

describe('appended files on S3 (the checkpoint history)', () => {
  it('segments are folded every few appends; readers see every line once and in order, also after a fold cut short', async () => {
    const root = `s3://${server.bucket}/fold-${++prefixes}`;
    const files = new S3FileSystem(resolveS3Config(server.settings), undefined, { foldEvery: 3, maxAppendedBytes: 1 << 20 });
    const s = new S3CheckpointStorage(root, files);
    opened.push(s);
    await s.initJob(JOB);
    await Promise.all(Array.from({ length: 10 }, (_, i) => s.appendHistory(JOB, { id: i })));
    const h = await s.readHistory(JOB);
    expect(h.entries).toEqual(Array.from({ length: 10 }, (_, i) => ({ id: i })));
    const segmentsDir = `${parseS3Reference(s.jobDir(JOB)).key}/checkpoint-history.jsonl.segments/`;
    const names = (await files.store.list(server.bucket, segmentsDir)).objects.map((o) => o.key.slice(segmentsDir.length));
    // Three folds happened (after appends 3, 6 and 9): one folded segment and the 10th append.
    expect(names.length).toBe(2);
    expect(names[0]).toMatch(/~folded$/);
    // A fold cut short by a crash leaves covered segments behind: an old segment re-appearing
    // before the folded one is not read again.
    await files.store.putObject(server.bucket, `${segmentsDir}000000000000001-000000-00000000`, new TextEncoder().encode('{"id":-1}\n'));
    expect((await s.readHistory(JOB)).entries).toEqual(Array.from({ length: 10 }, (_, i) => ({ id: i })));
  });

  it('a folded history keeps its newest bytes, cut at a line end', async () => {
    const root = `s3://${server.bucket}/fold-${++prefixes}`;
    const files = new S3FileSystem(resolveS3Config(server.settings), undefined, { foldEvery: 4, maxAppendedBytes: 40 });
    const s = new S3CheckpointStorage(root, files);
    opened.push(s);
    for (let i = 0; i < 8; i++) await s.appendHistory(JOB, { id: i, pad: 'xx' });
    const h = await s.readHistory(JOB);
    expect(h.unreadable).toEqual([]);
    expect(h.entries.at(-1)).toEqual({ id: 7, pad: 'xx' });
    expect(h.entries.length).toBeLessThan(8);
    expect(h.entries.length).toBeGreaterThanOrEqual(1);
  });
});
