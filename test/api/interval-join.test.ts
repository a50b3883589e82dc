/**
 * Interval joins of two keyed streams (Flink's KeyedStream.intervalJoin) against
 * hand-computed results, at parallelism 1 and 2: a left record at t meets the right records of
 * its key at times in [t + lower, t + upper]; results carry the larger timestamp.
 *
 * As in window-joins.test.ts, both streams come from one scripted source split by type-guard
 * filters, with punctuated watermarks; a record meant to be late is sent only after the join
 * has produced a result from records that followed the watermark on both inputs.
 */
import { describe, expect, it } from 'vitest';
import { OutputTag, type DataStream, type ProcessJoinFunction, type StreamExecutionEnvironment } from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';
import { punctuated, scripted, Signal, type Step } from '../runtime/support.ts';

interface L { readonly side: 'L'; readonly k: string; readonly ts: number; readonly v: string; readonly wm?: number }
interface R { readonly side: 'R'; readonly k: string; readonly ts: number; readonly n: number; readonly wm?: number }
type Ev = L | R;

const l = (k: string, ts: number, v: string, wm?: number): Step<Ev> => ({ emit: wm === undefined ? { side: 'L', k, ts, v } : { side: 'L', k, ts, v, wm } });
const r = (k: string, ts: number, n: number, wm?: number): Step<Ev> => ({ emit: wm === undefined ? { side: 'R', k, ts, n } : { side: 'R', k, ts, n, wm } });
const waitFor = (s: Signal): Step<Ev> => ({ waitFor: s, timeoutMs: 20_000 });

function streams(env: StreamExecutionEnvironment, steps: readonly Step<Ev>[]): { left: DataStream<L>; right: DataStream<R> } {
  env.setAutoWatermarkInterval(0);
  env.setBufferTimeout(0);
  const events = env.fromSource(scripted(steps), { name: 'script' }).assignTimestampsAndWatermarks(punctuated<Ev>()).setParallelism(1);
  return {
    left: events.filter((e): e is L => e.side === 'L').setParallelism(1),
    right: events.filter((e): e is R => e.side === 'R').setParallelism(1),
  };
}

/** "<left name><right number>@<result timestamp>", checking the context's timestamps on the way. */
const pairs: ProcessJoinFunction<L, R, string> = {
  processElement(x, y, ctx) {
    expect([ctx.leftTimestamp, ctx.rightTimestamp, ctx.timestamp]).toEqual([x.ts, y.ts, Math.max(x.ts, y.ts)]);
    return [`${x.v}${y.n}@${ctx.timestamp}`];
  },
};

// Out-of-order records of keys a and b, no watermark before the end. With bounds [-2, +3]:
// p(10) meets 1(8), 2(13); not 3(14), 4(7), 6(2). q(5) meets 1(8), 4(7). r(10, key b) meets 5(12).
// s(0) meets 6(2).
const data: Step<Ev>[] = [
  l('a', 10, 'p'), r('a', 8, 1), r('a', 13, 2), r('a', 14, 3), l('a', 5, 'q'), r('a', 7, 4),
  l('b', 10, 'r'), r('b', 12, 5), r('a', 2, 6), l('a', 0, 's'),
];

describe.each([1, 2])('interval join at parallelism %i', (parallelism) => {
  it('inclusive bounds: every right record in [t - 2, t + 3] of its key, in any arrival order', async () => {
    const result = await runInline((env) => {
      const { left, right } = streams(env, data);
      left.keyBy((x) => x.k).intervalJoin(right.keyBy((y) => y.k)).between(-2, 3).process(pairs).collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted(['p1@10', 'p2@13', 'q1@8', 'q4@7', 'r5@12', 's6@2']));
  });

  it('exclusive bounds: (t - 2, t + 3) is [t - 1, t + 2]; a lower bound alone', async () => {
    // Both exclusive: p(10) [9,12] meets none; q(5) [4,7] meets 4(7); r(10) [9,12] meets 5(12); s(0) [-1,2] meets 6(2).
    // Lower only: [t - 1, t + 3]: p meets 2(13); q meets 1(8), 4(7); r meets 5; s meets 6.
    const result = await runInline((env) => {
      const { left, right } = streams(env, data);
      const lk = left.keyBy((x) => x.k);
      const rk = right.keyBy((y) => y.k);
      lk.intervalJoin(rk).between(-2, 3).lowerBoundExclusive().upperBoundExclusive().process(pairs).collect('both');
      lk.intervalJoin(rk).between('-2ms', '3ms').lowerBoundExclusive().process(pairs).collect('lower');
    }, { parallelism });
    expect(sorted(result.collected('both'))).toEqual(sorted(['q4@7', 'r5@12', 's6@2']));
    expect(sorted(result.collected('lower'))).toEqual(sorted(['p2@13', 'q1@8', 'q4@7', 'r5@12', 's6@2']));
  });

  it('late records (below the watermark) are dropped and counted; one at the watermark still meets its partners', async () => {
    // Bounds [-5, 0]: a left record at t meets right records in [t - 5, t].
    const sawQ = new Signal();
    const sawS = new Signal();
    const steps: Step<Ev>[] = [
      r('a', 10, 1),
      l('a', 12, 'p'), // meets 1(10)
      r('a', 20, 2, 15), // watermark 15
      // At the watermark, not late: meets 1(10), which a right record keeps until the watermark
      // passes 10 + 5 (Flink's cleanup timer at 15 would have dropped it already).
      l('a', 15, 'q'),
      waitFor(sawQ), // the join has had watermark 15 on both inputs
      r('a', 14, 3), // late (14 < 15): dropped; it would have met q
      l('a', 21, 'r', 30), // meets 2(20); then watermark 30
      l('a', 40, 's'), r('a', 40, 4), // both after watermark 30: s meets 4
      waitFor(sawS),
      l('a', 25, 't'), // late: dropped; it would have met 2(20)
    ];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      left.keyBy((x) => x.k).intervalJoin(right.keyBy((y) => y.k)).between(-5, 0).process(pairs)
        .map((s) => {
          if (s.startsWith('q1')) sawQ.set();
          if (s.startsWith('s4')) sawS.set();
          return s;
        })
        .collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted(['p1@12', 'q1@15', 'r2@21', 's4@40']));
    expect(result.progress.lateRecordsDropped).toBe(2);
  });

  it('late records go to the side outputs of their side instead, when given', async () => {
    const sawQ = new Signal();
    const lateLeft = new OutputTag<L>('late-left');
    const lateRight = new OutputTag<R>('late-right');
    const steps: Step<Ev>[] = [
      l('a', 3, 'p'), r('a', 5, 1, 10), // p1; watermark 10
      l('a', 11, 'q'), r('a', 11, 2), // q1; 2(11) meets p and q: p2, q2
      waitFor(sawQ), // q2 needs both q and 2, which followed the watermark on each input
      r('a', 9, 3), l('a', 4, 'x'), // both late
    ];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      const joined = left.keyBy((x) => x.k).intervalJoin(right.keyBy((y) => y.k)).between(-10, 10)
        .sideOutputLeftLateData(lateLeft).sideOutputRightLateData(lateRight)
        .process<string>({
          processElement(x, y, ctx, out) {
            if (x.v === 'q' && y.n === 2) sawQ.set();
            out.collect(`${x.v}${y.n}`);
          },
        });
      joined.collect('main');
      joined.getSideOutput(lateLeft).map((x) => x.v).collect('late-left');
      joined.getSideOutput(lateRight).map((y) => y.n).collect('late-right');
    }, { parallelism });
    expect(sorted(result.collected('main'))).toEqual(['p1', 'p2', 'q1', 'q2']);
    expect(result.collected('late-left')).toEqual(['x']);
    expect(result.collected('late-right')).toEqual([3]);
    expect(result.progress.lateRecordsDropped ?? 0).toBe(0);
  });
});

describe('interval join: checks', () => {
  it('refuses bounds in the wrong order, an empty exclusive interval, a non-keyed other stream', async () => {
    await runInline((env) => {
      const a = env.fromCollection([1], { timestamp: (x) => x }).keyBy((x) => x);
      const b = env.fromCollection([2], { timestamp: (x) => x }).keyBy((x) => x);
      expect(() => a.intervalJoin(b).between(5, -5)).toThrow(/lower bound \(5 ms\) must not be above the upper bound \(-5 ms\)/);
      expect(() => a.intervalJoin(b).between(0, 0).lowerBoundExclusive().process({ processElement: () => [] })).toThrow(/holds no time/);
      expect(() => a.intervalJoin(env.fromElements(3) as never)).toThrow(/intervalJoin\(\) takes a KeyedStream/);
      expect(() => a.intervalJoin(b).between('soon', 1)).toThrow(/intervalJoin lower bound/);
      a.intervalJoin(b).between('-1 s', '1 s').process({ processElement: (x, y) => [x + y] }).print();
    });
  });

  it('a record without an event timestamp fails the job with a message that says what to do', async () => {
    const { failureOf } = await import('./util.ts');
    const msg = await failureOf((env) => {
      const a = env.fromElements({ k: 1 }).keyBy((x) => x.k);
      const b = env.fromElements({ k: 1 }).keyBy((x) => x.k);
      a.intervalJoin(b).between(0, 1).process({ processElement: () => [1] }).print();
    });
    expect(msg).toMatch(/no event timestamp.*assignTimestampsAndWatermarks/);
  });
});
