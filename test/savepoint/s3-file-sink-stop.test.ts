/**
 * The exactly-once file sink on S3 (s3rver) at a stop-with-savepoint without drain: as a local
 * directory's, everything written before the savepoint is visible once the job has stopped (its
 * open part rolled at the stop's barrier and completed by the stop's commit), no multipart
 * upload is left in progress, a restore from the savepoint adds the rest exactly once, and a
 * fresh start on the prefix is refused (committed output).
 * Before: the stop's commit held only an open part, so nothing was visible (0 of the records),
 * the records lived in an open upload and the savepoint's tail, no commit record was written, and
 * a fresh start on the prefix was let through and aborted the upload: the savepoint's records lost.
 *
 * Fixture: test/fixtures/jobs/ids-to-files.ts (ids from a generator into the sink, rolling 60 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { resolveS3Config } from '../../src/checkpoint/s3/settings.ts';
import { runJob } from '../../src/index.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';
import { fixture, producedIn, sleep, start, stopWithSavepoint, tempDir, waitRunning } from './helpers.ts';

const JOB = fixture('ids-to-files.ts');
const N = 20_000;
const RATE = 4000;
/** 2 KB records: each subtask fills a few 5 MiB parts before the stop (multipart uploads in progress, not only tails). */
const PAD = '2000';
const tmp = tempDir('sp-s3-sink');
let server: S3TestServer;
let store: S3ObjectStore;

beforeAll(async () => {
  server = await startS3Server();
  store = new S3ObjectStore(resolveS3Config(server.settings));
});
afterAll(async () => {
  await store?.close();
  await server?.close();
  tmp.cleanup();
});

/** The ids in the visible part files under `prefix`, sorted (duplicates kept). */
async function visibleIds(prefix: string): Promise<number[]> {
  const ids: number[] = [];
  for (const o of (await store.list(server.bucket, `${prefix}/part-`)).objects) {
    const text = Buffer.from((await store.getObject(server.bucket, o.key))!).toString('utf8');
    for (const l of text.split('\n')) if (l !== '') ids.push((JSON.parse(l) as { id: number }).id);
  }
  return ids.sort((a, b) => a - b);
}

describe('the S3 file sink at a stop-with-savepoint', () => {
  it('makes everything before the savepoint visible and leaves no upload open; the restore adds the rest exactly once; a fresh start is refused', async () => {
    const s3 = server.settings;
    const prefix = 'stop-out';
    const out = `s3://${server.bucket}/${prefix}`;
    const h = await start(JOB, { workers: 2, parallelism: 2, args: [out, String(N), String(RATE), PAD], s3, checkpoint: { interval: 200, dir: tmp.fresh('chk') } });
    await waitRunning(h);
    await sleep(2500);
    const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
    const first = await h.result;
    expect(first.status, first.error?.message).toBe('FINISHED');
    const produced = [...(await producedIn(sp, 'src', N))].sort((a, b) => a - b);
    expect(produced.length, 'the premise: the job stopped part-way').toBeGreaterThan(0);
    expect(produced.length).toBeLessThan(N);
    expect(server.requests.some((r) => r.method === 'PUT' && r.query.includes('partNumber=')), 'the premise: parts were uploaded').toBe(true);
    expect(await store.listMultipartUploads(server.bucket, `${prefix}/`), 'no upload left in progress').toEqual([]);
    expect(await visibleIds(prefix), 'every record before the savepoint visible, once').toEqual(produced);

    // A fresh start on the prefix: refused (the stop committed output there).
    const fresh = await runJob(JOB, { workers: 1, parallelism: 2, args: [out, String(N), '0', PAD], s3, stdout: () => {}, log: () => {} }).then(
      (r) => r.error?.message ?? `ran: ${r.status}`,
      (e: Error) => e.message,
    );
    expect(fresh).toMatch(/already committed the output of checkpoint \d+, but the job starts fresh/);

    const second = await runJob(JOB, { workers: 2, parallelism: 3, args: [out, String(N), '0', PAD], from: sp, s3, stdout: () => {}, log: () => {} });
    expect(second.status, second.error?.message).toBe('FINISHED');
    expect(await visibleIds(prefix), 'every id exactly once across the stop and the restore').toEqual(Array.from({ length: N }, (_, i) => i));
  }, 120_000);
});
