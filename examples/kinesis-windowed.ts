/**
 * Kinesis -> 10 s event-time windows per key -> the exactly-once file sink. Reads events
 * {"key", "ts", "value"} from a Kinesis stream (every shard, through splits and merges), with
 * event time per shard inside the source, sums them per key and window, and writes one line per
 * window: {"key", "windowStart", "sum", "count"}. Records that are not such JSON go to the
 * dead-letter directory. Killed and resumed, the committed output has every window once.
 *
 * Locally, with kinesalite (a Kinesis API server; a dev dependency of weir; it listens on every
 * interface, with no authentication: on a shared network, firewall port 4567 or use a test machine):
 *   npx kinesalite --port 4567 &
 *   npx tsx examples/kinesis-produce.ts http://127.0.0.1:4567 events 100000 &
 *   npx weir run examples/kinesis-windowed.ts --checkpoint-dir /tmp/kchk --checkpoint-interval 1s \
 *     --dead-letter-dir /tmp/kdead -- http://127.0.0.1:4567 events /tmp/kout
 *   # kill it (Ctrl-C or kill -9) and resume from the latest checkpoint:
 *   npx weir run examples/kinesis-windowed.ts --checkpoint-dir /tmp/kchk --checkpoint-interval 1s \
 *     --dead-letter-dir /tmp/kdead --from latest -- http://127.0.0.1:4567 events /tmp/kout
 * On AWS, give "aws" as the endpoint: the SDK's region and credential chain are used.
 */
import { defineJob, ExactlyOnceFileSink, KinesisSource, TumblingEventTimeWindows, WatermarkStrategy, type Collector } from 'weir';

interface Event { key: string; ts: number; value: number }
interface WindowSum { key: string; windowStart: number; sum: number; count: number }

export default defineJob((env, args) => {
  const [endpoint, stream, outDir] = args;
  if (endpoint === undefined || stream === undefined || outDir === undefined) {
    throw new TypeError('usage: weir run examples/kinesis-windowed.ts [options] -- <endpoint|aws> <stream> <out-dir>');
  }
  const local = endpoint !== 'aws';
  env.setJobName('kinesis windowed sums');
  env
    .fromSource(new KinesisSource<Event>({
      stream,
      initialPosition: 'TRIM_HORIZON',
      // Every record is checked: one that is not {key, ts, value} is malformed (a dead letter).
      decode: (data) => {
        const e = JSON.parse(new TextDecoder().decode(data)) as Event;
        if (typeof e?.key !== 'string' || !Number.isFinite(e.ts) || !Number.isFinite(e.value)) throw new TypeError('expected {"key": string, "ts": number, "value": number}');
        return e;
      },
      ...(local ? { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }), {
      malformed: 'dead-letter',
      // Per shard, inside the source; a shard with no records for 10 s does not hold time back.
      watermarks: WatermarkStrategy.forBoundedOutOfOrderness<Event>('5 s').withTimestampAssigner((e) => e.ts).withIdleness('10 s'),
    })
    .uid('events')
    .keyBy((e) => e.key)
    .window(TumblingEventTimeWindows.of('10 s'))
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
    .sinkTo(new ExactlyOnceFileSink<WindowSum>(outDir))
    .uid('sink');
});
