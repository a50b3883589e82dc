/**
 * The soak job (bench/soak.ts, issue 11 point 5): a steady stream over millions of keys with
 * non-uniform parallelism — source p=1, keyed p=3, sink p=2 — run for many minutes with
 * checkpoints, so the history of checkpoint durations and sizes shows whether they grow.
 *   weir run bench/jobs/soak.ts -- <ratePerSecond> <keys> <mode> [<ttlSeconds>]
 *
 * Every record updates a per-key running count in keyed state; 1 % of records are written to the
 * sink (a count per subtask, so the sink costs nothing but its place in the graph). Modes:
 * - `steady`: key = i mod <keys>: the key space fills (at the rate) and then stays the same size;
 * - `growing`: key = i: a new key every record, for ever; with <ttlSeconds> the count has that TTL,
 *   so state should stay at about rate × TTL keys instead of growing with the job's age.
 */
import { defineJob, ValueStateDescriptor, type Collector, type KeyedContext, type KeyedProcessFunction, type KeyedRuntimeContext, type ValueState } from 'weir';

interface Rec { readonly key: number; readonly i: number }

class RunningCount implements KeyedProcessFunction<number, Rec, number> {
  private count!: ValueState<number>;
  constructor(private readonly ttlMs: number | undefined) {}
  open(ctx: KeyedRuntimeContext): void {
    const ttl = this.ttlMs === undefined ? {} : { ttl: { ttlMs: this.ttlMs } };
    this.count = ctx.getState(new ValueStateDescriptor<number>('count', { defaultValue: 0, ...ttl }));
  }
  processElement(r: Rec, _ctx: KeyedContext<number>, out: Collector<number>): void {
    const n = this.count.value()! + 1;
    this.count.update(n);
    if (r.i % 100 === 0) out.collect(n);
  }
}

export default defineJob((env, args) => {
  const [rateArg, keysArg, modeArg = 'steady', ttlArg] = args;
  const rate = Number(rateArg);
  const keys = Number(keysArg);
  if (!(rate > 0) || !(keys > 0) || (modeArg !== 'steady' && modeArg !== 'growing')) {
    throw new TypeError('usage: soak.ts <ratePerSecond> <keys> steady|growing [<ttlSeconds>]');
  }
  const ttlMs = ttlArg === undefined ? undefined : Number(ttlArg) * 1000;
  const growing = modeArg === 'growing';
  env.setJobName(`soak ${modeArg}${ttlMs === undefined ? '' : ` ttl ${ttlArg}s`}`);
  env
    .fromGenerator<Rec>((i) => ({ key: growing ? i : i % keys, i }), { ratePerSecond: rate })
    .uid('records')
    .setParallelism(1)
    .keyBy((r) => r.key)
    .process(new RunningCount(ttlMs))
    .uid('counts')
    .setParallelism(3)
    .addSink(() => {})
    .uid('sink')
    .setParallelism(2);
});
