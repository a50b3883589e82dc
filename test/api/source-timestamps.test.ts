/**
 * Timestamps a source reader gives its records are checked as a timestamp assigner's are: a
 * non-finite one fails the job naming the record. Before, with per-split watermarks and no
 * assigner, NaN put the record in a [NaN, NaN) window and Infinity made its split look idle for
 * good (found by a read-only audit).
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob, TumblingEventTimeWindows, WatermarkStrategy, type Source, type SourceSplit } from '../../src/index.ts';

interface Rec { k: string; n: number }

/** One split of five records with the given timestamps. */
function source(timestamps: number[]): Source<Rec, SourceSplit & { next: number }> {
  return {
    name: 'stamped', bounded: true, maxReaders: 1,
    planSplits: () => [{ id: 's0', next: 0 }],
    createReader: () => {
      let splits: (SourceSplit & { next: number })[] = [];
      return {
        addSplits: (s: (SourceSplit & { next: number })[]) => void (splits = s.map((x) => ({ ...x }))),
        poll(out) {
          const s = splits[0];
          if (s === undefined) return 'end';
          const o = out.forSplit(s.id);
          if (s.next < timestamps.length) {
            const n = s.next++;
            o.collect({ k: 'a', n }, timestamps[n]);
            return 'more';
          }
          out.splitFinished(s.id);
          splits = [];
          return 'end';
        },
        snapshotSplits: () => splits.map((x) => ({ ...x })),
      };
    },
  } as Source<Rec, SourceSplit & { next: number }>;
}

function run(timestamps: number[]) {
  const windows: string[] = [];
  return runJob(defineJob((env) => {
    env.fromSource(source(timestamps), { watermarks: WatermarkStrategy.forMonotonousTimestamps<Rec>() })
      .keyBy((r) => r.k)
      .window(TumblingEventTimeWindows.of('1 s'))
      .process({
        process(_k, ctx, els, out) {
          windows.push(`[${ctx.window.start},${ctx.window.end}):${els.length}`);
          out.collect(els.length);
        },
      })
      .addSink(() => {});
  }), { workers: 1, parallelism: 1, stdout: () => {}, log: () => {}, restartStrategy: { type: 'none' } }).then((r) => ({ r, windows }));
}

describe('timestamps from a source reader', () => {
  it.each([Number.NaN, Number.POSITIVE_INFINITY])('%s fails the job, naming the record and the value', async (bad) => {
    const { r } = await run([1000, bad, 1500, 2500, 3500]);
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toContain(`the source reader gave the timestamp ${bad}; expected epoch milliseconds as a finite number`);
    expect(r.error?.message).toContain('{"k":"a","n":1}');
  });

  it('finite ones go into their windows', async () => {
    const { r, windows } = await run([1000, 1200, 1500, 2500, 3500]);
    expect(r.status).toBe('FINISHED');
    expect(windows).toEqual(['[1000,2000):3', '[2000,3000):1', '[3000,4000):1']);
  });
});
