/**
 * Exactly-once windowed totals. Reads events {"key": string, "ts": epoch ms, "value": number}
 * (out of order by up to 5 s) from a JSON-lines file, sums them per key in 60 s event-time
 * tumbling windows, keeps each key's running total across windows in keyed state, and writes
 * one line per window through the exactly-once file sink:
 *   {"key", "windowStart", "sum", "count", "total"}
 *
 * An optional third argument limits the source to that many records per second, to watch
 * checkpoints and restarts at a human pace.
 *
 *   npx tsx examples/generate-events.ts 1000000 /tmp/events.jsonl
 *   npx weir run examples/exactly-once.ts --checkpoint-dir /tmp/chk --checkpoint-interval 1s -- /tmp/events.jsonl /tmp/out
 *   # kill it at any moment, then resume; the committed output is the same as without the kill:
 *   npx weir run examples/exactly-once.ts --checkpoint-dir /tmp/chk --checkpoint-interval 1s --from latest -- /tmp/events.jsonl /tmp/out
 */
import {
  defineJob, ExactlyOnceFileSink, TumblingEventTimeWindows, ValueStateDescriptor, WatermarkStrategy, type Collector,
  type ExactlyOnceFileSinkOptions, type StreamExecutionEnvironment,
} from 'weir';

interface Event { key: string; ts: number; value: number }
interface WindowSum { key: string; windowStart: number; sum: number; count: number }
interface Output extends WindowSum { total: number }

const total = new ValueStateDescriptor<number>('total', { defaultValue: 0 });

export default defineJob((env, args) => {
  const [input, outDir, rate] = args;
  if (input === undefined || outDir === undefined) {
    throw new TypeError('usage: weir run examples/exactly-once.ts [options] -- <input.jsonl> <out-dir> [records-per-second]');
  }
  windowedTotals(env, input, outDir, { ratePerSecond: rate === undefined ? undefined : Number(rate) });
});

/** The pipeline, for jobs that want it with other sink settings (the chaos tests' compacting variant). */
export function windowedTotals(
  env: StreamExecutionEnvironment, input: string, outDir: string,
  options: { ratePerSecond?: number | undefined; sink?: ExactlyOnceFileSinkOptions } = {},
): void {
  const { ratePerSecond } = options;
  env.setJobName('exactly-once windowed totals');
  env
    .fromFile<Event>(input, { format: 'jsonl', ...(ratePerSecond !== undefined ? { ratePerSecond } : {}) })
    .uid('events')
    .map((e) => {
      // Validate every record: a bad one fails the job with a message naming the record.
      if (typeof e?.key !== 'string' || !Number.isFinite(e.ts) || !Number.isFinite(e.value)) {
        throw new TypeError('expected {"key": string, "ts": number, "value": number}');
      }
      return e;
    })
    .uid('validate')
    .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<Event>('5 s').withTimestampAssigner((e) => e.ts))
    .uid('timestamps')
    .keyBy((e) => e.key)
    .window(TumblingEventTimeWindows.of('60 s'))
    .aggregate(
      {
        createAccumulator: () => ({ sum: 0, count: 0 }),
        add: (e: Event, acc) => ({ sum: acc.sum + e.value, count: acc.count + 1 }),
        getResult: (acc) => acc,
      },
      {
        process(key: string, ctx, [acc], out: Collector<WindowSum>) {
          out.collect({ key, windowStart: ctx.window.start, sum: acc!.sum, count: acc!.count });
        },
      },
    )
    .uid('windows')
    .keyBy((w) => w.key)
    .process<Output>({
      processElement(w, ctx, out) {
        const state = ctx.getState(total);
        const t = state.value()! + w.sum;
        state.update(t);
        out.collect({ ...w, total: t });
      },
    })
    .uid('running-totals')
    .sinkTo(new ExactlyOnceFileSink<Output>(outDir, options.sink))
    .uid('sink');
}
