/**
 * A cancelled job performs no commit after it is reported CANCELED (Flink: a cancelled task's
 * pending commits are not performed; the restore commits them from its checkpoint).
 *
 * The exactly-once file sink on s3rver, each commit record PUT delayed 400 ms while checkpoints
 * complete every 100 ms, so completed checkpoints' commits queue up behind each other. The job
 * is cancelled (runJob resolves CANCELED), the committed checkpoint read at once, and that very
 * checkpoint restored at once in the same process (what `--from` a retained checkpoint does).
 * Before: the cancelled attempt's queued commits went on after CANCELED (commit record PUTs
 * reached the store for seconds), moving the committed position past the checkpoint the user
 * had just been told was the last committed: the restore wrote their output a second time.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { defineJob, ExactlyOnceFileSink, runJob } from '../../src/index.ts';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { resolveS3Config } from '../../src/checkpoint/s3/settings.ts';
import { startS3Server, type S3Request, type S3TestServer } from '../helpers/s3rver.ts';

let server: S3TestServer;
beforeAll(async () => {
  server = await startS3Server();
});
afterAll(async () => {
  await server?.close();
});

it('a restore, at once, of the checkpoint committed when runJob answered CANCELED writes every id once (before: the cancelled job\'s queued commits ran on and 208 ids were written twice)', async () => {
  const prefix = 'cancel-fence';
  const ref = `s3://${server.bucket}/${prefix}`;
  const work = mkdtempSync(join(tmpdir(), 'weir-cancel-fence-'));
  const chk = join(work, 'chk');
  const count = 20_000;
  const recordPuts: S3Request[] = [];
  server.fault = (r) => {
    if (!(r.method === 'PUT' && r.path.startsWith(`/${server.bucket}/${prefix}/.weir-committed-`))) return undefined;
    recordPuts.push(r);
    return { kind: 'delay', ms: 400 };
  };
  const build = () => defineJob((env) => {
    env.fromGenerator((i) => ({ i }), { count, ratePerSecond: 4000 }).uid('ids')
      .sinkTo(new ExactlyOnceFileSink<{ i: number }>(ref, { rolloverInterval: 100 })).uid('sink');
  });
  const probe = new ExactlyOnceFileSink<{ i: number }>(ref, { s3: server.settings });
  const store = new S3ObjectStore(resolveS3Config(server.settings));
  try {
    const ac = new AbortController();
    const first = runJob(build(), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, signal: ac.signal, s3: server.settings, checkpoint: { interval: 100, dir: chk, retention: 'retain-on-cancel', numRetained: 1000 } });
    for (let k = 0; k < 1000 && recordPuts.filter((r) => r.done === true).length < 4; k++) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    expect((await first).status).toBe('CANCELED');
    const committed = (await probe.lastCommittedCheckpoint()) ?? 0;
    const jobDir = join(chk, readdirSync(chk).find((d) => !d.startsWith('.'))!);
    const retained = readdirSync(jobDir).filter((d) => /^chk-\d+$/.test(d)).map((d) => Number(d.slice(4)));
    expect(committed, 'the premise: commits had run').toBeGreaterThan(0);
    expect(Math.max(...retained), 'the premise: completed checkpoints waited for their commits').toBeGreaterThan(committed + 2);
    expect(retained).toContain(committed);

    server.fault = () => undefined;
    const second = await runJob(build(), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, s3: server.settings, from: join(jobDir, `chk-${committed}`), checkpoint: { interval: 100, dir: join(work, 'chk2') } });
    const got: number[] = [];
    for (const o of (await store.list(server.bucket, `${prefix}/part-`)).objects) {
      for (const l of Buffer.from((await store.getObject(server.bucket, o.key))!).toString('utf8').split('\n')) if (l !== '') got.push((JSON.parse(l) as { i: number }).i);
    }
    const seen = new Map<number, number>();
    for (const i of got) seen.set(i, (seen.get(i) ?? 0) + 1);
    const twice = [...seen.values()].filter((c) => c > 1).length;
    console.log(`committed at the cancel: ${committed}, newest retained ${Math.max(...retained)}; restore: ${second.status} ${second.error?.message ?? ''}; ids ${got.length}, distinct ${seen.size}, twice ${twice}`);
    expect(second.status, second.error?.message).toBe('FINISHED');
    expect(seen.size, 'every id').toBe(count);
    expect(twice, 'ids written twice').toBe(0);
  } finally {
    server.fault = () => undefined;
    await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}, 120_000);
