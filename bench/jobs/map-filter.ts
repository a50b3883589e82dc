/**
 * Benchmark (a): map then filter over generated records, counting the survivors.
 *   weir run bench/jobs/map-filter.ts -w 1 -- <records>
 */
import { defineJob } from 'weir';
import { genA, keepA, mapA, MapFilterAccumulator, partialSink, SEED_A, sizeFromArgs } from '../workloads.ts';

export default defineJob((env, args) => {
  const { n } = sizeFromArgs('map-filter', args);
  env.setJobName('bench map-filter');
  env
    .fromGenerator(genA, { count: n, seed: SEED_A })
    .name('records')
    .map(mapA)
    .filter(keepA)
    .addSink(partialSink(new MapFilterAccumulator()))
    .name('count survivors');
});
