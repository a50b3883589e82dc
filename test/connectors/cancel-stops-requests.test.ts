/**
 * A cancelled job's S3 requests stop with it: none reaches the store after runJob answered
 * CANCELED, also when one was stuck past the cancel's wait (SinkContext.signal, fired by the
 * commit sink SINK_IO_ABORT_MS after the cancel; S3ObjectStore.withSignal).
 *
 * s3rver holds one kind of request of the job's prefix without answering (never within the
 * test), with a request timeout of 500 ms and 100 attempts, so the SDK keeps retrying it for
 * minutes (its deadline: attempts × (timeout + the longest backoff)). Before: the cancel waited
 * CANCEL_IO_WAIT_MS, gave up ("still had a commit or upload under way"), answered CANCELED, and
 * the retries went on arriving at the store after it: a stuck upload of the writer, or a stuck
 * commit of a completed checkpoint, outlived the attempt that the user was told had ended.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { defineJob, ExactlyOnceFileSink, runJob } from '../../src/index.ts';
import { startS3Server, type S3Request, type S3TestServer } from '../helpers/s3rver.ts';

let server: S3TestServer;
beforeAll(async () => {
  server = await startS3Server();
});
afterAll(async () => {
  await server?.close();
});

/** Held this long: past the test, so only the client can end the request. */
const HOLD_MS = 120_000;
/** After CANCELED, how long the test watches for requests that arrive late. */
const WATCH_MS = 3_000;

async function cancelWhileStuck(prefix: string, stuck: (r: S3Request) => boolean): Promise<{ late: string[]; held: number; logs: string[] }> {
  const ref = `s3://${server.bucket}/${prefix}`;
  const work = mkdtempSync(join(tmpdir(), 'weir-cancel-stop-'));
  const held: { r: S3Request; at: number }[] = [];
  const seen: { r: S3Request; at: number }[] = [];
  server.fault = (r) => {
    if (!r.path.startsWith(`/${server.bucket}/${prefix}/`)) return undefined;
    seen.push({ r, at: Date.now() });
    if (!stuck(r)) return undefined;
    held.push({ r, at: Date.now() });
    return { kind: 'delay', ms: HOLD_MS };
  };
  const logs: string[] = [];
  try {
    const job = defineJob((env) => {
      env.fromGenerator((i) => ({ i }), { count: 1_000_000, ratePerSecond: 5_000 }).uid('ids')
        .sinkTo(new ExactlyOnceFileSink<{ i: number }>(ref, { rolloverInterval: 200 })).uid('sink');
    });
    const ac = new AbortController();
    const run = runJob(job, {
      workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal,
      s3: { ...server.settings, requestTimeout: '500 ms', retryMaxAttempts: 100 },
      checkpoint: { interval: 200, dir: join(work, 'chk') },
    });
    // The premise: a request is stuck, and the SDK has tried it again at least once.
    for (let k = 0; k < 3_000 && held.length < 2; k++) await new Promise((r) => setTimeout(r, 10));
    expect(held.length, 'the premise: a held request was retried').toBeGreaterThanOrEqual(2);
    ac.abort();
    const result = await run;
    expect(result.status).toBe('CANCELED');
    const canceledAt = Date.now();
    await new Promise((r) => setTimeout(r, WATCH_MS));
    const late = seen.filter((s) => s.at > canceledAt).map((s) => `${s.r.method} ${s.r.path}?${s.r.query}`);
    console.log(`${prefix}: ${held.length} held attempts, ${seen.length} requests in all; after CANCELED: ${late.length} (${late.slice(0, 3).join(', ')})`);
    return { late, held: held.length, logs };
  } finally {
    server.fault = () => undefined;
    rmSync(work, { recursive: true, force: true });
  }
}

it('a writer\'s stuck upload is not retried after CANCELED (before: its retries kept reaching the store)', async () => {
  // Every creation of a multipart upload hangs: the writer's first part never goes up.
  const { late } = await cancelWhileStuck('stuck-upload', (r) => r.method === 'POST' && r.query.includes('uploads'));
  expect(late, 'requests that reached the store after CANCELED').toEqual([]);
}, 60_000);

it('a stuck commit of a completed checkpoint is not retried after CANCELED (before: its retries kept reaching the store)', async () => {
  // The commit record PUT hangs: the first checkpoint's commit never ends.
  const { late } = await cancelWhileStuck('stuck-commit', (r) => r.method === 'PUT' && r.path.includes('/.weir-committed-'));
  expect(late, 'requests that reached the store after CANCELED').toEqual([]);
}, 60_000);
