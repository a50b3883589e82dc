/**
 * Redis Streams sink against the real server at 127.0.0.1:6379: entries added only at
 * completion, a re-commit after a restore adds nothing (progress key in the same MULTI),
 * another run's progress refused, the committer's connection killed at seeded moments during
 * commits (every entry exactly once), an unreachable server named.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/random.ts';
import { RedisStreamsSink } from '../../src/connectors/redis/index.ts';
import { evictsAnyKey, MAX_ENTRY_FIELD_VALUES } from '../../src/connectors/redis/redis-streams-sink.ts';
import { defineJob, runJob } from '../../src/index.ts';
import { freePort, sinkCtx, uniqueName } from './postgres/helpers.ts';

interface Ev { k: string; n: number }
const ts = (n: number) => new Array<number>(n).fill(0);
const failure = (p: unknown): Promise<unknown> => Promise.resolve(p).then(() => undefined, (x: unknown) => x);
let r: Redis;
const keys: string[] = [];

beforeAll(async () => {
  r = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  await r.connect();
});
afterAll(async () => {
  if (keys.length > 0) await r.del(...keys);
  const progress = await r.keys('weir:test-progress:*');
  if (progress.length > 0) await r.del(...progress);
  r.disconnect();
});

function stream(): string {
  const s = uniqueName('weir:test:s');
  keys.push(s);
  return s;
}
const evs = (from: number, n: number): Ev[] => Array.from({ length: n }, (_, i) => ({ k: `k${(from + i) % 3}`, n: from + i }));
const read = async (s: string) => (await r.xrange(s, '-', '+')).map(([, f]) => JSON.parse(f[1]!) as Ev);

function sink(s: string, jobId: string, extra: Record<string, unknown> = {}) {
  return new RedisStreamsSink<Ev>({ stream: s, jobId, progressKeyPrefix: 'weir:test-progress', ...extra });
}

describe('redis streams sink', () => {
  it('adds entries when the checkpoint completes, with the progress key; a re-commit after a restore adds nothing', async () => {
    const s = stream();
    const job = uniqueName('job');
    const k = sink(s, job);
    const w = k.createWriter(sinkCtx());
    const c = k.createCommitter(sinkCtx());
    w.write(evs(0, 1000), ts(1000));
    const first = w.prepareCommit(1);
    w.write(evs(1000, 5), ts(5));
    const second = w.prepareCommit(2);
    expect(await r.xlen(s)).toBe(0);
    await c.commit(first);
    expect(await r.xlen(s)).toBe(1000);
    expect(await k.lastCommittedCheckpointOf('sink', 0)).toBe(1);
    await c.commit(second);
    const c2 = k.createCommitter(sinkCtx({ restoredCheckpointId: 2, attemptNumber: 1 }));
    await c2.commit([...first, ...second]);
    expect(await read(s)).toEqual(evs(0, 1005));
    expect(await r.get(`weir:test-progress:${job}:sink:0`)).toBe('2');
    c.close?.();
    c2.close?.();
  });

  it('routes records to streams by a function, with fields and MAXLEN trimming', async () => {
    const a = stream();
    const b = stream();
    const k = new RedisStreamsSink<Ev>({ stream: (e) => (e.n % 2 === 0 ? a : b), fields: (e) => ({ k: e.k, n: e.n }), jobId: uniqueName('job'), progressKeyPrefix: 'weir:test-progress', maxLen: 10 });
    const w = k.createWriter(sinkCtx());
    const c = k.createCommitter(sinkCtx());
    w.write(evs(0, 6), ts(6));
    await c.commit(w.prepareCommit(1));
    expect((await r.xrange(a, '-', '+')).map(([, f]) => f)).toEqual([['k', 'k0', 'n', '0'], ['k', 'k2', 'n', '2'], ['k', 'k1', 'n', '4']]);
    expect(await r.xlen(b)).toBe(3);
    expect(() => w.write([{ k: 'x', n: 1 }].map(() => ({ k: undefined as unknown as string, n: 1 })), ts(1))).toThrow(/field "k" of stream .* must be a string, number or Buffer/);
    c.close?.();
  });

  it('an entry as wide as one commit can add commits, with MAXLEN; a wider one is refused at its record (before: taken, then the completed checkpoint\'s commit failed at every retry, "too many results to unpack")', async () => {
    const s = stream();
    const widest = MAX_ENTRY_FIELD_VALUES / 2;
    const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i]));
    const k = new RedisStreamsSink<{ n: number }>({ stream: s, fields: (e) => wide(e.n), jobId: uniqueName('job'), progressKeyPrefix: 'weir:test-progress', maxLen: 100 });
    const w = k.createWriter(sinkCtx());
    const c = k.createCommitter(sinkCtx());
    w.write([{ n: widest }], ts(1));
    await c.commit(w.prepareCommit(1));
    const [[, fields]] = await r.xrange(s, '-', '+');
    expect(fields!.length).toBe(MAX_ENTRY_FIELD_VALUES);
    expect(() => w.write([{ n: widest + 1 }], ts(1))).toThrow(new RegExp(`has ${widest + 1} fields, more than the ${widest}`));
    c.close?.();
  });

  it('a run that starts from no checkpoint and meets another run\'s progress key fails instead of dropping its entries', async () => {
    const s = stream();
    const job = uniqueName('job');
    const c = sink(s, job).createCommitter(sinkCtx());
    await c.commit([{ sub: 0, chk: 4, entries: [[s, 'data', '1']] }]);
    const other = sink(s, job).createCommitter(sinkCtx());
    const e = await failure(other.commit([{ sub: 0, chk: 2, entries: [[s, 'data', '2']] }]));
    expect(errorCode(e)).toBe('CONFIG');
    expect(String((e as Error).message)).toMatch(/progress key "weir:test-progress:.*:sink:0" records checkpoint 4/);
    expect(await r.xlen(s)).toBe(1);
    c.close?.();
    other.close?.();
  });

  it('a checkpoint with entries for 160,000 streams commits in one script (before: WATCH of every stream, O(N^2) in the server, then a spread of 160,000 arguments failed with a stack overflow, the job stuck at every restore)', async () => {
    const base = uniqueName('weir:test:many');
    const n = 160_000;
    const k = new RedisStreamsSink<{ i: number }>({ stream: (v) => `${base}:${v.i}`, jobId: uniqueName('job'), progressKeyPrefix: 'weir:test-progress' });
    const pkey = k.progressKey(k.key({ operatorId: 'sink', subtaskIndex: 0 }));
    const w = k.createWriter(sinkCtx());
    w.write(Array.from({ length: n }, (_, i) => ({ i })), ts(n));
    const c = k.createCommitter(sinkCtx());
    try {
      await c.commit(w.prepareCommit(1));
      expect(await r.get(pkey)).toBe('1');
      for (const i of [0, 77_777, n - 1]) expect(await r.xlen(`${base}:${i}`)).toBe(1);
      await c.commit(w.prepareCommit(2)); // nothing new: the progress moves on
      expect(await r.get(pkey)).toBe('2');
    } finally {
      c.close?.();
      await r.eval(`for i = 0, ${n - 1} do redis.call('UNLINK', ARGV[1] .. ':' .. i) end`, 0, base);
    }
  }, 120_000);

  it('a progress value it did not write fails reading the progress and the commit, adds nothing and is left as found', async () => {
    for (const foreign of ['9e99', 'abc', '-1', '']) {
      const s = stream();
      const k = sink(s, uniqueName('job'));
      const pkey = k.progressKey(k.key({ operatorId: 'sink', subtaskIndex: 0 }));
      await r.set(pkey, foreign);
      const e = await failure(k.lastCommittedCheckpointOf('sink', 0));
      expect(String((e as Error).message), foreign).toContain(`progress key "${pkey}" holds ${JSON.stringify(foreign)}, not a checkpoint id`);
      const c = k.createCommitter(sinkCtx());
      const e2 = await failure(c.commit([{ sub: 0, chk: 1, entries: [[s, 'data', '1']] }]));
      expect(String((e2 as Error).message), foreign).toContain('not a checkpoint id');
      expect(await r.xlen(s)).toBe(0);
      expect(await r.get(pkey)).toBe(foreign);
      c.close?.();
    }
  });

  it('an entry for a key that is not a stream fails the commit naming the key, and nothing of the checkpoint is written', async () => {
    const good = stream();
    const wrong = stream();
    await r.set(wrong, 'a string, not a stream');
    const k = sink(good, uniqueName('job'));
    const pkey = k.progressKey(k.key({ operatorId: 'sink', subtaskIndex: 0 }));
    const c = k.createCommitter(sinkCtx());
    const e = await failure(c.commit([{ sub: 0, chk: 1, entries: [[good, 'data', '1'], [wrong, 'data', '2'], [good, 'data', '3']] }]));
    expect(errorCode(e)).toBe('CONNECTOR');
    expect(String((e as Error).message)).toContain(`key "${wrong}" holds a string, not a stream`);
    // Before, EXEC applied the other XADDs and the progress key: a re-commit skipped the checkpoint.
    expect(await r.xlen(good)).toBe(0);
    expect(await r.get(pkey)).toBeNull();
    expect(await r.get(wrong)).toBe('a string, not a stream');
    c.close?.();
  });

  it('the committer\'s connection killed at random moments during commits: every entry lands exactly once', async () => {
    const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 1e6));
    console.log(`[redis kill] seed=${seed} (replay with SEED=${seed})`);
    const rng = new Rng(seed);
    const s = stream();
    const job = uniqueName('job');
    const k = sink(s, job);
    const w = k.createWriter(sinkCtx());
    const c = k.createCommitter(sinkCtx());
    let n = 0;
    let killed = 0;
    for (let chk = 1; chk <= 8; chk++) {
      const size = 2000 + rng.int(3000);
      w.write(evs(n, size), ts(size));
      n += size;
      const commit = Promise.resolve(c.commit(w.prepareCommit(chk)));
      await new Promise((res) => setTimeout(res, rng.int(15)));
      const clients = (await r.client('LIST')) as string;
      for (const line of clients.split('\n')) {
        if (line.includes(`name=weir-sink-${job}`)) {
          await r.client('KILL', 'ID', /id=(\d+)/.exec(line)![1]!);
          killed++;
        }
      }
      await commit;
    }
    console.log(`[redis kill] ${killed} connections killed over 8 commits`);
    expect(killed).toBeGreaterThan(0);
    const got = await read(s);
    expect(got.length).toBe(n);
    expect(got).toEqual(evs(0, n));
    c.close?.();
  }, 120_000);

  it('with replicas set, a commit counts only once that many replicas hold it (WAIT): short of them it is retried to the deadline and fails, and its re-commit writes nothing twice', async () => {
    // The test server has no replicas: WAIT 1 answers 0.
    const s = stream();
    const job = uniqueName('job');
    const entries: [string, string, string][] = [[s, 'data', '{"k":"a","n":1}']];
    const started = Date.now();
    const e = await failure(sink(s, job, { replicas: 1, retryDeadlineMs: 1_500, commandTimeoutMs: 400 }).createCommitter(sinkCtx()).commit([{ sub: 0, chk: 1, entries }]));
    expect(errorCode(e)).toBe('CONNECTOR');
    expect(String((e as Error).message)).toMatch(/checkpoint 1's commit reached 0 of the 1 replicas asked for \(replicas\) within 200 ms/);
    expect(Date.now() - started).toBeLessThan(15_000);
    // The primary has it (the job's restart re-commits it): once, with replicas 0 now.
    expect((await read(s)).length).toBe(1);
    await sink(s, job).createCommitter(sinkCtx({ restoredCheckpointId: 1 })).commit([{ sub: 0, chk: 1, entries }]);
    expect((await read(s)).length).toBe(1);
    expect(() => sink(s, job, { replicas: -1 })).toThrow(/replicas must be a positive integer, got -1/);
  });

  it('says once in the log when the server may evict its progress keys (an allkeys-* policy under a memory limit)', async () => {
    expect(evictsAnyKey('allkeys-lru', '1073741824')).toBe(true);
    expect(evictsAnyKey('allkeys-lru', '0')).toBe(false);
    expect(evictsAnyKey('volatile-lru', '1073741824')).toBe(false);
    expect(evictsAnyKey('noeviction', '1073741824')).toBe(false);
    const [, policy] = (await r.config('GET', 'maxmemory-policy')) as string[];
    const [, maxmemory] = (await r.config('GET', 'maxmemory')) as string[];
    try {
      // A limit far above what the tests hold: nothing is evicted meanwhile.
      await r.config('SET', 'maxmemory-policy', 'allkeys-lru');
      await r.config('SET', 'maxmemory', '8gb');
      const logged: string[] = [];
      const k = sink(stream(), uniqueName('job'));
      await k.start((l) => logged.push(l));
      await k.start((l) => logged.push(l));
      expect(logged).toEqual([expect.stringMatching(/^weir: redis streams .* at 127\.0\.0\.1:6379\/0: the server evicts any key under memory pressure \(maxmemory-policy allkeys-lru, maxmemory 8589934592\); .* Use noeviction or a volatile-\* policy$/)]);
    } finally {
      await r.config('SET', 'maxmemory-policy', policy!);
      await r.config('SET', 'maxmemory', maxmemory!);
    }
    const quiet: string[] = [];
    await sink(stream(), uniqueName('job')).start((l) => quiet.push(l));
    expect(quiet).toEqual([]);
  });

  it('an unreachable server fails the commit after bounded retries, naming host and port', async () => {
    const port = await freePort();
    const k = new RedisStreamsSink<Ev>({ connection: `redis://127.0.0.1:${port}`, stream: 's', jobId: 'j', retryDeadlineMs: 1_500, connectTimeoutMs: 1_000 });
    const e = await failure(k.createCommitter(sinkCtx()).commit([{ sub: 0, chk: 1, entries: [['s', 'f', 'v']] }]));
    expect(errorCode(e)).toBe('CONNECTOR');
    expect(String((e as Error).message)).toContain(`127.0.0.1:${port}/0`);
    const w = k.createWriter(sinkCtx());
    const e2 = await failure(k.start(() => {}));
    expect(String((e2 as Error).message)).toContain(`start check at 127.0.0.1:${port}/0 failed`);
    expect(() => w.write([{ k: 'a', n: 1 }], ts(1))).toThrow(/start check/);
  });

  it('a restore from an older snapshot with allowDuplicateOutput writes its output again: its checkpoint ids go above what the sink committed (before: they reused committed ids and the sink skipped them, the new output lost)', async () => {
    const s = stream();
    const job = uniqueName('job');
    const chk = mkdtempSync(join(tmpdir(), 'weir-redis-rewind-'));
    try {
      const build = (tag: string) => defineJob((env) => {
        env.fromGenerator((i) => i, { count: 100_000, ratePerSecond: 2000 }).uid('numbers')
          .map((n) => ({ k: tag, n }))
          .sinkTo(new RedisStreamsSink<Ev>({ stream: s, jobId: job, progressKeyPrefix: 'weir:test-progress' })).uid('sink');
      });
      const ac = new AbortController();
      const first = runJob(build('v1'), {
        workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, signal: ac.signal,
        checkpoint: { interval: 50, dir: chk, retention: 'retain-on-cancel', numRetained: 20 },
      });
      /** The sink's committed checkpoint and the entries then, read at once (one subtask: each checkpoint's entries are one MULTI). */
      const entriesAt = new Map<number, number>();
      const committedNow = async (): Promise<number> => {
        const [k] = await r.keys(`weir:test-progress:${job}:*`);
        if (k === undefined) return 0;
        const [[, id], [, len]] = (await r.multi().get(k).xlen(s).exec()) as [[null, string], [null, number]];
        if (!entriesAt.has(Number(id))) entriesAt.set(Number(id), len);
        return Number(id);
      };
      const deadline = Date.now() + 30_000;
      while ((await committedNow()) < 8 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 2));
      ac.abort();
      expect((await first).status).toBe('CANCELED');
      const committed = await committedNow();
      expect(committed).toBeGreaterThanOrEqual(8);
      const jobDir = join(chk, readdirSync(chk).find((d) => !d.startsWith('.'))!);
      // A retained checkpoint three or more before the committed one, whose entry count was seen.
      const restoredId = readdirSync(jobDir).filter((d) => /^chk-\d+$/.test(d)).map((d) => Number(d.slice(4)))
        .filter((id) => id <= committed - 3 && entriesAt.has(id)).sort((a, b) => b - a)[0];
      expect(restoredId, `seen: ${[...entriesAt.keys()].join(', ')}`).toBeDefined();
      const position = entriesAt.get(restoredId!)!; // records 0..position-1 were before its barrier
      const from = join(jobDir, `chk-${restoredId}`);
      const v1 = (await read(s)).filter((e) => e.k === 'v1').map((e) => e.n);
      expect(v1.length).toBeGreaterThan(position);
      // Restored into another checkpoint directory: another job, its ids counted from the restored one.
      const logs: string[] = [];
      const ac2 = new AbortController();
      const second = runJob(build('v2'), {
        workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l), signal: ac2.signal, from, allowDuplicateOutput: true,
        checkpoint: { interval: 50, dir: join(chk, 'second') },
      });
      const v2Count = async () => (await read(s)).filter((e) => e.k === 'v2').length;
      const deadline2 = Date.now() + 30_000;
      while ((await v2Count()) < v1.length - position + 200 && Date.now() < deadline2) await new Promise((res) => setTimeout(res, 50));
      ac2.abort();
      expect((await second).status).toBe('CANCELED');
      expect(logs.some((l) => l.includes('duplicates accepted with --allow-duplicate-output'))).toBe(true);
      // Every record v1 wrote after the restored checkpoint's position is there again as v2.
      const v2 = new Set((await read(s)).filter((e) => e.k === 'v2').map((e) => e.n));
      const missing = v1.filter((n) => n >= position && !v2.has(n));
      expect(missing.length, `v1 records from ${position} not written again as v2 (restored checkpoint ${restoredId}, committed ${committed})`).toBe(0);
      expect(Math.min(...v2)).toBe(position);
    } finally {
      rmSync(chk, { recursive: true, force: true });
    }
  }, 90_000);

  it('bad options are refused with the option named', () => {
    expect(() => new RedisStreamsSink({ stream: '', jobId: 'j' })).toThrow(/stream must be/);
    expect(() => new RedisStreamsSink({ stream: 's', jobId: '' })).toThrow(/jobId must be/);
    expect(() => new RedisStreamsSink({ stream: 's', jobId: 'j', maxLen: -1 })).toThrow(/maxLen must be a positive integer/);
    expect(() => new RedisStreamsSink({ stream: 's', jobId: 'j', connection: 'http://x' })).toThrow(/must start with redis:/);
  });
});
