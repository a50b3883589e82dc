/**
 * One Nexmark query as a weir job, over the in-process generator or a JSON-lines file of the
 * same events:
 *   weir run bench/nexmark/job.ts -w 1 -- <query> <events> [<events.jsonl> | -] [collect]
 * The sink hashes the output (check.ts) and reports its partial digest on stderr. With
 * `collect` (tests), query may be `all`: every query's output is collected under its name.
 * NEXMARK_SPLIT_SIZE=<bytes|Infinity> sets the file source's splitSize (Infinity: the file read
 * by one subtask, as before block splitting), for comparing the two.
 */
import { defineJob, WatermarkStrategy, type DataStream } from 'weir';
import { partialSink } from '../workloads.ts';
import { OutputDigest, QUERY_IDS, type QueryId } from './check.ts';
import { checkEventCount, nexmarkEvent, OUT_OF_ORDERNESS_MS, SEED } from './generator.ts';
import type { Event } from './model.ts';
import { buildQuery } from './queries.ts';

export default defineJob((env, args) => {
  const collect = args[3] === 'collect';
  const q = args[0] as QueryId | 'all';
  if (!QUERY_IDS.includes(q as QueryId) && !(collect && q === 'all')) {
    throw new RangeError(`nexmark job: first argument must be one of ${QUERY_IDS.join(', ')}${collect ? ', all' : ''}, got ${String(args[0])}`);
  }
  const n = checkEventCount(Number(args[1]), 'nexmark job, second argument');
  const file = args[2] === undefined || args[2] === '-' ? undefined : args[2];
  env.setJobName(`nexmark ${q}`);
  const watermarks = WatermarkStrategy.forBoundedOutOfOrderness<Event>(OUT_OF_ORDERNESS_MS).withTimestampAssigner((e) => e.dateTime);
  const events: DataStream<Event> = file === undefined
    ? env.fromGenerator(nexmarkEvent, { count: n, seed: SEED, watermarks, name: 'nexmark generator' })
    : env.fromFile<Event>(file, { watermarks, name: 'nexmark events file', ...(process.env.NEXMARK_SPLIT_SIZE ? { splitSize: Number(process.env.NEXMARK_SPLIT_SIZE) } : {}) });
  if (collect) for (const query of q === 'all' ? QUERY_IDS : [q]) buildQuery(query, events).collect(query);
  else buildQuery(q as QueryId, events).addSink(partialSink(new OutputDigest(q as QueryId))).name(`check ${q}`);
});
