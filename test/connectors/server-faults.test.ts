/**
 * Faults of the servers behind the connectors (issue 9 point 8), on the real servers:
 * - a server "restarted" mid-job: a TCP proxy in front of it (test/helpers/tcp-proxy.ts; the
 *   shared servers are not ours to restart) drops every connection and refuses new ones for a
 *   while, then accepts again. The job fails, restarts per its restart strategy (connecting with
 *   backoff until the server is back) and resumes from its checkpoint: every record lands once.
 *   Redis -> Redis, JetStream -> JetStream, and Redis -> PostgreSQL (the PostgreSQL proxied).
 * - a stream deleted while the job reads it: Redis (DEL of the key) and JetStream (the stream
 *   deleted): the job fails with an error naming the stream.
 * - bad credentials: a Redis ACL user made for the test, a private nats-server started with a
 *   user and password (the shared one has no auth), a wrong password for a role of a private
 *   PostgreSQL cluster with scram-sha-256 (the shared server trusts 127.0.0.1, so no password is
 *   ever checked there) and a role that does not exist: each fails at the first try (another
 *   try cannot help), naming the server and never the password.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { connect, type JetStreamManager, type NatsConnection } from 'nats';
import { defineJob, JetStreamSink, JetStreamSource, PostgresSink, RedisStreamsSink, RedisStreamsSource, runJob } from '../../src/index.ts';
import { freePort, SHARED_URL, sql, startCluster, uniqueName, type Cluster } from './postgres/helpers.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

const COUNT = 6000;
const RESTART = { type: 'fixed-delay' as const, attempts: 5, delay: 300 };
let redis: Redis;
let work: string;
let dirs = 0;
const chkDir = () => join(work, `chk-${dirs++}`);
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-server-faults-'));
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

async function fillJetStream(subject: string, n: number): Promise<void> {
  const js = nc.jetstream({ timeout: 10_000 });
  for (let a = 0; a < n; a += 500) {
    const acks: Promise<unknown>[] = [];
    for (let i = a; i < Math.min(n, a + 500); i++) acks.push(js.publish(subject, JSON.stringify({ i })));
    await Promise.all(acks);
  }
}

/** The job's failure, whether it failed at start (runJob rejects) or while running (FAILED). */
async function failureOf(job: ReturnType<typeof runJob>): Promise<string> {
  const r = await job.then((x) => x, (e: Error) => e);
  if (r instanceof Error) return r.message;
  expect(r.status).toBe('FAILED');
  return r.error?.message ?? '';
}

/** A private nats-server with `args`, once it accepts connections on `port` (bounded: 10 s). */
async function startNatsServer(port: number, args: string[]): Promise<ChildProcess> {
  const server = spawn('nats-server', args, { stdio: 'ignore' });
  for (let k = 0; k < 200; k++) {
    const up = await new Promise<boolean>((r) => createConnection({ port, host: '127.0.0.1' }).once('connect', function (this: import('node:net').Socket) { this.destroy(); r(true); }).once('error', () => r(false)));
    if (up) return server;
    await new Promise((r) => setTimeout(r, 50));
  }
  server.kill('SIGTERM');
  throw new Error(`nats-server did not start on ${port}`);
}

/** The job's failure message, or its result when it did not fail. */
async function failureOrResult(job: ReturnType<typeof runJob>): Promise<string | Awaited<ReturnType<typeof runJob>>> {
  const r = await job.then((x) => x, (e: Error) => e);
  if (r instanceof Error) return r.message;
  return r.status === 'FAILED' ? r.error?.message ?? '' : r;
}

/** Every i of 0..n-1 exactly once. */
function expectEachOnce(is: number[], n: number, logs: string[] = []): void {
  const seen = new Map<number, number>();
  for (const i of is) seen.set(i, (seen.get(i) ?? 0) + 1);
  const twice = [...seen].filter(([, c]) => c > 1).map(([i]) => i).sort((a, b) => a - b);
  const ranges: string[] = [];
  for (let k = 0; k < twice.length; k++) {
    let j = k;
    while (j + 1 < twice.length && twice[j + 1] === twice[j]! + 1) j++;
    ranges.push(`${twice[k]}..${twice[j]}`);
    k = j;
  }
  expect(is.length, `more than once: ${ranges.slice(0, 20).join(' ')}\n${logs.join('\n')}`).toBe(n);
  expect([...is].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
}

/**
 * Waits until `committed()` shows output, cuts the proxy for `downMs`, restores it; returns the
 * job's result.
 */
async function restartMidJob(job: Promise<Awaited<ReturnType<typeof runJob>>>, proxy: TcpProxy, committed: () => Promise<number>, downMs: number) {
  let cut = false;
  let settled = false;
  void job.finally(() => (settled = true));
  for (let k = 0; k < 1200 && !settled; k++) {
    await new Promise((r) => setTimeout(r, 50));
    if ((await committed()) > 0) {
      await proxy.cut();
      cut = true;
      await new Promise((r) => setTimeout(r, downMs));
      await proxy.restore();
      break;
    }
  }
  const result = await job;
  return { result, cut };
}

describe('a server restarted mid-job (a TCP proxy cut and restored): the job restarts and resumes exactly once', () => {
  it('Redis -> Redis, both through the proxy', async () => {
    const proxy = await startTcpProxy(6379);
    const input = uniqueName('weir-faults:in');
    const output = uniqueName('weir-faults:out');
    const url = `redis://127.0.0.1:${proxy.port}`;
    try {
      await fillRedis(input, COUNT);
      const logs: string[] = [];
      const jobId = uniqueName('faults'); // not in the builder: it runs again at each attempt
      const job = runJob(defineJob((env) => {
        env.fromSource(new RedisStreamsSource<{ i: number }>({ url, streams: [input], stopAt: 'latest', batchSize: 200, timeoutMs: 2000 }), { ratePerSecond: 1500 })
          .map((r) => r.i)
          .sinkTo(new RedisStreamsSink<number>({ connection: url, stream: output, jobId, connectTimeoutMs: 2000, commandTimeoutMs: 5000 }));
      }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 150, dir: chkDir() }, restartStrategy: RESTART });
      const { result, cut } = await restartMidJob(job, proxy, () => redis.xlen(output), 1500);
      expect(cut).toBe(true);
      expect(result.status, `${result.error?.message}\n${logs.join('\n')}`).toBe('FINISHED');
      expect(result.attempts).toBeGreaterThanOrEqual(2);
      expectEachOnce((await redis.xrange(output, '-', '+')).map(([, f]) => Number(f[1])), COUNT, logs);
    } finally {
      await redis.del(input, output);
      await proxy.close();
    }
  }, 120_000);

  it('JetStream -> JetStream, both through the proxy', async () => {
    const proxy = await startTcpProxy(4222);
    const tag = uniqueName('weirfaults').replace(/[^A-Za-z0-9_]/g, '_');
    const [input, output] = [`${tag}_IN`, `${tag}_OUT`];
    const servers = `127.0.0.1:${proxy.port}`;
    try {
      await jsm.streams.add({ name: input, subjects: [`${input}.>`] });
      await jsm.streams.add({ name: output, subjects: [`${output}.>`] });
      await fillJetStream(`${input}.x`, COUNT);
      const logs: string[] = [];
      const jobId = uniqueName('faults');
      const job = runJob(defineJob((env) => {
        env.fromSource(new JetStreamSource<{ i: number }>({ servers, stream: input, stopAt: 'latest', timeoutMs: 2000 }), { ratePerSecond: 1500 })
          .map((r) => r.i)
          .sinkTo(new JetStreamSink<number>({ servers, stream: output, subject: `${output}.out`, jobId, connectTimeoutMs: 2000 }));
      }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 150, dir: chkDir() }, restartStrategy: RESTART });
      const { result, cut } = await restartMidJob(job, proxy, async () => (await jsm.streams.info(output)).state.messages, 1500);
      expect(cut).toBe(true);
      expect(result.status, `${result.error?.message}\n${logs.join('\n')}`).toBe('FINISHED');
      expect(result.attempts).toBeGreaterThanOrEqual(2);
      const info = await jsm.streams.info(output);
      const got: number[] = [];
      for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) got.push((await jsm.streams.getMessage(output, { seq })).json<number>());
      expectEachOnce(got, COUNT, logs);
    } finally {
      for (const s of [input, output]) await jsm.streams.delete(s).catch(() => undefined);
      await proxy.close();
    }
  }, 120_000);

  it('Redis -> PostgreSQL, the PostgreSQL server through the proxy', async () => {
    const proxy = await startTcpProxy(5432);
    const input = uniqueName('weir-faults:pg');
    const table = uniqueName('weir_faults');
    try {
      await fillRedis(input, COUNT);
      await sql(SHARED_URL, `CREATE TABLE ${table} (i bigint)`);
      const logs: string[] = [];
      const jobId = uniqueName('faults');
      const job = runJob(defineJob((env) => {
        env.fromSource(new RedisStreamsSource<{ i: number }>({ streams: [input], stopAt: 'latest', batchSize: 200 }), { ratePerSecond: 1500 })
          .map((r) => ({ i: r.i }))
          .sinkTo(new PostgresSink<{ i: number }>({ connection: `postgres://postgres@127.0.0.1:${proxy.port}/test`, table, jobId, columns: ['i'], connectTimeoutMs: 2000 }));
      }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 150, dir: chkDir() }, restartStrategy: RESTART });
      const { result, cut } = await restartMidJob(job, proxy, async () => Number((await sql<{ n: string }>(SHARED_URL, `SELECT count(*) AS n FROM ${table}`))[0]!.n), 1500);
      expect(cut).toBe(true);
      expect(result.status, `${result.error?.message}\n${logs.join('\n')}`).toBe('FINISHED');
      expectEachOnce((await sql<{ i: string }>(SHARED_URL, `SELECT i FROM ${table}`)).map((r) => Number(r.i)), COUNT);
    } finally {
      await redis.del(input);
      await sql(SHARED_URL, `DROP TABLE IF EXISTS ${table}`);
      await proxy.close();
    }
  }, 120_000);
});

describe('a stream deleted while the job reads it fails the job, naming the stream', () => {
  it('Redis: the stream key deleted', async () => {
    const stream = uniqueName('weir-faults:del');
    const clientName = uniqueName('weirdel');
    await fillRedis(stream, 500);
    try {
      const job = runJob(defineJob((env) => {
        env.fromSource(new RedisStreamsSource<{ i: number }>({ streams: [stream], clientName, blockMs: 200 })).map((r) => r.i).collect('x');
      }), { workers: 1, parallelism: 1, stdout: () => {}, restartStrategy: { type: 'none' } });
      // Once the reader waits in XREAD (it has read what there is), the key goes.
      for (let k = 0; k < 400; k++) {
        const list = (await redis.client('LIST')) as string;
        if (list.split('\n').some((l) => l.includes(` name=${clientName} `) && l.includes('cmd=xread'))) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 500));
      await redis.del(stream);
      const result = await job;
      expect(result.status).toBe('FAILED');
      expect(result.error?.message).toMatch(new RegExp(`Redis at 127\\.0\\.0\\.1:6379: stream "${stream}" no longer exists \\(deleted while the job read it, after entry \\d+-\\d+\\)`));
    } finally {
      await redis.del(stream);
    }
  }, 60_000);

  it('JetStream: the stream deleted', async () => {
    const name = uniqueName('weirdel').replace(/[^A-Za-z0-9_]/g, '_');
    await jsm.streams.add({ name, subjects: [`${name}.>`] });
    await fillJetStream(`${name}.x`, 500);
    try {
      const job = runJob(defineJob((env) => {
        env.fromSource(new JetStreamSource<{ i: number }>({ stream: name, timeoutMs: 2000 })).map((r) => r.i).collect('x');
      }), { workers: 1, parallelism: 1, stdout: () => {}, restartStrategy: { type: 'none' } });
      for (let k = 0; k < 400; k++) {
        const info = await jsm.streams.info(name);
        if (info.state.consumer_count > 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 500));
      await jsm.streams.delete(name);
      const result = await job;
      expect(result.status).toBe('FAILED');
      expect(result.error?.message).toMatch(new RegExp(`NATS at 127\\.0\\.0\\.1:4222: .*stream "${name}".*not found`, 'i'));
    } finally {
      await jsm.streams.delete(name).catch(() => undefined);
    }
  }, 60_000);
});

describe('bad credentials fail at the first try, naming the server and never the password', () => {
  it('Redis: an ACL user with a wrong password (source and sink)', async () => {
    const user = uniqueName('weir_acl');
    const stream = uniqueName('weir-faults:acl');
    await redis.call('ACL', 'SETUSER', user, 'on', '>right-pw-1', '~*', '&*', '+@all');
    try {
      await fillRedis(stream, 3);
      // The user is real: the right password reads.
      const ok = await runJob(defineJob((env) => {
        env.fromSource(new RedisStreamsSource<{ i: number }>({ url: `redis://${user}:right-pw-1@127.0.0.1:6379`, streams: [stream], stopAt: 'latest' })).map((r) => r.i).collect('x');
      }), { workers: 1, parallelism: 1, stdout: () => {}, restartStrategy: { type: 'none' } });
      expect(ok.status, ok.error?.message).toBe('FINISHED');
      const bad = await failureOf(runJob(defineJob((env) => {
        env.fromSource(new RedisStreamsSource<{ i: number }>({ url: `redis://${user}:wrong-pw-2@127.0.0.1:6379`, streams: [stream], stopAt: 'latest' })).map((r) => r.i).collect('x');
      }), { workers: 1, parallelism: 1, stdout: () => {}, restartStrategy: { type: 'none' } }));
      expect(bad).toMatch(/^cannot connect to Redis at 127\.0\.0\.1:6379: WRONGPASS.*\(gave up after 1 tries/);
      expect(bad).not.toContain('wrong-pw-2');
      const sinkBad = await failureOf(runJob(defineJob((env) => {
        env.fromSource(new RedisStreamsSource<{ i: number }>({ streams: [stream], stopAt: 'latest' })).map((r) => r.i)
          .sinkTo(new RedisStreamsSink<number>({ connection: `redis://${user}:wrong-pw-2@127.0.0.1:6379`, stream: `${stream}:out`, jobId: uniqueName('acl') }));
      }), { workers: 1, parallelism: 1, stdout: () => {}, checkpoint: { interval: 100, dir: chkDir() }, restartStrategy: { type: 'none' } }));
      expect(sinkBad).toMatch(/127\.0\.0\.1:6379.*WRONGPASS/);
      expect(sinkBad).not.toContain('wrong-pw-2');
    } finally {
      await redis.call('ACL', 'DELUSER', user);
      await redis.del(stream, `${stream}:out`);
    }
  }, 60_000);

  describe('NATS: a private nats-server with a user and password', () => {
    let server: ChildProcess;
    let port: number;
    beforeAll(async () => {
      port = await freePort();
      server = await startNatsServer(port, ['-a', '127.0.0.1', '-p', String(port), '--user', 'weir', '--pass', 'right-pw-3', '-js', '-sd', `/tmp/weir-nats-auth-${process.pid}`]);
    });
    afterAll(() => {
      server?.kill('SIGTERM');
    });

    it('a wrong password fails the source and the sink at once', async () => {
      const bad = await failureOf(runJob(defineJob((env) => {
        env.fromSource(new JetStreamSource<{ i: number }>({ servers: `127.0.0.1:${port}`, user: 'weir', pass: 'wrong-pw-4', stream: 'S', stopAt: 'latest' })).map((r) => r.i).collect('x');
      }), { workers: 1, parallelism: 1, stdout: () => {}, restartStrategy: { type: 'none' } }));
      expect(bad).toMatch(new RegExp(`^cannot connect to NATS at 127\\.0\\.0\\.1:${port}: .*Authorization Violation.*\\(gave up after 1 tries`, 'i'));
      expect(bad).not.toContain('wrong-pw-4');
      // Through a proxy that counts connections: the sink gives up after its first, though its retry deadline is 20 s.
      const proxy = await startTcpProxy(port);
      try {
        const sink = new JetStreamSink<number>({ servers: `127.0.0.1:${proxy.port}`, user: 'weir', pass: 'wrong-pw-4', stream: 'S', subject: 'S.x', jobId: 'j', retryDeadlineMs: 20_000 });
        const e = await sink.start().then(() => undefined, (err: Error) => err);
        expect(e?.message).toMatch(new RegExp(`127\\.0\\.0\\.1:${proxy.port}.*Authorization Violation`, 'i'));
        expect(e?.message).not.toContain('wrong-pw-4');
        expect(proxy.accepted).toBe(1); // not retried: another try cannot help
      } finally {
        await proxy.close();
      }
    }, 60_000);
  });

  describe('NATS: a private nats-server whose JetStream limits a pull to 100 messages', () => {
    let server: ChildProcess;
    let port: number;
    let dir: string;
    beforeAll(async () => {
      port = await freePort();
      dir = mkdtempSync(join(tmpdir(), 'weir-nats-limits-'));
      writeFileSync(join(dir, 'n.conf'), `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${join(dir, 'store')}", limits { max_request_batch: 100 } }\n`);
      server = await startNatsServer(port, ['-c', join(dir, 'n.conf')]);
    });
    afterAll(() => {
      server?.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    });

    it('a pull over the server\'s limit fails the source naming batchSize (before: the consumer was recreated in a loop for ever, thousands of log lines a second, nothing read)', async () => {
      const nc = await connect({ servers: `127.0.0.1:${port}`, timeout: 5000 });
      try {
        const jsm = await nc.jetstreamManager();
        await jsm.streams.add({ name: 'LIM', subjects: ['LIM.>'] });
        const js = nc.jetstream();
        for (let i = 0; i < 10; i++) await js.publish('LIM.a', JSON.stringify({ i }));
      } finally {
        await nc.close();
      }
      const logs: string[] = [];
      const read = (batchSize?: number) => failureOrResult(runJob(defineJob((env) => {
        env.fromSource(new JetStreamSource<{ i: number }>({ servers: `127.0.0.1:${port}`, stream: 'LIM', stopAt: 'latest', ...(batchSize !== undefined ? { batchSize } : {}) })).map((r) => r.i).collect('x');
      }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l: string) => void logs.push(l), restartStrategy: { type: 'none' } }));
      expect(await read()).toMatch(new RegExp(`: JetStream stream "LIM" at 127\\.0\\.0\\.1:${port}: the server refuses the pull: Exceeded MaxRequestBatch of 100; set the source's batchSize \\(now 1000\\) within the server's limit$`));
      expect(logs.filter((l) => l.includes('recreating the consumer'))).toEqual([]);
      const ok = await read(100);
      expect(typeof ok === 'string' ? ok : ok.status).toBe('FINISHED');
    }, 60_000);
  });

  describe('PostgreSQL: a private cluster where a role must give its password (scram-sha-256)', () => {
    let cluster: Cluster;
    const user = 'weir_pw';
    beforeAll(async () => {
      cluster = await startCluster({ passwordUser: { user, password: 'right-pw-6' } });
      await sql(cluster.url, 'CREATE TABLE auth_out (i bigint); GRANT ALL ON auth_out TO weir_pw');
    }, 120_000);
    afterAll(() => cluster?.stop(), 60_000);

    const job = (port: number, password: string, retryDeadlineMs?: number) => failureOrResult(runJob(defineJob((env) => {
      env.fromElements(1, 2, 3).map((i) => ({ i }))
        .sinkTo(new PostgresSink<{ i: number }>({ connection: `postgres://${user}:${password}@127.0.0.1:${port}/postgres`, table: 'auth_out', jobId: uniqueName('auth'), columns: ['i'], ...(retryDeadlineMs !== undefined ? { retryDeadlineMs } : {}) }));
    }), { workers: 1, parallelism: 1, stdout: () => {}, checkpoint: { interval: 100, dir: chkDir() }, restartStrategy: { type: 'none' } }));

    it('the right password writes; a wrong one fails the job at the first try, naming host:port and the user, never the password', async () => {
      // The role is real and password auth is on: the right password writes every row.
      const ok = await job(cluster.port, 'right-pw-6');
      expect(ok, typeof ok === 'string' ? ok : ok.error?.message).toMatchObject({ status: 'FINISHED' });
      expect((await sql<{ i: string }>(cluster.url, 'SELECT i FROM auth_out ORDER BY i')).map((r) => Number(r.i))).toEqual([1, 2, 3]);
      // Through a proxy that counts connections: one, though the retry deadline is 30 s.
      const proxy = await startTcpProxy(cluster.port);
      try {
        const bad = await job(proxy.port, 'wrong-pw-7', 30_000);
        expect(typeof bad).toBe('string');
        expect(bad).toMatch(new RegExp(`127\\.0\\.0\\.1:${proxy.port}/postgres.*password authentication failed for user "${user}".*\\[28P01\\]`));
        expect(bad).not.toContain('wrong-pw-7');
        console.log(`wrong PostgreSQL password: ${String(bad)}`);
        expect(proxy.accepted).toBe(1); // not retried: another try cannot help
      } finally {
        await proxy.close();
      }
      expect((await sql<{ n: string }>(cluster.url, 'SELECT count(*) AS n FROM auth_out'))[0]!.n).toBe('3');
    }, 60_000);
  });

  it('PostgreSQL: a role that does not exist (the shared server trusts 127.0.0.1, so passwords are not checked)', async () => {
    const table = uniqueName('weir_faults_auth');
    await sql(SHARED_URL, `CREATE TABLE ${table} (i bigint)`);
    try {
      const r = await failureOf(runJob(defineJob((env) => {
        env.fromElements(1, 2, 3).map((i) => ({ i }))
          .sinkTo(new PostgresSink<{ i: number }>({ connection: 'postgres://weir_no_such_role:pw-5@127.0.0.1:5432/test', table, jobId: uniqueName('auth'), columns: ['i'] }));
      }), { workers: 1, parallelism: 1, stdout: () => {}, checkpoint: { interval: 100, dir: chkDir() }, restartStrategy: { type: 'none' } }));
      expect(r).toMatch(/127\.0\.0\.1:5432\/test.*role "weir_no_such_role" does not exist/);
      expect(r).not.toContain('pw-5');
    } finally {
      await sql(SHARED_URL, `DROP TABLE IF EXISTS ${table}`);
    }
  }, 60_000);
});
