/**
 * Exactly-once sinks when a commit's outcome is unknown, on the real servers: the commit
 * request reaches the server and is applied, its answer never comes back (the proxy holds the
 * connection's bytes toward the client from the answer on: a half-open connection), or the
 * connection is cut right after the request went up (and the server stays away past the retry
 * deadline: the job restarts from its checkpoint and commits again). PostgreSQL (idempotent:
 * COMMIT; two-phase: PREPARE TRANSACTION and COMMIT PREPARED), Redis Streams (the commit
 * script), JetStream (the progress key's final put), S3 (CompleteMultipartUpload and the commit
 * record, answers lost once or past the SDK's retries). Every id must land exactly once; these
 * passed when written (audit of commits whose outcome is unknown). Last, an S3 commit record
 * carried out after a later one's: the record read back must not go back.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { connect, type JetStreamManager, type NatsConnection } from 'nats';
import { defineJob, ExactlyOnceFileSink, ManualClock, JetStreamSink, PostgresSink, RedisStreamsSink, RedisStreamsSource, runJob } from '../../src/index.ts';
import { SHARED_URL, sql, startCluster, uniqueName, type Cluster } from './postgres/helpers.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { startS3Server, type S3Request, type S3TestServer } from '../helpers/s3rver.ts';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { resolveS3Config, type S3Settings } from '../../src/checkpoint/s3/settings.ts';

const COUNT = 5000;
/** Input rate of the proxied cases: a second of input, the held commit (the 3rd, checkpoints every 150 ms) well inside it. */
const INPUT_PER_SECOND = 5000;
const RESTART = { type: 'fixed-delay' as const, attempts: 8, delay: 200 };
let redis: Redis;
let work: string;
let dirs = 0;
const chkDir = () => join(work, `chk-${dirs++}`);
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-answer-lost-'));
  redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, commandTimeout: 10_000 });
  await redis.connect();
  nc = await connect({ servers: '127.0.0.1:4222', timeout: 10_000 });
  jsm = await nc.jetstreamManager({ timeout: 10_000 });
});
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  redis.disconnect();
  await nc.close();
});

async function fillRedis(stream: string, n: number): Promise<void> {
  for (let a = 0; a < n; a += 1000) {
    const p = redis.pipeline();
    for (let i = a; i < Math.min(n, a + 1000); i++) p.xadd(stream, '*', 'data', JSON.stringify({ i }));
    await p.exec();
  }
}

/** Ids seen more than once and ids never seen, of 0..n-1. */
function tally(is: number[], n: number): { twice: number[]; missing: number[] } {
  const seen = new Map<number, number>();
  for (const i of is) seen.set(i, (seen.get(i) ?? 0) + 1);
  const twice = [...seen].filter(([, c]) => c > 1).map(([i]) => i);
  const missing: number[] = [];
  for (let i = 0; i < n; i++) if (!seen.has(i)) missing.push(i);
  return { twice, missing };
}

/**
 * A hold rule: the `nth` time an upstream chunk matching `request` goes up (counted over all
 * connections), the answer to it is held from then on, on that connection (the request was
 * applied, its answer never arrives). `onHold` is told when that happens.
 */
function holdAnswer(proxy: TcpProxy, request: (chunk: Buffer) => boolean, nth: number, onHold: () => void = () => {}): { readonly held: boolean } {
  let seen = 0;
  let armed: number | undefined;
  const state = { held: false };
  proxy.holdWhen = (direction, chunk, connection) => {
    if (direction === 'up') {
      if (armed === undefined && request(chunk) && ++seen === nth) armed = connection;
      return false;
    }
    if (armed !== undefined && connection === armed && !state.held) {
      state.held = true;
      onHold();
      return true;
    }
    return false;
  };
  return state;
}

function source(stream: string) {
  return new RedisStreamsSource<{ i: number }>({ streams: [stream], stopAt: 'latest', batchSize: 200 });
}

/**
 * retryDeadlineMs: the sink's; the outage outlasts it by 1 s (its retries give up, the job
 * restarts) and is kept short, as each case's time adds to the suite's.
 */
const cases = [
  { how: 'answer held (half-open)', cut: undefined, retryDeadlineMs: 3000 },
  { how: 'connection cut after the request went up', cut: 50, retryDeadlineMs: 3000 },
  { how: 'connection cut after the request went up, the server away past the retry deadline (the job restarts)', cut: 2500, retryDeadlineMs: 1500 },
];

/** After the answer is held: nothing more (half-open), or the proxy cut and restored `cut` ms later. */
function after(proxy: TcpProxy, cut: number | undefined): () => void {
  return () => {
    if (cut !== undefined) setTimeout(() => void proxy.cut().then(() => new Promise((r) => setTimeout(r, cut))).then(() => proxy.restore()), 20);
  };
}

describe('a commit applied whose answer is lost: every id once', () => {
  for (const { how, cut, retryDeadlineMs } of cases) {
    for (const nth of [3]) {
      it(`PostgreSQL idempotent: COMMIT number ${nth}, ${how}`, async () => {
        const proxy = await startTcpProxy(5432);
        const input = uniqueName('weir-lost:pg');
        const table = uniqueName('weir_lost');
        try {
          await fillRedis(input, COUNT);
          await sql(SHARED_URL, `CREATE TABLE ${table} (i bigint)`);
          const logs: string[] = [];
          const jobId = uniqueName('lost');
          const h = holdAnswer(proxy, (c) => c.includes('COMMIT\0'), nth, after(proxy, cut));
          const job = runJob(defineJob((env) => {
            env.fromSource(source(input), { ratePerSecond: INPUT_PER_SECOND })
              .map((r) => ({ i: r.i }))
              .sinkTo(new PostgresSink<{ i: number }>({ connection: `postgres://postgres@127.0.0.1:${proxy.port}/test`, table, jobId, columns: ['i'], connectTimeoutMs: 1000, queryTimeoutMs: 1000, retryDeadlineMs, commitTimeoutMs: 6000 }));
          }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 150, dir: chkDir() }, restartStrategy: RESTART });
          const result = await job;
          expect(h.held, 'the premise: a COMMIT answer was held').toBe(true);
          expect(result.status, `${result.error?.message}\n${logs.join('\n')}`).toBe('FINISHED');
          const t = tally((await sql<{ i: string }>(SHARED_URL, `SELECT i FROM ${table}`)).map((r) => Number(r.i)), COUNT);
          expect({ twice: t.twice.length, missing: t.missing.length }, logs.join('\n')).toEqual({ twice: 0, missing: 0 });
        } finally {
          await redis.del(input);
          await sql(SHARED_URL, `DROP TABLE IF EXISTS ${table}`);
          await proxy.close();
        }
      }, 120_000);

      it(`Redis Streams: commit script number ${nth}, ${how}`, async () => {
        const proxy = await startTcpProxy(6379);
        const input = uniqueName('weir-lost:in');
        const output = uniqueName('weir-lost:out');
        try {
          await fillRedis(input, COUNT);
          const logs: string[] = [];
          const jobId = uniqueName('lost');
          const h = holdAnswer(proxy, (c) => c.includes('local cur = redis.call'), nth, after(proxy, cut));
          const job = runJob(defineJob((env) => {
            env.fromSource(source(input), { ratePerSecond: INPUT_PER_SECOND })
              .map((r) => ({ i: r.i }))
              .sinkTo(new RedisStreamsSink<{ i: number }>({ connection: `redis://127.0.0.1:${proxy.port}`, stream: output, jobId, connectTimeoutMs: 1000, commandTimeoutMs: 1000, retryDeadlineMs }));
          }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 150, dir: chkDir() }, restartStrategy: RESTART });
          const result = await job;
          expect(h.held, 'the premise: a commit answer was held').toBe(true);
          expect(result.status, `${result.error?.message}\n${logs.join('\n')}`).toBe('FINISHED');
          const entries = await redis.xrange(output, '-', '+');
          const t = tally(entries.map(([, f]) => (JSON.parse(f[1]!) as { i: number }).i), COUNT);
          expect({ twice: t.twice.length, missing: t.missing.length }, logs.join('\n')).toEqual({ twice: 0, missing: 0 });
        } finally {
          await redis.del(input, output);
          await proxy.close();
        }
      }, 120_000);

      it(`JetStream: progress put number ${nth} (committed), ${how}`, async () => {
        const proxy = await startTcpProxy(4222);
        const input = uniqueName('weir-lost:js');
        const tag = uniqueName('weirlost').replace(/[^A-Za-z0-9_]/g, '_');
        const output = `${tag}_OUT`;
        const servers = `127.0.0.1:${proxy.port}`;
        try {
          await fillRedis(input, COUNT);
          await jsm.streams.add({ name: output, subjects: [`${output}.>`] });
          const logs: string[] = [];
          const jobId = uniqueName('lost');
          const h = holdAnswer(proxy, (c) => c.includes('"committed":') && !c.includes('"publishing"'), nth, after(proxy, cut));
          const job = runJob(defineJob((env) => {
            env.fromSource(source(input), { ratePerSecond: INPUT_PER_SECOND })
              .map((r) => r.i)
              .sinkTo(new JetStreamSink<number>({ servers, stream: output, subject: `${output}.out`, jobId, connectTimeoutMs: 1000, requestTimeoutMs: 1000, retryDeadlineMs }));
          }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 150, dir: chkDir() }, restartStrategy: RESTART });
          const result = await job;
          expect(h.held, 'the premise: a progress answer was held').toBe(true);
          expect(result.status, `${result.error?.message}\n${logs.join('\n')}`).toBe('FINISHED');
          const info = await jsm.streams.info(output);
          const got: number[] = [];
          for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) got.push((await jsm.streams.getMessage(output, { seq })).json<number>());
          const t = tally(got, COUNT);
          expect({ twice: t.twice.length, missing: t.missing.length }, logs.join('\n')).toEqual({ twice: 0, missing: 0 });
        } finally {
          await redis.del(input);
          await jsm.streams.delete(output).catch(() => undefined);
          await proxy.close();
        }
      }, 120_000);
    }
  }
});

describe('PostgreSQL two-phase: PREPARE or COMMIT PREPARED applied whose answer is lost', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());

  for (const { how, cut, retryDeadlineMs } of cases) {
    for (const what of ['PREPARE TRANSACTION', 'COMMIT PREPARED']) {
      for (const nth of [3]) {
        it(`${what} number ${nth}, ${how}`, async () => {
          const proxy = await startTcpProxy(cluster.port);
          const input = uniqueName('weir-lost:pg2');
          const table = uniqueName('weir_lost2');
          try {
            await fillRedis(input, COUNT);
            await sql(cluster.url, `CREATE TABLE ${table} (i bigint)`);
            const logs: string[] = [];
          const jobId = uniqueName('lost');
            const h = holdAnswer(proxy, (c) => c.includes(what), nth, after(proxy, cut));
            const job = runJob(defineJob((env) => {
              env.fromSource(source(input), { ratePerSecond: INPUT_PER_SECOND })
                .map((r) => ({ i: r.i }))
                .sinkTo(new PostgresSink<{ i: number }>({ connection: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, table, jobId, columns: ['i'], mode: 'two-phase', connectTimeoutMs: 1000, queryTimeoutMs: 1000, retryDeadlineMs, commitTimeoutMs: 6000 }));
            }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 150, dir: chkDir() }, restartStrategy: RESTART });
            const result = await job;
            expect(h.held, 'the premise: an answer was held').toBe(true);
            expect(result.status, `${result.error?.message}\n${logs.join('\n')}`).toBe('FINISHED');
            const t = tally((await sql<{ i: string }>(cluster.url, `SELECT i FROM ${table}`)).map((r) => Number(r.i)), COUNT);
            expect({ twice: t.twice.length, missing: t.missing.length }, logs.join('\n')).toEqual({ twice: 0, missing: 0 });
            expect(await sql(cluster.url, 'SELECT gid FROM pg_prepared_xacts')).toEqual([]);
          } finally {
            await redis.del(input);
            await sql(cluster.url, `DROP TABLE IF EXISTS ${table}`);
            await proxy.close();
          }
        }, 120_000);
      }
    }
  }
});

describe('S3 file sink: a CompleteMultipartUpload or commit record applied whose answer is lost', () => {
  let server: S3TestServer;
  let settings: S3Settings;
  let store: S3ObjectStore;
  let n = 0;
  beforeAll(async () => {
    server = await startS3Server();
    settings = { ...server.settings, uploadPartSize: 5 * 1024 * 1024 };
    store = new S3ObjectStore(resolveS3Config(settings));
  });
  afterAll(async () => {
    await store?.close();
    await server?.close();
  });

  const faults = [
    { what: 'CompleteMultipartUpload', match: (r: S3Request) => r.method === 'POST' && /(^|&)uploadId=/.test(r.query) },
    { what: 'the commit record PUT', match: (r: S3Request) => r.method === 'PUT' && r.path.includes('/.weir-committed-') },
  ];
  for (const { what, match } of faults) {
    for (const lostInARow of [1, 4]) {
      for (const nth of [5]) {
        it(`${what} number ${nth}, ${lostInARow} answer(s) lost in a row (${lostInARow > 1 ? 'the commit fails, the job restarts' : 'the SDK retries'})`, async () => {
          const prefix = `lost-${n++}`;
          const ref = `s3://${server.bucket}/${prefix}`;
          const work = mkdtempSync(join(tmpdir(), 'weir-answer-lost-s3-'));
          let seen = 0;
          let lost = 0;
          server.fault = (r) => {
            if (!r.path.includes(`/${prefix}/`) || !match(r)) return undefined;
            seen++;
            if (seen >= nth && lost < lostInARow) {
              lost++;
              return { kind: 'lose-answer' };
            }
            return undefined;
          };
          const logs: string[] = [];
          try {
            const count = 10_000;
            const r = await runJob(defineJob((env) => {
              env.fromGenerator((i) => ({ i }), { count, ratePerSecond: 8_000 })
                .sinkTo(new ExactlyOnceFileSink<{ i: number }>(ref, { rolloverInterval: 150 }));
            }), { workers: 1, parallelism: 2, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 100, dir: join(work, 'chk') }, s3: settings, restartStrategy: RESTART });
            expect(lost, 'the premise: answers were lost').toBe(lostInARow);
            expect(r.status, `${r.error?.message}\n${logs.join('\n')}`).toBe('FINISHED');
            const listed = await store.list(server.bucket, `${prefix}/part-`);
            const got: number[] = [];
            for (const o of listed.objects) {
              const text = Buffer.from((await store.getObject(server.bucket, o.key))!).toString('utf8');
              for (const l of text.split('\n')) if (l !== '') got.push((JSON.parse(l) as { i: number }).i);
            }
            const t = tally(got, count);
            expect({ twice: t.twice.length, missing: t.missing.length }, logs.join('\n')).toEqual({ twice: 0, missing: 0 });
          } finally {
            server.fault = () => undefined;
            rmSync(work, { recursive: true, force: true });
          }
        }, 120_000);
      }
    }
  }
});

describe('S3 file sink: a commit record PUT that lands after a later commit record', () => {
  let server: S3TestServer;
  let settings: S3Settings;
  beforeAll(async () => {
    server = await startS3Server({ settings: { requestTimeout: '1 s', retryMaxAttempts: 2 } });
    settings = server.settings;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a PUT of the record of open parts that lands after a later one: a fresh start is still refused while a completed checkpoint holds an open upload (before: the late record named only the part completed since, and a fresh start was let through to abort the open one)', async () => {
    const prefix = 'open-late';
    const ref = `s3://${server.bucket}/${prefix}`;
    const clock = new ManualClock(0);
    const ctx = { subtaskIndex: 0, parallelism: 1, attemptNumber: 0, now: () => clock.now(), restoredCheckpointId: undefined, operatorId: 'sink', log: () => {} };
    const lines = (from: number, n: number) => Array.from({ length: n }, (_, i) => `${String(from + i).padStart(8, '0')}`.padEnd(1021, 'x'));
    const write = (w: { write(v: readonly string[], t: readonly number[]): void }, xs: readonly string[]) => {
      for (let i = 0; i < xs.length; i += 256) w.write(xs.slice(i, i + 256), new Array<number>(Math.min(256, xs.length - i)).fill(0));
    };
    const opens: S3Request[] = [];
    let late: S3Request | undefined;
    server.fault = (r) => {
      if (!(r.method === 'PUT' && r.path.startsWith(`/${server.bucket}/${prefix}/.weir-open-0`))) return undefined;
      opens.push(r);
      if (opens.length !== 1) return undefined;
      late = r;
      return { kind: 'apply-late', ms: 3000 };
    };
    try {
      const sink = new ExactlyOnceFileSink<string>(ref, { s3: { ...settings, uploadPartSize: 5 * 1024 * 1024 }, rolloverInterval: 1000 });
      const w = sink.createWriter(ctx);
      const c = sink.createCommitter(ctx);
      write(w, lines(0, 5 * 1024 + 10));
      const cp1 = w.prepareCommit(1);
      await w.whenPrepared?.(1);
      await c.commit(cp1, 1); // open record {1, [A]}: its first try late, the second through
      clock.advanceTo(2000);
      write(w, lines(100_000, 5 * 1024 + 10)); // A rolls (complete), B opens with a part uploaded
      const cp2 = w.prepareCommit(2);
      await w.whenPrepared?.(2);
      expect(cp2.map((x) => [x.s3?.kind, x.s3?.parts]), 'the premise: A closed, B open with an uploaded part').toEqual([['complete', 2], ['open', 1]]);
      await c.commit(cp2, 2); // open record {2, [B]}
      expect(late?.done, 'the premise: the late PUT has not landed yet').not.toBe(true);
      expect(await sink.freshStartRefusal()).toMatch(/holds 1 multipart upload\(s\) .* that completed checkpoint 2/);
      for (let k = 0; k < 100 && late?.done !== true; k++) await new Promise((r) => setTimeout(r, 100));
      expect(late?.done).toBe(true);
      w.close?.();
      expect(await sink.freshStartRefusal(), 'once the late PUT landed').toMatch(/holds 1 multipart upload\(s\) .* that completed checkpoint 2/);
    } finally {
      server.fault = () => undefined;
    }
  }, 60_000);

  it('the committed checkpoint read back never goes back: a restore of a checkpoint before what was committed is refused (before: read back as the late PUT\'s 3 after 10 committed, the restore of checkpoint 9 ran and wrote 2,820 ids twice)', async () => {
    const prefix = 'record-late';
    const ref = `s3://${server.bucket}/${prefix}`;
    const work = mkdtempSync(join(tmpdir(), 'weir-record-late-'));
    const chk = join(work, 'chk');
    // The first try of the 3rd commit record's PUT reaches the store and is carried out 6 s
    // later (after the job's last commit); the client gives up on it after 1 s and its second
    // try goes through at once.
    const recordPuts: S3Request[] = [];
    let late: S3Request | undefined;
    server.fault = (r) => {
      if (!(r.method === 'PUT' && r.path.startsWith(`/${server.bucket}/${prefix}/.weir-committed-`))) return undefined;
      recordPuts.push(r);
      if (recordPuts.length !== 3) return undefined;
      late = r;
      return { kind: 'apply-late', ms: 6000 };
    };
    const count = 40_000;
    const build = () => defineJob((env) => {
      env.fromGenerator((i) => ({ i }), { count, ratePerSecond: 4000 }).uid('ids')
        .sinkTo(new ExactlyOnceFileSink<{ i: number }>(ref, { rolloverInterval: 100 })).uid('sink');
    });
    const sink = new ExactlyOnceFileSink<{ i: number }>(ref, { s3: settings });
    try {
      const ac = new AbortController();
      const first = runJob(build(), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, signal: ac.signal, s3: settings, checkpoint: { interval: 100, dir: chk, retention: 'retain-on-cancel', numRetained: 100 } });
      // Cancelled once commits went on past the late PUT (before it lands).
      let committed = 0;
      for (let k = 0; k < 600 && (late === undefined || recordPuts.length < 8 || late.done === true); k++) await new Promise((r) => setTimeout(r, 10));
      ac.abort();
      expect((await first).status).toBe('CANCELED');
      expect(late?.done, 'the premise: the late PUT had not landed at the cancel').not.toBe(true);
      committed = (await sink.lastCommittedCheckpoint()) ?? 0;
      for (let k = 0; k < 150 && late?.done !== true; k++) await new Promise((r) => setTimeout(r, 100));
      expect(late?.done).toBe(true);
      const after = (await sink.lastCommittedCheckpoint()) ?? 0;
      const jobDir = join(chk, readdirSync(chk).find((d) => !d.startsWith('.'))!);
      const older = readdirSync(jobDir).filter((d) => /^chk-\d+$/.test(d)).map((d) => Number(d.slice(4))).filter((id) => id < committed).sort((a, b) => b - a)[0];
      console.log(`committed ${committed}, read back after the late PUT ${after}, restoring checkpoint ${older}`);
      expect(older).toBeDefined();
      const logs: string[] = [];
      const second = await runJob(build(), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), s3: settings, from: join(jobDir, `chk-${older}`), checkpoint: { interval: 100, dir: join(work, 'chk2') } })
        .then((r) => r.error?.message ?? `ran: ${r.status}`, (e: Error) => e.message);
      const store = new S3ObjectStore(resolveS3Config(settings));
      const got: number[] = [];
      for (const o of (await store.list(server.bucket, `${prefix}/part-`)).objects) {
        for (const l of Buffer.from((await store.getObject(server.bucket, o.key))!).toString('utf8').split('\n')) if (l !== '') got.push((JSON.parse(l) as { i: number }).i);
      }
      await store.close();
      const t = tally(got, count);
      console.log(`second run: ${second.slice(0, 300)}; ids twice ${t.twice.length}, missing ${t.missing.length}`);
      expect(after, 'the committed checkpoint read back after the late PUT').toBeGreaterThanOrEqual(committed);
      expect(second).toMatch(new RegExp(`already committed the output of checkpoint \\d+, but the job restores checkpoint ${older}`));
    } finally {
      server.fault = () => undefined;
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});
