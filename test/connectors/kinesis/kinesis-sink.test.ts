/**
 * Kinesis sink against kinesalite in-process (AWS SDK v3 client over HTTP/1.1):
 * - a job through a seeded fault proxy that fails a fifth of PutRecords entries (as throttled
 *   Kinesis does): every record lands exactly once (only failed entries are retried), requests
 *   stay within 500 records and 5 MiB, and the job's end waits for every acknowledgement;
 * - the writer at a barrier: the checkpoint's promise resolves only once everything written
 *   before the barrier is in the stream; a full buffer turns the writer unavailable
 *   (backpressure) until acknowledgements make room, and then it wakes the task;
 * - a missing stream fails with an error naming it; a record over 1 MiB is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineJob, KinesisSink, runJob } from '../../../src/index.ts';
import type { SinkContext } from '../../../src/core/sink.ts';
import { CREDENTIALS, REGION, createStream, listShards, readShard, startFaultProxy, startKinesalite, type Kinesalite } from '../../helpers/kinesalite.ts';

let k: Kinesalite;
let streams = 0;
const streamName = (tag: string) => `weir-sink-${tag}-${process.pid}-${streams++}`;

beforeAll(async () => {
  k = await startKinesalite();
});
afterAll(async () => {
  await k.close();
});

async function readAll(stream: string): Promise<string[]> {
  const out: string[] = [];
  for (const s of await listShards(k.client, stream)) out.push(...(await readShard(k.client, stream, s.ShardId!)));
  return out;
}

function ctx(wakes: { n: number }): SinkContext {
  return { subtaskIndex: 0, parallelism: 1, attemptNumber: 0, now: () => Date.now(), restoredCheckpointId: undefined, log: () => {}, operatorId: 'sink', wake: () => void wakes.n++ };
}

describe('KinesisSink', () => {
  it('writes every record once through partial failures, in batches within 500 records and 5 MiB (seeded proxy)', async () => {
    const stream = streamName('partial');
    await createStream(k.client, stream, 3);
    const seed = Date.now() % 100_000;
    console.log(`kinesis sink partial-failure seed ${seed}`);
    const proxy = await startFaultProxy(k.endpoint, seed, { entryFailureRate: 0.2 });
    const N = 2000;
    // Every 100th record is 150 KiB, so byte limits cut batches too.
    const pad = 'x'.repeat(150 * 1024);
    try {
      const job = defineJob((env) => {
        env.fromGenerator((i) => ({ i, pad: i % 100 === 0 ? pad : '' }), { count: N })
          .sinkTo(new KinesisSink<{ i: number; pad: string }>({ stream, endpoint: proxy.endpoint, region: REGION, credentials: CREDENTIALS, partitionKey: (r) => `k${r.i % 17}`, maxTimeInBufferMs: 50, timeoutMs: 5000 }));
      });
      const r = await runJob(job, { workers: 1, parallelism: 2, stdout: () => {}, log: () => {} });
      expect(r.status, r.error?.message).toBe('FINISHED');
    } finally {
      await proxy.close();
    }
    const got = (await readAll(stream)).map((s) => (JSON.parse(s) as { i: number }).i).sort((a, b) => a - b);
    expect(got).toEqual([...Array(N).keys()]);
    expect(proxy.stats.failedEntries, `seed ${seed}`).toBeGreaterThan(0);
    expect(proxy.stats.maxPutRecords).toBeLessThanOrEqual(500);
    expect(proxy.stats.maxPutBytes).toBeLessThanOrEqual(5 * 1024 * 1024);
  }, 120_000);

  it('a barrier resolves once everything written before it is in the stream; a full buffer applies backpressure', async () => {
    const stream = streamName('barrier');
    await createStream(k.client, stream, 2);
    const sink = new KinesisSink<{ i: number }>({ stream, endpoint: k.endpoint, region: REGION, credentials: CREDENTIALS, partitionKey: (r) => String(r.i), maxTimeInBufferMs: 3_600_000, maxBufferedRecords: 1000 });
    const wakes = { n: 0 };
    const w = sink.createWriter(ctx(wakes));
    try {
      w.write(Array.from({ length: 1234 }, (_, i) => ({ i })));
      // Nothing is acknowledged yet (acknowledgements arrive asynchronously): over the bound.
      expect(w.isAvailable()).toBe(false);
      expect(w.prepareCommit(1)).toEqual([]);
      w.write(Array.from({ length: 10 }, (_, i) => ({ i: 5000 + i })));
      await w.whenPrepared(1);
      const inStream = (await readAll(stream)).map((s) => (JSON.parse(s) as { i: number }).i);
      for (let i = 0; i < 1234; i++) expect(inStream.includes(i), `record ${i} acknowledged before the checkpoint`).toBe(true);
      expect(w.isAvailable()).toBe(true);
      expect(wakes.n).toBeGreaterThan(0);
      await w.drain();
      expect((await readAll(stream)).length).toBe(1244);
    } finally {
      w.close();
    }
  }, 60_000);

  it('fails naming a missing stream; refuses a record over 1 MiB and bad options', async () => {
    const sink = new KinesisSink<{ i: number }>({ stream: 'weir-no-such-stream', endpoint: k.endpoint, region: REGION, credentials: CREDENTIALS, partitionKey: () => 'k', timeoutMs: 3000 });
    const w = sink.createWriter(ctx({ n: 0 }));
    w.write([{ i: 1 }]);
    w.prepareCommit(1);
    await expect(w.whenPrepared(1)).rejects.toThrow(/Kinesis at 127\.0\.0\.1:\d+: PutRecords to stream "weir-no-such-stream".*ResourceNotFound/);
    w.close();
    const big = new KinesisSink<string>({ stream: 's', endpoint: k.endpoint, region: REGION, credentials: CREDENTIALS, partitionKey: () => 'k', payload: (v) => v });
    const bw = big.createWriter(ctx({ n: 0 }));
    expect(() => bw.write(['x'.repeat(1024 * 1024)])).toThrow(/over the 1048576 byte Kinesis limit/);
    bw.close();
    expect(() => new KinesisSink({ stream: 's', partitionKey: () => 'k', maxBatchRecords: 501 })).toThrow(/maxBatchRecords must be an integer from 1 to 500/);
    expect(() => new KinesisSink({ stream: 'bad name', partitionKey: () => 'k' })).toThrow(/stream must be a stream name/);
    expect(() => new KinesisSink({ stream: 's', partitionKey: () => 'k', maxBufferedRecords: 100 })).toThrow('KinesisSink: maxBufferedRecords (100) must be at least maxBatchRecords (500)');
    // An explicit hash key Kinesis would refuse (failing the whole request, and the job at every replay) is refused at its record.
    const hashed = (ehk: string) => new KinesisSink<number>({ stream: 's', endpoint: k.endpoint, region: REGION, credentials: CREDENTIALS, partitionKey: () => 'k', explicitHashKey: () => ehk });
    for (const bad of [(1n << 128n).toString(), '007', '1'.repeat(40), '-1']) {
      const hw = hashed(bad).createWriter(ctx({ n: 0 }));
      expect(() => hw.write([1]), bad).toThrow(/it must be a decimal number below 2\^128/);
      hw.close();
    }
    for (const good of ['0', ((1n << 128n) - 1n).toString()]) {
      const hw = hashed(good).createWriter(ctx({ n: 0 }));
      expect(() => hw.write([1]), good).not.toThrow();
      hw.close();
    }
  }, 30_000);
});

describe('KinesisSink retries and barriers (a scripted client)', () => {
  it('retried entries go back in write order: a barrier is not held behind a later entry that came back first (before: it waited for maxTimeInBufferMs, here 60 s)', async () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    let call = 0;
    const fake = {
      async send(cmd: { input: { Records: { Data: Uint8Array }[] } }) {
        const recs = cmd.input.Records;
        const first = Number(Buffer.from(recs[0]!.Data).toString());
        const n = ++call;
        let fail = false;
        if (first === 0 && n <= 2) { await sleep(10); fail = true; } // seq 0, before the barrier, fails once
        else if (first === 3) { await sleep(20); fail = true; } // seq 3, after it, fails once
        else if (first === 503 || first === 1003) await sleep(1000); // two slow requests keep the in-flight slots full
        return { FailedRecordCount: fail ? 1 : 0, Records: recs.map((_, i) => (fail && i === 0 ? { ErrorCode: 'ProvisionedThroughputExceededException', ErrorMessage: 'Rate exceeded' } : { SequenceNumber: `4959${String(n * 1000 + i).padStart(52, '0')}` })) };
      },
      destroy() {},
    };
    const sink = new KinesisSink<number>({ stream: 's', partitionKey: (v) => `k${v}`, payload: (v) => String(v), endpoint: 'http://127.0.0.1:1', region: REGION, credentials: CREDENTIALS, maxInFlightRequests: 2, maxTimeInBufferMs: 60_000 });
    const w = sink.createWriter(ctx({ n: 0 }));
    (w as unknown as { client: Promise<unknown> }).client = Promise.resolve(fake);
    // Backoff jitter (as a read-only audit found it): both come back while the slow requests hold the slots, seq 3 put in front of seq 0.
    const draws = [0.3, 0.9];
    const random = Math.random;
    Math.random = () => draws.shift() ?? random();
    try {
      const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
      w.write(range(0, 3));
      w.prepareCommit(1);
      const barrier = w.whenPrepared(1);
      w.write(range(3, 503));
      w.write(range(503, 1003));
      w.write(range(1003, 1503));
      await barrier; // the test's timeout (20 s) is well below the buffer's 60 s
      expect((w as unknown as { queue: { seq: number }[] }).queue.map((e) => e.seq)).toEqual([...(w as unknown as { queue: { seq: number }[] }).queue.map((e) => e.seq)].sort((a, b) => a - b));
    } finally {
      Math.random = random;
      w.close();
    }
  }, 20_000);
});

describe('KinesisSink batches full by bytes', () => {
  it('records that fill a request by size go out without waiting for maxTimeInBufferMs (before: one request per buffer time, 60 s here)', async () => {
    const sizes: number[] = [];
    const fake = {
      async send(cmd: { input: { Records: { Data: Uint8Array }[] } }) {
        sizes.push(cmd.input.Records.length);
        return { FailedRecordCount: 0, Records: cmd.input.Records.map((_, i) => ({ SequenceNumber: `4959${String(sizes.length * 1000 + i).padStart(52, '0')}` })) };
      },
      destroy() {},
    };
    const sink = new KinesisSink<number>({ stream: 's', partitionKey: (v) => `k${v}`, payload: () => 'x'.repeat(200 * 1024), endpoint: 'http://127.0.0.1:1', region: REGION, credentials: CREDENTIALS, maxTimeInBufferMs: 60_000 });
    const w = sink.createWriter(ctx({ n: 0 }));
    (w as unknown as { client: Promise<unknown> }).client = Promise.resolve(fake);
    try {
      w.write(Array.from({ length: 100 }, (_, i) => i));
      for (let i = 0; i < 100 && sizes.reduce((a, b) => a + b, 0) < 75; i++) await new Promise((r) => setTimeout(r, 100));
      expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(75); // three full requests of 25 (5 MiB each); the rest waits for more or a barrier
      expect(Math.max(...sizes)).toBeLessThanOrEqual(25);
    } finally {
      w.close();
    }
  }, 20_000);
});
