/**
 * Benchmark (b): keyed running count (word count), emitting {key, running count} per record.
 * The count per key is a number in ValueState, as the baselines keep a number per key in a
 * Map (a reduce() over the records would keep a record object per key instead: more GC).
 *   weir run bench/jobs/word-count.ts -w 1 -- <records> <distinct keys> [uniform|zipf]
 */
import {
  defineJob, ValueStateDescriptor, type Collector, type KeyedProcessFunction, type KeyedRuntimeContext, type ValueState,
} from 'weir';
import { genBOf, partialSink, SEED_B, sizeFromArgs, WordCountAccumulator, type RecB } from '../workloads.ts';

/** One instance per subtask: the job builder creates it, and a worker hosts one subtask of the operator. */
class RunningCount implements KeyedProcessFunction<string, RecB, RecB> {
  private count!: ValueState<number>;
  open(ctx: KeyedRuntimeContext): void {
    this.count = ctx.getState(new ValueStateDescriptor<number>('count', { defaultValue: 0 }));
  }
  processElement(r: RecB, _ctx: unknown, out: Collector<RecB>): void {
    const c = this.count.value()! + r.count;
    this.count.update(c);
    out.collect({ key: r.key, count: c });
  }
}

export default defineJob((env, args) => {
  const size = sizeFromArgs('word-count', args);
  env.setJobName('bench word-count');
  env
    .fromGenerator(genBOf(size), { count: size.n, seed: SEED_B })
    .name('words')
    .keyBy((r: RecB) => r.key)
    .process(new RunningCount())
    .uid('counts')
    .addSink(partialSink(new WordCountAccumulator()))
    .name('check counts');
});
