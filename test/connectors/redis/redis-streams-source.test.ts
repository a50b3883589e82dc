/**
 * Redis Streams source against the real Redis on 127.0.0.1:6379 (unique stream keys per test):
 * reading to the end captured at start, resuming right after a stored entry id, per-split event
 * time from entry ids, malformed entries (dead-letter or failure naming stream and entry), an
 * unreachable server (bounded retries, then an error naming host and port), option validation.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { URL, useTestRedis } from './test-redis.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEAD_LETTERS, RedisStreamsSource, TumblingEventTimeWindows, WatermarkStrategy, type MalformedRecord, type ReaderOutput, type SourceReaderContext } from '../../../src/index.ts';
import type { RedisStreamSplit } from '../../../src/connectors/redis/redis-streams-source.ts';
import { runInline, sorted } from '../../helpers/run.ts';
import { runJob, defineJob } from '../../../src/index.ts';

const testRedis = useTestRedis();
const key = testRedis.key;
let redis: Redis;
beforeAll(() => {
  redis = testRedis.redis();
});

/** Adds records {i, k, ts} as JSON in field "data"; returns their entry ids. */
async function fill(stream: string, count: number, from = 0, t0 = 1_700_000_000_000): Promise<string[]> {
  const p = redis.pipeline();
  for (let i = from; i < from + count; i++) p.xadd(stream, `${t0 + i * 10}-1`, 'data', JSON.stringify({ i, k: `k${i % 3}` }));
  const res = await p.exec();
  return res!.map(([e, id]) => { if (e) throw e; return id as string; });
}

/** A reader context for the tests that drive a reader by hand: wake-up, log lines and lag go where they say. */
function readerContext(o: { wake?: () => void; log?: (line: string) => void; lag?: (ms: number) => void }): SourceReaderContext {
  return {
    subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake: o.wake ?? (() => {}), schedule: () => ({ cancel() {} }), log: o.log ?? (() => {}),
    metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest: (_id, ms) => o.lag?.(ms!) },
  };
}

describe('RedisStreamsSource', () => {
  it('reads every stream to the end captured at start, in order per stream, at parallelism 2', async () => {
    const a = key('a');
    const b = key('b');
    await fill(a, 2500);
    await fill(b, 1200);
    const r = await runInline((env) => {
      env.fromSource(new RedisStreamsSource<{ i: number }>({ url: URL, streams: [a, b], stopAt: 'latest', batchSize: 300 })).collect('out');
    }, { parallelism: 2 });
    const got = r.collected<{ i: number }>('out');
    expect(got.length).toBe(3700);
    expect(sorted(got.map((x) => x.i))).toEqual(sorted([...Array(2500).keys(), ...Array(1200).keys()]));
    // Entries added after the start are not read by a bounded source.
    expect(r.progress.bytesIn).toBeGreaterThan(3700 * 10);
  }, 60_000);

  it('a reader resumes right after the stored entry id (XREAD is exclusive) and ends at the split end', async () => {
    const s = key('resume');
    const ids = await fill(s, 100);
    const src = new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], stopAt: 'latest' });
    const got: number[] = [];
    let wake: () => void = () => {};
    const ctx: SourceReaderContext = {
      subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake: () => wake(),
      schedule: () => ({ cancel() {} }), log: () => {},
      metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest() {} },
    };
    const reader = src.createReader(ctx);
    const split: RedisStreamSplit = { id: s, stream: s, lastId: ids[41]!, endId: ids[89]! };
    reader.addSplits([split]);
    const out: ReaderOutput<{ i: number }> = {
      collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); },
      forSplit: () => out, splitFinished: () => {},
    };
    for (let k = 0; k < 1000; k++) {
      const st = reader.poll(out, 7);
      if (st === 'end') break;
      if (st === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 2000); });
    }
    await reader.close?.();
    expect(got).toEqual(Array.from({ length: 48 }, (_, k) => 42 + k));
  }, 60_000);

  it('millisBehindLatest: the age of what is read while behind, 0 once caught up (before: the last entry\'s age stayed)', async () => {
    const s = key('lag');
    await fill(s, 5); // entries from 2023: far behind now
    const lag: number[] = [];
    let wake: () => void = () => {};
    const reader = new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], blockMs: 100 }).createReader(readerContext({ wake: () => wake(), lag: (ms) => void lag.push(ms) }));
    reader.addSplits([{ id: s, stream: s, lastId: '0-0' }]);
    const got: number[] = [];
    const out: ReaderOutput<{ i: number }> = { collect: (v) => void got.push(v.i), malformed() {}, forSplit: () => out, splitFinished() {} };
    for (let k = 0; k < 100 && !(got.length === 5 && lag.at(-1) === 0); k++) {
      if (reader.poll(out, 100) === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 300); });
    }
    await reader.close?.();
    expect(got).toEqual([0, 1, 2, 3, 4]);
    expect(lag[0]).toBeGreaterThan(365 * 86_400_000);
    expect(lag.at(-1)).toBe(0);
  }, 60_000);

  it('a split resumed after entries past its position were trimmed reads what is left and names the gap in the log (before: skipped without a word)', async () => {
    const s = key('trimmed');
    const ids = await fill(s, 20);
    await redis.xtrim(s, 'MAXLEN', 3);
    const src = new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], stopAt: 'latest', blockMs: 100 });
    const got: number[] = [];
    const logs: string[] = [];
    let wake: () => void = () => {};
    const reader = src.createReader(readerContext({ wake: () => wake(), log: (l) => void logs.push(l) }));
    reader.addSplits([{ id: s, stream: s, lastId: ids[5]!, endId: ids[19]! }]);
    const out: ReaderOutput<{ i: number }> = { collect: (v) => void got.push(v.i), malformed: () => {}, forSplit: () => out, splitFinished: () => {} };
    let status = '';
    for (let k = 0; k < 200 && status !== 'end'; k++) {
      status = reader.poll(out, 100);
      if (status === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 500); });
    }
    await reader.close?.();
    expect(got).toEqual([17, 18, 19]);
    expect(logs).toEqual([`stream "${s}": its entries up to the position ${ids[5]} were trimmed (the oldest is now ${ids[17]}); entries between them, if there were any, were removed before this reader read them`]);
    // Deleted (XDEL) past the position, not trimmed: named too.
    const d = key('deleted');
    const dIds = await fill(d, 10);
    await redis.xdel(d, dIds[7]!);
    const logs2: string[] = [];
    const r2 = new RedisStreamsSource<{ i: number }>({ url: URL, streams: [d], stopAt: 'latest', blockMs: 100 }).createReader(readerContext({ log: (l) => void logs2.push(l) }));
    r2.addSplits([{ id: d, stream: d, lastId: dIds[2]!, endId: dIds[9]! }]);
    for (let k = 0; k < 50 && logs2.length === 0; k++) {
      r2.poll(out, 100);
      await new Promise((res) => setTimeout(res, 20));
    }
    await r2.close?.();
    expect(logs2).toEqual([`stream "${d}": entries after the position ${dIds[2]} were deleted before this reader read them (the last deleted ${dIds[7]})`]);
  }, 60_000);

  it('a bounded split whose end entry was deleted (or trimmed) ends at what is left, and one whose stream was deleted unread ends empty with a log line (before: the job never finished)', async () => {
    const s = key('end-deleted');
    const gone = key('stream-deleted');
    const ids = await fill(s, 10);
    const goneIds = await fill(gone, 3);
    const src = new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s, gone], stopAt: 'latest', blockMs: 100 });
    const got: number[] = [];
    const logs: string[] = [];
    const finished: string[] = [];
    let wake: () => void = () => {};
    const reader = src.createReader(readerContext({ wake: () => wake(), log: (l) => void logs.push(l) }));
    // Planned ends are the last entries; then the producer deletes the end entry of s, and all of gone.
    reader.addSplits([{ id: s, stream: s, lastId: '0-0', endId: ids[9]! }, { id: gone, stream: gone, lastId: '0-0', endId: goneIds[2]! }]);
    await redis.xdel(s, ids[8]!, ids[9]!);
    await redis.del(gone);
    const out: ReaderOutput<{ i: number }> = {
      collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); },
      forSplit: () => out, splitFinished: (id) => void finished.push(id),
    };
    let status = '';
    for (let k = 0; k < 200 && status !== 'end'; k++) {
      status = reader.poll(out, 100);
      if (status === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 500); });
    }
    await reader.close?.();
    expect(status).toBe('end');
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(sorted(finished)).toEqual(sorted([s, gone]));
    expect(logs).toEqual([`stream "${gone}" was deleted before this reader read from it; its split ends with nothing read`]);
  }, 60_000);

  it('event time per stream from entry ids: windows are complete although one stream is far ahead of the other', async () => {
    const a = key('et-a');
    const b = key('et-b');
    await fill(a, 3000);
    await fill(b, 3000, 0, 1_700_000_000_000 - 25_000); // 25 s behind a
    const run = (perSplit: boolean) => runInline((env) => {
      env.setAutoWatermarkInterval(1);
      const src = new RedisStreamsSource<{ i: number; k: string }>({ url: URL, streams: [a, b], stopAt: 'latest', batchSize: 500 });
      const strategy = WatermarkStrategy.forMonotonousTimestamps<{ i: number; k: string }>();
      (perSplit ? env.fromSource(src, { watermarks: strategy }) : env.fromSource(src).assignTimestampsAndWatermarks(strategy))
        .keyBy((e) => e.k)
        .window(TumblingEventTimeWindows.of('1 s'))
        .aggregate({ createAccumulator: () => 0, add: (_e, c: number) => c + 1, getResult: (c: number) => c, merge: (x: number, y: number) => x + y })
        .collect('out');
    });
    const perSplit = await run(true);
    expect(perSplit.progress.lateRecordsDropped ?? 0).toBe(0);
    expect(perSplit.collected<number>('out').reduce((x, y) => x + y, 0)).toBe(6000);
    // The control: one watermark for the reader makes the stream behind late, and says how many.
    const perReader = await run(false);
    const counted = perReader.collected<number>('out').reduce((x, y) => x + y, 0);
    expect(perReader.progress.lateRecordsDropped).toBeGreaterThan(0);
    expect(counted + perReader.progress.lateRecordsDropped!).toBe(6000);
  }, 60_000);

  it('a malformed entry goes to the dead-letter output naming stream and entry id, or fails the job naming them', async () => {
    const s = key('bad');
    await fill(s, 3);
    const badId = await redis.xadd(s, '*', 'data', '{not json');
    await redis.xadd(s, '*', 'other', 'x');
    await fill(s, 2, 3, Date.now() + 1000);
    const r = await runInline((env) => {
      const main = env.fromSource(new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], stopAt: 'latest' }), { malformed: 'dead-letter' });
      main.collect('main');
      main.getSideOutput(DEAD_LETTERS).collect('dead');
    });
    expect(r.collected<{ i: number }>('main').map((x) => x.i)).toEqual([0, 1, 2, 3, 4]);
    const dead = r.collected<MalformedRecord>('dead');
    expect(dead.length).toBe(2);
    expect(dead[0]!.location).toBe(`Redis 127.0.0.1:6379 stream "${s}" entry ${badId}`);
    expect(dead[1]!.error).toContain('no field "data"');
    const failed = await runJob(defineJob((env) => {
      env.fromSource(new RedisStreamsSource({ url: URL, streams: [s], stopAt: 'latest' })).collect('x');
    }), { workers: 1, parallelism: 1, stdout: () => {}, restartStrategy: { type: 'none' } });
    expect(failed.status).toBe('FAILED');
    expect(failed.error?.message).toContain(`stream "${s}" entry ${badId}`);
  }, 60_000);

  it('an unreachable server fails the job after bounded retries, naming host and port and never the password', async () => {
    const job = runInline((env) => {
      env.fromSource(new RedisStreamsSource({ url: 'redis://:s3cret-pw@127.0.0.1:6391', streams: ['x'], stopAt: 'latest', connectBudgetMs: 1500, timeoutMs: 1000 })).collect('x');
    });
    const e = await job.then(() => undefined, (err: Error) => err);
    expect(e?.message).toMatch(/^cannot connect to Redis at 127\.0\.0\.1:6391: .*ECONNREFUSED.* \(gave up after \d+ tries/);
    expect(e?.message).not.toContain('s3cret-pw');
    // Retried (a refused connection is transient), then given up within its budget.
    expect(Number(/gave up after (\d+) tries/.exec(e!.message)![1])).toBeGreaterThan(1);
  }, 90_000);

  it('rejects bad options with one clear message', () => {
    expect(() => new RedisStreamsSource({ streams: [] })).toThrow(/streams must be a non-empty array/);
    expect(() => new RedisStreamsSource({ streams: ['a', 'a'] })).toThrow(/must not repeat/);
    expect(() => new RedisStreamsSource({ streams: ['a'], url: 'http://x' })).toThrow(/redis:\/\//);
    expect(() => new RedisStreamsSource({ streams: ['a'], startFrom: 'middle' as never })).toThrow(/startFrom must be "earliest" or "latest"/);
    expect(() => new RedisStreamsSource({ streams: ['a'], batchSize: 0 })).toThrow(/batchSize must be a positive integer/);
  });
});

describe('RedisStreamsSource restored with other streams', () => {
  it('a stream added since the checkpoint is read from startFrom, a removed one no more (before: the checkpoint\'s streams were read as they were, the new one never)', async () => {
    const a = key('kept');
    const b = key('added');
    const gone = key('removed');
    const chk = mkdtempSync(join(tmpdir(), 'weir-redis-restore-'));
    try {
      await fill(a, 50);
      await fill(gone, 5);
      const seen: string[] = [];
      /** Runs until `want` records were seen and a few checkpoints completed after, then cancels (checkpoints retained). */
      const runUntil = async (streams: string[], want: number, from?: string) => {
        const logs: string[] = [];
        const ac = new AbortController();
        const job = runJob(defineJob((env) => {
          env.fromSource(new RedisStreamsSource<{ i: number }>({ url: URL, streams, blockMs: 50 })).uid('redis')
            .map((x) => void seen.push(`${x.i}`))
            .setParallelism(1);
        }), {
          workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal,
          checkpoint: { interval: 20, dir: chk, retention: 'retain-on-cancel' }, ...(from !== undefined ? { from } : {}),
        });
        let ended = false;
        void job.finally(() => (ended = true));
        const deadline = Date.now() + 30_000;
        while (seen.length < want && !ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, 500)); // checkpoints after the last record
        ac.abort();
        const r = await job;
        expect(r.status, r.error?.message).toBe('CANCELED');
        return logs;
      };
      await runUntil([a, gone], 55);
      expect(seen.length).toBe(55);
      seen.length = 0;
      await fill(a, 10, 50, 1_700_000_001_000);
      await fill(gone, 5, 5, 1_700_000_001_000);
      await fill(b, 30);
      const logs = await runUntil([a, b], 40, 'latest');
      expect(sorted(seen)).toEqual(sorted([...Array.from({ length: 10 }, (_, k) => `${50 + k}`), ...Array.from({ length: 30 }, (_, k) => `${k}`)]));
      expect(logs.some((l) => l.includes(`"${b}" added since the checkpoint: read from earliest`))).toBe(true);
      expect(logs.some((l) => l.includes(`the checkpoint reads "${gone}", which this source no longer names: not read any more`))).toBe(true);
    } finally {
      rmSync(chk, { recursive: true, force: true });
    }
  }, 90_000);

  it('a stream added since the checkpoint and read from latest is planned once: a restart restoring the same checkpoint reads it from the same place (before: from a new latest, what the failed attempt had read lost)', async () => {
    const a = key('a');
    const b = key('b-added');
    const chk = mkdtempSync(join(tmpdir(), 'weir-redis-added-'));
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    try {
      await fill(a, 5);
      const seen: string[] = [];
      let failed = false;
      const logs: string[] = [];
      const run = async (streams: string[], from: string | undefined, interval: number, until: () => boolean, during: () => Promise<void> = async () => {}) => {
        const ac = new AbortController();
        const job = runJob(defineJob((env) => {
          env.fromSource(new RedisStreamsSource<{ i: number }>({ url: URL, streams, blockMs: 50, startFrom: 'latest' }))
            .uid('redis')
            .map((x) => {
              // B's records are numbered from 1000.
              if (x.i >= 1000 && !failed) {
                failed = true;
                throw new Error('injected failure at the first record of the added stream');
              }
              seen.push(`${x.i >= 1000 ? 'b' : 'a'}${x.i % 1000}`);
            })
            .setParallelism(1);
        }), {
          workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), signal: ac.signal,
          restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
          checkpoint: { interval, dir: chk, retention: 'retain-on-cancel' }, ...(from !== undefined ? { from } : {}),
        });
        let ended = false;
        void job.finally(() => (ended = true));
        await during();
        const deadline = Date.now() + 30_000;
        while (!until() && !ended && Date.now() < deadline) await sleep(20);
        await sleep(300);
        ac.abort();
        return job;
      };
      const added = () => logs.filter((l) => l.includes(`"${b}" added since the checkpoint: read from latest`)).length;
      // A checkpoint of A alone (latest: A's entries written after the start).
      const first = await run([a], undefined, 20, () => seen.length >= 3, async () => {
        await sleep(500);
        await fill(a, 3, 5, 1_700_000_001_000);
      });
      expect(first.status, first.error?.message).toBe('CANCELED');
      expect(seen).toEqual(['a5', 'a6', 'a7']);
      seen.length = 0;
      await fill(b, 1, 500); // before B's latest: never read
      // Restored with B added; no checkpoint completes before the failure at B's first record.
      const second = await run([a, b], 'latest', 60_000, () => seen.includes('b99'), async () => {
        const deadline = Date.now() + 15_000;
        while (added() < 1 && Date.now() < deadline) await sleep(10);
        await fill(b, 10, 1000); // after attempt 1 planned B at its latest
        while (added() < 2 && Date.now() < deadline) await sleep(10);
        await fill(b, 1, 1099); // after attempt 2 planned
      });
      expect(second.status, second.error?.message).toBe('CANCELED');
      expect(failed).toBe(true);
      expect(seen.filter((x) => x.startsWith('b'))).toEqual([...Array.from({ length: 10 }, (_, k) => `b${k}`), 'b99']);
    } finally {
      rmSync(chk, { recursive: true, force: true });
    }
  }, 90_000);
});

/** A reader driven by hand: what it emitted, its log lines, and polls until `until` holds, the split ends, it fails or `ms` pass. */
function handReader(src: RedisStreamsSource<{ i: number }>, splits: RedisStreamSplit[]) {
  const got: number[] = [];
  const logs: string[] = [];
  let wake: () => void = () => {};
  const reader = src.createReader(readerContext({ wake: () => wake(), log: (l) => void logs.push(l) }));
  reader.addSplits(splits);
  const out: ReaderOutput<{ i: number }> = { collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); }, forSplit: () => out, splitFinished: () => {} };
  const drive = async (until: () => boolean, max = 100, ms = 10_000): Promise<Error | undefined> => {
    const deadline = Date.now() + ms;
    try {
      while (Date.now() < deadline && !until()) {
        const st = reader.poll(out, max);
        if (st === 'end') break;
        if (st === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 50); });
      }
    } catch (e) {
      return e as Error;
    }
    return undefined;
  };
  return { got, logs, reader, drive };
}

describe('RedisStreamsSource and entries removed before it read them', () => {
  it('a trim past the position of a running reader that lags is named in the log with how many entries are gone, or fails it with onGap \'fail\' (before: 130 of 200 skipped without a word)', async () => {
    for (const onGap of ['log', 'fail'] as const) {
      const s = key(`trim-running-${onGap}`);
      const ids = await fill(s, 200);
      // batchSize 10 and 5 records a poll: the reader holds at most a few batches, far behind.
      const h = handReader(new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], batchSize: 10, blockMs: 100, onGap }), [{ id: s, stream: s, lastId: '0-0' }]);
      expect(await h.drive(() => h.got.length >= 5, 5)).toBeUndefined();
      await redis.xtrim(s, 'MAXLEN', 50); // the producer's limit: entries 0 to 149 go
      const err = await h.drive(() => h.got.includes(199), 5);
      await h.reader.close?.();
      const before = h.got.filter((i) => i < 150);
      expect(before).toEqual(Array.from({ length: before.length }, (_, k) => k));
      const pos = before.length - 1;
      const line = `stream "${s}": ${149 - pos} entries after the position ${ids[pos]}, before ${ids[150]}, are gone (removed by the stream's limits or deleted before this reader read them)`;
      if (onGap === 'log') {
        expect(err).toBeUndefined();
        expect(h.got.slice(before.length)).toEqual(Array.from({ length: 50 }, (_, k) => 150 + k));
        expect(h.logs).toEqual([line]);
      } else {
        expect(err?.message).toBe(`Redis at 127.0.0.1:6379: ${line}; onGap is 'fail' (with 'log' the source reads on after them)`);
        expect((err as { code?: string }).code).toBe('CONNECTOR');
        expect(h.got.length).toBe(before.length);
        expect(h.logs).toEqual([]);
      }
    }
  }, 60_000);

  it('with onGap \'fail\' the failure comes at the gap\'s place in the stream: the entries read before it are emitted first (before: whichever poll came after the reply, however many were still buffered)', async () => {
    const s = key('trim-fail-in-order');
    await fill(s, 200);
    const h = handReader(new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], batchSize: 10, blockMs: 100, onGap: 'fail' }), [{ id: s, stream: s, lastId: '0-0' }]);
    expect(await h.drive(() => h.got.length >= 5, 5)).toBeUndefined();
    await redis.xtrim(s, 'MAXLEN', 50);
    // One record more: the poll sends the next XREAD (the buffer is under two batches), whose
    // reply finds the gap while the reader still holds entries read before it.
    expect(await h.drive(() => h.got.length >= 6, 1)).toBeUndefined();
    await new Promise((r) => setTimeout(r, 500));
    const err = await h.drive(() => false, 1);
    await h.reader.close?.();
    expect(err?.message).toMatch(/entries after the position .* are gone .*; onGap is 'fail'/);
    // The position is the last entry read before the gap (ids are 1700000000000 + 10 i - 1).
    const last = (Number(/after the position (\d+)-1/.exec(err!.message)![1]) - 1_700_000_000_000) / 10;
    expect(last).toBeGreaterThan(5);
    // Every entry up to it was emitted, in order, and nothing after it.
    expect(h.got).toEqual(Array.from({ length: last + 1 }, (_, k) => k));
  }, 60_000);

  it('a restored split counts what a trim took past its position: none when trimmed up to it (before: reported as trimmed), how many when past it', async () => {
    const s = key('trim-restore');
    const ids = await fill(s, 50);
    // A first run reads entries 0 to 9; its checkpoint holds the position and the entry's number.
    const { got, split } = await checkpointAfter(s, ids, 9);
    expect(got).toEqual([...Array(10).keys()]);
    expect(split).toEqual({ id: s, stream: s, lastId: ids[9], endId: ids[9], entriesRead: 10, lastEntryDigest: expect.any(String) });
    const { endId: _end, ...restored } = split;
    // Trimmed exactly up to the position: nothing of the reader's is gone, nothing is said.
    await redis.xtrim(s, 'MINID', ids[10]!);
    const upTo = handReader(new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], blockMs: 100 }), [restored]);
    expect(await upTo.drive(() => upTo.got.includes(49))).toBeUndefined();
    await upTo.reader.close?.();
    expect(upTo.got).toEqual(Array.from({ length: 40 }, (_, k) => 10 + k));
    expect(upTo.logs).toEqual([]);
    // Trimmed past it: the five entries 10 to 14 are gone, and counted.
    await redis.xtrim(s, 'MINID', ids[15]!);
    const past = handReader(new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], blockMs: 100 }), [restored]);
    expect(await past.drive(() => past.got.includes(49))).toBeUndefined();
    await past.reader.close?.();
    expect(past.got).toEqual(Array.from({ length: 35 }, (_, k) => 15 + k));
    expect(past.logs).toEqual([`stream "${s}": 5 entries after the position ${ids[9]}, before ${ids[15]}, are gone (removed by the stream's limits or deleted before this reader read them)`]);
  }, 60_000);
});

/** A first run that reads the stream's entries 0 to `last` and takes its checkpoint: what it read, and its split. */
async function checkpointAfter(s: string, ids: readonly string[], last: number): Promise<{ got: number[]; split: RedisStreamSplit }> {
  const first = handReader(new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], blockMs: 100 }), [{ id: s, stream: s, lastId: '0-0', endId: ids[last]! }]);
  expect(await first.drive(() => first.got.includes(last))).toBeUndefined();
  const [split] = first.reader.snapshotSplits();
  await first.reader.close?.();
  return { got: first.got, split: split! };
}

describe('RedisStreamsSource and a stream deleted and created again', () => {
  it('a restored position in a stream created again is refused (before: the new stream\'s entries up to the old position were skipped without a word); the same stream, trimmed or with the entry deleted, is read on', async () => {
    const s = key('recreated');
    const ids = await fill(s, 100);
    // The checkpoint of a run that read entries 0 to 59.
    const { split: snap } = await checkpointAfter(s, ids, 59);
    const { endId: _end, ...split } = snap;
    expect(split.lastId).toBe(ids[59]);
    expect(split.entriesRead).toBe(60);
    expect(split.lastEntryDigest).toMatch(/^[\w-]{22}$/);
    const refused = (what: string) => `Redis stream "${s}" at 127.0.0.1:6379: ${what}; the entries of the new stream are not the ones the position counts, and reading on would skip some of them. Start the job without this checkpoint (the source reads the new stream from startFrom), or restore the stream`;
    const restore = async (sp: RedisStreamSplit, until: (got: number[]) => boolean) => {
      const h = handReader(new RedisStreamsSource<{ i: number }>({ url: URL, streams: [s], blockMs: 100 }), [sp]);
      const err = await h.drive(() => until(h.got), 100, 5000);
      await h.reader.close?.();
      return { ...h, err };
    };
    // The same stream, its entry at the position deleted and entries before it trimmed: read on.
    await redis.xdel(s, ids[59]!);
    await redis.xtrim(s, 'MINID', ids[30]!);
    const same = await restore(split, (got) => got.includes(99));
    expect(same.err).toBeUndefined();
    expect(same.got).toEqual(Array.from({ length: 40 }, (_, k) => 60 + k));
    expect(same.logs).toEqual([]);
    // Deleted and created again with the same ids (the producer's event-time ids), other records.
    await redis.del(s);
    await fill(s, 100, 1000, 1_700_000_000_000 - 10_000);
    const again = await restore(split, (got) => got.length > 0);
    expect(again.err?.message).toBe(refused(`its entry ${ids[59]} is not the one the position read (deleted and created again)`));
    expect((again.err as { code?: string }).code).toBe('CONNECTOR');
    expect(again.got).toEqual([]);
    // Created again with fewer entries: fewer added than the position counts; and a split of an
    // older weir (no number, no digest) is refused when the stream ends before its position.
    await redis.del(s);
    await fill(s, 20, 2000, 1_700_000_000_000 - 20_000);
    const fewer = await restore(split, (got) => got.length > 0);
    expect(fewer.err?.message).toBe(refused(`it has had 20 entries added, fewer than the 60 up to the position ${ids[59]} (deleted and created again)`));
    const older = await restore({ id: s, stream: s, lastId: split.lastId }, (got) => got.length > 0);
    expect(older.err?.message).toBe(refused(`its last entry id is ${ids[19]}, before the position ${ids[59]} (deleted and created again?)`));
    // Created again without the position's id, nothing removed: refused too.
    await redis.del(s);
    await fill(s, 100, 3000, 1_700_000_000_005 - 30_000);
    const missing = await restore(split, (got) => got.length > 0);
    expect(missing.err?.message).toBe(refused(`it has no entry ${ids[59]} and never removed one there (deleted and created again)`));
    expect(missing.got).toEqual([]);
  }, 60_000);
});
