/**
 * Benchmark (c): event-time tumbling-window count per key, with bounded out-of-orderness
 * watermarks.
 *   weir run bench/jobs/window-count.ts -w 1 -- <records> <distinct keys>
 */
import { defineJob, TumblingEventTimeWindows, WatermarkStrategy, type AggregateFunction } from 'weir';
import {
  genC, OUT_OF_ORDERNESS_MS, partialSink, SEED_C, sizeFromArgs, WINDOW_MS, WindowCountAccumulator,
  type RecC, type WindowResult,
} from '../workloads.ts';

const count: AggregateFunction<RecC, number, number> = {
  createAccumulator: () => 0,
  add: (_r, acc) => acc + 1,
  getResult: (acc) => acc,
};

export default defineJob((env, args) => {
  const { n, keys } = sizeFromArgs('window-count', args);
  env.setJobName('bench window-count');
  env
    .fromGenerator(genC(keys), { count: n, seed: SEED_C })
    .name('events')
    .assignTimestampsAndWatermarks(
      WatermarkStrategy.forBoundedOutOfOrderness<RecC>(OUT_OF_ORDERNESS_MS).withTimestampAssigner((r) => r.ts),
    )
    .keyBy((r) => r.key)
    .window(TumblingEventTimeWindows.of(WINDOW_MS))
    .aggregate(count, {
      process(key: string, ctx, counts, out) {
        out.collect({ key, start: ctx.window.start, count: counts[0]! } satisfies WindowResult);
      },
    })
    .uid('window counts')
    .addSink(partialSink(new WindowCountAccumulator()))
    .name('check windows');
});
