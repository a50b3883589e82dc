/**
 * S3 answers that are not what S3 sends (a proxy's or gateway's: a 200 with an empty or HTML
 * body, a 404 to a HEAD, a wrong Content-Length), injected by a proxy in front of s3rver. Each
 * fails the operation, retried by its caller; none is taken for "nothing there" or "corrupt",
 * which deleted live checkpoint files, deleted or skipped the newest good checkpoint, or
 * aborted a sink's upload of committed records. Found by a read-only audit; each test fails on
 * the code before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { S3CheckpointStorage } from '../../src/checkpoint/s3/s3-storage.ts';
import { resolveS3Config } from '../../src/checkpoint/s3/settings.ts';
import { childReference } from '../../src/checkpoint/names.ts';
import type { CheckpointMetadata } from '../../src/checkpoint/metadata.ts';
import type { SinkContext } from '../../src/core/sink.ts';
import { ExactlyOnceFileSink, type FileCommittable } from '../../src/index.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';
import { startProxy, type Rule } from '../helpers/fault-proxy.ts';
import { checkpoint, JOB, metadata } from './storage-contract.ts';

const BUCKET = 'bad-replies';
let server: S3TestServer;
let proxy: Awaited<ReturnType<typeof startProxy>>;
beforeAll(async () => {
  server = await startS3Server({ bucket: BUCKET });
  proxy = await startProxy(server.endpoint);
});
afterAll(async () => {
  await proxy.close();
  await server.close();
});

const viaProxy = () => resolveS3Config({ ...server.settings, endpoint: proxy.endpoint, retryMaxAttempts: 1 });
/** Applies `rule` to the first request it matches only. */
function once(rule: Rule): Rule {
  let used = false;
  return (r) => {
    if (used) return undefined;
    const act = rule(r);
    if (act !== undefined) used = true;
    return act;
  };
}
const isListing = (url: string) => url.includes('list-type=2');
const html = { kind: 'reply' as const, status: 200, body: '<html><body>Gateway OK</body></html>', headers: { 'content-type': 'text/html' } };

describe('S3 listings', () => {
  it('a 200 whose body is not a listing of what was asked fails the listing (before: read as no objects)', async () => {
    const store = new S3ObjectStore(viaProxy());
    try {
      for (let i = 0; i < 3; i++) await store.putObject(BUCKET, `p/k${i}`, new Uint8Array(1));
      expect((await store.list(BUCKET, 'p/')).objects).toHaveLength(3);
      for (const body of ['', '<html><body>Gateway OK</body></html>', '<?xml version="1.0"?><Foo/>']) {
        proxy.rule = (r) => (r.method === 'GET' && isListing(r.url) ? { kind: 'reply', status: 200, body } : undefined);
        await expect(store.list(BUCKET, 'p/')).rejects.toThrow(/^s3 list s3:\/\/bad-replies\/p\/: the answer is not a listing of what was asked/);
      }
      // A page said to be cut short without the marker of the next: failed, not the first page taken for all.
      proxy.rule = (r) => (r.method === 'GET' && isListing(r.url)
        ? { kind: 'rewrite', fn: (status, headers, b) => ({ status, headers, body: Buffer.from(b.toString().replace('<IsTruncated>false</IsTruncated>', '<IsTruncated>true</IsTruncated>')) }) }
        : undefined);
      await expect(store.list(BUCKET, 'p/')).rejects.toThrow(/says there is more but gives no marker/);
    } finally {
      proxy.rule = () => undefined;
      await store.close();
    }
  });

  it('the shared-file collector keeps every file when the job directory\'s listing is a foreign 200 (before: it read no checkpoint and deleted the live chain)', async () => {
    const s = S3CheckpointStorage.create(`s3://${BUCKET}/gc-shared`, viaProxy());
    try {
      await s.initJob(JOB);
      const shared = childReference(s.jobDir(JOB), 'shared');
      for (const n of ['b1', 'd2']) await s.files.writeAtomically(childReference(shared, n), new TextEncoder().encode('state'));
      const loc = await s.initCheckpoint(JOB, 2);
      const m = metadata(2, []);
      const chain = [{ name: 'b1', size: 5, checkpointId: 1, kind: 'base' }, { name: 'd2', size: 5, checkpointId: 2, kind: 'delta' }];
      await loc.finalize({ ...m, operators: [{ ...m.operators[0]!, parallelism: 1, subtasks: [{ subtask: 0, keyGroupRange: { start: 0, end: 127 }, stateSize: 5, chain }] }] } as CheckpointMetadata);
      expect((await s.verify(loc.reference)).ok).toBe(true);
      proxy.rule = once((r) => (r.method === 'GET' && isListing(r.url) && r.url.endsWith(`prefix=gc-shared%2F${JOB}%2F`) ? html : undefined));
      await expect(s.collectSharedGarbage(JOB)).rejects.toThrow(/not a listing of what was asked/);
      proxy.rule = () => undefined;
      expect((await s.verify(loc.reference)).ok).toBe(true);
      expect((await s.files.list(shared)).map((e) => e.name)).toEqual(['b1', 'd2']);
    } finally {
      proxy.rule = () => undefined;
      await s.close();
    }
  });
});

describe('S3 sizes asked twice before a checkpoint is condemned', () => {
  it('a 404 to the HEAD of a checkpoint\'s metadata does not make it garbage (before: the newest good checkpoint was deleted)', async () => {
    const s = S3CheckpointStorage.create(`s3://${BUCKET}/gc-head`, viaProxy());
    try {
      await s.initJob(JOB);
      await checkpoint(s, 1);
      await checkpoint(s, 2);
      proxy.rule = once((r) => (r.method === 'HEAD' && r.url.includes('chk-2/_metadata') ? { kind: 'reply', status: 404, body: '' } : undefined));
      expect(await s.collectGarbage(JOB)).toBe(0);
      proxy.rule = () => undefined;
      expect((await s.completed(JOB)).map((c) => c.metadata.checkpointId)).toEqual([1, 2]);
    } finally {
      proxy.rule = () => undefined;
      await s.close();
    }
  });

  it('one wrong answer about a state file fails the verification instead of skipping the newest good checkpoint as corrupt (before: chk-1 restored, chk-2 abandoned)', async () => {
    const s = S3CheckpointStorage.create(`s3://${BUCKET}/verify`, viaProxy());
    try {
      await s.initJob(JOB);
      await checkpoint(s, 1);
      await checkpoint(s, 2);
      const wrong: [string, Rule][] = [
        ['a 404 without a body', (r) => (r.method === 'HEAD' && r.url.includes('chk-2/op-keyed-0') ? { kind: 'reply', status: 404, body: '' } : undefined)],
        ['a wrong Content-Length', (r) => (r.method === 'HEAD' && r.url.includes('chk-2/op-keyed-0') ? { kind: 'rewrite', fn: (st, h, b) => ({ status: st, headers: { ...h, 'content-length': '3' }, body: b }) } : undefined)],
      ];
      for (const [what, rule] of wrong) {
        proxy.rule = once(rule);
        const logs: string[] = [];
        const e = await s.newestCompleted(JOB, (l) => logs.push(l)).then(() => undefined, (x: Error) => x);
        expect(e?.message, what).toMatch(/the storage gave two answers for the size of .*chk-2\/op-keyed-0\.state: (no such file|3), then 24/);
        expect(logs, what).toEqual([]);
        proxy.rule = () => undefined;
        expect((await s.newestCompleted(JOB))?.metadata.checkpointId, what).toBe(2);
      }
    } finally {
      proxy.rule = () => undefined;
      await s.close();
    }
  });
});

describe('the S3 file sink restoring an open part', () => {
  it('a foreign 200 to ListParts fails the restore, the upload kept, and the next restore commits the records (before: declared lost and its upload aborted)', async () => {
    const logged: string[] = [];
    const ctx = (restored?: number): SinkContext => ({ subtaskIndex: 0, parallelism: 1, attemptNumber: restored === undefined ? 0 : 1, now: () => 0, restoredCheckpointId: restored, log: (l) => logged.push(l) });
    const settings = { ...server.settings, endpoint: proxy.endpoint, uploadPartSize: 5 * 1024 * 1024, retryMaxAttempts: 1 };
    const line = 'x'.repeat(1000);
    const sink = new ExactlyOnceFileSink<string>(`s3://${BUCKET}/sink`, { s3: settings, format: (v: unknown) => String(v) });
    const w = sink.createWriter(ctx());
    w.write(new Array(6000).fill(line), new Array(6000).fill(0)); // ~6 MB: part 1 uploaded, the rest the open part's tail
    const committables = w.prepareCommit(1) as FileCommittable[];
    await w.whenPrepared?.(1);
    expect(committables.map((c) => [c.s3?.kind, c.s3?.parts])).toEqual([['open', 1]]);
    // A new attempt restores checkpoint 1; its ListParts gets an empty 200.
    proxy.rule = once((r) => (r.method === 'GET' && r.url.includes('uploadId=') && !r.url.includes('partNumber') ? { kind: 'reply', status: 200, body: '' } : undefined));
    const restoring = new ExactlyOnceFileSink<string>(`s3://${BUCKET}/sink`, { s3: settings, format: (v: unknown) => String(v) });
    await expect(restoring.recover(ctx(1), 1, committables, committables)).rejects.toThrow(/list parts of .*not a listing of what was asked/);
    proxy.rule = () => undefined;
    expect(logged.filter((l) => /lost|aborted/.test(l))).toEqual([]);
    // The restart's restore completes the file: every record there.
    const again = new ExactlyOnceFileSink<string>(`s3://${BUCKET}/sink`, { s3: settings, format: (v: unknown) => String(v) });
    await again.recover(ctx(1), 1, committables, committables);
    const store = new S3ObjectStore(resolveS3Config(server.settings));
    try {
      const parts = (await store.list(BUCKET, 'sink/')).objects.filter((o) => o.key.includes('part-'));
      expect(parts).toHaveLength(1);
      const body = Buffer.from((await store.getObject(BUCKET, parts[0]!.key))!).toString('utf8');
      expect(body.split('\n').filter((l) => l !== '')).toHaveLength(6000);
    } finally {
      await store.close();
    }
  });
});
