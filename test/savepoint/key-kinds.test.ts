/**
 * A keyed operator records the kinds of its keys (string, number, boolean, bigint, composite)
 * in every snapshot; a job restored with a key selector of another kind (numbers where the
 * state was keyed by strings) is refused, naming the operator and both kinds, instead of
 * running on with restored state that no record ever finds (the audit: every count started
 * again from 1, no error). A restore with a kind that was there goes on, also when the state
 * held keys of several kinds, and at another parallelism.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defineJob, runJob, ValueStateDescriptor, type JobResult, type RunOptions, type StreamExecutionEnvironment } from '../../src/index.ts';
import { decodeSnapshot, runThenStop, tempDir } from './helpers.ts';

const tmp = tempDir('sp-key-kinds');
afterAll(() => tmp.cleanup());

type Keys = 'string' | 'number' | 'mixed';
const KEYS = 5;
const keyOf = (keys: Keys, i: number): string | number => {
  const k = i % KEYS;
  if (keys === 'string') return `k${k}`;
  if (keys === 'number') return k;
  return k === 0 ? `k${k}` : k; // one key in five a string
};

interface Seen { key: string | number; count: number }
const countD = new ValueStateDescriptor<number>('count', { defaultValue: 0 });

function build(keys: Keys, count?: number, ratePerSecond = count === undefined ? 400 : undefined) {
  return (env: StreamExecutionEnvironment) => {
    env.fromGenerator((i) => ({ i }), { ...(count !== undefined ? { count } : {}), ...(ratePerSecond !== undefined ? { ratePerSecond } : {}) })
      .uid('src')
      .keyBy((r) => keyOf(keys, r.i))
      .process<Seen>({
        processElement(_r, ctx, out) {
          const s = ctx.getState(countD);
          const n = s.value()! + 1;
          s.update(n);
          out.collect({ key: ctx.getCurrentKey() as string | number, count: n });
        },
      })
      .uid('counts')
      .collect('seen');
  };
}

/** Runs the job until it has counted for `ms` and stops it with a savepoint. */
const stopped = (keys: Keys, options: RunOptions, ms: number): Promise<{ sp: string; result: JobResult }> =>
  runThenStop(defineJob(build(keys)), { workers: 1, ...options }, ms, tmp.fresh(`sp-${keys}`));

const resume = (keys: Keys, sp: string, parallelism: number): Promise<JobResult> =>
  runJob(defineJob(build(keys, 20_000)), { workers: 1, parallelism, from: sp, stdout: () => {}, log: () => {} });

describe('the kinds of a keyed operator\'s keys across a savepoint', () => {
  it('state keyed by strings is not restored into a job keyed by numbers: refused at once, naming both', async () => {
    const first = await stopped('string', { parallelism: 1 }, 300);
    const d = await decodeSnapshot(first.sp);
    expect(d.inline('counts').map((s) => s?.keyKinds)).toEqual([['string']]);

    const started = Date.now();
    const wrong = await resume('number', first.sp, 1);
    expect(wrong.status).toBe('FAILED');
    expect(wrong.error?.message).toMatch(/operator "[^"]+" \(uid "counts", subtask 1\/1\): its restored state is keyed by string keys, but 64 records in a row after the restore had number keys/);
    expect(wrong.error?.message).toContain('--allow-non-restored-state');
    expect(Date.now() - started, 'ended without restarts').toBeLessThan(20_000);

    // With the key selector it was taken with, at another parallelism, the counts go on.
    const right = await resume('string', first.sp, 2);
    expect(right.status, right.error?.message).toBe('FINISHED');
    const before = new Map<string | number, number>();
    for (const s of first.result.collected<Seen>('seen')) before.set(s.key, Math.max(before.get(s.key) ?? 0, s.count));
    const firstAfter = new Map<string | number, number>();
    for (const s of right.collected<Seen>('seen')) if (!firstAfter.has(s.key)) firstAfter.set(s.key, s.count);
    for (const [k, n] of before) expect(firstAfter.get(k), `key ${k}`).toBe(n + 1);
  });

  it('no checkpoint completes while the records after the restore have only other kinds: none can hold (or commit) their output, nor launder the kind', async () => {
    const first = await stopped('string', { parallelism: 1 }, 300);
    const dir = tmp.fresh('chk');
    // 20 records a second, a checkpoint every 200 ms: several are due before the 64th record.
    const wrong = await runJob(defineJob(build('number', 2_000, 20)), {
      workers: 1, parallelism: 1, from: first.sp, stdout: () => {}, log: () => {},
      checkpoint: { interval: 200, dir, retention: 'retain-on-cancel' },
    });
    expect(wrong.status).toBe('FAILED');
    expect(wrong.error?.message).toMatch(/64 records in a row after the restore had number keys/);
    const completed = readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('_metadata'));
    for (const m of completed) {
      // Any checkpoint that did complete was taken before the first record: it names the restored kind only.
      expect((await decodeSnapshot(join(dir, dirname(m)))).inline('counts').map((s) => s?.keyKinds), m).toEqual([['string']]);
    }
  }, 30_000);

  it('a bounded input that ends before 64 records, all of other kinds, ends the job the same way', async () => {
    const first = await stopped('string', { parallelism: 1 }, 300);
    const d = await decodeSnapshot(first.sp);
    const emitted = d.inline('src').flatMap((s) => s?.splits ?? []).length;
    expect(emitted).toBeGreaterThan(0);
    const r = await runJob(defineJob(build('number', first.result.collected<Seen>('seen').length + 10)), { workers: 1, parallelism: 1, from: first.sp, stdout: () => {}, log: () => {} });
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toMatch(/its restored state is keyed by string keys, but all 10 records after the restore had number keys \(then its input ended\)/);
  });

  it('an input that goes quiet after a few records of other kinds ends the job after 3 checkpoints waited (before the bound: every checkpoint declined for good, the job running on)', async () => {
    const first = await stopped('string', { parallelism: 1 }, 300);
    const quiet = defineJob((env: StreamExecutionEnvironment) => {
      const started = Date.now();
      env.fromGenerator((i) => ({ i }), { ratePerSecond: 20 }).uid('src')
        .filter(() => Date.now() - started < 300) // a few records, then none
        .keyBy((r) => r.i % KEYS)
        .process<Seen>({
          processElement(_r, ctx, out) {
            const s = ctx.getState(countD);
            s.update(s.value()! + 1);
            out.collect({ key: ctx.getCurrentKey() as number, count: s.value()! });
          },
        })
        .uid('counts')
        .collect('seen');
    });
    const logs: string[] = [];
    const r = await runJob(quiet, { workers: 1, from: first.sp, stdout: () => {}, log: (l) => logs.push(l), checkpoint: { interval: 200, dir: tmp.fresh('chk-quiet') } });
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toMatch(/its restored state is keyed by string keys, but all \d+ records after the restore had number keys \(then none came while 3 checkpoints waited for one\)/);
    // Said once in the log when the first checkpoint waited.
    expect(logs.filter((l) => /no checkpoint until a record of a restored kind comes/.test(l))).toHaveLength(1);
  }, 30_000);

  it('a keyed operator without state records no kinds: a job without it restores without --allow-non-restored-state', async () => {
    const stateless = (env: StreamExecutionEnvironment) => {
      env.fromGenerator((i) => ({ i }), { ratePerSecond: 400 }).uid('src')
        .keyBy((r) => `k${r.i % KEYS}`)
        .process<number>({ processElement(r, _ctx, out) { out.collect(r.i); } })
        .uid('stateless')
        .collect('out');
    };
    const o = await runThenStop(defineJob(stateless), { workers: 1 }, 200, tmp.fresh('sp-stateless'));
    expect((await decodeSnapshot(o.sp)).inline('stateless').filter((s) => s?.keyKinds !== undefined)).toEqual([]);
    const without = await runJob(defineJob((env: StreamExecutionEnvironment) => {
      env.fromGenerator((i) => ({ i }), { count: 10 }).uid('src').map((r) => r.i).collect('out');
    }), { workers: 1, from: o.sp, stdout: () => {}, log: () => {} });
    expect(without.status, without.error?.message).toBe('FINISHED');
  });

  it('keys set through the batch prefetch of large state are recorded too (their kinds are noted a chunk at a time)', async () => {
    // Numbers until the state is past the prefetch threshold (2^17 entries), then strings only:
    // every string key is set by the prefetch path.
    const PAST_PREFETCH = 160_000;
    const job = defineJob((env: StreamExecutionEnvironment) => {
      env.fromGenerator((i) => ({ i }), {})
        .uid('src')
        .keyBy((r) => (r.i < PAST_PREFETCH ? r.i : `s${r.i % 1000}`))
        .process<number>({
          processElement(_r, ctx, out) {
            const s = ctx.getState(countD);
            s.update(s.value()! + 1);
            if (ctx.getCurrentKey() === 's0') out.collect(s.value()!);
          },
        })
        .uid('counts')
        .collect('s0');
    });
    const { sp, result } = await runThenStop(job, { workers: 1, parallelism: 1 }, 1500, tmp.fresh('sp-prefetch'));
    expect(result.collected<number>('s0').length, 'string keys came after the prefetch threshold').toBeGreaterThan(0);
    const d = await decodeSnapshot(sp);
    expect(d.inline('counts').map((s) => [...(s?.keyKinds ?? [])].sort())).toEqual([['number', 'string']]);
  });

  it('state keyed by numbers and strings restores into a job keyed by numbers alone', async () => {
    const first = await stopped('mixed', { parallelism: 2 }, 300);
    const d = await decodeSnapshot(first.sp);
    expect(new Set(d.inline('counts').flatMap((s) => s?.keyKinds ?? []))).toEqual(new Set(['string', 'number']));
    const r = await resume('number', first.sp, 1);
    expect(r.status, r.error?.message).toBe('FINISHED');
    const last = new Map<string | number, number>();
    for (const s of first.result.collected<Seen>('seen')) last.set(s.key, Math.max(last.get(s.key) ?? 0, s.count));
    const next = r.collected<Seen>('seen').find((s) => s.key === 1)!;
    expect(next.count).toBe(last.get(1)! + 1);
  });
});
