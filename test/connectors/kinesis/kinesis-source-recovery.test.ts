/**
 * The Kinesis source against what a checkpoint cannot foresee, kinesalite in-process (faults it
 * cannot produce injected by a rule proxy in front of it):
 * - a stream deleted and created again under the same name, restored from a checkpoint holding
 *   a tombstone (before: the tombstone hid the new shard of that id, its records lost) or a
 *   position (before: GetShardIterator refused it on every restart, for ever);
 * - the source pointed at another stream (before: restarted for ever, the error wrapped as the
 *   operator's USER_CODE);
 * - a shard past retention while a checkpoint holds its position (before: restarted for ever,
 *   its children never read);
 * - an iterator that always expires (before: renewed in a tight loop, no log, no end) and
 *   GetRecords throttled past retryDeadlineMs (the error says how many tries in how long).
 * A failure every restart would meet again ends the job at once (STATE_RESTORE), in one line
 * saying what to do.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteStreamCommand } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineJob, KinesisSource, runJob, ValueStateDescriptor, type Collector, type JobResult, type KeyedContext, type KeyedProcessFunction } from '../../../src/index.ts';
import { CREDENTIALS, REGION, createStream, putJson, splitShard, startKinesalite, type Kinesalite } from '../../helpers/kinesalite.ts';
import { startRuleProxy } from '../../helpers/kinesis-rule-proxy.ts';

interface In { i: number; key: string }

let k: Kinesalite;
let work: string;
let streams = 0;
const streamName = (tag: string) => `weir-rec-${tag}-${process.pid}-${streams++}`;

beforeAll(async () => {
  k = await startKinesalite();
  work = mkdtempSync(join(tmpdir(), 'weir-kinesis-recovery-'));
});
afterAll(async () => {
  await k.close();
  rmSync(work, { recursive: true, force: true });
});

/** Shared with the job (it runs in this thread): the highest checkpoint completed. */
const seen = { completed: 0 };
const count = new ValueStateDescriptor<number>('count', { defaultValue: 0 });

class Count implements KeyedProcessFunction<string, In, number> {
  notifyCheckpointComplete(id: number): void {
    seen.completed = Math.max(seen.completed, id);
  }
  processElement(r: In, ctx: KeyedContext<string>, out: Collector<number>): void {
    const s = ctx.getState(count);
    s.update(s.value()! + 1);
    out.collect(r.i);
  }
}

const records = (from: number, n: number): { key: string; value: In }[] =>
  Array.from({ length: n }, (_, j) => ({ key: `k${(from + j) % 4}`, value: { i: from + j, key: `k${(from + j) % 4}` } }));

async function until(what: string, cond: () => boolean, logs: readonly string[], ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${logs.slice(-30).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Running { out: number[]; logs: string[]; done: Promise<JobResult>; stop(): Promise<JobResult> }

function start(o: { stream: string; dir: string; endpoint?: string; from?: string; retryDeadlineMs?: number; restart?: object; interval?: number }): Running {
  const out: number[] = [];
  const logs: string[] = [];
  const ac = new AbortController();
  const job = defineJob((env) => {
    env.fromSource(new KinesisSource<In>({ stream: o.stream, endpoint: o.endpoint ?? k.endpoint, region: REGION, credentials: CREDENTIALS, initialPosition: 'TRIM_HORIZON', discoveryIntervalMs: 300, timeoutMs: 3000, retryDeadlineMs: o.retryDeadlineMs ?? 20_000 }))
      .uid('kinesis')
      .keyBy((r) => r.key)
      .process(new Count())
      .uid('count')
      .addSink({ invoke: (v: number) => void out.push(v) } as never);
  });
  const done = runJob(job, {
    workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal,
    checkpoint: { interval: o.interval ?? 100, dir: o.dir, retention: 'retain-on-cancel' },
    // Flink's default strategy: it restarted each of these failures for ever.
    restartStrategy: (o.restart ?? { type: 'exponential-delay', initialBackoff: 100, maxBackoff: 500 }) as never,
    ...(o.from !== undefined ? { from: o.from } : {}),
  });
  return { out, logs, done, stop: async () => { ac.abort(); return done; } };
}

/** The job's result if it ended within `ms`, else it is stopped and the test fails naming what it did meanwhile. */
async function endsWithin(job: Running, ms: number): Promise<JobResult> {
  const r = await Promise.race([job.done, new Promise<undefined>((res) => setTimeout(() => res(undefined), ms))]);
  if (r !== undefined) return r;
  const stopped = await job.stop();
  throw new Error(`the job did not end within ${ms} ms (${stopped.attempts} attempts, ${job.out.length} records read)\n${job.logs.slice(0, 40).join('\n')}`);
}

/** Runs a job on `stream` until it has read `n` records and two more checkpoints completed; stops it, keeping its checkpoints. */
async function checkpointAfter(stream: string, dir: string, n: number, between?: (job: Running) => Promise<void>): Promise<void> {
  seen.completed = 0;
  const job = start({ stream, dir });
  await until(`${n} records`, () => job.out.length >= n, job.logs);
  await between?.(job);
  const c = seen.completed;
  await until('two more checkpoints', () => seen.completed >= c + 2, job.logs);
  await job.stop();
}

async function recreate(stream: string, shards: number): Promise<void> {
  await k.client.send(new DeleteStreamCommand({ StreamName: stream }));
  // kinesalite numbers a shard's sequence numbers from its creation time, in whole seconds: a
  // stream created again within the same second would have shards indistinguishable from the old.
  await new Promise((r) => setTimeout(r, 1200));
  await createStream(k.client, stream, shards);
}

/** Ended at once, in one line, saying what to do. */
function expectEndedForRestore(r: JobResult, job: Running, stream: string): void {
  const all = job.logs.join('\n');
  expect(r.status, `${r.error?.message}\n${all}`).toBe('FAILED');
  expect(r.error?.code, `${r.error?.message}\n${all}`).toBe('STATE_RESTORE');
  expect(r.attempts, all).toBe(1);
  const m = r.error!.message;
  expect(m).toContain(`stream "${stream}"`);
  expect(m).toContain('checkpoint');
  expect(m).toMatch(/without the checkpoint.*new uid\(\).*--allow-non-restored-state/);
  expect(m).not.toContain('\n');
}

describe('KinesisSource restored into a stream deleted and created again under the same name', () => {
  it('a checkpoint holding a tombstone ends the job at once naming stream and checkpoint (before: the new shard of that id was never read)', async () => {
    const stream = streamName('tomb');
    const dir = join(work, stream);
    await createStream(k.client, stream, 1);
    await putJson(k.client, stream, records(0, 50));
    await checkpointAfter(stream, dir, 50, async (job) => {
      await splitShard(k.client, stream, 'shardId-000000000000');
      await until('children assigned', () => job.logs.some((l) => l.includes('shardId-000000000002') && l.includes('assigned')), job.logs);
    });
    await recreate(stream, 3);
    await putJson(k.client, stream, records(1000, 90));
    const job = start({ stream, dir, from: 'latest' });
    const r = await endsWithin(job, 20_000);
    expectEndedForRestore(r, job, stream);
    // Which shards it names depends on which splits the checkpoint held (the tombstone, or its children too).
    expect(r.error!.message).toMatch(/shard shardId-\d+ began at sequence \d+, the listed one at \d+/);
    expect(r.error!.message).toContain(`the checkpoint ${dir}`);
  }, 90_000);

  it('a checkpoint holding positions ends the job at once (before: GetShardIterator refused the position on every restart)', async () => {
    const stream = streamName('pos');
    const dir = join(work, stream);
    await createStream(k.client, stream, 1);
    await putJson(k.client, stream, records(0, 50));
    await checkpointAfter(stream, dir, 50);
    await recreate(stream, 1);
    await putJson(k.client, stream, records(1000, 40));
    const job = start({ stream, dir, from: 'latest' });
    const r = await endsWithin(job, 20_000);
    expectEndedForRestore(r, job, stream);
  }, 90_000);
});

describe('KinesisSource restored with the source pointed at another stream', () => {
  it('ends the job at once naming both streams (before: RESTORE wrapped as USER_CODE, restarted for ever)', async () => {
    const a = streamName('a');
    const b = streamName('b');
    const dir = join(work, a);
    await createStream(k.client, a, 1);
    await createStream(k.client, b, 1);
    await putJson(k.client, a, records(0, 20));
    await checkpointAfter(a, dir, 20);
    const job = start({ stream: b, dir, from: 'latest' });
    const r = await endsWithin(job, 20_000);
    expectEndedForRestore(r, job, b);
    expect(r.error!.message).toContain(`"${a}"`);
  }, 60_000);
});

describe('KinesisSource: a shard past retention while the checkpoint holds its position', () => {
  it('finishes the shard with a warning and reads its children (before: restarted for ever, the children never read)', async () => {
    const stream = streamName('gone');
    const dir = join(work, stream);
    await createStream(k.client, stream, 1);
    await putJson(k.client, stream, records(0, 40));
    await checkpointAfter(stream, dir, 40);
    await splitShard(k.client, stream, 'shardId-000000000000');
    await putJson(k.client, stream, records(40, 40));
    // Past retention, as AWS shows it: gone from ListShards, and ResourceNotFound for the shard.
    const GONE = 'shardId-000000000000';
    const proxy = await startRuleProxy(k.endpoint, {
      before: (op, body) => ((op === 'GetShardIterator' || op === 'GetRecords' || op === 'DescribeShard') && body.ShardId === GONE
        ? { status: 400, json: { __type: 'ResourceNotFoundException', message: `Shard ${GONE} in stream ${stream} under account 000000000000 does not exist` } } : undefined),
      after: (op, _b, a) => (op === 'ListShards' ? { ...a, Shards: (a.Shards as { ShardId: string }[]).filter((s) => s.ShardId !== GONE) } : a),
    });
    const job = start({ stream, dir, endpoint: proxy.endpoint, from: 'latest' });
    try {
      await until("the children's 40 records", () => new Set(job.out.filter((i) => i >= 40)).size >= 40 || job.logs.some((l) => /restart/i.test(l)), job.logs);
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      const r = await job.stop();
      await proxy.close();
      const all = job.logs.join('\n');
      expect(r.status, `${r.error?.message}\n${all}`).toBe('CANCELED');
      expect(r.attempts, all).toBe(1);
    }
    const all = job.logs.join('\n');
    expect([...new Set(job.out)].sort((x, y) => x - y), all).toEqual(Array.from({ length: 40 }, (_, j) => 40 + j));
    expect(job.out.length, all).toBe(40);
    expect(all).toMatch(new RegExp(`warning: shard ${GONE} of stream "${stream}" no longer exists .* records after sequence \\d+ expired unread`));
  }, 90_000);
});

describe('KinesisSource: GetRecords failing without end', () => {
  it('an iterator that always expires is renewed once at once, then retried with backoff until retryDeadlineMs (before: renewed in a tight loop for ever)', async () => {
    let on = false;
    const proxy = await startRuleProxy(k.endpoint, {
      before: (op) => (op === 'GetRecords' && on ? { status: 400, json: { __type: 'ExpiredIteratorException', message: 'Iterator expired (injected)' } } : undefined),
    });
    const stream = streamName('exp');
    await createStream(k.client, stream, 1);
    await putJson(k.client, stream, records(0, 10));
    const job = start({ stream, dir: join(work, stream), endpoint: proxy.endpoint, retryDeadlineMs: 3000, restart: { type: 'none' } });
    try {
      await until('10 records', () => job.out.length >= 10, job.logs);
      const before = proxy.calls.get('GetShardIterator') ?? 0;
      on = true;
      const r = await endsWithin(job, 15_000);
      const renewals = (proxy.calls.get('GetShardIterator') ?? 0) - before;
      const all = job.logs.join('\n');
      expect(r.status, all).toBe('FAILED');
      expect(r.error!.message).toMatch(new RegExp(`Kinesis at 127\\.0\\.0\\.1:\\d+: GetRecords of shard shardId-000000000000 of stream "${stream}": ExpiredIteratorException: Iterator expired \\(injected\\) \\(gave up after \\d+ tries in [\\d.]+ s; retryDeadlineMs is 3000 ms\\)$`));
      // Backoff from 300 ms within 3 s: a handful of renewals, not thousands.
      expect(renewals, all).toBeLessThan(20);
      expect(all).toMatch(/GetRecords of shard shardId-000000000000 of stream .*ExpiredIteratorException.*retrying in \d+ ms \(try 1\)/);
    } finally {
      await job.stop();
      await proxy.close();
    }
  }, 60_000);

  it('GetRecords throttled past retryDeadlineMs fails saying how many tries in how long, and the setting', async () => {
    let on = false;
    const proxy = await startRuleProxy(k.endpoint, {
      before: (op) => (op === 'GetRecords' && on ? { status: 400, json: { __type: 'ProvisionedThroughputExceededException', message: 'Rate exceeded (injected)' } } : undefined),
    });
    const stream = streamName('thr');
    await createStream(k.client, stream, 1);
    await putJson(k.client, stream, records(0, 10));
    const job = start({ stream, dir: join(work, stream), endpoint: proxy.endpoint, retryDeadlineMs: 2000, restart: { type: 'none' } });
    try {
      await until('10 records', () => job.out.length >= 10, job.logs);
      on = true;
      const r = await endsWithin(job, 15_000);
      expect(r.status).toBe('FAILED');
      expect(r.error!.message).toMatch(new RegExp(`Kinesis at 127\\.0\\.0\\.1:\\d+: GetRecords of shard shardId-000000000000 of stream "${stream}": ProvisionedThroughputExceededException: Rate exceeded \\(injected\\) \\(gave up after ([2-9]|\\d\\d) tries in [\\d.]+ s; retryDeadlineMs is 2000 ms\\)$`));
    } finally {
      await job.stop();
      await proxy.close();
    }
  }, 60_000);
});
