/**
 * Generated events -> per-key 1,000 ms event-time windows (count, sum) -> an exactly-once sink:
 * PostgreSQL (idempotent or two-phase), Redis Streams or NATS JetStream. Event i has key
 * `k<i mod 37>`, value i mod 101 and event time i ms, so the windows are the same in every run.
 *
 *   args: <sink> <target> <jobId> <events> [records-per-second] [source-parallelism]
 *     sink     postgres | postgres-2pc | redis | jetstream
 *     target   postgres: <connection URL>#<table>   (table: k text, window_start bigint, cnt bigint, total bigint)
 *              redis: <stream key>                  jetstream: <stream name> (subject <stream>.out)
 *     source-parallelism  fixes the generator's parallelism (one lane per subtask) whatever -p is,
 *              so a rescale changes only the windows and the sink
 *
 *   psql -h 127.0.0.1 -U postgres test -c 'CREATE TABLE windows (k text, window_start bigint, cnt bigint, total bigint)'
 *   npx weir run examples/windowed-to-sinks.ts --checkpoint-dir /tmp/chk --checkpoint-interval 1s \
 *     -- postgres 'postgres://postgres@127.0.0.1:5432/test#windows' demo 1000000 20000
 *   # kill it at any moment and run it again with --from latest: the table ends the same as without the kill.
 */
import { defineJob, JetStreamSink, PostgresSink, RedisStreamsSink, TumblingEventTimeWindows, WatermarkStrategy, type TwoPhaseCommitSink } from 'weir';

export interface Event { k: string; v: number; ts: number }
export interface WindowRow { k: string; window_start: number; cnt: number; total: number }

export const WINDOW_MS = 1000;
export const event = (i: number): Event => ({ k: `k${i % 37}`, v: i % 101, ts: i });

/** The job's complete output for `events` events, computed directly (what any correct run commits). */
export function expectedRows(events: number): WindowRow[] {
  const m = new Map<string, WindowRow>();
  for (let i = 0; i < events; i++) {
    const e = event(i);
    const start = Math.floor(e.ts / WINDOW_MS) * WINDOW_MS;
    const id = `${e.k}@${start}`;
    const r = m.get(id);
    if (r === undefined) m.set(id, { k: e.k, window_start: start, cnt: 1, total: e.v });
    else {
      r.cnt++;
      r.total += e.v;
    }
  }
  return [...m.values()];
}

function sinkFor(kind: string, target: string, jobId: string): TwoPhaseCommitSink<WindowRow, unknown> {
  switch (kind) {
    case 'postgres':
    case 'postgres-2pc': {
      const at = target.lastIndexOf('#');
      if (at < 0) throw new TypeError('postgres target: <connection URL>#<table>');
      return new PostgresSink<WindowRow>({
        connection: target.slice(0, at), table: target.slice(at + 1), columns: ['k', 'window_start', 'cnt', 'total'], jobId,
        mode: kind === 'postgres' ? 'idempotent' : 'two-phase',
      }) as TwoPhaseCommitSink<WindowRow, unknown>;
    }
    case 'redis':
      return new RedisStreamsSink<WindowRow>({ stream: target, jobId }) as TwoPhaseCommitSink<WindowRow, unknown>;
    case 'jetstream':
      return new JetStreamSink<WindowRow>({ stream: target, subject: `${target}.out`, jobId }) as TwoPhaseCommitSink<WindowRow, unknown>;
    default:
      throw new TypeError(`sink must be postgres, postgres-2pc, redis or jetstream, got ${JSON.stringify(kind)}`);
  }
}

export default defineJob((env, [kind, target, jobId, eventsArg, rateArg, sourceParallelismArg]) => {
  if (kind === undefined || target === undefined || jobId === undefined || eventsArg === undefined) {
    throw new TypeError('usage: weir run examples/windowed-to-sinks.ts [options] -- <sink> <target> <jobId> <events> [records-per-second]');
  }
  const rate = rateArg === undefined || rateArg === '0' ? undefined : Number(rateArg);
  const sourceP = sourceParallelismArg === undefined ? undefined : Number(sourceParallelismArg);
  env.setJobName(`windowed totals to ${kind}`);
  // Event time per generator lane, inside the source: a subtask that reads several lanes (after
  // a rescale) interleaves them, and with one watermark after the source their records would be late.
  const watermarks = WatermarkStrategy.forMonotonousTimestamps<Event>().withTimestampAssigner((e) => e.ts);
  let events = env
    .fromGenerator((i) => event(i), { count: Number(eventsArg), watermarks, ...(rate !== undefined ? { ratePerSecond: rate } : {}), ...(sourceP !== undefined ? { lanes: sourceP } : {}) })
    .uid('events');
  if (sourceP !== undefined) events = events.setParallelism(sourceP);
  events
    .keyBy((e) => e.k)
    .window(TumblingEventTimeWindows.of(WINDOW_MS))
    .aggregate(
      {
        createAccumulator: () => ({ cnt: 0, total: 0 }),
        add: (e: Event, acc) => ({ cnt: acc.cnt + 1, total: acc.total + e.v }),
        getResult: (acc) => acc,
      },
      {
        process(k: string, ctx, [acc], out) {
          out.collect({ k, window_start: ctx.window.start, cnt: acc!.cnt, total: acc!.total });
        },
      },
    )
    .uid('windows')
    .sinkTo(sinkFor(kind, target, jobId))
    .uid('sink');
});
