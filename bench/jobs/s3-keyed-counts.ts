/**
 * Bench job for checkpoints on S3 (bench/s3-checkpoints.ts): a running count per key in
 * ValueState over `keys` keys, `count` records at `rate` records/s, so that several periodic
 * checkpoints land while it runs. Emits nothing.
 */
import { defineJob, ValueStateDescriptor } from 'weir';

const seen = new ValueStateDescriptor<number>('seen', { defaultValue: 0 });

export default defineJob((env, args) => {
  const [keys, count, rate] = args.map(Number);
  env
    .fromGenerator((i) => ({ key: `k${i % keys!}` }), { count: count!, ratePerSecond: rate!, seed: 1 })
    .keyBy((r) => r.key)
    .process<never>({
      processElement(_r, ctx) {
        const s = ctx.getState(seen);
        s.update(s.value()! + 1);
      },
    })
    .collect('none');
});
