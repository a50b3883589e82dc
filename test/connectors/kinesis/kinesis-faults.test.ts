/**
 * Kinesis outages (issue 9 point 8), kinesalite behind the TCP proxy of the server-fault tests
 * (test/helpers/tcp-proxy.ts): `cut()` drops every connection and refuses new ones, as a
 * Kinesis endpoint that went away; `restore()` accepts again.
 *
 * - Mid-job, Kinesis -> PostgreSQL (exactly-once) and Kinesis -> Kinesis (at-least-once), the
 *   source and the Kinesis sink both through the proxy, while a producer keeps writing to the
 *   stream directly. Two ways through it: a retry deadline longer than the outage (the job rides
 *   it out on its retries, one attempt) and one shorter (the source fails, the job restarts per
 *   its restart strategy and restores). PostgreSQL then holds exactly the records written; the
 *   Kinesis output stream holds every one of them (duplicates are allowed there: the Kinesis sink
 *   is at-least-once, as Flink's; the test prints how many).
 * - Unreachable at start: one line naming host and port, the number of tries and the time,
 *   after retries with backoff within retryDeadlineMs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineJob, KinesisSink, KinesisSource, PostgresSink, runJob, type JobResult } from '../../../src/index.ts';
import { CREDENTIALS, REGION, createStream, listShards, putJson, readShard, startKinesalite, type Kinesalite } from '../../helpers/kinesalite.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { SHARED_URL, sql, uniqueName } from '../postgres/helpers.ts';

let k: Kinesalite;
let work: string;
let streams = 0;
const streamName = (tag: string) => `weir-faults-${tag}-${process.pid}-${streams++}`;

beforeAll(async () => {
  k = await startKinesalite();
  work = mkdtempSync(join(tmpdir(), 'weir-kinesis-faults-'));
});
afterAll(async () => {
  await k.close();
  rmSync(work, { recursive: true, force: true });
});

const records = (from: number, n: number) => Array.from({ length: n }, (_, j) => ({ key: `k${(from + j) % 16}`, value: { i: from + j } }));

async function readAll(stream: string): Promise<number[]> {
  const out: number[] = [];
  for (const s of await listShards(k.client, stream)) for (const d of await readShard(k.client, stream, s.ShardId!)) out.push((JSON.parse(d) as { i: number }).i);
  return out;
}

async function until(what: string, cond: () => Promise<boolean> | boolean, ms = 90_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Each i of 0..n-1 exactly once, naming the duplicated and the missing ones otherwise. */
function expectEachOnce(is: readonly number[], n: number, logs: readonly string[]): void {
  const seen = new Map<number, number>();
  for (const i of is) seen.set(i, (seen.get(i) ?? 0) + 1);
  const twice = [...seen].filter(([, c]) => c > 1).map(([i]) => i);
  const missing = Array.from({ length: n }, (_, i) => i).filter((i) => !seen.has(i));
  expect({ twice: twice.slice(0, 20), missing: missing.slice(0, 20), extra: [...seen.keys()].filter((i) => i < 0 || i >= n).slice(0, 20) }, logs.join('\n')).toEqual({ twice: [], missing: [], extra: [] });
  expect(is.length).toBe(n);
}

describe('Kinesis cut mid-job (the endpoint behind a TCP proxy, cut for 3 s while a producer keeps writing)', () => {
  for (const mode of ['rides it out on its retries', 'restarts per its restart strategy'] as const) {
    it(`${mode}: PostgreSQL holds exactly the records written; the Kinesis sink's output every one of them`, async () => {
      const riding = mode === 'rides it out on its retries';
      const input = streamName('in');
      const output = streamName('out');
      const table = uniqueName('weir_kfaults');
      await createStream(k.client, input, 2);
      await createStream(k.client, output, 2);
      await sql(SHARED_URL, `CREATE TABLE ${table} (i bigint)`);
      const port = Number(new URL(k.endpoint).port);
      const proxy = await startTcpProxy(port);
      const endpoint = `http://127.0.0.1:${proxy.port}`;
      const FIRST = 3000;
      const TOTAL = 6000;
      await putJson(k.client, input, records(0, FIRST));
      const logs: string[] = [];
      const ac = new AbortController();
      const jobId = uniqueName('kfaults');
      // The retry deadline decides the way through: 60 s outlasts the cut, 500 ms does not.
      const retryDeadlineMs = riding ? 60_000 : 500;
      const done: Promise<JobResult> = runJob(defineJob((env) => {
        const s = env.fromSource(new KinesisSource<{ i: number }>({ stream: input, endpoint, region: REGION, credentials: CREDENTIALS, initialPosition: 'TRIM_HORIZON', discoveryIntervalMs: 500, timeoutMs: 2000, retryDeadlineMs }), { ratePerSecond: 1500 })
          .map((r) => ({ i: r.i }));
        s.sinkTo(new PostgresSink<{ i: number }>({ connection: SHARED_URL, table, jobId, columns: ['i'] }));
        s.sinkTo(new KinesisSink<{ i: number }>({ stream: output, endpoint, region: REGION, credentials: CREDENTIALS, partitionKey: (r) => `k${r.i % 16}`, timeoutMs: 2000, retryDeadlineMs }));
      }), {
        workers: 1, parallelism: 2, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal,
        checkpoint: { interval: 200, dir: join(work, input) },
        restartStrategy: { type: 'fixed-delay', attempts: 20, delay: 500 },
      });
      let settled = false;
      void done.finally(() => (settled = true));
      const committed = async () => Number((await sql<{ n: string }>(SHARED_URL, `SELECT count(*) AS n FROM ${table}`))[0]!.n);
      try {
        await until('some output committed', async () => settled || (await committed()) > 0);
        expect(settled, logs.join('\n')).toBe(false);
        const before = await committed();
        await proxy.cut();
        // While Kinesis is away from the job, the stream keeps growing (written directly).
        await putJson(k.client, input, records(FIRST, TOTAL - FIRST));
        await new Promise((r) => setTimeout(r, 3000));
        await proxy.restore();
        expect(before).toBeLessThan(TOTAL);
        await until('every record committed', async () => settled || (await committed()) >= TOTAL);
        // Settle: anything committed twice would land now (the count is checked exactly below).
        await new Promise((r) => setTimeout(r, 1500));
      } finally {
        ac.abort();
        await proxy.close();
      }
      const result = await done;
      expect(result.status, `${result.error?.message}\n${logs.join('\n')}`).toBe('CANCELED');
      const got = (await sql<{ i: string }>(SHARED_URL, `SELECT i FROM ${table}`)).map((r) => Number(r.i));
      await sql(SHARED_URL, `DROP TABLE IF EXISTS ${table}`);
      expectEachOnce(got, TOTAL, logs);
      if (riding) expect(result.attempts, logs.join('\n')).toBe(1);
      else expect(result.attempts, logs.join('\n')).toBeGreaterThanOrEqual(2);
      // The retries were logged with the endpoint's host and port (never the credentials).
      expect(logs.some((l) => l.includes(`127.0.0.1:${proxy.port}`) && /retrying in \d+ ms/.test(l)), logs.join('\n')).toBe(true);
      expect(logs.join('\n')).not.toContain(CREDENTIALS.secretAccessKey);
      const out = await readAll(output);
      const distinct = new Set(out);
      expect(Array.from({ length: TOTAL }, (_, i) => i).filter((i) => !distinct.has(i)).slice(0, 20), 'missing from the Kinesis output').toEqual([]);
      expect([...distinct].every((i) => i >= 0 && i < TOTAL)).toBe(true);
      console.log(`kinesis outage (${mode}): ${result.attempts} attempt(s); PostgreSQL ${got.length} rows = ${TOTAL} written; Kinesis output ${out.length} records, ${out.length - distinct.size} duplicates (at-least-once)`);
    }, 180_000);
  }
});

describe('Kinesis unreachable at start', () => {
  it('retries with backoff within retryDeadlineMs, then fails with one line naming host, port, stream and the tries', async () => {
    // Through a proxy that is cut: connections refused, and counted when it is up (it is not).
    const proxy = await startTcpProxy(Number(new URL(k.endpoint).port));
    const port = proxy.port;
    await proxy.cut();
    try {
      const logs: string[] = [];
      const job = defineJob((env) => {
        env.fromSource(new KinesisSource({ stream: 'nowhere', endpoint: `http://127.0.0.1:${port}`, region: REGION, credentials: CREDENTIALS, retryDeadlineMs: 2000, timeoutMs: 1000 }))
          .addSink({ invoke: () => {} } as never);
      });
      const message = await runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), restartStrategy: { type: 'none' } })
        .then((r) => { expect(r.status).toBe('FAILED'); return r.error?.message ?? ''; }, (e: Error) => e.message);
      expect(message).toMatch(new RegExp(`^Kinesis at 127\\.0\\.0\\.1:${port}: ListShards of stream "nowhere": .*ECONNREFUSED.* \\(gave up after (\\d+) tries in [\\d.]+ s; retryDeadlineMs is 2000 ms\\)$`));
      expect(message).not.toContain('\n');
      const tries = Number(/gave up after (\d+) tries/.exec(message)![1]);
      expect(tries).toBeGreaterThanOrEqual(2);
      expect(message).not.toContain(CREDENTIALS.secretAccessKey);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('the Kinesis sink retries its PutRecords within retryDeadlineMs, then fails the job naming host, port and stream', async () => {
    const proxy = await startTcpProxy(Number(new URL(k.endpoint).port));
    const port = proxy.port;
    await proxy.cut();
    try {
      const logs: string[] = [];
      const r = await runJob(defineJob((env) => {
        env.fromElements(1, 2, 3).sinkTo(new KinesisSink<number>({ stream: 'nowhere', endpoint: `http://127.0.0.1:${port}`, region: REGION, credentials: CREDENTIALS, partitionKey: (i) => `k${i}`, retryDeadlineMs: 1500, timeoutMs: 1000 }));
      }), { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), restartStrategy: { type: 'none' } });
      expect(r.status).toBe('FAILED');
      const message = r.error?.message ?? '';
      expect(message).toMatch(new RegExp(`Kinesis at 127\\.0\\.0\\.1:${port}: PutRecords to stream "nowhere" \\(a record still failing after \\d+ s\\): .*ECONNREFUSED`));
      expect(message).not.toContain(CREDENTIALS.secretAccessKey);
    } finally {
      await proxy.close();
    }
  }, 60_000);
});
