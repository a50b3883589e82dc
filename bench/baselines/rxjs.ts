/**
 * Baseline: RxJS 7. A synchronous range() source, the generator in map(), the per-record
 * functions as operators and the accumulator in subscribe(). Keyed state is a Map held by a
 * custom operator (one per subscription): 1M groupBy() groups would be far slower, and the
 * point is to compare against RxJS done well.
 */
import { Observable, filter, map, range, type OperatorFunction } from 'rxjs';
import { Rng } from 'weir';
import {
  genA, genB, genC, keepA, mapA, MapFilterAccumulator, SEED_B, SEED_C, TumblingCounter, WindowCountAccumulator,
  WordCountAccumulator, type Accumulator, type RecB, type RecC, type Result, type Size, type WindowResult,
} from '../workloads.ts';
import type { Baseline } from './baseline.ts';

function drain<T>(source: Observable<T>, acc: Accumulator<T>, extra: () => Result = () => ({})): Promise<Result> {
  return new Promise((resolve, reject) => {
    source.subscribe({
      next: (v) => acc.add(v),
      error: reject,
      complete: () => resolve({ ...acc.result(), ...extra() }),
    });
  });
}

/** Keyed running count: emits {key, count so far} per record. */
function runningCount(): OperatorFunction<RecB, RecB> {
  return (source) =>
    new Observable<RecB>((subscriber) => {
      const counts = new Map<string, number>();
      return source.subscribe({
        next(r) {
          const c = (counts.get(r.key) ?? 0) + r.count;
          counts.set(r.key, c);
          subscriber.next({ key: r.key, count: c });
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      });
    });
}

/** Tumbling event-time window count per key, fired by the watermark; flushes on completion. */
function windowCount(late: { n: number }): OperatorFunction<RecC, WindowResult> {
  return (source) =>
    new Observable<WindowResult>((subscriber) => {
      const windows = new TumblingCounter();
      const emit = (w: WindowResult) => subscriber.next(w);
      return source.subscribe({
        next: (r) => windows.add(r, emit),
        error: (e) => subscriber.error(e),
        complete: () => {
          windows.finish(emit);
          late.n = windows.late;
          subscriber.complete();
        },
      });
    });
}

export const rxjs: Baseline = {
  'map-filter'({ n }: Size) {
    return drain(range(0, n).pipe(map(genA), map(mapA), filter(keepA)), new MapFilterAccumulator());
  },

  'word-count'({ n, keys }: Size) {
    const gen = genB(keys);
    const rng = new Rng();
    return drain(range(0, n).pipe(map((i) => gen(i, rng.reseed(SEED_B, i))), runningCount()), new WordCountAccumulator());
  },

  'window-count'({ n, keys }: Size) {
    const gen = genC(keys);
    const rng = new Rng();
    const late = { n: 0 };
    return drain(
      range(0, n).pipe(map((i) => gen(i, rng.reseed(SEED_C, i))), windowCount(late)),
      new WindowCountAccumulator(),
      (): Result => (late.n > 0 ? { late: late.n } : {}),
    );
  },
};
