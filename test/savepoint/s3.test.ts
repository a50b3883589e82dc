/**
 * Savepoints on S3 (s3rver): a savepoint and a stop-with-savepoint to s3://, restored from S3
 * at another parallelism on worker threads; and still self-contained and relocatable: the
 * savepoint's objects copied to another bucket and to a local folder (as `aws s3 cp
 * --recursive` would), the original deleted, restore from either copy. Every window is
 * emitted exactly once across the stop and the resume.
 *
 * Fixture: test/fixtures/jobs/savepoint-windows.ts (1 s event-time windows counted per key).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { parseS3Reference, resolveS3Config } from '../../src/checkpoint/s3/settings.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import { runJob } from '../../src/index.ts';
import type { WindowCount } from '../fixtures/jobs/savepoint-windows.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';
import { fixture, savepoint, sleep, start, stopWithSavepoint, tempDir, waitRunning, weir } from './helpers.ts';

const JOB = fixture('savepoint-windows.ts');
const N = 6000;
/**
 * 24 s of input: both savepoints must complete while the job runs, and the first S3 request of
 * each worker thread loads the AWS SDK (1 to 2 s on a quiet machine, far more on a loaded one).
 */
const RATE = 250;
const tmp = tempDir('sp-s3');
let server: S3TestServer;
let store: S3ObjectStore;

beforeAll(async () => {
  server = await startS3Server({ extraBuckets: ['weir-copy'] });
  store = new S3ObjectStore(resolveS3Config(server.settings));
});
afterAll(async () => {
  await store?.close();
  await server?.close();
  tmp.cleanup();
});

const line = (w: WindowCount) => JSON.stringify({ key: w.key, start: w.start, count: w.count });
const ALL = (() => {
  const m = new Map<string, WindowCount>();
  for (let i = 0; i < N; i++) {
    const key = `k${i % 3}`;
    const start = Math.floor((i * 10) / 1000) * 1000;
    const w = m.get(`${key}@${start}`) ?? { key, start, count: 0 };
    w.count++;
    m.set(`${key}@${start}`, w);
  }
  return [...m.values()].map(line).sort();
})();

/** Every object below an s3:// reference, by its name relative to it (directory markers left out). */
async function objectsBelow(reference: string): Promise<Map<string, Uint8Array>> {
  const { bucket, key } = parseS3Reference(reference);
  const out = new Map<string, Uint8Array>();
  for (const o of (await store.list(bucket, `${key}/`)).objects) {
    if (o.key.endsWith('/')) continue;
    out.set(o.key.slice(key.length + 1), (await store.getObject(bucket, o.key))!);
  }
  return out;
}

describe('savepoints on S3', () => {
  it('savepoint and stop-with-savepoint to s3://; restore from S3 at p=3 on 2 workers; copies in another bucket and a local folder restore the same', async () => {
    const s3 = server.settings;
    const h = await start(JOB, { workers: 2, parallelism: 2, args: [tmp.fresh('out'), String(N), String(RATE)], s3 });
    await waitRunning(h);
    await sleep(200);
    const early = await savepoint(h, `s3://${server.bucket}/savepoints`).catch((e: Error) => {
      throw new Error(`${e.message}\n${h.logs.join('\n')}\n${server.requests.filter((r) => r.method !== 'GET' || (r.status ?? 0) >= 300).map((r) => `${r.method} ${r.path}?${r.query} -> ${r.status}`).join('\n')}`);
    });
    expect(early).toMatch(/^s3:\/\/weir-test\/savepoints\/savepoint-[0-9a-f]{6}-[0-9a-f]+$/);
    await sleep(300);
    const sp = await stopWithSavepoint(h, `s3://${server.bucket}/savepoints`);
    expect(sp).toMatch(/^s3:\/\/weir-test\/savepoints\/savepoint-/);
    expect(sp).not.toBe(early);
    const first = await h.result;
    expect(first.status, first.error?.message).toBe('FINISHED');
    const fired = first.collected<WindowCount>('windows').map(line);
    expect(fired.length).toBeLessThan(ALL.length);

    // Relocated: every object of the savepoint copied to another bucket and to a local folder,
    // then the original deleted; names inside are relative, so both copies restore.
    const objects = await objectsBelow(sp);
    expect([...objects.keys()]).toContain('_metadata');
    const copyRef = `s3://weir-copy/moved/${sp.split('/').pop()}`;
    const local = join(tmp.dir, 'local-copy');
    for (const [name, bytes] of objects) {
      await store.putObject('weir-copy', `${parseS3Reference(copyRef).key}/${name}`, bytes);
      mkdirSync(dirname(join(local, name)), { recursive: true });
      writeFileSync(join(local, name), bytes);
    }
    await storageResolver(undefined, resolveS3Config(s3)).forReference(sp).discard(sp);
    expect((await objectsBelow(sp)).size).toBe(0);

    for (const [from, parallelism] of [[copyRef, 3], [local, 1]] as const) {
      const second = await runJob(JOB, { workers: 2, parallelism, args: [tmp.fresh('out'), String(N), '0'], from, s3, stdout: () => {}, log: () => {} });
      expect(second.status, `${from}: ${second.error?.message}`).toBe('FINISHED');
      const both = [...fired, ...second.collected<WindowCount>('windows').map(line)].sort();
      expect(both, `every window exactly once across the stop and the resume from ${from}`).toEqual(ALL);
    }
    // weir state inspect reads a savepoint on S3 with the S3 flags (before: --s3-endpoint was an unknown option there).
    const inspected = await weir(tmp.fresh('home'), 'state', 'inspect', copyRef, '--s3-endpoint', server.endpoint, '--s3-path-style', '--json');
    expect(inspected.code, inspected.stderr).toBe(0);
    expect((JSON.parse(inspected.stdout) as { operators: { uid?: string }[] }).operators.map((o) => o.uid)).toContain('windows');
    // The early savepoint (a plain one, the job kept running) restores too.
    const fromEarly = await runJob(JOB, { workers: 1, parallelism: 2, args: [tmp.fresh('out'), String(N), '0'], from: early, s3, stdout: () => {}, log: () => {} });
    expect(fromEarly.status, fromEarly.error?.message).toBe('FINISHED');
  }, 180_000);
});
