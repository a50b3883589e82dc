/** Baseline: a plain hand-written loop, the same generators and accumulators, no framework. */
import { Rng } from 'weir';
import {
  genA, genB, genC, keepA, mapA, MapFilterAccumulator, SEED_B, SEED_C, TumblingCounter, WindowCountAccumulator,
  WordCountAccumulator, type Result, type Size, type WindowResult,
} from '../workloads.ts';
import type { Baseline } from './baseline.ts';

export const loop: Baseline = {
  'map-filter'({ n }: Size): Result {
    const acc = new MapFilterAccumulator();
    for (let i = 0; i < n; i++) {
      const m = mapA(genA(i));
      if (keepA(m)) acc.add(m);
    }
    return acc.result();
  },

  'word-count'({ n, keys }: Size): Result {
    const gen = genB(keys);
    const rng = new Rng();
    const counts = new Map<string, number>();
    const acc = new WordCountAccumulator();
    for (let i = 0; i < n; i++) {
      const r = gen(i, rng.reseed(SEED_B, i));
      const c = (counts.get(r.key) ?? 0) + r.count;
      counts.set(r.key, c);
      acc.add({ key: r.key, count: c });
    }
    return acc.result();
  },

  'window-count'({ n, keys }: Size): Result {
    const gen = genC(keys);
    const rng = new Rng();
    const windows = new TumblingCounter();
    const acc = new WindowCountAccumulator();
    const emit = (w: WindowResult) => acc.add(w);
    for (let i = 0; i < n; i++) windows.add(gen(i, rng.reseed(SEED_C, i)), emit);
    windows.finish(emit);
    return { ...acc.result(), ...(windows.late > 0 ? { late: windows.late } : {}) };
  },
};
