/**
 * Window semantics against hand-computed results (Flink's WindowOperator with the default
 * event-time and processing-time triggers). Every expected value is written out literally,
 * with the derivation next to it. Windows are [start, end); a window fires when the
 * watermark reaches end - 1 (its maxTimestamp) and its result carries timestamp end - 1.
 */
import { describe, expect, it } from 'vitest';
import {
  EventTimeSessionWindows, MAX_WATERMARK, ManualClock, OutputTag, ProcessingTimeSessionWindows,
  SlidingEventTimeWindows, SlidingProcessingTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows,
  WatermarkStrategy, type AggregateFunction, type ProcessWindowFunction,
} from '../../src/index.ts';
import { runInline } from '../helpers/run.ts';
import { byJson, punctuated, scripted, stamped, type Step } from './support.ts';

/** An input record: key, value, event time and optional punctuation watermark. */
interface E {
  readonly k: string;
  readonly v: number;
  readonly ts: number;
  readonly wm?: number;
}

const e = (k: string, ts: number, v: number, wm?: number): E => (wm === undefined ? { k, ts, v } : { k, ts, v, wm });
const sumE = (a: E, b: E): E => ({ k: a.k, ts: Math.max(a.ts, b.ts), v: a.v + b.v });

/** Window result: key, bounds and a value. */
interface W<R> {
  key: string;
  start: number;
  end: number;
  r: R;
}

/** Wraps a pre-aggregated result with its key and window. */
function describeWindow<R>(): ProcessWindowFunction<R, W<R>, string> {
  return {
    process(key, ctx, elements, out) {
      expect(elements.length).toBe(1); // reduce/aggregate hand the window function exactly one value
      out.collect({ key, start: ctx.window.start, end: ctx.window.end, r: elements[0]! });
    },
  };
}

/** Sum and count; merge makes it usable with session windows. */
const sumCount: AggregateFunction<E, { sum: number; count: number }, { sum: number; count: number }> = {
  createAccumulator: () => ({ sum: 0, count: 0 }),
  add: (x, acc) => ({ sum: acc.sum + x.v, count: acc.count + 1 }),
  getResult: (acc) => ({ sum: acc.sum, count: acc.count }),
  merge: (a, b) => ({ sum: a.sum + b.sum, count: a.count + b.count }),
};

describe('tumbling event-time windows', () => {
  it('fractional timestamps and watermarks are whole milliseconds (floored): a record at 9.8 behind a watermark of 9.7 is late, on the side output (before: in no window and not counted, lost); a window size of 2.5 is 3', async () => {
    const data = [e('a', 1, 1), e('a', 11.7, 10), e('a', 9.8, 100), e('a', 12.2, 1000)];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const tag = new OutputTag<E>('late');
      const w = env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forGenerator<E>(() => {
          let max = Number.NEGATIVE_INFINITY;
          return { onEvent(x, _t, out) { max = Math.max(max, x.ts); out.emitWatermark(max - 2); }, onPeriodicEmit() {} };
        }).withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).sideOutputLateData(tag)
        .reduce(sumE);
      w.process({ processElement: (x, ctx, out) => out.collect(`${x.v}@${ctx.timestamp}`) }).collect('out');
      w.getSideOutput(tag).process({ processElement: (x, ctx, out) => out.collect(`${x.v}@${ctx.timestamp}`) }).collect('late');
    });
    expect(r.collected('out')).toEqual(['1@9', '1010@19']);
    expect(r.collected('late')).toEqual(['100@9']);
    expect((TumblingEventTimeWindows.of(2.5) as { size: number }).size).toBe(3);
  });

  it('reduce: out-of-order records within the bound are all counted; results carry end - 1', async () => {
    // Bound 5: the watermark is at most (max ts seen) - 6, so no record below is late,
    // whenever periodic emission happens to run.
    const data = [
      e('a', 1, 1), e('a', 7, 2), e('a', 3, 4), e('b', 5, 100), e('a', 12, 8), e('a', 9, 16), e('b', 15, 200),
      e('a', 10, 32), e('b', 14, 300), e('a', 25, 64), e('a', 20, 128),
    ];
    const r = await runInline((env) => {
      const s = env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(5).withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.k)
        .window(TumblingEventTimeWindows.of(10))
        .reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.k, value.v, ts]).collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([
      ['a', 23, 9], // [0,10): ts 1,7,3,9 -> 1+2+4+16
      ['a', 40, 19], // [10,20): ts 12,10 -> 8+32
      ['a', 192, 29], // [20,30): ts 25,20 -> 64+128
      ['b', 100, 9], // [0,10): ts 5
      ['b', 500, 19], // [10,20): ts 15,14 -> 200+300
    ]));
  });

  it('aggregate + window function: each window fires at the first watermark >= end - 1', async () => {
    // Punctuated: wm 8 fires nothing ([0,10) needs 9); wm 9 fires [0,10) of a and b;
    // wm 25 fires [10,20); [20,30) only fires at the final MAX watermark.
    const data = [
      e('a', 2, 10), e('a', 8, 20), e('b', 3, 100), e('a', 5, 30, 8), e('a', 9, 40, 9),
      e('a', 15, 1), e('a', 11, 2, 25), e('a', 27, 7),
    ];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      env.fromCollection(data)
        .assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k)
        .window(TumblingEventTimeWindows.of(10))
        .aggregate(sumCount, {
          process(key, ctx, [acc], out) {
            out.collect({ key, start: ctx.window.start, avg: acc!.sum / acc!.count, firedAt: ctx.currentWatermark() });
          },
        } satisfies ProcessWindowFunction<{ sum: number; count: number }, unknown, string>)
        .collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([
      { key: 'a', start: 0, avg: 25, firedAt: 9 }, // (10+20+30+40)/4
      { key: 'b', start: 0, avg: 100, firedAt: 9 },
      { key: 'a', start: 10, avg: 1.5, firedAt: 25 }, // (1+2)/2
      { key: 'a', start: 20, avg: 7, firedAt: MAX_WATERMARK }, // end of input
    ]));
  });

  it('process: sees the key (with its type), window bounds with an offset, negative times, all elements in arrival order', async () => {
    interface N { id: number; ts: number; v: string }
    // Size 10, offset 3: windows [..., -17,-7), [-7,3), [3,13), [13,23), ...
    const data: N[] = [
      { id: 1, ts: 2, v: 'p' }, { id: 1, ts: 3, v: 'q' }, { id: 2, ts: -4, v: 'r' }, { id: 1, ts: 12, v: 's' },
      { id: 1, ts: -8, v: 't' }, { id: 1, ts: 13, v: 'u' }, { id: 2, ts: -7, v: 'w' }, { id: 1, ts: 5, v: 'x' },
    ];
    const r = await runInline((env) => {
      env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.noWatermarks<N>().withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.id)
        .window(TumblingEventTimeWindows.of(10, 3))
        .process<unknown>({
          process(key, ctx, elements, out) {
            out.collect({ key, keyType: typeof key, start: ctx.window.start, end: ctx.window.end, vs: elements.map((x) => x.v).join('') });
          },
        })
        .collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([
      { key: 1, keyType: 'number', start: -17, end: -7, vs: 't' }, // ts -8
      { key: 1, keyType: 'number', start: -7, end: 3, vs: 'p' }, // ts 2
      { key: 1, keyType: 'number', start: 3, end: 13, vs: 'qsx' }, // ts 3, 12, 5 in arrival order
      { key: 1, keyType: 'number', start: 13, end: 23, vs: 'u' }, // ts 13
      { key: 2, keyType: 'number', start: -7, end: 3, vs: 'rw' }, // ts -4, -7
    ]));
  });

  it('reduce + window function: the function gets the single reduced value and the window', async () => {
    const data = [e('a', 1, 1), e('a', 4, 2), e('b', 4, 5), e('a', 11, 4), e('b', 19, 6), e('b', 20, 7)];
    const r = await runInline((env) => {
      env.fromCollection(data, { timestamp: (x) => x.ts })
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<E>())
        .keyBy((x) => x.k)
        .window(TumblingEventTimeWindows.of(10))
        .reduce(sumE, describeWindow<E>())
        .map((w) => [w.key, w.start, w.end, w.r.v])
        .collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([
      ['a', 0, 10, 3], // 1+2
      ['a', 10, 20, 4],
      ['b', 0, 10, 5],
      ['b', 10, 20, 6],
      ['b', 20, 30, 7],
    ]));
  });

  it('a window function can emit to a side output; those records also carry end - 1', async () => {
    const counts = new OutputTag<[string, number]>('counts');
    const data = [e('a', 1, 1), e('a', 2, 2), e('b', 13, 3)];
    const r = await runInline((env) => {
      const s = env.fromCollection(data, { timestamp: (x) => x.ts })
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10))
        .process<number>({
          process(key, ctx, elements, out) {
            ctx.output(counts, [key, elements.length]);
            out.collect(elements.reduce((n, x) => n + x.v, 0));
          },
        });
      stamped(s).collect('main');
      stamped(s.getSideOutput(counts)).collect('side');
    });
    expect(byJson(r.collected('main'))).toEqual(byJson([{ value: 3, ts: 9 }, { value: 3, ts: 19 }]));
    expect(byJson(r.collected('side'))).toEqual(byJson([{ value: ['a', 2], ts: 9 }, { value: ['b', 1], ts: 19 }]));
  });

  it('event-time window without event timestamps fails with a clear message', async () => {
    await expect(runInline((env) => {
      env.fromElements(e('a', 1, 1)).keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).reduce(sumE).collect();
    })).rejects.toThrow(/no event timestamp/);
  });
});

describe('late data', () => {
  // Key a. wm 9 arrives after the ts-12 record and fires [0,10) (maxTimestamp 9 <= 9).
  // ts 9 is then late: its only window's maxTimestamp 9 <= watermark 9. ts 10 is not
  // ([10,20) ends at 19). ts 0 is late. [10,20) fires at the end: 4 + 16.
  const data = [e('a', 1, 1), e('a', 5, 2), e('a', 12, 4, 9), e('a', 9, 8), e('a', 10, 16), e('a', 0, 32)];

  it('late records are dropped (a record at the watermark is late for a window ending there)', async () => {
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const s = env.fromCollection(data).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.v, ts]).collect();
    });
    expect(r.collected()).toEqual([
      [3, 9], // [0,10): 1+2, fired by wm 9
      [20, 19], // [10,20): 4+16 at the end; 8 and 32 were late
    ]);
  });

  it('sideOutputLateData routes exactly the late records, with their own timestamps', async () => {
    const late = new OutputTag<E>('late');
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const s = env.fromCollection(data).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).sideOutputLateData(late).reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.v, ts]).collect('main');
      stamped(s.getSideOutput(late)).map(({ value, ts }) => [value.v, ts]).collect('late');
    });
    expect(r.collected('main')).toEqual([[3, 9], [20, 19]]); // as without the side output
    expect(r.collected('late')).toEqual([[8, 9], [32, 0]]);
  });

  it('processing-time windows open at the end of input fire before the end of event time goes downstream (before: an event-time window behind them took their results as late)', async () => {
    const late = new OutputTag<E>('late');
    const r = await runInline((env) => {
      const s = env.fromCollection([e('a', 1, 1), e('a', 2, 2)])
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<E>().withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.k).window(TumblingProcessingTimeWindows.of(3_600_000)).reduce(sumE)
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(3_600_000)).sideOutputLateData(late).reduce(sumE);
      s.map((x) => x.v).collect('main');
      s.getSideOutput(late).collect('late');
    });
    expect(r.collected('main')).toEqual([3]);
    expect(r.collected('late')).toEqual([]);
  });

  it('a reducer that updates its accumulator in place changes no record: not a sibling consumer\'s, not another sliding window\'s (object reuse off)', async () => {
    const inPlace = (a: E, b: E): E => {
      (a as { v: number }).v += b.v;
      return a;
    };
    const data = [e('a', 0, 1), e('a', 1000, 2), e('a', 1500, 3)];
    const r = await runInline((env) => {
      const src = env.fromCollection(data).assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<E>().withTimestampAssigner((x) => x.ts));
      src.keyBy((x) => x.k).reduce(inPlace).map((x) => x.v).collect('rolling');
      src.keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10_000))
        .process({ process(_k, _ctx, xs, out) { out.collect(xs.map((x) => x.v)); } } satisfies ProcessWindowFunction<E, number[], string>)
        .collect('elements');
      src.keyBy((x) => x.k).window(SlidingEventTimeWindows.of(2000, 1000)).reduce(inPlace).map((x) => x.v).collect('sliding');
    });
    expect(r.collected('rolling')).toEqual([1, 3, 6]);
    // Before: [[6, 2, 3]] and [3, 3, 6, 4] (the first record was the accumulator everywhere).
    expect(r.collected('elements')).toEqual([[1, 2, 3]]);
    expect(r.collected('sliding')).toEqual([1, 6, 5]);
  });

  it('sliding: a record late for one of its windows still goes into the other and is not side-output', async () => {
    // Size 10, slide 5: ts t belongs to the windows starting at floor(t/5)*5 and 5 earlier.
    // ts 3 -> [-5,5) [0,10); ts 7 -> [0,10) [5,15); ts 12 -> [5,15) [10,20), then wm 9 fires
    // [-5,5) = 1 and [0,10) = 1+2. ts 8 -> [0,10) is late, [5,15) is not: added there only.
    // ts 4 -> [-5,5) and [0,10) are both late: side output. End: [5,15) = 2+4+8, [10,20) = 4.
    const late = new OutputTag<E>('late');
    const data2 = [e('a', 3, 1), e('a', 7, 2), e('a', 12, 4, 9), e('a', 8, 8), e('a', 4, 16)];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const s = env.fromCollection(data2).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5)).sideOutputLateData(late)
        .reduce(sumE, describeWindow<E>());
      stamped(s).map(({ value, ts }) => [value.start, value.end, value.r.v, ts]).collect('main');
      s.getSideOutput(late).map((x) => x.v).collect('late');
    });
    expect(r.collected('main')).toEqual([
      [-5, 5, 1, 4], // fired by wm 9, in timer (end - 1) order
      [0, 10, 3, 9],
      [5, 15, 14, 14], // end of input
      [10, 20, 4, 19],
    ]);
    expect(r.collected('late')).toEqual([16]);
  });

  it('negative window offsets, as in Flink: a day\'s windows in UTC+8 (offset -8 h), sliding with -2 ms; |offset| must stay below the size or slide', async () => {
    const H = 3_600_000;
    const r = await runInline((env) => {
      const src = env.fromCollection([e('a', 0, 1), e('a', 15 * H, 2), e('a', 17 * H, 4), e('a', 7, 8)])
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(24 * H).withTimestampAssigner((x) => x.ts));
      src.keyBy((x) => x.k).window(TumblingEventTimeWindows.of('1d', '-8h')).reduce(sumE, describeWindow<E>())
        .map((w) => [w.start / H, w.end / H, w.r.v]).collect('day');
      src.keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5, -2)).reduce(sumE, describeWindow<E>())
        .filter((w) => w.start < 100).map((w) => [w.start, w.end, w.r.v]).collect('sliding');
    });
    // Days start at 16:00 UTC: 00:00 and 15:00 fall in [-8 h, 16 h), 17:00 in [16 h, 40 h).
    expect(r.collected('day')).toEqual([[-8, 16, 1 + 2 + 8], [16, 40, 4]]);
    // Windows start at 3 mod 5: ts 0 in [-7,3) and [-2,8); ts 7 in [-2,8) and [3,13).
    expect(r.collected('sliding')).toEqual([[-7, 3, 1], [-2, 8, 9], [3, 13, 8]]);
    expect(() => TumblingEventTimeWindows.of(10, -10)).toThrow('tumbling window offset -10 ms must be smaller than the size 10 ms in absolute value');
    expect(() => SlidingEventTimeWindows.of(10, 5, '-5ms')).toThrow('sliding window offset -5 ms must be smaller than the slide 5 ms in absolute value');
  });

  it('allowedLateness on processing-time windows is checked and ignored, as in Flink (before: refused)', async () => {
    const r = await runInline((env) => {
      env.fromCollection([e('a', 0, 1), e('a', 1, 2)]).keyBy((x) => x.k)
        .window(TumblingProcessingTimeWindows.of(3_600_000)).allowedLateness('1 min').reduce(sumE).map((x) => x.v).collect();
    });
    expect(r.collected()).toEqual([3]);
    await expect(runInline((env) => {
      env.fromElements(1).keyBy((x) => x).window(TumblingProcessingTimeWindows.of(10)).allowedLateness('soon');
    })).rejects.toThrow(/allowedLateness: cannot read "soon" as a duration/);
  });

  it('windows ending past the end of event time fire at the end of input (tumbling, sliding whole windows and panes)', async () => {
    // M = MAX_WATERMARK: [M-23, M-13) holds M-20; the record at M-3 is in a window ending past M.
    const M = MAX_WATERMARK;
    const count: AggregateFunction<E, number, number> = { createAccumulator: () => 0, add: (_x, a) => a + 1, getResult: (a) => a, merge: (a, b) => a + b, commutative: true };
    const r = await runInline((env) => {
      const src = env.fromCollection([e('a', M - 20, 1), e('a', M - 3, 2)])
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<E>().withTimestampAssigner((x) => x.ts));
      src.keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).reduce(sumE).map((x) => x.v).collect('tumbling');
      src.keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5)).reduce(sumE).map((x) => x.v).collect('sliding');
      src.keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5)).aggregate(count).collect('panes');
    });
    // Before: only the windows ending at or before M fired; the record at M - 3 was lost.
    expect(r.collected('tumbling')).toEqual([1, 2]);
    expect(r.collected('sliding')).toEqual([1, 1, 2, 2]);
    expect(r.collected('panes')).toEqual([1, 1, 1, 1]);
  });

  it('sliding windows smaller than their slide: a record between windows is dropped quietly unless it is late itself (Flink\'s isElementLate)', async () => {
    // Size 3, slide 10: windows [0,3), [10,13), ... ts 5 and 15 fall between windows while the
    // watermark is behind them: not late, not side-output (before: both were). wm 20 then fires
    // [0,3) = 1 and [10,13) = 4; ts 6 arrives behind it, in a gap too: late, side-output.
    const late = new OutputTag<E>('late');
    const data2 = [e('a', 1, 1), e('a', 5, 2), e('a', 11, 4), e('a', 15, 8, 20), e('a', 6, 16)];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const s = env.fromCollection(data2).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(SlidingEventTimeWindows.of(3, 10)).sideOutputLateData(late).reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.v, ts]).collect('main');
      s.getSideOutput(late).map((x) => x.v).collect('late');
    });
    expect(r.collected('main')).toEqual([[1, 2], [4, 12]]);
    expect(r.collected('late')).toEqual([16]);
  });

  it('allowedLateness: late records within the lateness re-fire the window with updated results; then it is dropped', async () => {
    // Tumbling 10, lateness 5: [0,10) fires at wm >= 9 and is kept until wm >= 9 + 5 = 14.
    const late = new OutputTag<E>('late');
    const data2 = [
      e('a', 1, 1), e('a', 4, 2),
      e('a', 11, 4, 10), // wm 10: [0,10) fires: 1+2 = 3
      e('a', 2, 8), // late but within lateness: re-fire 3+8 = 11
      e('a', 12, 16, 13), // wm 13: nothing due ([10,20) needs 19; cleanup of [0,10) needs 14)
      e('a', 5, 32), // 9 + 5 = 14 > 13: still accepted: re-fire 11+32 = 43
      e('a', 15, 64, 14), // wm 14: [0,10) is cleaned up
      e('a', 6, 128), // 9 + 5 <= 14: too late -> side output
    ];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const s = env.fromCollection(data2).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).allowedLateness(5).sideOutputLateData(late)
        .reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.v, ts]).collect('main');
      stamped(s.getSideOutput(late)).map(({ value, ts }) => [value.v, ts]).collect('late');
    });
    expect(r.collected('main')).toEqual([
      [3, 9], [11, 9], [43, 9], // [0,10): on time, then two late firings
      [84, 19], // [10,20): 4+16+64 at the end
    ]);
    expect(r.collected('late')).toEqual([[128, 6]]);
  });

  it('allowedLateness with a process function: every firing sees all elements so far (no purge)', async () => {
    const data2 = [e('a', 1, 1), e('a', 4, 2), e('a', 11, 4, 10), e('a', 2, 8), e('a', 15, 64, 14), e('a', 6, 128)];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      env.fromCollection(data2).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).allowedLateness(5)
        .process<unknown>({
          process(_key, ctx, elements, out) {
            out.collect([ctx.window.start, elements.map((x) => x.v)]);
          },
        })
        .collect();
    });
    expect(r.collected()).toEqual([
      [0, [1, 2]], // wm 10
      [0, [1, 2, 8]], // late firing
      [10, [4, 64]], // end; 128 came after wm 14 cleaned [0,10) up, so it is dropped
    ]);
  });

  // Within one thread records pass by reference. In Flink every emitted result is a copy
  // (serialized or copied by the next operator), so a later firing of the same window can
  // never change what an earlier firing emitted. These two check the same for weir.
  it('allowedLateness: a later firing does not change the elements list an earlier firing emitted', async () => {
    const data2 = [e('a', 1, 1), e('a', 11, 2, 10), e('a', 2, 4)];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      env.fromCollection(data2).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).allowedLateness(5)
        .process<readonly E[]>({
          process(_key, _ctx, elements, out) {
            out.collect(elements); // emitting the list itself is legal: the function owns what it is given
          },
        })
        .collect();
    });
    // Read after the job: the first firing (wm 10) had [1]; the late ts-2 record re-fired it with [1, 4].
    expect(r.collected<readonly E[]>().map((els) => els.map((x) => x.v))).toEqual([[1], [1, 4], [2]]);
  });

  it('allowedLateness: a later firing does not change the aggregate result an earlier firing emitted', async () => {
    // Flink's AggregateFunction contract lets add() modify and return the accumulator; a
    // getResult() that returns the accumulator is then fine in Flink, because the emitted
    // value is copied. Expected: the first firing emitted {s: 1}; the late record makes {s: 5}.
    const data2 = [e('a', 1, 1), e('a', 11, 2, 10), e('a', 2, 4)];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      env.fromCollection(data2).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).allowedLateness(5)
        .aggregate<{ s: number }, { s: number }>({
          createAccumulator: () => ({ s: 0 }),
          add: (x, acc) => {
            acc.s += x.v;
            return acc;
          },
          getResult: (acc) => acc,
        })
        .collect();
    });
    expect(r.collected()).toEqual([{ s: 1 }, { s: 5 }, { s: 2 }]);
  });

  it('allowedLateness: a late record for a window that never had data fires it at once', async () => {
    // Lateness 10. wm 15 passed [0,10)'s end before any record for it arrived; ts 8 is within
    // lateness (9 + 10 = 19 > 15): the window is created and fires immediately with 2, then 2+4.
    // wm 19 cleans it up; ts 7 is then dropped. [20,30) = 1+8 at the end.
    const data2 = [e('a', 20, 1, 15), e('a', 8, 2), e('a', 9, 4), e('a', 21, 8, 19), e('a', 7, 16)];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const s = env.fromCollection(data2).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(TumblingEventTimeWindows.of(10)).allowedLateness(10).reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.v, ts]).collect();
    });
    expect(r.collected()).toEqual([[2, 9], [6, 9], [9, 29]]);
  });
});

describe('sliding event-time windows', () => {
  // Size 10, slide 5, key a: ts 3 -> [-5,5) [0,10); ts 7 -> [0,10) [5,15); ts 12 -> [5,15) [10,20);
  // ts 6 -> [0,10) [5,15); ts 18 -> [10,20) [15,25).
  const data = [e('a', 3, 1), e('a', 7, 2), e('a', 12, 4), e('a', 6, 8), e('a', 18, 16), e('b', 10, 100)];
  const expected = [
    ['a', -5, 5, 1, 1], // ts 3
    ['a', 0, 10, 11, 3], // ts 3, 7, 6: 1+2+8
    ['a', 5, 15, 14, 3], // ts 7, 12, 6: 2+4+8
    ['a', 10, 20, 20, 2], // ts 12, 18: 4+16
    ['a', 15, 25, 16, 1], // ts 18
    ['b', 5, 15, 100, 1], // ts 10 -> [10,20) [5,15)
    ['b', 10, 20, 100, 1],
  ];

  it('reduce: each record counts in every window it belongs to, results carry end - 1', async () => {
    const r = await runInline((env) => {
      const s = env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(10).withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5)).reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.k, value.v, ts]).collect();
    });
    expect(byJson(r.collected())).toEqual(byJson(expected.map(([k, , end, sum]) => [k, sum, (end as number) - 1])));
  });

  it('aggregate + window function', async () => {
    const r = await runInline((env) => {
      env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(10).withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5)).aggregate(sumCount, describeWindow())
        .map((w) => [w.key, w.start, w.end, w.r.sum, w.r.count]).collect();
    });
    expect(byJson(r.collected())).toEqual(byJson(expected));
  });

  it('aggregate alone emits getResult', async () => {
    const r = await runInline((env) => {
      env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(10).withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5)).aggregate(sumCount).collect();
    });
    expect(byJson(r.collected())).toEqual(byJson(expected.map(([, , , sum, count]) => ({ sum, count }))));
  });

  it('an order-sensitive aggregate with merge() (the last value to arrive) sees records in arrival order unless it declares itself commutative', async () => {
    // Arrival order of a: ts 3 (v 1), 7 (2), 12 (4), 6 (8), 18 (16). The last to arrive per
    // window: [-5,5) 1; [0,10) 8; [5,15) 8; [10,20) 16; [15,25) 16. Kept as panes (merged in time
    // order), [0,10) would be pane [5,10)'s last (8) merged after pane [0,5)'s (1): 8 as well, but
    // [5,15) = pane [5,10) (8) then pane [10,15) (4): 4 (before: panes whenever merge() existed).
    const last: AggregateFunction<E, number, number> = { createAccumulator: () => 0, add: (x) => x.v, getResult: (v) => v, merge: (_a, b) => b };
    const run = (agg: AggregateFunction<E, number, number>) => runInline((env) => {
      env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(10).withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5))
        .aggregate(agg, { process: (key, ctx, [v], out) => out.collect([key, ctx.window.start, v]) })
        .collect();
    });
    expect(byJson((await run(last)).collected())).toEqual(byJson([
      ['a', -5, 1], ['a', 0, 8], ['a', 5, 8], ['a', 10, 16], ['a', 15, 16], ['b', 5, 100], ['b', 10, 100],
    ]));
    // Declared commutative (which it is not), it is kept as panes: what the declaration allows.
    expect(byJson((await run({ ...last, commutative: true })).collected())).toContainEqual(['a', 5, 4]);
  });

  it('process: sees every element of each overlapping window', async () => {
    const r = await runInline((env) => {
      env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(10).withTimestampAssigner((x) => x.ts))
        .keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5))
        .process<unknown>({
          process(key, ctx, elements, out) {
            out.collect([key, ctx.window.start, ctx.window.end, elements.map((x) => x.ts)]);
          },
        })
        .collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([
      ['a', -5, 5, [3]],
      ['a', 0, 10, [3, 7, 6]],
      ['a', 5, 15, [7, 12, 6]],
      ['a', 10, 20, [12, 18]],
      ['a', 15, 25, [18]],
      ['b', 5, 15, [10]],
      ['b', 10, 20, [10]],
    ]));
  });
});

describe('sliding event-time windows: records of one pane around a watermark', () => {
  it('a window dropped between two records of the same pane gets neither the later record nor a firing', async () => {
    // Size 10, slide 5: ts 12 and 13 are both in pane [10,15), whose windows are [10,20) and
    // [5,15). wm 14 fires and drops [5,15); then ts 13 joins [10,20) only; b's ts 11 (same
    // pane, another key) too. With lateness 2, [5,15) is kept until wm 16, and ts 13 fires it again.
    const data = [e('a', 12, 1), e('b', 30, 100, 14), e('a', 13, 2), e('b', 11, 4)];
    const run = (lateness: number) => runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const late = new OutputTag<E>('late');
      const s = env.fromCollection(data).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(SlidingEventTimeWindows.of(10, 5)).allowedLateness(lateness).sideOutputLateData(late)
        .aggregate(sumCount, describeWindow());
      s.map((w) => [w.key, w.start, w.end, w.r.sum, w.r.count]).collect('main');
      s.getSideOutput(late).map((x) => x.v).collect('late');
    });
    const r0 = await run(0);
    expect(byJson(r0.collected('main'))).toEqual(byJson([
      ['a', 5, 15, 1, 1], // wm 14
      ['a', 10, 20, 3, 2], // ts 12, 13
      ['b', 10, 20, 4, 1], // ts 11 ([5,15) was already dropped)
      ['b', 25, 35, 100, 1],
      ['b', 30, 40, 100, 1],
    ]));
    expect(r0.collected('late')).toEqual([]);
    const r2 = await run(2);
    expect(byJson(r2.collected('main'))).toEqual(byJson([
      ['a', 5, 15, 1, 1], // wm 14
      ['a', 5, 15, 3, 2], // ts 13 within the lateness: fires again at once
      ['a', 10, 20, 3, 2],
      ['b', 5, 15, 4, 1], // ts 11 too
      ['b', 10, 20, 4, 1],
      ['b', 25, 35, 100, 1],
      ['b', 30, 40, 100, 1],
    ]));
  });
});

describe('event-time session windows', () => {
  // Gap 10: a record at t opens [t, t+10); sessions that overlap or touch merge.
  // a: 1 -> [1,11); 5 -> [5,15) merges -> [1,15); 30 -> [30,40); 20 -> [20,30) touches [30,40)
  //    -> [20,40); 45 -> [45,55) (40 < 45: separate).
  // b: 2 -> [2,12); 40 -> [40,50); 25 -> [25,35); 33 -> [33,43) bridges [25,35) and [40,50) -> [25,50).
  const data = [
    e('a', 1, 1), e('b', 2, 100), e('a', 5, 2), e('a', 30, 4), e('b', 40, 200), e('a', 20, 8), e('b', 25, 300),
    e('a', 45, 16), e('b', 33, 400),
  ];
  // A large bound: nothing fires before the end, whatever the periodic emission timing.
  const strategy = () => WatermarkStrategy.forBoundedOutOfOrderness<E>(1000).withTimestampAssigner((x: E) => x.ts);

  it('reduce: overlapping and touching sessions merge; results carry the merged end - 1', async () => {
    const r = await runInline((env) => {
      const s = env.fromCollection(data).assignTimestampsAndWatermarks(strategy())
        .keyBy((x) => x.k).window(EventTimeSessionWindows.withGap(10)).reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.k, value.v, ts]).collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([
      ['a', 3, 14], // [1,15): 1+2
      ['a', 12, 39], // [20,40): 4+8
      ['a', 16, 54], // [45,55)
      ['b', 100, 11], // [2,12)
      ['b', 900, 49], // [25,50): 200+300+400
    ]));
  });

  it('aggregate (with merge) + window function: merged bounds and merged accumulators', async () => {
    const r = await runInline((env) => {
      env.fromCollection(data).assignTimestampsAndWatermarks(strategy())
        .keyBy((x) => x.k).window(EventTimeSessionWindows.withGap(10)).aggregate(sumCount, describeWindow())
        .map((w) => [w.key, w.start, w.end, w.r.sum, w.r.count]).collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([
      ['a', 1, 15, 3, 2],
      ['a', 20, 40, 12, 2],
      ['a', 45, 55, 16, 1],
      ['b', 2, 12, 100, 1],
      ['b', 25, 50, 900, 3],
    ]));
  });

  it('aggregate alone: a record bridging two sessions merges their accumulators', async () => {
    // 10 -> [10,20); 30 -> [30,40); 20 -> [20,30) touches both -> [10,40): sum 7, count 3; 60 -> [60,70).
    const r = await runInline((env) => {
      env.fromCollection([e('a', 10, 1), e('a', 30, 2), e('a', 20, 4), e('a', 60, 8)]).assignTimestampsAndWatermarks(strategy())
        .keyBy((x) => x.k).window(EventTimeSessionWindows.withGap(10)).aggregate(sumCount).collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([{ sum: 7, count: 3 }, { sum: 8, count: 1 }]));
  });

  it('aggregate without merge is rejected for session windows', async () => {
    const { merge: _m, ...noMerge } = sumCount;
    await expect(runInline((env) => {
      env.fromCollection(data).assignTimestampsAndWatermarks(strategy())
        .keyBy((x) => x.k).window(EventTimeSessionWindows.withGap(10)).aggregate(noMerge).collect();
    })).rejects.toThrow(/merge/);
  });

  it('process: sees the key, merged bounds and every element', async () => {
    const r = await runInline((env) => {
      env.fromCollection(data).assignTimestampsAndWatermarks(strategy())
        .keyBy((x) => x.k).window(EventTimeSessionWindows.withGap(10))
        .process<unknown>({
          process(key, ctx, elements, out) {
            // Element order inside a merged session is not specified (as in Flink): sort.
            out.collect([key, ctx.window.start, ctx.window.end, elements.map((x) => x.v).sort((p, q) => p - q)]);
          },
        })
        .collect();
    });
    expect(byJson(r.collected())).toEqual(byJson([
      ['a', 1, 15, [1, 2]],
      ['a', 20, 40, [4, 8]],
      ['a', 45, 55, [16]],
      ['b', 2, 12, [100]],
      ['b', 25, 50, [200, 300, 400]],
    ]));
  });

  it('late records merge into a fired session within the lateness and re-fire it; beyond it they are side-output', async () => {
    // Gap 10, lateness 20 (a session is kept until wm >= end - 1 + 20).
    const late = new OutputTag<E>('late');
    const data2 = [
      e('a', 1, 1), // [1,11)
      e('a', 50, 2, 15), // [50,60); wm 15 fires [1,11) = 1
      e('a', 3, 4), // [3,13) merges -> [1,13); end - 1 = 12 <= 15: fires at once: 1+4 = 5
      e('a', 8, 8), // [8,18) merges -> [1,18); 17 > 15: waits for the watermark
      e('a', 51, 16, 17), // [51,61) merges -> [50,61); wm 17 fires [1,18) = 13
      e('a', 60, 32, 40), // [60,70) merges -> [50,70); wm 40 >= 17 + 20 cleans [1,18) up
      e('a', 2, 64), // [2,12): 11 + 20 <= 40: late -> side output
    ];
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const s = env.fromCollection(data2).assignTimestampsAndWatermarks(punctuated<E>())
        .keyBy((x) => x.k).window(EventTimeSessionWindows.withGap(10)).allowedLateness(20).sideOutputLateData(late)
        .reduce(sumE, describeWindow<E>());
      stamped(s).map(({ value, ts }) => [value.start, value.end, value.r.v, ts]).collect('main');
      stamped(s.getSideOutput(late)).map(({ value, ts }) => [value.v, ts]).collect('late');
    });
    expect(r.collected('main')).toEqual([
      [1, 11, 1, 10],
      [1, 13, 5, 12],
      [1, 18, 13, 17],
      [50, 70, 50, 69], // end: 2+16+32
    ]);
    expect(r.collected('late')).toEqual([[64, 2]]);
  });
});

describe('event-time session windows that grow record by record', () => {
  // A record that falls into one session and keeps its start grows that session in place; the
  // session's timer stays at the old end - 1 and moves on to the new end when it comes due.
  const firings = (env: Parameters<Parameters<typeof runInline>[0]>[0], data: E[], lateness: number, late: OutputTag<E>) => {
    env.setAutoWatermarkInterval(0);
    const s = env.fromCollection(data).assignTimestampsAndWatermarks(punctuated<E>())
      .keyBy((x) => x.k).window(EventTimeSessionWindows.withGap(10)).allowedLateness(lateness).sideOutputLateData(late)
      .aggregate(sumCount, describeWindow());
    stamped(s).map(({ value, ts }) => [value.key, value.start, value.end, value.r.sum, value.r.count, ts]).collect('main');
    s.getSideOutput(late).map((x) => x.v).collect('late');
  };

  it('fires once, at its last end, when one watermark passes both the old and the new end', async () => {
    const late = new OutputTag<E>('late');
    const data = [
      e('a', 1, 1), // [1,11)
      e('a', 5, 2), // [5,15) -> [1,15), grown in place
      e('a', 12, 4), // [12,22) -> [1,22), grown in place
      e('b', 3, 100), // [3,13)
      e('a', 40, 8, 35), // [40,50); wm 35: b's [3,13) at 12, then a's [1,22) at 21 (its timer moved from 10)
    ];
    const r = await runInline((env) => firings(env, data, 0, late));
    expect(r.collected('main')).toEqual([
      ['b', 3, 13, 100, 1, 12],
      ['a', 1, 22, 7, 3, 21],
      ['a', 40, 50, 8, 1, 49], // end of input
    ]);
    expect(r.collected('late')).toEqual([]);
  });

  it('with allowed lateness: a session that grows past the watermark after firing fires again at its new end', async () => {
    // Lateness 5: a session is kept until the watermark reaches end - 1 + 5.
    const late = new OutputTag<E>('late');
    const data = [
      e('a', 1, 1), // [1,11)
      e('b', 100, 1000, 10), // [100,110); wm 10 fires a's [1,11) = 1 at 10 (kept until wm 15)
      e('a', 3, 2), // [3,13) -> [1,13): end - 1 = 12 is past the watermark again, so it waits for it
      e('a', 4, 4), // [4,14) -> [1,14), in place (its timer at 12 is still to come)
      e('a', 50, 16, 30), // [50,60); wm 30 fires [1,14) = 1+2+4 at 13 and drops it (13 + 5 <= 30)
      e('a', 2, 32), // [2,12): 11 + 5 <= 30, late
    ];
    const r = await runInline((env) => firings(env, data, 5, late));
    expect(r.collected('main')).toEqual([
      ['a', 1, 11, 1, 1, 10],
      ['a', 1, 14, 7, 3, 13],
      ['a', 50, 60, 16, 1, 59], // end of input
      ['b', 100, 110, 1000, 1, 109],
    ]);
    expect(r.collected('late')).toEqual([32]);
  });
});

describe('processing-time windows (manual clock)', () => {
  /** A record that arrives at processing time pt; its event timestamp is deliberately misleading. */
  interface P { k: string; v: number; pt: number }
  const script = (xs: P[]): Step<P>[] =>
    xs.flatMap((x): Step<P>[] => [{ advanceTo: x.pt }, { emit: x, ts: 100_000 - x.pt * 1000 }]);
  const sumP = (a: P, b: P): P => ({ k: a.k, v: a.v + b.v, pt: Math.max(a.pt, b.pt) });

  it('tumbling reduce + window function: assigned by the clock, fired when it passes end - 1, open windows at the end', async () => {
    // Size 10. Clock 12 fires [0,10) of a (1+2) and b (4); clock 25 fires [10,20) of a (8) and
    // b (16); [20,30) of a (32) is still open at the end of input and fires then (clock 25).
    const clock = new ManualClock(0);
    const xs: P[] = [
      { k: 'a', v: 1, pt: 1 }, { k: 'a', v: 2, pt: 4 }, { k: 'b', v: 4, pt: 6 }, { k: 'a', v: 8, pt: 12 },
      { k: 'b', v: 16, pt: 15 }, { k: 'a', v: 32, pt: 25 },
    ];
    const r = await runInline((env) => {
      env.setBufferTimeout(0);
      const s = env.fromSource(scripted(script(xs), { clock }))
        .keyBy((x) => x.k).window(TumblingProcessingTimeWindows.of(10))
        .reduce(sumP, {
          process(key, ctx, [x], out) {
            out.collect({ key, start: ctx.window.start, v: x!.v, firedAt: ctx.currentProcessingTime() });
          },
        } satisfies ProcessWindowFunction<P, unknown, string>);
      stamped(s).collect();
    }, { clock });
    expect(byJson(r.collected())).toEqual(byJson([
      { value: { key: 'a', start: 0, v: 3, firedAt: 12 }, ts: 9 },
      { value: { key: 'b', start: 0, v: 4, firedAt: 12 }, ts: 9 },
      { value: { key: 'a', start: 10, v: 8, firedAt: 25 }, ts: 19 },
      { value: { key: 'b', start: 10, v: 16, firedAt: 25 }, ts: 19 },
      { value: { key: 'a', start: 20, v: 32, firedAt: 25 }, ts: 29 }, // end of input
    ]));
  });

  it('a composite key reaches the window function intact, from a clock timer and at the end of input', async () => {
    // Size 10: clock 15 fires [0,10) of ['a', 1]; [10,20) of ['a', 1] and [10,20) of ['a', 2] fire at the end.
    const clock = new ManualClock(0);
    const xs: P[] = [{ k: 'a', v: 1, pt: 3 }, { k: 'a', v: 2, pt: 15 }, { k: 'a', v: 4, pt: 16 }];
    const r = await runInline((env) => {
      env.setBufferTimeout(0);
      env.fromSource(scripted(script(xs), { clock }))
        .keyBy((x): [string, number] => [x.k, x.v === 4 ? 2 : 1]).window(TumblingProcessingTimeWindows.of(10))
        .process<unknown>({
          process(key, ctx, elements, out) {
            out.collect([key, ctx.window.start, elements.map((x) => x.v)]);
          },
        })
        .collect();
    }, { clock });
    expect(byJson(r.collected())).toEqual(byJson([
      [['a', 1], 0, [1]],
      [['a', 1], 10, [2]],
      [['a', 2], 10, [4]],
    ]));
  });

  it('sliding aggregate: fires in time order as the clock moves, the rest at the end', async () => {
    // Size 10, slide 5. pt 2 -> [-5,5) [0,10); pt 7 -> [0,10) [5,15) (clock 7 fired [-5,5) = {1});
    // pt 11 -> [5,15) [10,20) (clock 11 fired [0,10) = {1,2}); end: [5,15) = {2,4}, [10,20) = {4}.
    const clock = new ManualClock(0);
    const xs: P[] = [{ k: 'a', v: 1, pt: 2 }, { k: 'a', v: 2, pt: 7 }, { k: 'a', v: 4, pt: 11 }];
    const agg: AggregateFunction<P, { sum: number; count: number }, { sum: number; count: number }> = {
      createAccumulator: () => ({ sum: 0, count: 0 }),
      add: (x, acc) => ({ sum: acc.sum + x.v, count: acc.count + 1 }),
      getResult: (acc) => acc,
    };
    const r = await runInline((env) => {
      env.setBufferTimeout(0);
      const s = env.fromSource(scripted(script(xs), { clock }))
        .keyBy((x) => x.k).window(SlidingProcessingTimeWindows.of(10, 5)).aggregate(agg);
      stamped(s).map(({ value, ts }) => [value.sum, value.count, ts]).collect();
    }, { clock });
    expect(r.collected()).toEqual([
      [1, 1, 4], // [-5,5)
      [3, 2, 9], // [0,10)
      [6, 2, 14], // [5,15), end of input
      [4, 1, 19], // [10,20), end of input
    ]);
  });

  it('session process: sessions merge by clock time and fire when the clock passes their end - 1', async () => {
    // Gap 5. a: pt 0 -> [0,5); pt 3 -> [3,8) merges -> [0,8); pt 6 -> [6,11) merges -> [0,11).
    // b: pt 8 -> [8,13). Clock 20 fires a's [0,11) (timer 10) and b's [8,13) (timer 12);
    // a: pt 20 -> [20,25), open at the end.
    const clock = new ManualClock(0);
    const xs: P[] = [
      { k: 'a', v: 1, pt: 0 }, { k: 'a', v: 2, pt: 3 }, { k: 'a', v: 4, pt: 6 }, { k: 'b', v: 8, pt: 8 }, { k: 'a', v: 16, pt: 20 },
    ];
    const r = await runInline((env) => {
      env.setBufferTimeout(0);
      env.fromSource(scripted(script(xs), { clock }))
        .keyBy((x) => x.k).window(ProcessingTimeSessionWindows.withGap(5))
        .process<unknown>({
          process(key, ctx, elements, out) {
            out.collect([key, ctx.window.start, ctx.window.end, elements.map((x) => x.v).sort((p, q) => p - q), ctx.currentProcessingTime()]);
          },
        })
        .collect();
    }, { clock });
    expect(byJson(r.collected())).toEqual(byJson([
      ['a', 0, 11, [1, 2, 4], 20],
      ['b', 8, 13, [8], 20],
      ['a', 20, 25, [16], 20], // end of input
    ]));
  });
});
