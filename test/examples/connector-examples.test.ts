/**
 * The connector examples run as their comments say (`weir run`, real servers): events from
 * examples/produce-events.ts into Redis Streams and NATS JetStream, each example run with
 * checkpoints (bounded: it stops at the stream's end as it was at the first start), and what it
 * committed compared with the output computed directly from the events.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { produceToJetStream, produceToRedis } from '../../examples/produce-events.ts';
import { expectedPageWindows, type PageWindow } from '../../examples/redis-to-postgres.ts';
import { expectedSessions, type Session } from '../../examples/jetstream-to-jetstream.ts';
import { SHARED_URL, sql, uniqueName } from '../connectors/postgres/helpers.ts';
import { runWeir } from '../chaos/harness.ts';

const EVENTS = 12_000;
let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-examples-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const byJson = <T>(xs: T[]): T[] => xs.map((x) => JSON.stringify(x)).sort().map((s) => JSON.parse(s) as T);

describe('examples/redis-to-postgres.ts', () => {
  const stream = uniqueName('weir-example:pageviews');
  const table = uniqueName('page_windows');
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
    await redis.connect();
    await sql(SHARED_URL, `CREATE TABLE ${table} (page text, window_start bigint, views bigint, total_ms bigint, PRIMARY KEY (page, window_start))`);
  });
  afterAll(async () => {
    await redis.del(stream);
    redis.disconnect();
    await sql(SHARED_URL, `DROP TABLE IF EXISTS ${table}`);
  });

  it('every page window is in the table once, with the counts computed from the events', async () => {
    await produceToRedis('redis://127.0.0.1:6379', stream, 0, EVENTS);
    const r = await runWeir(['run', 'examples/redis-to-postgres.ts', '--checkpoint-dir', join(work, 'chk-pg'), '--checkpoint-interval', '200ms',
      '--', 'redis://127.0.0.1:6379', stream, `${SHARED_URL}#${table}`, uniqueName('pages'), 'bounded']);
    expect(r.code, r.stderr).toBe(0);
    const rows = await sql<PageWindow>(SHARED_URL, `SELECT page, window_start::float8 AS window_start, views::float8 AS views, total_ms::float8 AS total_ms FROM ${table}`);
    expect(rows.length).toBeGreaterThan(100);
    expect(byJson(rows)).toEqual(byJson(expectedPageWindows(EVENTS)));
  }, 180_000);
});

describe('examples/jetstream-to-jetstream.ts', () => {
  const tag = uniqueName('EX').replace(/[^A-Za-z0-9_]/g, '_');
  const inStream = `${tag}_PV`;
  const outStream = `${tag}_SESS`;
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await connect({ servers: '127.0.0.1:4222' });
  });
  afterAll(async () => {
    const jsm = await nc.jetstreamManager();
    for (const s of [inStream, outStream]) await jsm.streams.delete(s).catch(() => undefined);
    await nc.close();
  });

  it('every session is published once, as computed from the events', async () => {
    await produceToJetStream('127.0.0.1:4222', `${outStream}.out`, 0, 0);
    await produceToJetStream('127.0.0.1:4222', `${inStream}.in`, 0, EVENTS);
    const r = await runWeir(['run', 'examples/jetstream-to-jetstream.ts', '--checkpoint-dir', join(work, 'chk-js'), '--checkpoint-interval', '200ms',
      '--', '127.0.0.1:4222', inStream, outStream, `${outStream}.out`, uniqueName('sessions'), 'bounded']);
    expect(r.code, r.stderr).toBe(0);
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(outStream);
    const got: Session[] = [];
    for (let seq = 1; seq <= info.state.last_seq; seq++) got.push((await jsm.streams.getMessage(outStream, { seq })).json<Session>());
    const want = expectedSessions(EVENTS);
    expect(want.length).toBeGreaterThan(100);
    expect(byJson(got)).toEqual(byJson(want));
  }, 180_000);
});
