/**
 * Kinesis for tests: kinesalite (a public implementation of the Kinesis API) started in-process
 * on a free port, the AWS SDK v3 client against it over HTTP/1.1, and an optional fault proxy
 * in front of it that fails a seeded share of PutRecords entries (as Kinesis does under
 * throttling: ErrorCode ProvisionedThroughputExceededException) and of GetRecords calls.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import kinesalite from 'kinesalite';
import {
  CreateStreamCommand, DescribeStreamSummaryCommand, GetRecordsCommand, GetShardIteratorCommand, KinesisClient, ListShardsCommand,
  MergeShardsCommand, PutRecordsCommand, SplitShardCommand, type Shard,
} from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Rng } from '../../src/core/random.ts';

export const CREDENTIALS = { accessKeyId: 'weir-test', secretAccessKey: 'weir-test' };
export const REGION = 'us-east-1';

export interface Kinesalite {
  readonly endpoint: string;
  readonly client: KinesisClient;
  close(): Promise<void>;
}

export async function startKinesalite(): Promise<Kinesalite> {
  const server = (kinesalite as unknown as (o: object) => Server)({ createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 1000 });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    client: clientFor(endpoint),
    close: async () => {
      server.closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export function clientFor(endpoint: string): KinesisClient {
  return new KinesisClient({
    endpoint, region: REGION, credentials: CREDENTIALS, maxAttempts: 3,
    requestHandler: new NodeHttpHandler({ connectionTimeout: 5000, requestTimeout: 20_000, throwOnRequestTimeout: true }),
  });
}

export async function createStream(c: KinesisClient, name: string, shards: number): Promise<void> {
  await c.send(new CreateStreamCommand({ StreamName: name, ShardCount: shards }));
  await waitActive(c, name);
}

export async function waitActive(c: KinesisClient, name: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const s = await c.send(new DescribeStreamSummaryCommand({ StreamName: name }));
    if (s.StreamDescriptionSummary?.StreamStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`stream ${name} did not become ACTIVE`);
}

/** Puts JSON records in batches of 500 (each with its partition key), failing on any failed entry. */
export async function putJson(c: KinesisClient, stream: string, records: readonly { key: string; value: unknown }[]): Promise<void> {
  for (let i = 0; i < records.length; i += 500) {
    const part = records.slice(i, i + 500);
    const res = await c.send(new PutRecordsCommand({ StreamName: stream, Records: part.map((r) => ({ PartitionKey: r.key, Data: Buffer.from(typeof r.value === 'string' ? r.value : JSON.stringify(r.value)) })) }));
    if ((res.FailedRecordCount ?? 0) > 0) throw new Error(`put failed: ${JSON.stringify(res.Records?.find((x) => x.ErrorCode))}`);
  }
}

export async function listShards(c: KinesisClient, stream: string): Promise<Shard[]> {
  return (await c.send(new ListShardsCommand({ StreamName: stream }))).Shards ?? [];
}

/** Splits a shard at the middle of its hash key range. */
export async function splitShard(c: KinesisClient, stream: string, shardId: string): Promise<void> {
  const s = (await listShards(c, stream)).find((x) => x.ShardId === shardId)!;
  const lo = BigInt(s.HashKeyRange!.StartingHashKey!);
  const hi = BigInt(s.HashKeyRange!.EndingHashKey!);
  await c.send(new SplitShardCommand({ StreamName: stream, ShardToSplit: shardId, NewStartingHashKey: ((lo + hi) / 2n).toString() }));
  await waitActive(c, stream);
}

export async function mergeShards(c: KinesisClient, stream: string, a: string, b: string): Promise<void> {
  await c.send(new MergeShardsCommand({ StreamName: stream, ShardToMerge: a, AdjacentShardToMerge: b }));
  await waitActive(c, stream);
}

/** Every record of a shard, from its start (for checks). */
export async function readShard(c: KinesisClient, stream: string, shardId: string): Promise<string[]> {
  let it = (await c.send(new GetShardIteratorCommand({ StreamName: stream, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
  const out: string[] = [];
  for (let k = 0; k < 1000 && it !== undefined; k++) {
    const r = await c.send(new GetRecordsCommand({ ShardIterator: it, Limit: 10_000 }));
    for (const x of r.Records ?? []) out.push(Buffer.from(x.Data!).toString());
    if ((r.Records ?? []).length === 0) break;
    it = r.NextShardIterator;
  }
  return out;
}

export interface FaultProxy {
  readonly endpoint: string;
  /** PutRecords entries failed, whole calls failed, calls forwarded. */
  readonly stats: { failedEntries: number; failedCalls: number; putCalls: number; getRecordsCalls: number; maxPutRecords: number; maxPutBytes: number };
  close(): Promise<void>;
}

/**
 * A proxy to `target` that fails, per the seeded rng, `entryFailureRate` of PutRecords entries
 * (forwarding only the others and merging the answers, as a throttled Kinesis answers) and
 * `getRecordsFailureRate` of GetRecords calls with ProvisionedThroughputExceededException.
 */
export async function startFaultProxy(target: string, seed: number, o: { entryFailureRate?: number; getRecordsFailureRate?: number }): Promise<FaultProxy> {
  const rng = new Rng(seed);
  const stats = { failedEntries: 0, failedCalls: 0, putCalls: 0, getRecordsCalls: 0, maxPutRecords: 0, maxPutBytes: 0 };
  const t = new URL(target);
  const forward = (headers: Record<string, string | string[] | undefined>, body: Buffer, url: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const h = { ...headers, 'content-length': String(body.length), host: t.host };
      const req = request({ host: t.hostname, port: t.port, method: 'POST', path: url, headers: h }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 500, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.setTimeout(20_000, () => req.destroy(new Error('proxy upstream timeout')));
      req.on('error', reject);
      req.end(body);
    });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const target = String(req.headers['x-amz-target'] ?? '');
        const reply = (status: number, json: unknown, headers: Record<string, string | string[] | undefined> = {}) => {
          const b = Buffer.from(JSON.stringify(json));
          const h = { ...headers };
          delete h['content-length'];
          delete h['x-amz-crc32'];
          delete h['transfer-encoding'];
          res.writeHead(status, { ...h, 'content-type': 'application/x-amz-json-1.1', 'content-length': String(b.length) });
          res.end(b);
        };
        try {
          if (target.endsWith('.GetRecords') && o.getRecordsFailureRate !== undefined) {
            stats.getRecordsCalls++;
            if (rng.next() < o.getRecordsFailureRate) {
              stats.failedCalls++;
              return reply(400, { __type: 'ProvisionedThroughputExceededException', message: 'Rate exceeded for shard (injected by the test proxy)' });
            }
          }
          if (target.endsWith('.PutRecords') && o.entryFailureRate !== undefined) {
            stats.putCalls++;
            const input = JSON.parse(body.toString()) as { StreamName: string; Records: { Data: string; PartitionKey: string }[] };
            stats.maxPutRecords = Math.max(stats.maxPutRecords, input.Records.length);
            const bytes = input.Records.reduce((n, r) => n + Buffer.from(r.Data, 'base64').length + Buffer.byteLength(r.PartitionKey), 0);
            stats.maxPutBytes = Math.max(stats.maxPutBytes, bytes);
            const fail = input.Records.map(() => rng.next() < o.entryFailureRate!);
            const keep = input.Records.filter((_, i) => !fail[i]);
            let upstream: { Records: unknown[] } = { Records: [] };
            let headers: Record<string, string | string[] | undefined> = {};
            if (keep.length > 0) {
              const r = await forward(req.headers, Buffer.from(JSON.stringify({ ...input, Records: keep })), req.url ?? '/');
              if (r.status !== 200) {
                res.writeHead(r.status, r.headers);
                return res.end(r.body);
              }
              upstream = JSON.parse(r.body.toString());
              headers = r.headers;
            }
            let k = 0;
            const Records = fail.map((f) => (f ? { ErrorCode: 'ProvisionedThroughputExceededException', ErrorMessage: 'Rate exceeded for shard (injected by the test proxy)' } : upstream.Records[k++]));
            const failed = fail.filter(Boolean).length;
            stats.failedEntries += failed;
            return reply(200, { FailedRecordCount: failed, Records }, headers);
          }
          const r = await forward(req.headers, body, req.url ?? '/');
          res.writeHead(r.status, r.headers);
          res.end(r.body);
        } catch (e) {
          res.writeHead(500, { 'content-type': 'application/x-amz-json-1.1' });
          res.end(JSON.stringify({ __type: 'InternalFailure', message: (e as Error).message }));
        }
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats,
    close: async () => {
      server.closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
