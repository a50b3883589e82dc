/**
 * One measurement of the connectors suite, in a fresh process:
 *   node --conditions=weir-source --import tsx bench/connector-child.ts '<ChildSpec as JSON>'
 *
 * Sources read n records that the runner wrote beforehand (one Redis stream key, one JetStream
 * stream, one Kinesis shard), decode their JSON and pass each to a Checker; the time runs from
 * just before connecting (raw) or runJob (weir) until the n-th record has been checked. Sinks
 * write the n records of `rec(i)` to a target created for this measurement (a table, a stream
 * key, a JetStream stream, a Kinesis stream); the time runs from just before connecting or
 * runJob until the last write was acknowledged (raw) or the job finished, i.e. everything
 * was committed (weir). Then, untimed, a sink's target is read back in full and checked, and
 * removed. Prints one RESULT_MARK line on stdout.
 *
 * weir runs on 1 worker (the main thread) at parallelism 1; weir-eo / weir-alo take a
 * checkpoint every second in exactly-once / at-least-once mode, into a temporary directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  CreateStreamCommand, DeleteStreamCommand, DescribeStreamSummaryCommand, GetRecordsCommand, GetShardIteratorCommand, KinesisClient, ListShardsCommand,
  PutRecordsCommand, type PutRecordsRequestEntry,
} from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Redis } from 'ioredis';
import { connect, type NatsConnection } from 'nats';
import pg from 'pg';
import {
  defineJob, JetStreamSink, JetStreamSource, KinesisSink, KinesisSource, PostgresSink, RedisStreamsSink, RedisStreamsSource, runJob, type RunOptions, type Source, type SourceSplit,
  type TwoPhaseCommitSink,
} from 'weir';
import {
  BATCH, CHECKPOINT_INTERVAL_MS, Checker, CONNECTOR_VARIANTS, KINESIS_BATCH, KINESIS_CREDENTIALS, KINESIS_FETCH_INTERVAL_MS, KINESIS_IN_FLIGHT, KINESIS_REGION,
  NATS_IN_FLIGHT, NATS_SERVERS, rec, REDIS_URL, SHARED_PG_URL, SINKS, SOURCES, type Check, type ConnectorVariant, type Rec, type SinkConnector, type SourceConnector,
} from './connector-work.ts';
import { RESULT_MARK } from './workloads.ts';

export type ChildSpec =
  | { readonly role: 'source'; readonly connector: SourceConnector; readonly variant: ConnectorVariant; readonly n: number; readonly name: string; readonly kinesisEndpoint?: string }
  | {
      readonly role: 'sink'; readonly connector: SinkConnector; readonly variant: ConnectorVariant; readonly n: number;
      /** Target to create, write and remove (table, stream key, stream); also the prefix of progress names and the job id. */
      readonly name: string;
      readonly kinesisEndpoint?: string;
    };

export interface ConnectorChildReport {
  /** Wall time of the measured work, ms. */
  readonly ms: number;
  /** CPU time of this process (user + system) over the same span, ms. */
  readonly cpuMs: number;
  /** CPU time of the whole process up to the report (start-up and checks included), ms. */
  readonly processCpuMs: number;
  /** What the records added up to: read by a source, or read back from a sink's target. */
  readonly check: Check;
  /** weir: checkpoints completed, restarts (attempts - 1), the job's status, records the source counted. */
  readonly checkpoints?: number;
  readonly restarts?: number;
  readonly status?: string;
  readonly recordsIn?: number;
  /** weir sources: from runJob to the job's end (the n-th record is earlier). */
  readonly jobMs?: number;
  /** Sinks: reading the target back and checking it, ms (untimed). */
  readonly verifyMs?: number;
}

const epoch = () => performance.now();
const cpuSince = (start?: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
};
function fail(message: string): never {
  throw new Error(message);
}

function kinesisClient(endpoint: string): KinesisClient {
  return new KinesisClient({
    endpoint, region: KINESIS_REGION, credentials: KINESIS_CREDENTIALS, maxAttempts: 3,
    requestHandler: new NodeHttpHandler({ connectionTimeout: 10_000, requestTimeout: 30_000, throwOnRequestTimeout: true }),
  });
}

async function natsConnect(): Promise<NatsConnection> {
  return connect({ servers: NATS_SERVERS, timeout: 10_000 });
}

/** Checkpointing of a weir variant (none for plain weir), in a temporary directory. */
function checkpointing(variant: ConnectorVariant, dir: string): Pick<RunOptions, 'checkpoint'> {
  if (variant === 'weir-eo') return { checkpoint: { dir, interval: CHECKPOINT_INTERVAL_MS, mode: 'exactly-once' } };
  if (variant === 'weir-alo') return { checkpoint: { dir, interval: CHECKPOINT_INTERVAL_MS, mode: 'at-least-once' } };
  return {};
}

// ---- sources: raw clients ----------------------------------------------------------------

async function rawRedisSource(n: number, key: string, checker: Checker): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 10_000, commandTimeout: 30_000, maxRetriesPerRequest: 0 });
  await redis.connect();
  try {
    let id = '0-0';
    while (checker.records < n) {
      const res = (await redis.xread('COUNT', BATCH, 'STREAMS', key, id)) as [string, [string, string[]][]][] | null;
      const entries = res?.[0]?.[1] ?? [];
      if (entries.length === 0) fail(`redis stream ${key} ended after ${checker.records} of ${n} records`);
      for (const [eid, fields] of entries) {
        let data: string | undefined;
        for (let f = 0; f < fields.length; f += 2) if (fields[f] === 'data') data = fields[f + 1];
        checker.add(JSON.parse(data!) as Rec);
        id = eid;
      }
    }
  } finally {
    redis.disconnect();
  }
}

async function rawJetStreamSource(n: number, stream: string, checker: Checker): Promise<void> {
  const nc = await natsConnect();
  try {
    const consumer = await nc.jetstream().consumers.get(stream); // an ordered consumer (AckNone)
    const messages = await consumer.consume({ max_messages: BATCH });
    for await (const m of messages) {
      checker.add(m.json<Rec>());
      if (checker.records >= n) break;
    }
    await messages.close();
  } finally {
    await nc.close();
  }
}

async function rawKinesisSource(n: number, stream: string, endpoint: string, checker: Checker): Promise<void> {
  const client = kinesisClient(endpoint);
  try {
    const shards = (await client.send(new ListShardsCommand({ StreamName: stream }))).Shards ?? [];
    if (shards.length !== 1) fail(`kinesis stream ${stream} has ${shards.length} shards, expected 1`);
    let it = (await client.send(new GetShardIteratorCommand({ StreamName: stream, ShardId: shards[0]!.ShardId!, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
    const decoder = new TextDecoder();
    let last = -Infinity;
    while (checker.records < n) {
      if (it === undefined) fail(`kinesis stream ${stream}: the shard ended after ${checker.records} of ${n} records`);
      const wait = last + KINESIS_FETCH_INTERVAL_MS - epoch();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      last = epoch();
      const r = await client.send(new GetRecordsCommand({ ShardIterator: it, Limit: 10_000 }));
      for (const x of r.Records ?? []) checker.add(JSON.parse(decoder.decode(x.Data!)) as Rec);
      it = r.NextShardIterator;
    }
  } finally {
    client.destroy();
  }
}

// ---- sources: weir ---------------------------------------------------------------------

async function weirSource(spec: Extract<ChildSpec, { role: 'source' }>, checker: Checker): Promise<Omit<ConnectorChildReport, 'processCpuMs' | 'check'>> {
  const { n, name } = spec;
  const source: Source<Rec, SourceSplit> =
    spec.connector === 'redis' ? new RedisStreamsSource<Rec>({ url: REDIS_URL, streams: [name], stopAt: 'latest' })
    : spec.connector === 'jetstream' ? new JetStreamSource<Rec>({ servers: NATS_SERVERS, stream: name, stopAt: 'latest' })
    : new KinesisSource<Rec>({ stream: name, endpoint: spec.kinesisEndpoint!, region: KINESIS_REGION, credentials: KINESIS_CREDENTIALS, initialPosition: 'TRIM_HORIZON' });
  // Kinesis streams have no end: the job is canceled once the n-th record has been checked.
  const unbounded = spec.connector === 'kinesis';
  const ac = new AbortController();
  let doneAt: number | undefined;
  let doneCpu: number | undefined;
  const c0 = process.cpuUsage();
  const job = defineJob((env) => {
    env.setJobName(`bench ${spec.connector} source`);
    env.fromSource(source, { name: `${spec.connector} source` }).addSink({
      invoke(r: Rec) {
        checker.add(r);
        if (checker.records === n) {
          doneAt = epoch();
          doneCpu = cpuSince(c0);
          if (unbounded) ac.abort();
        }
      },
    }).name('check');
  });
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-conn-'));
  const logs: string[] = [];
  try {
    const t0 = epoch();
    const r = await runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal, ...checkpointing(spec.variant, dir) });
    const jobMs = epoch() - t0;
    const want = unbounded ? 'CANCELED' : 'FINISHED';
    if (r.status !== want) fail(`weir ${spec.connector} source job ${r.status} (expected ${want}): ${r.error?.message ?? ''}\n${logs.join('\n')}`);
    if (doneAt === undefined) fail(`weir ${spec.connector} source job ended after ${checker.records} of ${n} records\n${logs.join('\n')}`);
    return { ms: doneAt - t0, cpuMs: doneCpu!, checkpoints: r.checkpoints.counts.completed, restarts: r.attempts - 1, status: r.status, recordsIn: r.progress.recordsIn, jobMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- sinks: targets ----------------------------------------------------------------------

async function pgQuery<R extends pg.QueryResultRow>(text: string): Promise<R[]> {
  const c = new pg.Client({ connectionString: SHARED_PG_URL, connectionTimeoutMillis: 10_000, query_timeout: 60_000 });
  await c.connect();
  try {
    return (await c.query<R>(text)).rows;
  } finally {
    await c.end();
  }
}

const PG_COLUMNS = ['i', 'key', 'value', 'pad'] as const;

/** Creates the sink's target (before the timing). */
async function createTarget(spec: Extract<ChildSpec, { role: 'sink' }>): Promise<void> {
  const { name } = spec;
  switch (spec.connector) {
    case 'postgres':
      await pgQuery(`CREATE TABLE "${name}" (i bigint NOT NULL, key text NOT NULL, value integer NOT NULL, pad text NOT NULL)`);
      return;
    case 'redis':
      return; // XADD creates the stream
    case 'jetstream': {
      const nc = await natsConnect();
      try {
        await (await nc.jetstreamManager()).streams.add({ name, subjects: [`${name}.>`] });
      } finally {
        await nc.close();
      }
      return;
    }
    case 'kinesis': {
      const c = kinesisClient(spec.kinesisEndpoint!);
      try {
        await c.send(new CreateStreamCommand({ StreamName: name, ShardCount: 1 }));
        for (let k = 0; ; k++) {
          const s = await c.send(new DescribeStreamSummaryCommand({ StreamName: name }));
          if (s.StreamDescriptionSummary?.StreamStatus === 'ACTIVE') break;
          if (k > 400) fail(`kinesis stream ${name} did not become ACTIVE`);
          await new Promise((r) => setTimeout(r, 25));
        }
      } finally {
        c.destroy();
      }
    }
  }
}

/** Reads the whole target back into a checker (untimed). */
async function readBack(spec: Extract<ChildSpec, { role: 'sink' }>): Promise<Check> {
  const { name, n } = spec;
  switch (spec.connector) {
    case 'postgres': {
      const [row] = await pgQuery<Record<string, string>>(
        `SELECT count(*) AS records, count(DISTINCT i) AS distinct, coalesce(sum(i), 0) AS sum_i, coalesce(sum(value), 0) AS sum_value, ` +
          `count(*) FILTER (WHERE i < 0 OR i >= ${n} OR key <> 'k' || (i % 100) OR value <> i % 7 OR pad <> repeat('x', 40)) AS malformed FROM "${name}"`,
      );
      return { records: Number(row!.records), distinct: Number(row!.distinct), sumI: Number(row!.sum_i), sumValue: Number(row!.sum_value), malformed: Number(row!.malformed) };
    }
    case 'redis': {
      const checker = new Checker(n);
      const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 10_000, commandTimeout: 30_000, maxRetriesPerRequest: 0 });
      await redis.connect();
      try {
        let from = '-';
        for (;;) {
          const entries = (await redis.xrange(name, from, '+', 'COUNT', 10_000)) as [string, string[]][];
          for (const [, fields] of entries) checker.add(JSON.parse(fields[fields.indexOf('data') + 1]!) as Rec);
          if (entries.length < 10_000) break;
          from = `(${entries[entries.length - 1]![0]}`;
        }
      } finally {
        redis.disconnect();
      }
      return checker.result(false);
    }
    case 'jetstream': {
      const checker = new Checker(n);
      const nc = await natsConnect();
      try {
        const info = await (await nc.jetstreamManager()).streams.info(name);
        const stored = info.state.messages;
        if (stored > 0) {
          const messages = await (await nc.jetstream().consumers.get(name)).consume({ max_messages: 10_000 });
          let k = 0;
          for await (const m of messages) {
            checker.add(m.json<Rec>());
            if (++k >= stored) break;
          }
          await messages.close();
        }
      } finally {
        await nc.close();
      }
      return checker.result(false);
    }
    case 'kinesis': {
      const checker = new Checker(n);
      const c = kinesisClient(spec.kinesisEndpoint!);
      const decoder = new TextDecoder();
      try {
        for (const shard of (await c.send(new ListShardsCommand({ StreamName: name }))).Shards ?? []) {
          let it = (await c.send(new GetShardIteratorCommand({ StreamName: name, ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
          while (it !== undefined) {
            const r = await c.send(new GetRecordsCommand({ ShardIterator: it, Limit: 10_000 }));
            const got = r.Records ?? [];
            for (const x of got) checker.add(JSON.parse(decoder.decode(x.Data!)) as Rec);
            if (got.length === 0 && (r.MillisBehindLatest ?? 0) === 0) break;
            it = r.NextShardIterator;
          }
        }
      } finally {
        c.destroy();
      }
      return checker.result(false);
    }
  }
}

/** Removes the target and the progress records a weir sink left (best effort; the runner sweeps too). */
async function removeTarget(spec: Extract<ChildSpec, { role: 'sink' }>): Promise<void> {
  const { name } = spec;
  switch (spec.connector) {
    case 'postgres':
      await pgQuery(`DROP TABLE IF EXISTS "${name}", "${name}_p", "${name}_p_committed"`);
      return;
    case 'redis': {
      const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 10_000, commandTimeout: 30_000, maxRetriesPerRequest: 0 });
      await redis.connect();
      try {
        const progress = await redis.keys(`${name}:progress*`);
        await redis.del(name, ...progress);
      } finally {
        redis.disconnect();
      }
      return;
    }
    case 'jetstream': {
      const nc = await natsConnect();
      try {
        const jsm = await nc.jetstreamManager();
        await jsm.streams.delete(name).catch(() => false);
        await jsm.streams.delete(`KV_${name}_p`).catch(() => false);
      } finally {
        await nc.close();
      }
      return;
    }
    case 'kinesis': {
      const c = kinesisClient(spec.kinesisEndpoint!);
      try {
        await c.send(new DeleteStreamCommand({ StreamName: name }));
      } finally {
        c.destroy();
      }
    }
  }
}

// ---- sinks: raw clients ------------------------------------------------------------------

async function rawPostgresSink(n: number, table: string): Promise<void> {
  const c = new pg.Client({ connectionString: SHARED_PG_URL, connectionTimeoutMillis: 10_000, query_timeout: 60_000 });
  await c.connect();
  try {
    const texts = new Map<number, string>();
    const text = (rows: number) => {
      let t = texts.get(rows);
      if (t === undefined) {
        const tuples: string[] = [];
        for (let r = 0; r < rows; r++) tuples.push(`($${4 * r + 1}, $${4 * r + 2}, $${4 * r + 3}, $${4 * r + 4})`);
        texts.set(rows, (t = `INSERT INTO "${table}" (${PG_COLUMNS.map((x) => `"${x}"`).join(', ')}) VALUES ${tuples.join(', ')}`));
      }
      return t;
    };
    for (let i = 0; i < n; i += BATCH) {
      const end = Math.min(n, i + BATCH);
      const values: unknown[] = [];
      for (let k = i; k < end; k++) {
        const r = rec(k);
        values.push(r.i, r.key, r.value, r.pad);
      }
      await c.query(text(end - i), values);
    }
  } finally {
    await c.end();
  }
}

async function rawRedisSink(n: number, key: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 10_000, commandTimeout: 30_000, maxRetriesPerRequest: 0 });
  await redis.connect();
  try {
    for (let i = 0; i < n; i += BATCH) {
      const p = redis.pipeline();
      for (let k = i; k < Math.min(n, i + BATCH); k++) p.xadd(key, '*', 'data', JSON.stringify(rec(k)));
      const res = await p.exec();
      const bad = res?.find(([e]) => e !== null);
      if (bad !== undefined) throw bad[0]!;
    }
  } finally {
    redis.disconnect();
  }
}

async function rawJetStreamSink(n: number, stream: string): Promise<void> {
  const nc = await natsConnect();
  try {
    const js = nc.jetstream({ timeout: 10_000 });
    const subject = `${stream}.out`;
    for (let i = 0; i < n; i += NATS_IN_FLIGHT) {
      const acks: Promise<unknown>[] = [];
      for (let k = i; k < Math.min(n, i + NATS_IN_FLIGHT); k++) acks.push(js.publish(subject, JSON.stringify(rec(k))));
      await Promise.all(acks);
    }
  } finally {
    await nc.close();
  }
}

async function rawKinesisSink(n: number, stream: string, endpoint: string): Promise<void> {
  const client = kinesisClient(endpoint);
  const put = async (entries: PutRecordsRequestEntry[]): Promise<void> => {
    for (let attempt = 0; entries.length > 0; attempt++) {
      if (attempt > 20) fail(`kinesis PutRecords to ${stream}: ${entries.length} records still failing`);
      const res = await client.send(new PutRecordsCommand({ StreamName: stream, Records: entries }));
      entries = (res.Records ?? []).flatMap((r, k) => (r.ErrorCode !== undefined ? [entries[k]!] : []));
    }
  };
  try {
    const encoder = new TextEncoder();
    for (let i = 0; i < n; i += KINESIS_BATCH * KINESIS_IN_FLIGHT) {
      const calls: Promise<void>[] = [];
      for (let b = i; b < Math.min(n, i + KINESIS_BATCH * KINESIS_IN_FLIGHT); b += KINESIS_BATCH) {
        const entries: PutRecordsRequestEntry[] = [];
        for (let k = b; k < Math.min(n, b + KINESIS_BATCH); k++) {
          const r = rec(k);
          entries.push({ PartitionKey: r.key, Data: encoder.encode(JSON.stringify(r)) });
        }
        calls.push(put(entries));
      }
      await Promise.all(calls);
    }
  } finally {
    client.destroy();
  }
}

// ---- sinks: weir -------------------------------------------------------------------------

async function weirSink(spec: Extract<ChildSpec, { role: 'sink' }>): Promise<Omit<ConnectorChildReport, 'processCpuMs' | 'check'>> {
  const { n, name } = spec;
  const sink: TwoPhaseCommitSink<Rec, unknown> =
    spec.connector === 'postgres' ? new PostgresSink<Rec>({ connection: SHARED_PG_URL, table: name, columns: [...PG_COLUMNS], jobId: name, progressTable: `${name}_p` })
    : spec.connector === 'redis' ? new RedisStreamsSink<Rec>({ connection: REDIS_URL, stream: name, jobId: name, progressKeyPrefix: `${name}:progress` })
    : spec.connector === 'jetstream' ? new JetStreamSink<Rec>({ servers: NATS_SERVERS, stream: name, subject: `${name}.out`, jobId: name, progressBucket: `${name}_p` })
    : new KinesisSink<Rec>({ stream: name, partitionKey: (r) => r.key, endpoint: spec.kinesisEndpoint!, region: KINESIS_REGION, credentials: KINESIS_CREDENTIALS });
  const job = defineJob((env) => {
    env.setJobName(`bench ${spec.connector} sink`);
    env.fromGenerator((i) => rec(i), { count: n, seed: 1, name: 'records' }).sinkTo(sink).name(`${spec.connector} sink`);
  });
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-conn-'));
  const logs: string[] = [];
  try {
    const c0 = process.cpuUsage();
    const t0 = epoch();
    const r = await runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), ...checkpointing(spec.variant, dir) });
    const ms = epoch() - t0;
    const cpuMs = cpuSince(c0);
    if (r.status !== 'FINISHED') fail(`weir ${spec.connector} sink job ${r.status}: ${r.error?.message ?? ''}\n${logs.join('\n')}`);
    return { ms, cpuMs, checkpoints: r.checkpoints.counts.completed, restarts: r.attempts - 1, status: r.status, recordsIn: r.progress.recordsIn };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- main --------------------------------------------------------------------------------

async function main(argv: string[]): Promise<void> {
  const spec = JSON.parse(argv[0] ?? fail('usage: connector-child.ts <spec as JSON>')) as ChildSpec;
  if (!CONNECTOR_VARIANTS.includes(spec.variant)) fail(`unknown variant ${spec.variant}`);
  if (!Number.isSafeInteger(spec.n) || spec.n < 1) fail(`n must be a positive integer, got ${spec.n}`);
  if ((spec.connector === 'kinesis') !== (spec.kinesisEndpoint !== undefined)) fail('kinesisEndpoint is needed for kinesis, and only there');
  let report: Omit<ConnectorChildReport, 'processCpuMs'>;
  if (spec.role === 'source') {
    if (!SOURCES.includes(spec.connector)) fail(`unknown source ${spec.connector}`);
    const checker = new Checker(spec.n);
    if (spec.variant === 'raw') {
      const c0 = process.cpuUsage();
      const t0 = epoch();
      if (spec.connector === 'redis') await rawRedisSource(spec.n, spec.name, checker);
      else if (spec.connector === 'jetstream') await rawJetStreamSource(spec.n, spec.name, checker);
      else await rawKinesisSource(spec.n, spec.name, spec.kinesisEndpoint!, checker);
      report = { ms: epoch() - t0, cpuMs: cpuSince(c0), check: checker.result(true) };
    } else {
      report = { ...(await weirSource(spec, checker)), check: checker.result(true) };
    }
  } else {
    if (!SINKS.includes(spec.connector)) fail(`unknown sink ${spec.connector}`);
    await createTarget(spec);
    try {
      let timed: Omit<ConnectorChildReport, 'processCpuMs' | 'check'>;
      if (spec.variant === 'raw') {
        const c0 = process.cpuUsage();
        const t0 = epoch();
        if (spec.connector === 'postgres') await rawPostgresSink(spec.n, spec.name);
        else if (spec.connector === 'redis') await rawRedisSink(spec.n, spec.name);
        else if (spec.connector === 'jetstream') await rawJetStreamSink(spec.n, spec.name);
        else await rawKinesisSink(spec.n, spec.name, spec.kinesisEndpoint!);
        timed = { ms: epoch() - t0, cpuMs: cpuSince(c0) };
      } else {
        timed = await weirSink(spec);
      }
      const v0 = epoch();
      const check = await readBack(spec);
      report = { ...timed, check, verifyMs: epoch() - v0 };
    } finally {
      await removeTarget(spec);
    }
  }
  const full: ConnectorChildReport = { ...report, processCpuMs: cpuSince() };
  process.stdout.write(RESULT_MARK + JSON.stringify(full) + '\n', () => process.exit(0));
}

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`bench child failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
