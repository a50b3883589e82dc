/**
 * A Redis connection lost mid-job (CLIENT KILL of the reader's connection on the real server):
 * the reader fails instead of reconnecting behind the checkpoint's back, the job restarts per
 * its restart strategy from the latest checkpoint, and the exactly-once file sink's committed
 * output holds every entry exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ExactlyOnceFileSink, RedisStreamsSource, runJob, defineJob } from '../../../src/index.ts';
import { committedLines } from '../../helpers/output.ts';

const COUNT = 12_000;
const name = `weir-test-kill-${process.pid}-${Date.now()}`;
const stream = `weir-test:${name}`;
let redis: Redis;
let work: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-redis-loss-'));
  redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, commandTimeout: 10_000 });
  await redis.connect();
  for (let i = 0; i < COUNT; i += 1000) {
    const p = redis.pipeline();
    for (let k = i; k < i + 1000; k++) p.xadd(stream, '*', 'data', JSON.stringify({ i: k }));
    await p.exec();
  }
});
afterAll(async () => {
  await redis.del(stream);
  redis.disconnect();
  rmSync(work, { recursive: true, force: true });
});

/** Ids of this test's reader connections that are blocked in XREAD. */
async function readerClients(): Promise<string[]> {
  const list = (await redis.client('LIST')) as string;
  return list.split('\n').filter((l) => l.includes(` name=${name} `) && l.includes('cmd=xread')).map((l) => /(?:^|\s)id=(\d+)/.exec(l)![1]!);
}

describe('Redis connection lost mid-job', () => {
  it('the job restarts from its checkpoint and the committed output has every entry exactly once', async () => {
    const out = join(work, 'out');
    const logs: string[] = [];
    const job = runJob(defineJob((env) => {
      env.fromSource(new RedisStreamsSource<{ i: number }>({ streams: [stream], stopAt: 'latest', clientName: name, batchSize: 200 }), { ratePerSecond: 3000 })
        .map((r) => r.i)
        .sinkTo(new ExactlyOnceFileSink<number>(out));
    }), {
      workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l),
      checkpoint: { interval: 100, dir: join(work, 'chk') },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    });
    // Kill the reader's connection once it is reading and output has been committed.
    let killed = 0;
    for (let k = 0; k < 600 && killed === 0; k++) {
      await new Promise((r) => setTimeout(r, 50));
      if (committedLines(out).length === 0) continue;
      for (const id of await readerClients()) {
        await redis.client('KILL', 'ID', id);
        killed++;
      }
    }
    const result = await job;
    expect(killed).toBe(1);
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(result.attempts).toBeGreaterThanOrEqual(2);
    const got = committedLines(out).map(Number).sort((a, b) => a - b);
    expect(got.length).toBe(COUNT);
    expect(got).toEqual(Array.from({ length: COUNT }, (_, i) => i));
  }, 120_000);
});
