/**
 * NATS JetStream -> per-user session windows (30 s gap) -> NATS JetStream, exactly once.
 * Reads page views {"user", "page", "ts", "ms"} (examples/produce-events.ts writes them) and
 * publishes one message per user session {"user", "start", "end", "views", "ms"}. The sink
 * publishes with a deterministic Nats-Msg-Id per record once the checkpoint completes, so the
 * stream's duplicate window hides a replay after a kill (docs/connectors.md).
 *
 *   npx tsx examples/produce-events.ts jetstream 127.0.0.1:4222 SESSIONS.out 0     # creates the output stream
 *   npx tsx examples/produce-events.ts jetstream 127.0.0.1:4222 PAGEVIEWS.in forever 2000 &
 *   npx weir run examples/jetstream-to-jetstream.ts --checkpoint-dir /tmp/chk-sessions --checkpoint-interval 1s \
 *     -- 127.0.0.1:4222 PAGEVIEWS SESSIONS SESSIONS.out sessions
 *   # kill it at any moment and run it again with --from latest: no session is published twice.
 *   # A last argument "bounded" stops at the input stream's end as it was at the first start.
 */
import { defineJob, EventTimeSessionWindows, JetStreamSink, JetStreamSource, WatermarkStrategy } from 'weir';
import { pageView, type PageView } from './produce-events.ts';

export interface Session { user: string; start: number; end: number; views: number; ms: number }

export const GAP_MS = 30_000;

/** What the job publishes for events 0..n-1: sessions per user, ordered by start. */
export function expectedSessions(n: number, seed = 1): Session[] {
  const byUser = new Map<string, PageView[]>();
  for (let i = 0; i < n; i++) {
    const e = pageView(i, seed);
    const list = byUser.get(e.user) ?? [];
    list.push(e);
    byUser.set(e.user, list);
  }
  const out: Session[] = [];
  for (const [user, views] of byUser) {
    views.sort((a, b) => a.ts - b.ts);
    let cur: Session | undefined;
    for (const v of views) {
      if (cur !== undefined && v.ts < cur.end) {
        cur.end = Math.max(cur.end, v.ts + GAP_MS);
        cur.views++;
        cur.ms += v.ms;
      } else {
        if (cur !== undefined) out.push(cur);
        cur = { user, start: v.ts, end: v.ts + GAP_MS, views: 1, ms: v.ms };
      }
    }
    if (cur !== undefined) out.push(cur);
  }
  return out;
}

export default defineJob((env, [servers, inStream, outStream, outSubject, jobId, bounded]) => {
  if (servers === undefined || inStream === undefined || outStream === undefined || outSubject === undefined || jobId === undefined) {
    throw new TypeError('usage: weir run examples/jetstream-to-jetstream.ts [options] -- <servers> <in-stream> <out-stream> <out-subject> <job-id> [bounded]');
  }
  env.setJobName('user sessions: JetStream to JetStream');
  env
    .fromSource(new JetStreamSource<PageView>({ servers, stream: inStream, ...(bounded === 'bounded' ? { stopAt: 'latest' as const } : {}) }), {
      name: `jetstream ${inStream}`,
      watermarks: WatermarkStrategy.forBoundedOutOfOrderness<PageView>('2 s').withTimestampAssigner((e) => e.ts),
      malformed: 'dead-letter',
    })
    .uid('page-views')
    .keyBy((e) => e.user)
    .window(EventTimeSessionWindows.withGap(GAP_MS))
    .aggregate(
      {
        createAccumulator: () => ({ views: 0, ms: 0 }),
        add: (e: PageView, acc) => ({ views: acc.views + 1, ms: acc.ms + e.ms }),
        getResult: (acc) => acc,
        merge: (a, b) => ({ views: a.views + b.views, ms: a.ms + b.ms }),
      },
      {
        process(user: string, ctx, [acc], out) {
          out.collect({ user, start: ctx.window.start, end: ctx.window.end, views: acc!.views, ms: acc!.ms });
        },
      },
    )
    .uid('sessions')
    .sinkTo(new JetStreamSink<Session>({ servers, stream: outStream, subject: outSubject, jobId }))
    .uid('jetstream');
});
