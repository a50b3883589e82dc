/**
 * A producer for the connector examples: writes page-view events
 *   {"user": "u17", "page": "/p/3", "ts": epoch ms, "ms": time on page}
 * to a Redis stream or a NATS JetStream subject (creating the stream if it is missing), in
 * batches, optionally at a rate and forever, as a live system would. Events are deterministic
 * from the seed (event i is the same in every run), out of order by up to 2 s.
 *
 *   npx tsx examples/produce-events.ts redis redis://127.0.0.1:6379 pageviews 100000
 *   npx tsx examples/produce-events.ts jetstream 127.0.0.1:4222 PAGEVIEWS.in 100000
 *   npx tsx examples/produce-events.ts redis redis://127.0.0.1:6379 pageviews forever 2000   # 2,000 per second until Ctrl-C
 */
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { connect } from 'nats';
import { Rng } from '../src/core/random.ts';

export interface PageView { user: string; page: string; ts: number; ms: number }

export const BASE_TS = 1_700_000_000_000;

/** Event i: deterministic from the seed; ~5 ms of event time per event, up to 2 s out of order. */
export function pageView(i: number, seed = 1, rng = new Rng()): PageView {
  rng.reseed(seed, i);
  return { user: `u${rng.int(500)}`, page: `/p/${rng.int(20)}`, ts: BASE_TS + i * 5 - rng.int(2000), ms: 100 + rng.int(10_000) };
}

/** The JetStream stream name of a subject: its first token (PAGEVIEWS.in -> PAGEVIEWS). */
export const streamOf = (subject: string): string => subject.split('.')[0]!;

const BATCH = 500;

/** Writes events from..to-1 (to = Infinity: until stopped) to Redis; resolves when done. */
export async function produceToRedis(url: string, stream: string, from: number, to: number, perSecond?: number, seed = 1): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, commandTimeout: 10_000, maxRetriesPerRequest: 3 });
  await redis.connect();
  try {
    await paced(from, to, perSecond, async (a, b) => {
      const p = redis.pipeline();
      for (let i = a; i < b; i++) p.xadd(stream, '*', 'data', JSON.stringify(pageView(i, seed)));
      const results = await p.exec();
      const failed = results?.find(([e]) => e !== null);
      if (failed) throw failed[0];
    });
  } finally {
    redis.disconnect();
  }
}

/** Writes events from..to-1 to a JetStream subject, creating its stream if missing. */
export async function produceToJetStream(servers: string, subject: string, from: number, to: number, perSecond?: number, seed = 1): Promise<void> {
  const nc = await connect({ servers, timeout: 10_000 });
  try {
    const jsm = await nc.jetstreamManager({ timeout: 10_000 });
    const name = streamOf(subject);
    try {
      await jsm.streams.info(name);
    } catch {
      await jsm.streams.add({ name, subjects: [`${name}.>`] });
    }
    const js = nc.jetstream({ timeout: 10_000 });
    await paced(from, to, perSecond, async (a, b) => {
      const acks: Promise<unknown>[] = [];
      for (let i = a; i < b; i++) acks.push(js.publish(subject, JSON.stringify(pageView(i, seed))));
      await Promise.all(acks);
    });
  } finally {
    await nc.close();
  }
}

/** Calls write(a, b) for batches of [from, to), keeping to perSecond if given. */
async function paced(from: number, to: number, perSecond: number | undefined, write: (a: number, b: number) => Promise<void>): Promise<void> {
  const started = Date.now();
  for (let a = from; a < to; a += BATCH) {
    const b = Math.min(to, a + BATCH);
    await write(a, b);
    if (perSecond !== undefined) {
      const dueMs = ((b - from) * 1000) / perSecond - (Date.now() - started);
      if (dueMs > 0) await new Promise((r) => setTimeout(r, dueMs));
    }
  }
}

async function main(argv: readonly string[]): Promise<void> {
  const [kind, where, target, countArg, rateArg] = argv;
  const count = countArg === 'forever' ? Number.POSITIVE_INFINITY : Number(countArg);
  const rate = rateArg === undefined ? undefined : Number(rateArg);
  const usage = 'usage: npx tsx examples/produce-events.ts redis|jetstream <url|servers> <stream|subject> <count|forever> [per-second]';
  if ((kind !== 'redis' && kind !== 'jetstream') || where === undefined || target === undefined) throw new Error(usage);
  if (!(count === Number.POSITIVE_INFINITY || (Number.isInteger(count) && count >= 0))) throw new Error(`count must be a non-negative integer or "forever", got ${countArg}`);
  if (rate !== undefined && !(Number.isFinite(rate) && rate > 0)) throw new Error(`per-second must be a positive number, got ${rateArg}`);
  if (kind === 'redis') await produceToRedis(where, target, 0, count, rate);
  else await produceToJetStream(where, target, 0, count, rate);
  process.stdout.write(`wrote ${count} events to ${kind} ${target}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`produce-events: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  });
}
