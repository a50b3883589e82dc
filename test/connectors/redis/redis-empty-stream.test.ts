/**
 * A Redis Streams reader starts every split's event time (its output, `forSplit`) at its first
 * poll, also a split whose stream is empty: before, a split started only at its first record,
 * so an empty stream was never counted idle and held the reader's watermark at the minimum for
 * good (windows never fired, withIdleness or not; with maxDrift it paused the other streams).
 * Found by a read-only audit. The first test drives the reader by hand against the real server;
 * the second runs a job.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { URL, useTestRedis } from './test-redis.ts';
import { defineJob, RedisStreamsSource, runJob, TumblingEventTimeWindows, WatermarkStrategy, type ReaderOutput, type SourceReaderContext } from '../../../src/index.ts';
import type { RedisStreamSplit } from '../../../src/connectors/redis/redis-streams-source.ts';

const testRedis = useTestRedis();
const key = testRedis.key;
let redis: Redis;
beforeAll(() => {
  redis = testRedis.redis();
});

describe('RedisStreamsSource with an empty stream', () => {
  it('the first poll starts every split, the empty stream\'s too', async () => {
    const a = key('a');
    const b = key('b');
    for (let i = 0; i < 5; i++) await redis.xadd(a, `${1000 + i}-1`, 'data', JSON.stringify({ i }));
    await redis.xadd(b, '1-1', 'data', '{}');
    await redis.xtrim(b, 'MAXLEN', 0); // exists, empty
    const ctx: SourceReaderContext = {
      subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake: () => {}, schedule: () => ({ cancel() {} }), log: () => {},
      metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest() {} },
    };
    const reader = new RedisStreamsSource<{ i: number }>({ url: URL, streams: [a, b], startFrom: 'earliest', blockMs: 50 }).createReader(ctx);
    reader.addSplits([{ id: a, stream: a, lastId: '0-0' }, { id: b, stream: b, lastId: '0-0' }] as RedisStreamSplit[]);
    const started: string[] = [];
    const out: ReaderOutput<{ i: number }> = {
      collect: () => {}, malformed: () => {},
      forSplit: (id) => {
        if (!started.includes(id)) started.push(id);
        return out;
      },
      splitFinished: () => {},
    };
    try {
      reader.poll(out, 100); // nothing fetched yet: no records at all
      expect(started.sort()).toEqual([a, b].sort()); // before: [] (then [a] at a's first record; b never)
    } finally {
      await reader.close?.();
    }
  });

  it('a job: with withIdleness the windows fire while it runs, also with maxDrift (the empty stream and the one read at once go idle in one pass: the reader goes to the highest watermark first)', async () => {
    const a = key('job-a');
    const b = key('job-b');
    const p = redis.pipeline();
    for (let i = 0; i < 50; i++) p.xadd(a, `${1_700_000_000_000 + i * 10}-1`, 'data', JSON.stringify({ i }));
    await p.exec();
    await redis.xadd(b, '1-1', 'data', '{}');
    await redis.xtrim(b, 'MAXLEN', 0);
    for (const maxDrift of [undefined, '1 s']) {
      const fired: number[] = [];
      const ac = new AbortController();
      const r = runJob(defineJob((env) => {
        env.setAutoWatermarkInterval(20);
        const src = new RedisStreamsSource<{ i: number }>({ url: URL, streams: [a, b], startFrom: 'earliest', blockMs: 100, batchSize: 10 });
        env.fromSource(src, { watermarks: WatermarkStrategy.forMonotonousTimestamps<{ i: number }>().withIdleness('200 ms'), ...(maxDrift !== undefined ? { maxDrift } : {}) })
          .keyBy(() => 'all')
          .window(TumblingEventTimeWindows.of('100 ms'))
          .aggregate({ createAccumulator: () => 0, add: (_e: { i: number }, c: number) => c + 1, getResult: (c: number) => c, merge: (x: number, y: number) => x + y })
          .addSink((n) => void fired.push(n));
      }), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, signal: ac.signal });
      // Unbounded: the last window (still open) never fires; the 4 before it do.
      for (let i = 0; i < 1000 && fired.length < 4; i++) await new Promise((res) => setTimeout(res, 10));
      ac.abort();
      expect((await r).status).toBe('CANCELED');
      expect(fired.slice(0, 4), `maxDrift ${maxDrift}`).toEqual([10, 10, 10, 10]);
    }
  }, 30_000);
});
