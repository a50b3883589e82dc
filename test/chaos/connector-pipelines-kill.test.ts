/**
 * Chaos for whole connector pipelines (issue 9 point 7): Kinesis -> PostgreSQL,
 * JetStream -> JetStream (examples/jetstream-to-jetstream.ts) and Redis -> Redis, each a windowed
 * aggregate, run by `weir run` (1 worker process; kinesis-kill and source-kill cover 2) while a producer keeps writing page views
 * (examples/produce-events.ts). Per scenario, four runs:
 *   0. p=2 from scratch, SIGKILLed right after the 1st to 3rd checkpoint completion (seeded);
 *   1. p=3 from the latest checkpoint (a rescale), stopped with a savepoint (REST stop, no drain);
 *   2. p=2 from that savepoint (a rescale from a savepoint), SIGKILLed after completions;
 *   3. p=3 from the latest checkpoint, once the producer has written every event; a sentinel far
 *      ahead in event time (written every second) closes every window: read until the sink holds
 *      as many rows as the oracle.
 * The committed output must equal the failure-free oracle (computed from the events): not a row
 * lost or twice (the PostgreSQL and Redis sinks insert; a repeat would be a second row). Seeds
 * printed; replay with CHAOS_SEED.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { connect, type NatsConnection } from 'nats';
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { verifyCheckpoint } from '../../src/checkpoint/storage.ts';
import { BASE_TS, pageView, produceToJetStream, produceToRedis } from '../../examples/produce-events.ts';
import { expectedPageWindows, type PageWindow } from '../../examples/redis-to-postgres.ts';
import { expectedSessions, type Session } from '../../examples/jetstream-to-jetstream.ts';
import { SHARED_URL, sql, uniqueName } from '../connectors/postgres/helpers.ts';
import { createStream, startKinesalite, type Kinesalite } from '../helpers/kinesalite.ts';
import { chaosSeed, completedCheckpoints, controlHeaders, startWeir, type Run } from './harness.ts';

const EVENTS = 6000;
const PER_SECOND = 150;
/** Far ahead in event time: its watermark closes every window and session of the events. */
const SENTINEL = { user: 'zz-end', page: '/zz-end', ts: BASE_TS + EVENTS * 5 + 3_600_000, ms: 0 };
const REDIS = 'redis://127.0.0.1:6379';
const NATS = '127.0.0.1:4222';
let work: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-pipelines-chaos-'));
});
afterAll(() => { if (!process.env.KEEP_CHAOS) rmSync(work, { recursive: true, force: true }); });

const byJson = <T>(xs: T[]): string[] => xs.map((x) => JSON.stringify(x)).sort();

interface Scenario {
  readonly name: string;
  readonly job: string;
  /** Job arguments after `--`. */
  readonly jobArgs: string[];
  /** Writes events 0..EVENTS-1 at PER_SECOND. */
  produce(): Promise<void>;
  /** Writes the sentinel (into every split). */
  sentinel(): Promise<void>;
  /** What the sink committed, as rows comparable with `expected`. */
  read(): Promise<unknown[]>;
  readonly expected: unknown[];
}

function restOf(stderr: string): { id: string; port: number } | undefined {
  const m = /job ([0-9a-f]{32}) running; control API on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr);
  return m ? { id: m[1]!, port: Number(m[2]) } : undefined;
}

/**
 * Starts a run and, once `target` new checkpoints completed (or at the fallback), acts: SIGKILL,
 * or a stop with a savepoint into `sp`. Returns the run, whether the action followed completions,
 * and its stderr.
 */
async function runAndAct(args: string[], chk: string, target: number, action: 'kill' | { stopInto: string }, maxMs: number): Promise<{ r: Run; afterCompletions: boolean }> {
  const before = completedCheckpoints(chk);
  const { child, done } = startWeir(args);
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  let seen = 0;
  let fired = false;
  let exited = false;
  void done.then(() => (exited = true));
  const deadline = Date.now() + maxMs;
  while (!exited && !fired && Date.now() < deadline) {
    for (const c of completedCheckpoints(chk)) if (!before.has(c)) { before.add(c); seen++; }
    if (seen >= target) fired = true;
    else await new Promise((r) => setTimeout(r, 3));
  }
  if (!exited) {
    if (action === 'kill' || !fired) child.kill('SIGKILL');
    else if (!(await stopWithSavepoint(err, action.stopInto, () => exited))) child.kill('SIGKILL');
    else setTimeout(() => child.kill('SIGKILL'), 60_000).unref(); // a stop that never ends
  }
  return { r: await done, afterCompletions: fired };
}

/**
 * Stop with a savepoint (REST, no drain), once the job is RUNNING (a job whose checkpoints
 * complete may still report INITIALIZING for a while; a stop then is refused): tries again
 * while the stop is refused. Returns whether a stop completed.
 */
async function stopWithSavepoint(stderr: string, dir: string, exited: () => boolean): Promise<boolean> {
  const rest = restOf(stderr);
  if (rest === undefined) {
    console.log('[chaos] no control API line: cannot stop');
    return false;
  }
  const base = `http://127.0.0.1:${rest.port}/jobs/${rest.id}`;
  const get = async (path: string) => fetch(`${base}${path}`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.json() as Promise<Record<string, unknown>>).catch(() => undefined);
  for (let tries = 0; tries < 5 && !exited(); tries++) {
    let state: unknown;
    for (let i = 0; i < 240 && !exited() && (state = (await get(''))?.['state']) !== 'RUNNING'; i++) await new Promise((r) => setTimeout(r, 250));
    if (state !== 'RUNNING') {
      console.log(`[chaos] the job is ${String(state)}, not RUNNING: cannot stop`);
      return false;
    }
    const res = await fetch(`${base}/stop`, {
      method: 'POST', headers: controlHeaders(rest.id), body: JSON.stringify({ targetDirectory: dir, drain: false }), signal: AbortSignal.timeout(10_000),
    }).then((r) => r.json() as Promise<Record<string, unknown>>).catch(() => undefined);
    const op = res?.['request-id'];
    if (typeof op !== 'string') {
      console.log(`[chaos] stop not accepted: ${JSON.stringify(res)}`);
      return false;
    }
    for (let i = 0; i < 240 && !exited(); i++) {
      const o = await get(`/savepoints/${op}`) as { status?: { id?: string }; operation?: { location?: string; 'failure-cause'?: { message?: string } } } | undefined;
      if (o?.status?.id === 'COMPLETED') {
        if (o.operation?.location !== undefined) return true;
        console.log(`[chaos] stop refused: ${o.operation?.['failure-cause']?.message}; trying again`);
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    if (exited()) return true;
  }
  return exited();
}

async function savepointIn(dir: string): Promise<string | undefined> {
  for (const s of readdirSync(dir)) if ((await verifyCheckpoint(join(dir, s))).ok) return join(dir, s);
  return undefined;
}

async function runScenario(s: Scenario): Promise<void> {
  const rng = new Rng(chaosSeed(`pipelines-${s.name}`));
  const log = (m: string) => console.log(`[chaos ${s.name}] ${m}`);
  const chk = join(work, `chk-${s.name}`);
  const sp = join(work, `sp-${s.name}`);
  mkdirSync(sp, { recursive: true });
  const args = (p: number, from: string) => ['run', s.job, '-p', String(p), '-w', '1', '--rest-port', '0', '--checkpoint-dir', chk, '--checkpoint-interval', '200ms',
    '--from', from, '--', ...s.jobArgs];
  let produced = false;
  const producer = s.produce().then(() => (produced = true));

  const r0 = await runAndAct(args(2, 'latest-or-empty'), chk, 1 + rng.int(3), 'kill', 60_000);
  log(`run 0 (p=2, fresh): ${r0.r.signal ?? r0.r.code}${r0.afterCompletions ? ' after completions' : ' at the fallback'}`);
  expect(r0.r.signal, r0.r.stderr).toBe('SIGKILL');

  const r1 = await runAndAct(args(3, 'latest'), chk, 1 + rng.int(2), { stopInto: sp }, 60_000);
  const savepoint = await savepointIn(sp);
  log(`run 1 (p=3, from the latest checkpoint): stop with savepoint -> exit ${r1.r.signal ?? r1.r.code}, savepoint ${savepoint ?? 'none'}; producer ${produced ? 'done' : 'still writing'}`);
  expect(r1.r.code, r1.r.stderr).toBe(0);
  expect(r1.r.stderr).toMatch(/savepoint \d+ completed/);
  expect(savepoint).toBeDefined();

  const r2 = await runAndAct(args(2, savepoint!), chk, 1 + rng.int(3), 'kill', 60_000);
  log(`run 2 (p=2, from the savepoint): ${r2.r.signal ?? r2.r.code}${r2.afterCompletions ? ' after completions' : ' at the fallback'}; producer ${produced ? 'done' : 'still writing'}`);
  expect(r2.r.signal, r2.r.stderr).toBe('SIGKILL');
  expect(r2.afterCompletions, r2.r.stderr).toBe(true);
  expect(r2.r.stderr).not.toContain('starting fresh');

  await producer;
  // The last run: until the sink holds the oracle's number of rows, then one more checkpoint (a
  // repeat would show as an extra row), then killed (the sources never end). The sentinel goes
  // in every second, as a live producer would keep writing: a restored split's event time starts
  // over and moves only with new records (as in Flink), so one sentinel read before the last
  // checkpoint would leave the windows waiting.
  const last = startWeir(args(3, 'latest'));
  const deadline = Date.now() + 150_000;
  let got = await s.read();
  let sentAt = 0;
  while (got.length < s.expected.length && Date.now() < deadline) {
    if (Date.now() - sentAt > 1000) {
      sentAt = Date.now();
      await s.sentinel();
    }
    await new Promise((r) => setTimeout(r, 250));
    got = await s.read();
  }
  const seen = completedCheckpoints(chk);
  let fresh = 0;
  while (fresh < 2 && Date.now() < deadline) {
    for (const c of completedCheckpoints(chk)) if (!seen.has(c)) { seen.add(c); fresh++; }
    await new Promise((r) => setTimeout(r, 20));
  }
  last.child.kill('SIGKILL');
  const lr = await last.done;
  got = await s.read();
  log(`run 3 (p=3, from the latest checkpoint): ${got.length} rows committed, ${s.expected.length} expected`);
  expect(lr.stderr).not.toContain('starting fresh');
  expect(got.length, lr.stderr.slice(-3000)).toBe(s.expected.length);
  expect(byJson(got)).toEqual(byJson(s.expected));
}

describe('chaos: connector pipelines under SIGKILL, with a rescale from a checkpoint and from a savepoint, while a producer writes', () => {
  it('Kinesis -> windows -> PostgreSQL (idempotent insert): the table equals the oracle', async () => {
    const k: Kinesalite = await startKinesalite();
    const stream = `weir-pipe-${process.pid}`;
    const table = uniqueName('weir_pipe');
    await createStream(k.client, stream, 2);
    await sql(SHARED_URL, `CREATE TABLE ${table} (page text, window_start bigint, views bigint, total_ms bigint)`);
    try {
      await runScenario({
        name: 'kinesis-postgres',
        job: 'test/fixtures/jobs/log-pipeline.ts',
        jobArgs: ['kinesis', k.endpoint, stream, 'postgres', '-', `${SHARED_URL}#${table}`, uniqueName('pipe')],
        produce: async () => {
          const started = Date.now();
          for (let a = 0; a < EVENTS; a += 250) {
            const views = Array.from({ length: Math.min(250, EVENTS - a) }, (_, j) => pageView(a + j));
            // Partition by page: each page's views stay in one shard, in order.
            const res = await k.client.send(new PutRecordsCommand({ StreamName: stream, Records: views.map((v) => ({ PartitionKey: v.page, Data: Buffer.from(JSON.stringify(v)) })) }));
            if ((res.FailedRecordCount ?? 0) > 0) throw new Error('put failed');
            const due = ((a + views.length) * 1000) / PER_SECOND - (Date.now() - started);
            if (due > 0) await new Promise((r) => setTimeout(r, due));
          }
        },
        sentinel: async () => {
          // Into every shard (the lowest and the highest hash key), so every shard's watermark passes.
          const res = await k.client.send(new PutRecordsCommand({ StreamName: stream, Records: ['0', (2n ** 128n - 1n).toString()].map((h) => ({ PartitionKey: 'end', ExplicitHashKey: h, Data: Buffer.from(JSON.stringify(SENTINEL)) })) }));
          if ((res.FailedRecordCount ?? 0) > 0) throw new Error('sentinel put failed');
        },
        read: async () => (await sql<PageWindow>(SHARED_URL, `SELECT page, window_start::float8 AS window_start, views::float8 AS views, total_ms::float8 AS total_ms FROM ${table}`)),
        expected: expectedPageWindows(EVENTS),
      });
    } finally {
      await sql(SHARED_URL, `DROP TABLE IF EXISTS ${table}`);
      await k.close();
    }
  }, 400_000);

  it('JetStream -> sessions -> JetStream (examples/jetstream-to-jetstream.ts): the output stream equals the oracle', async () => {
    const tag = uniqueName('PIPE').replace(/[^A-Za-z0-9_]/g, '_');
    const inStream = `${tag}_PV`;
    const outStream = `${tag}_SESS`;
    const nc: NatsConnection = await connect({ servers: NATS, timeout: 10_000 });
    const jsm = await nc.jetstreamManager({ timeout: 10_000 });
    try {
      await produceToJetStream(NATS, `${outStream}.out`, 0, 0);
      await produceToJetStream(NATS, `${inStream}.in`, 0, 0);
      await runScenario({
        name: 'jetstream-jetstream',
        job: 'examples/jetstream-to-jetstream.ts',
        jobArgs: [NATS, inStream, outStream, `${outStream}.out`, uniqueName('sessions')],
        produce: async () => {
          await produceToJetStream(NATS, `${inStream}.in`, 0, EVENTS, PER_SECOND);
        },
        sentinel: async () => {
          await nc.jetstream({ timeout: 10_000 }).publish(`${inStream}.in`, JSON.stringify(SENTINEL));
        },
        read: async () => {
          const info = await jsm.streams.info(outStream);
          const got: Session[] = [];
          for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) got.push((await jsm.streams.getMessage(outStream, { seq })).json<Session>());
          return got;
        },
        expected: expectedSessions(EVENTS),
      });
    } finally {
      for (const s of [inStream, outStream]) await jsm.streams.delete(s).catch(() => undefined);
      await nc.close();
    }
  }, 400_000);

  it('Redis -> windows -> Redis: the output stream equals the oracle', async () => {
    const inStream = uniqueName('weir-pipe:in');
    const outStream = uniqueName('weir-pipe:out');
    const redis = new Redis(REDIS, { lazyConnect: true, commandTimeout: 10_000 });
    await redis.connect();
    try {
      await runScenario({
        name: 'redis-redis',
        job: 'test/fixtures/jobs/log-pipeline.ts',
        jobArgs: ['redis', REDIS, inStream, 'redis', REDIS, outStream, uniqueName('pipe')],
        produce: async () => {
          await produceToRedis(REDIS, inStream, 0, EVENTS, PER_SECOND);
        },
        sentinel: async () => {
          await redis.xadd(inStream, '*', 'data', JSON.stringify(SENTINEL));
        },
        read: async () => (await redis.xrange(outStream, '-', '+')).map(([, f]) => JSON.parse(f[1]!) as PageWindow),
        expected: expectedPageWindows(EVENTS),
      });
    } finally {
      await redis.del(inStream, outStream);
      redis.disconnect();
    }
  }, 400_000);
});
