/**
 * Redis Streams -> 10 s event-time windows per page -> PostgreSQL, exactly once.
 * Reads page views {"user", "page", "ts", "ms"} (examples/produce-events.ts writes them), counts
 * views and sums time on page per page and 10 s window, and upserts one row per page and window
 * (the idempotent PostgreSQL sink: rows and the sink's progress commit in one transaction when a
 * checkpoint completes, so a kill and `--from latest` never writes a window twice).
 *
 *   psql -h 127.0.0.1 -U postgres test -c 'CREATE TABLE page_windows (page text, window_start bigint, views bigint, total_ms bigint, PRIMARY KEY (page, window_start))'
 *   npx tsx examples/produce-events.ts redis redis://127.0.0.1:6379 pageviews forever 2000 &
 *   npx weir run examples/redis-to-postgres.ts --checkpoint-dir /tmp/chk-pages --checkpoint-interval 1s \
 *     -- redis://127.0.0.1:6379 pageviews 'postgres://postgres@127.0.0.1:5432/test#page_windows' pages
 *   # kill it at any moment and run it again with --from latest: every window is in the table once.
 *   # A last argument "bounded" stops at the stream's end as it was at the first start.
 */
import { defineJob, PostgresSink, RedisStreamsSource, TumblingEventTimeWindows, WatermarkStrategy } from 'weir';
import { pageView, type PageView } from './produce-events.ts';

export interface PageWindow { page: string; window_start: number; views: number; total_ms: number }

export const WINDOW_MS = 10_000;

/** What the job writes for events 0..n-1 (any correct run, killed or not). */
export function expectedPageWindows(n: number, seed = 1): PageWindow[] {
  const m = new Map<string, PageWindow>();
  for (let i = 0; i < n; i++) {
    const e = pageView(i, seed);
    const start = Math.floor(e.ts / WINDOW_MS) * WINDOW_MS;
    const id = `${e.page}@${start}`;
    const w = m.get(id) ?? { page: e.page, window_start: start, views: 0, total_ms: 0 };
    w.views++;
    w.total_ms += e.ms;
    m.set(id, w);
  }
  return [...m.values()];
}

export default defineJob((env, [redisUrl, stream, target, jobId, bounded]) => {
  if (redisUrl === undefined || stream === undefined || target === undefined || jobId === undefined) {
    throw new TypeError('usage: weir run examples/redis-to-postgres.ts [options] -- <redis-url> <stream> <postgres-url>#<table> <job-id> [bounded]');
  }
  const at = target.lastIndexOf('#');
  if (at < 0) throw new TypeError(`postgres target must be <connection URL>#<table>, got ${JSON.stringify(target)}`);
  env.setJobName('page windows: Redis Streams to PostgreSQL');
  env
    .fromSource(new RedisStreamsSource<PageView>({ url: redisUrl, streams: [stream], ...(bounded === 'bounded' ? { stopAt: 'latest' as const } : {}) }), {
      name: `redis ${stream}`,
      // Event time per split inside the source; events are up to 2 s out of order.
      watermarks: WatermarkStrategy.forBoundedOutOfOrderness<PageView>('2 s').withTimestampAssigner((e) => e.ts),
      malformed: 'dead-letter',
    })
    .uid('page-views')
    .keyBy((e) => e.page)
    .window(TumblingEventTimeWindows.of(WINDOW_MS))
    .aggregate(
      {
        createAccumulator: () => ({ views: 0, ms: 0 }),
        add: (e: PageView, acc) => ({ views: acc.views + 1, ms: acc.ms + e.ms }),
        getResult: (acc) => acc,
      },
      {
        process(page: string, ctx, [acc], out) {
          out.collect({ page, window_start: ctx.window.start, views: acc!.views, total_ms: acc!.ms });
        },
      },
    )
    .uid('page-windows')
    .sinkTo(new PostgresSink<PageWindow>({
      connection: target.slice(0, at), table: target.slice(at + 1), jobId,
      columns: ['page', 'window_start', 'views', 'total_ms'], keyColumns: ['page', 'window_start'],
    }))
    .uid('postgres');
});
