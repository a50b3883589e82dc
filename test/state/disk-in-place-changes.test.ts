/**
 * Built-in operators that keep lists and arrays in keyed state (window contents of process()
 * windows, sessions, count windows, interval-join buffers) change them in place, then update
 * the state: the disk backend sees a value only through update(), add() or put(), and dropped
 * a change made in place once the entry was evicted from its cache (or wrote the value as it
 * was into the next checkpoint). With a cache of a few entries and many keys, every record's
 * key evicts another's entry: the results must be those of the heap backend.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  defineJob, EventTimeSessionWindows, runJob, TumblingEventTimeWindows, WatermarkStrategy, type DataStream, type StreamExecutionEnvironment,
} from '../../src/index.ts';

const base = mkdtempSync(join(tmpdir(), 'weir-disk-in-place-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

interface Ev { key: string; ts: number; n: number }
const KEYS = 40;
const N = 4000;
/** Keys interleaved, so consecutive records never share a key; event time rises by 5 ms a record. */
const events = (env: StreamExecutionEnvironment): DataStream<Ev> => env
  .fromGenerator((i) => ({ key: `k${(i * 7) % KEYS}`, ts: i * 5, n: i }), { count: N })
  .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<Ev>().withTimestampAssigner((e) => e.ts));

const jobs: Record<string, (env: StreamExecutionEnvironment) => void> = {
  'tumbling window, process() (list contents)': (env) => void events(env).keyBy((e) => e.key).window(TumblingEventTimeWindows.of(1000))
    .process({ process: (key, ctx, els, out) => out.collect(`${key}@${ctx.window.start}:${[...els].map((e) => e.n).join(',')}`) }).collect('out'),
  'session window, process()': (env) => void events(env).keyBy((e) => e.key).window(EventTimeSessionWindows.withGap(300))
    .process({ process: (key, ctx, els, out) => out.collect(`${key}@${ctx.window.start}-${ctx.window.end}:${[...els].length}`) }).collect('out'),
  'count window, process()': (env) => void events(env).keyBy((e) => e.key).countWindow(7)
    .process({ process: (key, _ctx, els, out) => out.collect(`${key}:${[...els].map((e) => e.n).join(',')}`) }).collect('out'),
  'interval join': (env) => {
    const s = events(env);
    void s.keyBy((e) => e.key).intervalJoin(s.keyBy((e) => e.key)).between(-400, 0)
      .process({ processElement: (a, b, _ctx, out) => out.collect(`${a.n}-${b.n}`) }).collect('out');
  },
};

async function run(build: (env: StreamExecutionEnvironment) => void, backend: 'heap' | 'disk'): Promise<string[]> {
  const r = await runJob(defineJob((env) => build(env)), {
    workers: 1, parallelism: 1, stdout: () => {}, log: () => {},
    stateBackend: backend, ...(backend === 'disk' ? { stateBackendOptions: { disk: { dir: base, cacheEntries: 4 } } } : {}),
  });
  expect(r.status, r.error?.message).toBe('FINISHED');
  return r.collected<string>('out').slice().sort();
}

describe('state changed in place by built-in operators, on the disk backend with a tiny cache', () => {
  for (const [name, build] of Object.entries(jobs)) {
    it(`${name}: the results equal the heap backend's`, async () => {
      const heap = await run(build, 'heap');
      expect(heap.length).toBeGreaterThan(0);
      expect(await run(build, 'disk')).toEqual(heap);
    });
  }
});
