/**
 * Kinesis source against kinesalite started in-process, with the AWS SDK v3 client:
 * - restore from a checkpoint: per-key counts in keyed state reach exactly the number of
 *   records written (nothing lost, nothing emitted twice) across an injected failure;
 * - resharding (a split, then a merge) while the job runs at parallelism 2, with a failure after
 *   the merge so the restore holds finished parents (tombstones) and their children;
 * - malformed records to the dead-letter output naming stream, shard and sequence number;
 * - GetRecords throttled (ProvisionedThroughputExceeded injected by a seeded proxy) and retried;
 * - LATEST skips what was in the stream before the job started;
 * - KPL aggregates de-aggregated, and a restore inside an aggregate emits nothing twice.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { openSnapshot } from '../../../src/checkpoint/inspect.ts';
import { decodeValue } from '../../../src/core/codec.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTERS, defineJob, KinesisSource, runJob, ValueStateDescriptor, type Collector, type JobResult, type KeyedContext, type KeyedProcessFunction, type KeyedRuntimeContext, type MalformedRecord } from '../../../src/index.ts';
import { CREDENTIALS, REGION, createStream, listShards, mergeShards, putJson, splitShard, startFaultProxy, startKinesalite, type Kinesalite } from '../../helpers/kinesalite.ts';

interface In { i: number; key: string }
interface Out { key: string; n: number; i: number; attempt: number }

let k: Kinesalite;
let work: string;
let streams = 0;
const streamName = (tag: string) => `weir-${tag}-${process.pid}-${streams++}`;

beforeAll(async () => {
  k = await startKinesalite();
  work = mkdtempSync(join(tmpdir(), 'weir-kinesis-'));
});
afterAll(async () => {
  await k.close();
  rmSync(work, { recursive: true, force: true });
});

const count = new ValueStateDescriptor<number>('count', { defaultValue: 0 });

/** Shared with the job (it runs in this thread): what the count function saw. */
// completed: the highest checkpoint id completed (not a count of notifications: at p = 2 each
// checkpoint notifies both subtasks, and "two more notifications" was then one checkpoint that
// could have been triggered before the records the test waited for).
const seen = { completed: 0, failAtOrAbove: Number.POSITIVE_INFINITY, failed: false, attempts: new Set<number>() };

class CountAndFailOnce implements KeyedProcessFunction<string, In, Out> {
  private attempt = 0;
  open(ctx: KeyedRuntimeContext): void {
    this.attempt = ctx.taskInfo.attemptNumber;
    seen.attempts.add(this.attempt);
  }
  notifyCheckpointComplete(id: number): void {
    seen.completed = Math.max(seen.completed, id);
  }
  processElement(r: In, ctx: KeyedContext<string>, out: Collector<Out>): void {
    if (r.i >= seen.failAtOrAbove && this.attempt === 0) {
      seen.failed = true;
      throw new Error(`injected failure at record ${r.i}`);
    }
    const s = ctx.getState(count);
    const n = s.value()! + 1;
    s.update(n);
    out.collect({ key: r.key, n, i: r.i, attempt: this.attempt });
  }
}

const records = (from: number, n: number, keys: number): { key: string; value: In }[] =>
  Array.from({ length: n }, (_, j) => ({ key: `k${(from + j) % keys}`, value: { i: from + j, key: `k${(from + j) % keys}` } }));

async function until(what: string, cond: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Running { out: Out[]; logs: string[]; stop(): Promise<JobResult> }

function start(stream: string, parallelism: number, endpoint = k.endpoint, extra: { discoveryIntervalMs?: number } = {}): Running {
  const out: Out[] = [];
  const logs: string[] = [];
  const ac = new AbortController();
  const job = defineJob((env) => {
    env.fromSource(new KinesisSource<In>({ stream, endpoint, region: REGION, credentials: CREDENTIALS, initialPosition: 'TRIM_HORIZON', discoveryIntervalMs: extra.discoveryIntervalMs ?? 500, timeoutMs: 3000 }))
      .uid('kinesis')
      .keyBy((r) => r.key)
      .process(new CountAndFailOnce())
      .uid('counts')
      .addSink({ invoke: (v: Out) => void out.push(v) } as never);
  });
  const done = runJob(job, {
    workers: 1, parallelism, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal,
    checkpoint: { interval: 100, dir: join(work, stream) },
    restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
  });
  return { out, logs, stop: async () => { ac.abort(); return done; } };
}

/** The highest count per key; and whether any count went past `per` (a record counted twice). */
function maxima(out: readonly Out[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const o of out) m.set(o.key, Math.max(m.get(o.key) ?? 0, o.n));
  return m;
}

/** The source splits (with uid `uid`) of every subtask in the newest checkpoint under `root`. */
async function latestSplits(root: string, uid: string): Promise<{ shardId: string; finished?: boolean }[]> {
  const chks = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => /(^|\/)chk-\d+\/_metadata$/.test(f));
  const newest = chks.sort((a, b) => Number(/chk-(\d+)/.exec(b)![1]) - Number(/chk-(\d+)/.exec(a)![1]))[0]!;
  const m = await openSnapshot(join(root, dirname(newest)));
  const op = m.operators.find((o) => o.uid === uid)!;
  return op.subtasks.flatMap((st) => (st.inline === undefined ? [] : decodeValue<{ splits?: { shardId: string; finished?: boolean }[] }>(Buffer.from(st.inline, 'base64')).splits ?? []));
}

function resetSeen(): void {
  seen.completed = 0;
  seen.failAtOrAbove = Number.POSITIVE_INFINITY;
  seen.failed = false;
  seen.attempts.clear();
}

describe('KinesisSource', () => {
  it('restores from a checkpoint: keyed counts reach exactly the records written (no loss, nothing emitted twice)', async () => {
    resetSeen();
    const stream = streamName('restore');
    await createStream(k.client, stream, 2);
    const KEYS = 8;
    await putJson(k.client, stream, records(0, 400, KEYS));
    const job = start(stream, 1);
    try {
      await until('phase 1 counted', () => job.out.length >= 400);
      const before = seen.completed;
      await until('two checkpoints after phase 1', () => seen.completed >= before + 2);
      // Phase 2: the first record of it fails attempt 0; the job restores from the checkpoint.
      seen.failAtOrAbove = 400;
      await putJson(k.client, stream, records(400, 400, KEYS));
      await until('every key counted to 100 after the restore', () => [...maxima(job.out).values()].filter((n) => n >= 100).length === KEYS);
    } finally {
      const r = await job.stop();
      expect(r.status, job.logs.join('\n')).toBe('CANCELED');
    }
    expect(seen.failed).toBe(true);
    expect([...seen.attempts]).toContain(1);
    for (const [key, n] of maxima(job.out)) expect(n, `count of ${key}`).toBe(100);
    // Every record after the restore was counted once: per key, counts 1..100 all appear.
    const after = job.out.filter((o) => o.attempt === 1);
    expect(after.length).toBeGreaterThan(0);
    for (const o of after) expect(o.i).toBeGreaterThanOrEqual(400);
  }, 120_000);

  it('reads through a split and a merge at parallelism 2, children after parents, and restores across them', async () => {
    resetSeen();
    const stream = streamName('reshard');
    await createStream(k.client, stream, 2);
    const KEYS = 12;
    await putJson(k.client, stream, records(0, 300, KEYS));
    const job = start(stream, 2, k.endpoint, { discoveryIntervalMs: 300 });
    try {
      await until('phase 1 counted', () => job.out.length >= 300);
      await splitShard(k.client, stream, 'shardId-000000000000');
      await putJson(k.client, stream, records(300, 300, KEYS));
      await until('phase 2 counted', () => maxima(job.out).size === KEYS && [...maxima(job.out).values()].every((n) => n >= 50));
      // shardId-000000000003 (upper half of shard 0) and shardId-000000000001 are adjacent.
      await mergeShards(k.client, stream, 'shardId-000000000003', 'shardId-000000000001');
      await putJson(k.client, stream, records(600, 150, KEYS));
      await until('phase 3 counted', () => job.out.length >= 750);
      const before = seen.completed;
      await until('two checkpoints after the merge', () => seen.completed >= before + 2);
      seen.failAtOrAbove = 750;
      await putJson(k.client, stream, records(750, 150, KEYS));
      await until('every key counted to 75', () => [...maxima(job.out).values()].filter((n) => n >= 75).length === KEYS);
    } finally {
      const r = await job.stop();
      expect(r.status, job.logs.join('\n')).toBe('CANCELED');
    }
    expect(seen.failed).toBe(true);
    for (const [key, n] of maxima(job.out)) expect(n, `count of ${key}`).toBe(75);
    // The restore resumed every shard (parents finished, children mid-way) where the checkpoint left it.
    const after = job.out.filter((o) => o.attempt === 1);
    expect(after.length).toBeGreaterThan(0);
    for (const o of after) expect(o.i).toBeGreaterThanOrEqual(750);
    const shards = await listShards(k.client, stream);
    expect(shards.map((s) => s.ShardId)).toEqual(['shardId-000000000000', 'shardId-000000000001', 'shardId-000000000002', 'shardId-000000000003', 'shardId-000000000004']);
    expect(job.logs.some((l) => /shard shardId-000000000004 .*child of shardId-000000000003 and shardId-000000000001/.test(l)), job.logs.join('\n')).toBe(true);
  }, 120_000);

  it('prunes the tombstones of split shards once their children are in a completed checkpoint; a restore after that reads no shard twice', async () => {
    resetSeen();
    const stream = streamName('prune');
    await createStream(k.client, stream, 1);
    const KEYS = 8;
    await putJson(k.client, stream, records(0, 200, KEYS));
    const job = start(stream, 2, k.endpoint, { discoveryIntervalMs: 300 });
    const pruned = (id: string) => job.logs.some((l) => new RegExp(`tombstones? of shards? .*${id}.* pruned`).test(l));
    try {
      await until('phase 1 counted', () => job.out.length >= 200);
      // shard 0 -> shards 1 and 2; then shard 1 -> shards 3 and 4.
      await splitShard(k.client, stream, 'shardId-000000000000');
      await putJson(k.client, stream, records(200, 200, KEYS));
      await until('phase 2 counted', () => job.out.length >= 400);
      await splitShard(k.client, stream, 'shardId-000000000001');
      await putJson(k.client, stream, records(400, 200, KEYS));
      await until('phase 3 counted', () => job.out.length >= 600);
      await until('both tombstones pruned', () => pruned('shardId-000000000000') && pruned('shardId-000000000001'));
      const before = seen.completed;
      await until('two checkpoints after the pruning', () => seen.completed >= before + 2);
      // The restore is from a checkpoint without those tombstones: shards 0 and 1 must not be read again.
      seen.failAtOrAbove = 600;
      await putJson(k.client, stream, records(600, 200, KEYS));
      await until('every key counted to 100', () => [...maxima(job.out).values()].filter((n) => n >= 100).length === KEYS);
    } finally {
      const r = await job.stop();
      expect(r.status, job.logs.join('\n')).toBe('CANCELED');
    }
    expect(seen.failed).toBe(true);
    expect([...seen.attempts]).toContain(1);
    // Exact counts: a parent read again from TRIM_HORIZON would count its records twice.
    for (const [key, n] of maxima(job.out)) expect(n, `count of ${key}\n${job.logs.join('\n')}`).toBe(100);
    for (const o of job.out.filter((x) => x.attempt === 1)) expect(o.i).toBeGreaterThanOrEqual(600);
    const assigned = (id: string) => job.logs.filter((l) => l.includes(`shard ${id} of stream`) && l.includes('assigned to subtask')).length;
    expect(assigned('shardId-000000000000'), job.logs.join('\n')).toBe(0); // planned at the start, never assigned again
    expect(assigned('shardId-000000000001'), job.logs.join('\n')).toBe(1);
    expect(assigned('shardId-000000000002'), job.logs.join('\n')).toBe(1);
    // The last checkpoint holds the shards being read and no tombstone of the pruned ones.
    const held = await latestSplits(join(work, stream), 'kinesis');
    expect(held.map((x) => `${x.shardId}${x.finished === true ? ' (finished)' : ''}`).sort()).toEqual(['shardId-000000000002', 'shardId-000000000003', 'shardId-000000000004']);
  }, 120_000);

  it('sends malformed records to the dead letters, naming stream, shard and sequence number; retries throttled GetRecords', async () => {
    const stream = streamName('bad');
    await createStream(k.client, stream, 1);
    await putJson(k.client, stream, [{ key: 'a', value: { i: 0 } }, { key: 'a', value: '{not json' }, { key: 'a', value: { i: 2 } }]);
    const proxy = await startFaultProxy(k.endpoint, 7, { getRecordsFailureRate: 0.5 });
    const good: unknown[] = [];
    const dead: MalformedRecord[] = [];
    const ac = new AbortController();
    const logs: string[] = [];
    const job = defineJob((env) => {
      const s = env.fromSource(new KinesisSource<{ i: number }>({ stream, endpoint: proxy.endpoint, region: REGION, credentials: CREDENTIALS, initialPosition: 'TRIM_HORIZON', timeoutMs: 3000 }), { malformed: 'dead-letter' });
      s.addSink({ invoke: (v: unknown) => void good.push(v) } as never);
      s.getSideOutput(DEAD_LETTERS).addSink({ invoke: (v: MalformedRecord) => void dead.push(v) } as never);
    });
    const done = runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal });
    try {
      await until('both good records and the bad one', () => good.length >= 2 && dead.length >= 1);
    } finally {
      ac.abort();
      await done;
      await proxy.close();
    }
    expect(good).toEqual([{ i: 0 }, { i: 2 }]);
    expect(dead.length).toBe(1);
    expect(dead[0]!.location).toMatch(new RegExp(`stream "${stream}" shard shardId-000000000000 sequence \\d+`));
    expect(dead[0]!.raw).toBe('{not json');
    expect(proxy.stats.failedCalls).toBeGreaterThan(0);
    expect(logs.some((l) => /ProvisionedThroughputExceeded.*retrying/.test(l)), logs.join('\n')).toBe(true);
  }, 60_000);

  it('LATEST reads only what is written after the job started', async () => {
    const stream = streamName('latest');
    await createStream(k.client, stream, 1);
    await putJson(k.client, stream, records(0, 20, 2));
    const got: In[] = [];
    const ac = new AbortController();
    const job = defineJob((env) => {
      env.fromSource(new KinesisSource<In>({ stream, endpoint: k.endpoint, region: REGION, credentials: CREDENTIALS, initialPosition: 'LATEST', timeoutMs: 1000 }))
        .addSink({ invoke: (v: In) => void got.push(v) } as never);
    });
    const logs: string[] = [];
    const done = runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal });
    try {
      // Written until the job has read some: LATEST is AT_TIMESTAMP of the first start.
      for (let b = 0; got.length === 0 && b < 200; b++) {
        await putJson(k.client, stream, records(1000 + b * 5, 5, 2));
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      ac.abort();
      await done;
    }
    expect(got.length).toBeGreaterThan(0);
    expect(got.every((r) => r.i >= 1000), logs.join('\n')).toBe(true);
  }, 60_000);
});

describe('KinesisSource: an unreachable endpoint', () => {
  it('retries with backoff within retryDeadlineMs, then fails naming host, port and stream', async () => {
    const { createServer } = await import('node:net');
    // A port nobody listens on: bound, then closed.
    const port = await new Promise<number>((res) => { const srv = createServer(); srv.listen(0, '127.0.0.1', () => { const p = (srv.address() as { port: number }).port; srv.close(() => res(p)); }); });
    const job = defineJob((env) => {
      env.fromSource(new KinesisSource({ stream: 'nowhere', endpoint: `http://127.0.0.1:${port}`, region: REGION, credentials: CREDENTIALS, retryDeadlineMs: 1500, timeoutMs: 1000 }))
        .addSink({ invoke: () => {} } as never);
    });
    // Shard discovery at the start fails: the job does not start (runJob rejects) or fails.
    const message = await runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, restartStrategy: { type: 'none' } })
      .then((r) => { expect(r.status).toBe('FAILED'); return r.error?.message; }, (e: Error) => e.message);
    expect(message).toMatch(new RegExp(`Kinesis at 127\\.0\\.0\\.1:${port}: ListShards of stream "nowhere".*ECONNREFUSED`));
  }, 60_000);
});

describe('KinesisSource: KPL aggregates', () => {
  it('de-aggregates KPL records, and a restore inside an aggregate emits only its user records not yet emitted', async () => {
    const { aggregate, deaggregate } = await import('../../../src/connectors/kinesis/kpl.ts');
    const { PutRecordsCommand } = await import('@aws-sdk/client-kinesis');
    const enc = new TextEncoder();
    const users = Array.from({ length: 10 }, (_, u) => ({ partitionKey: `p${u % 3}`, data: enc.encode(JSON.stringify({ u })) }));
    const agg = aggregate(users);
    expect(deaggregate(agg)!.map((x) => x.partitionKey)).toEqual(users.map((x) => x.partitionKey));
    const broken = agg.slice();
    broken[broken.length - 1]! ^= 1;
    expect(deaggregate(broken)).toBeUndefined();
    expect(deaggregate(enc.encode('{"plain":true}'))).toBeUndefined();
    // Magic and the MD5 of an empty body: a plain record, as the KCL reads it (was an aggregate of nothing: lost).
    const { createHash } = await import('node:crypto');
    expect(deaggregate(Uint8Array.from([...agg.subarray(0, 4), ...createHash('md5').update(new Uint8Array(0)).digest()]))).toBeUndefined();

    const stream = streamName('kpl');
    await createStream(k.client, stream, 1);
    const res = await k.client.send(new PutRecordsCommand({ StreamName: stream, Records: [{ PartitionKey: 'p0', Data: agg }, { PartitionKey: 'p1', Data: enc.encode(JSON.stringify({ u: 'plain' })) }] }));
    const aggSeq = res.Records![0]!.SequenceNumber!;
    const src = new KinesisSource<{ u: number | string }>({ stream, endpoint: k.endpoint, region: REGION, credentials: CREDENTIALS, initialPosition: 'TRIM_HORIZON', timeoutMs: 3000 });
    const readFrom = async (split: Partial<import('../../../src/index.ts').KinesisShardSplit>, want: number, maxPerPoll: number) => {
      const got: { v: { u: number | string }; meta?: unknown }[] = [];
      let wake: () => void = () => {};
      const reader = src.createReader({
        subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake: () => wake(), log: () => {},
        schedule: (at, fn) => { const t = setTimeout(fn, Math.max(0, at - Date.now())); return { cancel: () => clearTimeout(t) }; },
        metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest() {} },
      });
      reader.addSplits([{ id: 'shardId-000000000000', stream, shardId: 'shardId-000000000000', parents: [], start: { type: 'TRIM_HORIZON' }, ...split }]);
      const out = {
        collect: (v: { u: number | string }) => void got.push({ v }), malformed: () => { throw new Error('unexpected malformed'); },
        forSplit: () => out, splitFinished: () => {},
      };
      for (let i = 0; i < 500 && got.length < want; i++) {
        const st = reader.poll(out as never, maxPerPoll);
        if (st === 'wait') await new Promise<void>((r) => { wake = r; setTimeout(r, 300); });
      }
      const snap = reader.snapshotSplits()[0]!;
      await reader.close?.();
      return { got: got.map((g) => g.v.u), snap };
    };
    // From the start, 3 records per poll: the aggregate is emitted over several polls.
    const all = await readFrom({}, 11, 3);
    expect(all.got).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 'plain']);
    expect(all.snap.lastSub).toBeUndefined();
    // Stopped after user record 3 of the aggregate: the position says so.
    const part = await readFrom({}, 4, 4);
    expect(part.got).toEqual([0, 1, 2, 3]);
    expect(part.snap).toMatchObject({ lastSeq: aggSeq, lastSub: 3 });
    // Restored there: the rest of the aggregate, then the plain record; nothing twice.
    const rest = await readFrom({ lastSeq: aggSeq, lastSub: 3 }, 7, 100);
    expect(rest.got).toEqual([4, 5, 6, 7, 8, 9, 'plain']);
  }, 60_000);
});
