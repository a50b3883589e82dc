/**
 * Split idleness (withIdleness on a source's per-split watermarks) counts only time the reader
 * was polled or waited for data. A stall downstream (here a map that spins 400 ms twice, in the
 * source's thread) held the source back; its splits, records still waiting, were marked idle,
 * event time moved on with the other source, and 22,832 of its records were dropped as late
 * (found by a read-only audit; Flink fixed the same in 1.20, FLINK-35886).
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob, TumblingEventTimeWindows, WatermarkStrategy } from '../../src/index.ts';
import { ScriptedSource, type Step } from '../helpers/scripted-source.ts';

interface Ev { k: string; ts: number; s: 'slow' | 'fast' }

describe('source idleness', () => {
  it('a reader whose splits all go idle stays at the slower split\'s watermark: the slower one\'s next records are on time (before: it jumped to the faster split\'s, 10,000, and 1,500, 2,500 and 3,500 were dropped as late; found by a read-only audit)', async () => {
    const steps: Step[] = [
      { at: 0, split: 'A', ts: 10_000 },
      { at: 0, split: 'B', ts: 1_000 },
      // Both silent from 0 to 600 ms (idle after 100 ms); then B goes on, in order, above its own watermark.
      { at: 600, split: 'B', ts: 1_500 },
      { at: 600, split: 'B', ts: 2_500 },
      { at: 650, split: 'B', ts: 3_500 },
    ];
    const r = await runJob(defineJob((env) => {
      env.setAutoWatermarkInterval(20);
      const strategy = WatermarkStrategy.forMonotonousTimestamps<{ ts: number }>().withTimestampAssigner((e) => e.ts).withIdleness('100 ms');
      env.fromSource(new ScriptedSource(['A', 'B'], steps, 700), { watermarks: strategy })
        .keyBy(() => 'k')
        .window(TumblingEventTimeWindows.of('1 s'))
        .aggregate({ createAccumulator: () => [] as number[], add: (e: { ts: number }, a: number[]) => [...a, e.ts], getResult: (a: number[]) => a, merge: (a: number[], b: number[]) => [...a, ...b] })
        .collect('out');
    }), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {} });
    expect(r.status, r.error?.message).toBe('FINISHED');
    expect(r.progress.lateRecordsDropped ?? 0).toBe(0);
    expect(r.collected<number[]>('out').flat().sort((a, b) => a - b)).toEqual([1000, 1500, 2500, 3500, 10000]);
  }, 20_000);

  it('a source held back by a stall downstream is not idle: no record of it is late', async () => {
    const N = 30_000;
    const r = await runJob(defineJob((env) => {
      env.setAutoWatermarkInterval(20);
      const strategy = WatermarkStrategy.forMonotonousTimestamps<Ev>().withTimestampAssigner((e) => e.ts).withIdleness('100 ms');
      // Event time: 1 ms per record on one source, 100 ms per record on the other.
      const slow = env.fromGenerator<Ev>((i) => ({ k: `k${i % 4}`, ts: i, s: 'slow' }), { count: N, watermarks: strategy, name: 'slow' });
      const fast = env.fromGenerator<Ev>((i) => ({ k: `k${i % 4}`, ts: i * 100, s: 'fast' }), { count: N, watermarks: strategy, name: 'fast' });
      slow.union(fast)
        .keyBy((e) => e.k)
        .map((e) => {
          if (e.s === 'slow' && e.ts % 10_000 === 5000) {
            const t = performance.now();
            while (performance.now() - t < 400) { /* a stall */ }
          }
          return e;
        })
        .keyBy((e) => e.k)
        .window(TumblingEventTimeWindows.of('1 s'))
        .aggregate({ createAccumulator: () => 0, add: (_e: Ev, c: number) => c + 1, getResult: (c: number) => c, merge: (x: number, y: number) => x + y })
        .collect('out');
    }), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, credits: 2 });
    expect(r.status).toBe('FINISHED');
    expect(r.progress.lateRecordsDropped ?? 0).toBe(0);
    expect(r.collected<number>('out').reduce((a, b) => a + b, 0)).toBe(2 * N);
  }, 30_000);
});
