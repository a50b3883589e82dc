/**
 * Ad-hoc throughput of the Redis Streams and JetStream sources against the raw clients reading the
 * same records in a plain loop on the same servers (issue 9, point 10; not yet in the bench suite).
 * Writes N records (default 200,000) to a fresh stream on each server, then 3 rounds of: raw
 * client, weir job (p = 1, one thread, records decoded and mapped, nothing written). Prints
 * records/s per run and the ratio of the best runs. Removes its streams.
 *
 *   node --import tsx bench/sources-vs-raw.ts [N]
 */
import { Redis } from 'ioredis';
import { connect } from 'nats';
import { defineJob, runJob, JetStreamSource, RedisStreamsSource } from '../src/index.ts';

const N = Number(process.argv[2] ?? 200_000);
const tag = `${process.pid}_${Date.now()}`;
const key = `weir-bench:${tag}`;
const streamName = `weirbench_${tag}`;
const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, commandTimeout: 30_000 });
await redis.connect();
const nc = await connect({ servers: '127.0.0.1:4222' });
const jsm = await nc.jetstreamManager();
await jsm.streams.add({ name: streamName, subjects: [`${streamName}.>`] });
const js = nc.jetstream();
for (let i = 0; i < N; i += 1000) {
  const p = redis.pipeline();
  const ps: Promise<unknown>[] = [];
  for (let k = i; k < Math.min(N, i + 1000); k++) {
    const rec = JSON.stringify({ i: k, key: `k${k % 100}`, ts: 1_700_000_000_000 + k, value: k % 7, pad: 'x'.repeat(40) });
    p.xadd(key, '*', 'data', rec);
    ps.push(js.publish(`${streamName}.a`, rec));
  }
  await p.exec();
  await Promise.all(ps);
}

async function rawRedis(): Promise<number> {
  const t = performance.now();
  let id = '0-0';
  let n = 0;
  let sum = 0;
  while (n < N) {
    const res = (await redis.xread('COUNT', 1000, 'STREAMS', key, id)) as [string, [string, string[]][]][];
    for (const [id2, f] of res[0]![1]) { sum += JSON.parse(f[1]!).value; id = id2; n++; }
  }
  return (N / (performance.now() - t)) * 1000 + sum * 0;
}

async function rawNats(): Promise<number> {
  const t = performance.now();
  const c = await js.consumers.get(streamName);
  const msgs = await c.consume({ max_messages: 1000 });
  let n = 0;
  let sum = 0;
  for await (const m of msgs) { sum += m.json<{ value: number }>().value; if (++n >= N) break; }
  await msgs.close();
  return (N / (performance.now() - t)) * 1000 + sum * 0;
}

async function weir(source: () => unknown): Promise<number> {
  const t = performance.now();
  const r = await runJob(defineJob((env) => {
    env.fromSource(source() as never).map((e) => (e as { value: number }).value).filter(() => false).print();
  }), { workers: 1, parallelism: 1, stdout: () => {} });
  if (r.status !== 'FINISHED' || r.progress.recordsIn !== N) throw new Error(`${r.status} ${r.progress.recordsIn} ${r.error?.message}`);
  return (N / (performance.now() - t)) * 1000;
}

const res: Record<string, number[]> = { rawRedis: [], weirRedis: [], rawNats: [], weirNats: [] };
for (let round = 0; round < 3; round++) {
  res.rawRedis!.push(await rawRedis());
  res.weirRedis!.push(await weir(() => new RedisStreamsSource({ streams: [key], stopAt: 'latest' })));
  res.rawNats!.push(await rawNats());
  res.weirNats!.push(await weir(() => new JetStreamSource({ stream: streamName, stopAt: 'latest' })));
}
const best = (xs: number[]) => Math.max(...xs);
for (const [k, v] of Object.entries(res)) console.log(`${k}: ${v.map((x) => Math.round(x)).join(', ')} records/s (best ${Math.round(best(v))})`);
console.log(`redis ratio (best/best): ${(best(res.weirRedis!) / best(res.rawRedis!)).toFixed(2)}; jetstream ratio: ${(best(res.weirNats!) / best(res.rawNats!)).toFixed(2)}`);
await redis.del(key);
redis.disconnect();
await jsm.streams.delete(streamName);
await nc.close();
