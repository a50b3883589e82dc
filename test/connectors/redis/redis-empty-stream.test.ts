/**
 * A Redis Streams reader starts every split's event time (its output, `forSplit`) at its first
 * poll, also a split whose stream is empty: before, a split started only at its first record,
 * so an empty stream was never counted idle and held the reader's watermark at the minimum for
 * good (windows never fired, withIdleness or not; with maxDrift it paused the other streams).
 * Found by a read-only audit. Driven by hand against the real server, so the check does not
 * depend on timing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisStreamsSource, type ReaderOutput, type SourceReaderContext } from '../../../src/index.ts';
import type { RedisStreamSplit } from '../../../src/connectors/redis/redis-streams-source.ts';

const URL = 'redis://127.0.0.1:6379';
let redis: Redis;
const keys: string[] = [];
let n = 0;
function key(name: string): string {
  const k = `weir-test:${process.pid}:${Date.now()}:${n++}:${name}`;
  keys.push(k);
  return k;
}
beforeAll(async () => {
  redis = new Redis(URL, { lazyConnect: true, connectTimeout: 5000, commandTimeout: 10_000 });
  await redis.connect();
});
afterAll(async () => {
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
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
});
