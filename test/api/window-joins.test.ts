/**
 * Window joins and coGroup of two streams (Flink's JoinedStreams / CoGroupedStreams) against
 * hand-computed results, at parallelism 1 and 2. Windows are [start, end) and fire when the
 * watermark reaches end - 1; every result carries end - 1.
 *
 * Both streams come from one scripted source (one record per poll) split by type-guard
 * filters, with punctuated watermarks, so what is late depends on the data alone: the join's
 * watermark is the minimum of its two inputs, and a record is sent only once the join has
 * shown (through a result the watermark fired) that both inputs carried that watermark.
 */
import { describe, expect, it } from 'vitest';
import {
  EventTimeSessionWindows, ManualClock, SlidingEventTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows, type DataStream,
  type StreamExecutionEnvironment,
} from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';
import { runInlineResult } from './util.ts';
import { punctuated, scripted, Signal, stamped, type Step } from '../runtime/support.ts';

/** A record of the left stream: key, event time, a name; wm is punctuation. */
interface L { readonly side: 'L'; readonly k: string; readonly ts: number; readonly v: string; readonly wm?: number }
/** A record of the right stream: key, event time, a number. */
interface R { readonly side: 'R'; readonly k: string; readonly ts: number; readonly n: number; readonly wm?: number }
type Ev = L | R;

const l = (k: string, ts: number, v: string, wm?: number): Step<Ev> => ({ emit: wm === undefined ? { side: 'L', k, ts, v } : { side: 'L', k, ts, v, wm } });
const r = (k: string, ts: number, n: number, wm?: number): Step<Ev> => ({ emit: wm === undefined ? { side: 'R', k, ts, n } : { side: 'R', k, ts, n, wm } });
const waitFor = (s: Signal): Step<Ev> => ({ waitFor: s, timeoutMs: 20_000 });

/** The two streams of one script: left and right records, split by type guards. */
function streams(env: StreamExecutionEnvironment, steps: readonly Step<Ev>[]): { left: DataStream<L>; right: DataStream<R> } {
  env.setAutoWatermarkInterval(0);
  env.setBufferTimeout(0);
  // The source has one reader; its chain stays at parallelism 1 so every record and watermark
  // goes out in script order, and keyBy spreads them over the join's subtasks.
  const events = env.fromSource(scripted(steps), { name: 'script' }).assignTimestampsAndWatermarks(punctuated<Ev>()).setParallelism(1);
  return {
    left: events.filter((e): e is L => e.side === 'L').setParallelism(1),
    right: events.filter((e): e is R => e.side === 'R').setParallelism(1),
  };
}

describe.each([1, 2])('window join at parallelism %i', (parallelism) => {
  it('tumbling: every pair of a key and window, out-of-order input; late records are dropped and counted', async () => {
    const fired = new Signal();
    const steps: Step<Ev>[] = [
      l('a', 3, 'a1'), r('a', 7, 1), l('b', 12, 'b1'), l('a', 8, 'a2'),
      r('a', 1, 2), // out of order: still in [0,10)
      r('b', 15, 3), r('a', 12, 4), // a's [10,20) gets no left record: no results
      l('a', 5, 'a3', 9), // watermark 9 fires [0,10): a1, a2, a3 x 1, 2
      waitFor(fired),
      r('a', 4, 5), // late: [0,10) fired at 9 (maxTimestamp 9 <= watermark 9)
      l('a', 9, 'a4'), // late too
      l('b', 19, 'b2'), r('b', 11, 6),
      l('c', 25, 'c1'), r('c', 29, 7),
      // end of input: the final watermark fires [10,20) (b) and [20,30) (c)
    ];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      const joined = left.join(right)
        .where((x) => x.k)
        .equalTo((y) => y.k)
        .window(TumblingEventTimeWindows.of(10))
        .apply((x, y, w) => `${x.v}+${y.n}@${w.start}`)
        .map((s) => {
          if (s.endsWith('@0')) fired.set();
          return s;
        });
      stamped(joined).map(({ value, ts }) => [value, ts] as const).collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted([
      ['a1+1@0', 9], ['a1+2@0', 9], ['a2+1@0', 9], ['a2+2@0', 9], ['a3+1@0', 9], ['a3+2@0', 9], // [0,10) a
      ['b1+3@10', 19], ['b1+6@10', 19], ['b2+3@10', 19], ['b2+6@10', 19], // [10,20) b
      ['c1+7@20', 29], // [20,30) c
    ]));
    expect(result.progress.lateRecordsDropped).toBe(2);
  });

  it('pairs come out in Flink\'s order: each left record in arrival order, with each right record in arrival order', async () => {
    const steps: Step<Ev>[] = [r('a', 2, 1), l('a', 9, 'x'), r('a', 0, 2), l('a', 1, 'y'), r('a', 5, 3)];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      left.join(right).where((x) => x.k).equalTo((y) => y.k).window(TumblingEventTimeWindows.of(10))
        .apply((x, y) => `${x.v}${y.n}`).collect();
    }, { parallelism });
    expect(result.collected()).toEqual(['x1', 'x2', 'x3', 'y1', 'y2', 'y3']);
  });

  it('sliding windows, flatApply: a pair meets in every window both records share; emit or return', async () => {
    // Size 10, slide 5: ts t is in the windows starting at floor(t/5)*5 and 5 earlier.
    // p(6): [0,10) [5,15); 1(8): [0,10) [5,15); 2(12): [5,15) [10,20); q(11): [5,15) [10,20).
    // [0,10): p1. [5,15): p1 p2 q1 q2. [10,20): q2. Pairs with 1 return two results, others collect one.
    const steps: Step<Ev>[] = [l('a', 6, 'p'), r('a', 12, 2), r('a', 8, 1), l('a', 11, 'q')];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      left.join(right).where((x) => x.k).equalTo((y) => y.k).window(SlidingEventTimeWindows.of(10, 5))
        .flatApply((x, y, out, w) => (y.n === 1 ? [`${x.v}${y.n}@${w.start}`, `${x.v}${y.n}!`] : out.collect(`${x.v}${y.n}@${w.start}`)))
        .collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted([
      'p1@0', 'p1!', // [0,10)
      'p1@5', 'p1!', 'p2@5', 'q1@5', 'q1!', 'q2@5', // [5,15)
      'q2@10', // [10,20)
    ]));
  });

  it('flatApply returning a string or false is refused naming it, as process and coGroup refuse it (before: one record per character, or "r is not iterable")', async () => {
    const steps: Step<Ev>[] = [l('a', 6, 'p'), r('a', 8, 1)];
    for (const ret of ['a string', false]) {
      const result = await runInlineResult((env) => {
        const { left, right } = streams(env, steps);
        left.join(right).where((x) => x.k).equalTo((y) => y.k).window(TumblingEventTimeWindows.of(10))
          .flatApply(() => ret as never).collect();
      }, { parallelism });
      expect(result.status).toBe('FAILED');
      expect(result.error?.message).toMatch(new RegExp(`flatApply returned a ${typeof ret}; return an array of outputs`));
    }
  });

  it('allowedLateness: a late record within it fires the window again with every pair; after it, it is dropped', async () => {
    // Tumbling 10, lateness 5: [0,10) fires at watermark 9 and is kept until 9 + 5 = 14.
    const fired0 = new Signal();
    const fired10 = new Signal();
    const steps: Step<Ev>[] = [
      l('a', 3, 'a1'), r('a', 5, 1, 9), // fires [0,10): a1+1
      waitFor(fired0),
      r('a', 6, 2), // late but within the lateness: [0,10) fires again, a1+1 and a1+2
      l('a', 15, 'm'), r('a', 16, 9, 19), // fires [10,20): m+9; [0,10) is dropped (14 <= 19)
      waitFor(fired10),
      r('a', 7, 3), // too late: dropped and counted
    ];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      left.join(right).where((x) => x.k).equalTo((y) => y.k).window(TumblingEventTimeWindows.of(10)).allowedLateness(5)
        .apply((x, y, w) => `${x.v}+${y.n}@${w.start}`)
        .map((s) => {
          if (s === 'a1+1@0') fired0.set();
          if (s === 'm+9@10') fired10.set();
          return s;
        })
        .collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted(['a1+1@0', 'a1+1@0', 'a1+2@0', 'm+9@10']));
    expect(result.progress.lateRecordsDropped).toBe(1);
  });
});

describe.each([1, 2])('coGroup at parallelism %i', (parallelism) => {
  it('tumbling: per key and window both lists in arrival order, one of them possibly empty; late records dropped', async () => {
    const fired = new Signal();
    const steps: Step<Ev>[] = [
      l('a', 4, 'a1'), r('a', 2, 1), l('a', 14, 'a2'), l('b', 3, 'b1'), r('a', 9, 2), r('c', 5, 3),
      l('a', 1, 'a3', 9), // out of order; watermark 9 fires [0,10) of a, b and c
      waitFor(fired),
      r('a', 8, 4), // late: dropped
      r('a', 17, 5),
      // end: [10,20) of a
    ];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      const grouped = left.coGroup(right).where((x) => x.k).equalTo((y) => y.k).window(TumblingEventTimeWindows.of(10))
        .apply<{ key: string; start: number; ls: string[]; rs: number[] }>((ls, rs, out, w) => {
          const key = ls[0]?.k ?? rs[0]!.k;
          if (key === 'a' && w.start === 0) fired.set();
          out.collect({ key, start: w.start, ls: ls.map((x) => x.v), rs: rs.map((y) => y.n) });
        });
      stamped(grouped).map(({ value, ts }) => ({ ...value, ts })).collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted([
      { key: 'a', start: 0, ls: ['a1', 'a3'], rs: [1, 2], ts: 9 },
      { key: 'b', start: 0, ls: ['b1'], rs: [], ts: 9 },
      { key: 'c', start: 0, ls: [], rs: [3], ts: 9 },
      { key: 'a', start: 10, ls: ['a2'], rs: [5], ts: 19 },
    ]));
    expect(result.progress.lateRecordsDropped).toBe(1);
  });

  it('session windows merge across both inputs; a returned iterable is emitted', async () => {
    // Gap 5, key a, arrival order: x(1) -> [1,6); 2(12) -> [12,17); y(20) -> [20,25);
    // 1(4) -> [4,9) merges with [1,6) into [1,9); 3(8) -> [8,13) bridges [1,9) and [12,17): [1,17).
    // Merged lists concatenate in session order: left [x], right [1] + [2], then 3.
    const steps: Step<Ev>[] = [l('a', 1, 'x'), r('a', 12, 2), l('a', 20, 'y'), r('a', 4, 1), r('a', 8, 3)];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      left.coGroup(right).where((x) => x.k).equalTo((y) => y.k).window(EventTimeSessionWindows.withGap(5))
        .apply((ls, rs, _out, w) => [{ start: w.start, end: w.end, ls: ls.map((x) => x.v), rs: rs.map((y) => y.n) }])
        .collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted([
      { start: 1, end: 17, ls: ['x'], rs: [1, 2, 3] },
      { start: 20, end: 25, ls: ['y'], rs: [] },
    ]));
  });
});

describe('processing-time windows', () => {
  it('a coGroup in processing time: windows by the clock, open ones fire at the end of input', async () => {
    // The clock stays at 5: every record is in [0,10) whatever its event time, fired at the end.
    const clock = new ManualClock(5);
    const steps: Step<Ev>[] = [l('a', 100, 'x'), r('a', 3, 1), r('b', 50, 2), l('a', 7, 'y')];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      left.coGroup(right).where((x) => x.k).equalTo((y) => y.k).window(TumblingProcessingTimeWindows.of(10))
        .apply((ls, rs, _out, w) => [`${w.start}-${w.end}:${ls.map((x) => x.v).join('')}:${rs.map((y) => y.n).join('')}`])
        .collect();
    }, { clock, parallelism: 2 });
    expect(sorted(result.collected())).toEqual(sorted(['0-10:xy:1', '0-10::2']));
  });
});

describe('window join: keys and checks', () => {
  it('keys of different shapes on the two sides meet when equal (number key from a string field)', async () => {
    const steps: Step<Ev>[] = [l('7', 1, 'p'), r('x', 2, 7), r('y', 3, 8)];
    const result = await runInline((env) => {
      const { left, right } = streams(env, steps);
      left.join(right).where((x) => Number(x.k)).equalTo((y) => y.n).window(TumblingEventTimeWindows.of(10))
        .apply((x, y) => `${x.v}${y.k}`).collect();
    }, { parallelism: 2 });
    expect(result.collected()).toEqual(['px']);
  });

  it('refuses what is not a stream, a key selector or an assigner, naming the call', async () => {
    await runInline((env) => {
      const a = env.fromElements(1, 2);
      const b = env.fromElements('x');
      expect(() => a.join(42 as never)).toThrow(/join\(\) takes a DataStream/);
      expect(() => a.coGroup(b).where('k' as never)).toThrow(/coGroup\(\)\.where needs a function/);
      expect(() => a.join(b).where((x) => x).equalTo(null as never)).toThrow(/join\(\)\.equalTo needs a function/);
      expect(() => a.join(b).where((x) => x).equalTo(() => 1).window({} as never)).toThrow(/join\(\)\.window\(\) needs a window assigner/);
      a.print();
    });
  });
});
