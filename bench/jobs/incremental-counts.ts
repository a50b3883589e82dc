/**
 * Incremental checkpoint benchmark job: keyed state of N keys, then a steady 1 % of them
 * changed per second.
 *   runJob('bench/jobs/incremental-counts.ts', {args: [<keys>, <changes per second>, <seconds>]})
 * One source fills every key 0 .. N-1 once (as fast as it can); a second, rate-limited source
 * changes keys spread over the key space (a multiplicative hash of its index). The keyed
 * function counts per key in a ValueState; nothing is emitted.
 */
import { defineJob, ValueStateDescriptor, type Collector, type KeyedContext, type KeyedProcessFunction } from 'weir';

const count = new ValueStateDescriptor<number>('count', { defaultValue: 0 });

class Count implements KeyedProcessFunction<number, number, never> {
  processElement(_k: number, ctx: KeyedContext<number>, _out: Collector<never>): void {
    const s = ctx.getState(count);
    s.update(s.value()! + 1);
  }
}

export default defineJob((env, args) => {
  const keys = Number(args[0] ?? 1_000_000);
  const perSecond = Number(args[1] ?? keys / 100);
  const seconds = Number(args[2] ?? 15);
  env.setJobName('incremental counts');
  const fill = env.fromGenerator<number>((i) => i, { count: keys }).uid('fill');
  const changes = env.fromGenerator<number>((i) => Number((BigInt(i) * 2654435761n) % BigInt(keys)), { count: perSecond * seconds, ratePerSecond: perSecond }).uid('changes');
  fill.union(changes).keyBy((k) => k).process(new Count()).uid('counts').print();
});
