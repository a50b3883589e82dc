/**
 * Non-keyed windows (windowAll, countWindowAll) and count windows (countWindow) against
 * hand-computed results, at parallelism 1 and 2. A non-keyed window runs at parallelism 1
 * whatever the job's default; count windows count records per key in arrival order, whatever
 * their event time, and carry the largest event timestamp of their records.
 */
import { describe, expect, it } from 'vitest';
import {
  GLOBAL_WINDOW, OutputTag, SlidingEventTimeWindows, TumblingEventTimeWindows, WatermarkStrategy,
  type AggregateFunction, type DataStream, type ProcessAllWindowFunction, type StreamExecutionEnvironment,
} from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';
import { punctuated, scripted, Signal, stamped, type Step } from '../runtime/support.ts';

interface E { readonly k: string; readonly ts: number; readonly v: number; readonly wm?: number }
const e = (k: string, ts: number, v: number, wm?: number): E => (wm === undefined ? { k, ts, v } : { k, ts, v, wm });
const sumE = (a: E, b: E): E => ({ k: a.k, ts: Math.max(a.ts, b.ts), v: a.v + b.v });
const sum: AggregateFunction<E, number, number> = { createAccumulator: () => 0, add: (x, n) => n + x.v, getResult: (n) => n };

/** A scripted stream with punctuated watermarks, its chain at parallelism 1 (records and watermarks in script order). */
function script(env: StreamExecutionEnvironment, steps: readonly Step<E>[]): DataStream<E> {
  env.setAutoWatermarkInterval(0);
  env.setBufferTimeout(0);
  return env.fromSource(scripted(steps), { name: 'script' }).assignTimestampsAndWatermarks(punctuated<E>()).setParallelism(1);
}

describe.each([1, 2])('windowAll at parallelism %i', (parallelism) => {
  it('tumbling reduce over every key at once, out of order within the bound; runs at parallelism 1', async () => {
    // Bound 5: no record is late. [0,10): 1+2+4+100+16 = 123; [10,20): 8+200+32+300 = 540; [20,30): 64+128 = 192.
    const data = [
      e('a', 1, 1), e('a', 7, 2), e('a', 3, 4), e('b', 5, 100), e('a', 12, 8), e('a', 9, 16), e('b', 15, 200),
      e('a', 10, 32), e('b', 14, 300), e('a', 25, 64), e('c', 20, 128),
    ];
    const result = await runInline((env) => {
      const s = env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(5).withTimestampAssigner((x) => x.ts)).setParallelism(1)
        .windowAll(TumblingEventTimeWindows.of(10))
        .reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.v, ts]).collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted([[123, 9], [540, 19], [192, 29]]));
    const windowVertex = result.graph.vertices.find((v) => v.name.includes('AllWindowReduce'));
    expect(windowVertex?.parallelism).toBe(1);
  });

  it('process: the function gets no key, the window, and every record in arrival order; open sees parallelism 1', async () => {
    const seen: number[] = [];
    const data = [e('x', 3, 1), e('y', 14, 2), e('z', 0, 3), e('x', 11, 4), e('y', 9, 5)];
    const result = await runInline((env) => {
      env.fromCollection(data)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<E>(20).withTimestampAssigner((x) => x.ts)).setParallelism(1)
        .windowAll(TumblingEventTimeWindows.of(10))
        .process({
          open(ctx) {
            seen.push(ctx.taskInfo.parallelism);
          },
          process: (ctx, elements) => [{ start: ctx.window.start, end: ctx.window.end, vs: elements.map((x) => `${x.k}${x.v}`) }],
        })
        .collect();
    }, { parallelism });
    expect(seen).toEqual([1]);
    expect(sorted(result.collected())).toEqual(sorted([
      { start: 0, end: 10, vs: ['x1', 'z3', 'y5'] },
      { start: 10, end: 20, vs: ['y2', 'x4'] },
    ]));
  });

  it('sliding aggregate with a window function; late records go to the late-data side output', async () => {
    // Size 10, slide 5. Records 1(2) 2(7) 4(12) then watermark 9 fires [-5,5) = 1 and [0,10) = 1+2.
    // 8(8): [0,10) is gone, [5,15) is open: added there only. 16(3): both its windows fired: late.
    // End: [5,15) = 2+4+8, [10,20) = 4.
    const fired = new Signal();
    const late = new OutputTag<E>('late');
    const steps: Step<E>[] = [
      { emit: e('a', 2, 1) }, { emit: e('b', 7, 2) }, { emit: e('c', 12, 4, 9) },
      { waitFor: fired, timeoutMs: 20_000 },
      { emit: e('a', 8, 8) }, { emit: e('b', 3, 16) },
    ];
    const result = await runInline((env) => {
      const s = script(env, steps)
        .windowAll(SlidingEventTimeWindows.of(10, 5))
        .sideOutputLateData(late)
        .aggregate(sum, {
          process(ctx, [total], out) {
            if (ctx.window.start === 0) fired.set();
            out.collect(`${ctx.window.start}:${total}`);
          },
        } satisfies ProcessAllWindowFunction<number, string>);
      s.collect('main');
      s.getSideOutput(late).map((x) => x.v).collect('late');
    }, { parallelism });
    expect(sorted(result.collected('main'))).toEqual(sorted(['-5:1', '0:3', '5:14', '10:4']));
    expect(result.collected('late')).toEqual([16]);
  });

  it('without a late-data output late records are dropped and counted', async () => {
    const fired = new Signal();
    const steps: Step<E>[] = [
      { emit: e('a', 2, 1) }, { emit: e('b', 12, 2, 10) }, // fires [0,10) = 1
      { waitFor: fired, timeoutMs: 20_000 },
      { emit: e('c', 5, 4) }, // late
    ];
    const result = await runInline((env) => {
      script(env, steps).windowAll(TumblingEventTimeWindows.of(10)).reduce(sumE)
        .map((x) => {
          if (x.ts < 10) fired.set();
          return x.v;
        })
        .collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual([1, 2]);
    expect(result.progress.lateRecordsDropped).toBe(1);
  });
});

describe('windowAll: parallelism', () => {
  it('setParallelism refuses more than 1 and says why; 1 is fine', async () => {
    await runInline((env) => {
      const s = env.fromCollection([e('a', 1, 1)], { timestamp: (x) => x.ts }).windowAll(TumblingEventTimeWindows.of(10)).reduce(sumE);
      expect(() => s.setParallelism(2)).toThrow(/windowAll.*parallelism 1/);
      s.setParallelism(1).uid('all').print();
    });
  });
});

describe.each([1, 2])('countWindow at parallelism %i', (parallelism) => {
  // Arrival order per key: a 1(5) 2(3) 4(9) 8(7) 16(4) 32(1) 64(2); b 10(1) 20(2) 40(8).
  const data = [
    e('a', 5, 1), e('b', 1, 10), e('a', 3, 2), e('a', 9, 4), e('b', 2, 20), e('a', 7, 8), e('a', 4, 16), e('b', 8, 40),
    e('a', 1, 32), e('a', 2, 64),
  ];

  it('tumbling reduce: every 3 records of a key, in arrival order; the largest timestamp; an incomplete window never fires', async () => {
    // a: [1,2,4] = 7 @ max(5,3,9) = 9; [8,16,32] = 56 @ max(7,4,1) = 7; [64] never fires. b: [10,20,40] = 70 @ 8.
    const result = await runInline((env) => {
      const s = env.fromCollection(data, { timestamp: (x) => x.ts }).keyBy((x) => x.k).countWindow(3).reduce(sumE);
      stamped(s).map(({ value, ts }) => [value.k, value.v, ts]).collect();
    }, { parallelism });
    expect(sorted(result.collected())).toEqual(sorted([['a', 7, 9], ['a', 56, 7], ['b', 70, 8]]));
  });

  it('sliding (size, slide): every slide records the last size of them, fewer at first', async () => {
    // countWindow(3, 1), sum: a 1, 1+2, 1+2+4, 2+4+8, 4+8+16, 8+16+32, 16+32+64; b 10, 30, 70.
    // countWindow(4, 2), list: a [1,2] [1,2,4,8] [4,8,16,32]; (64 is one past a firing); b [10,20].
    const result = await runInline((env) => {
      const keyed = env.fromCollection(data, { timestamp: (x) => x.ts }).keyBy((x) => x.k);
      keyed.countWindow(3, 1).aggregate(sum, { process: (key, _ctx, [total]) => [`${key}:${total}`] }).collect('3,1');
      keyed.countWindow(4, 2).process({ process: (key, ctx, xs) => [{ key, window: ctx.window, vs: xs.map((x) => x.v) }] }).collect('4,2');
    }, { parallelism });
    expect(sorted(result.collected('3,1'))).toEqual(sorted(['a:1', 'a:3', 'a:7', 'a:14', 'a:28', 'a:56', 'a:112', 'b:10', 'b:30', 'b:70']));
    expect(sorted(result.collected('4,2'))).toEqual(sorted([
      { key: 'a', window: GLOBAL_WINDOW, vs: [1, 2] },
      { key: 'a', window: GLOBAL_WINDOW, vs: [1, 2, 4, 8] },
      { key: 'a', window: GLOBAL_WINDOW, vs: [4, 8, 16, 32] },
      { key: 'b', window: GLOBAL_WINDOW, vs: [10, 20] },
    ]));
  });

  it('a reduce that changes its accumulator in place: sliding windows begin on a copy of the buffered record, tumbling ones leave the input record alone', async () => {
    // countWindow(3, 1), in-place sum: a 1, 3, 7, 14, 28, 56, 112; b 10, 30, 70 (before: the
    // first firing's sum was written into the buffered record 1, and later windows added onto it).
    const inPlace = (acc: { k: string; v: number }, x: E): { k: string; v: number } => {
      acc.v += x.v;
      return acc;
    };
    const input = data.map((x) => ({ ...x }));
    const result = await runInline((env) => {
      const keyed = env.fromCollection(input, { timestamp: (x) => x.ts }).keyBy((x) => x.k);
      keyed.countWindow(3, 1).reduce(inPlace as unknown as (a: E, b: E) => E).map((x) => `${x.k}:${x.v}`).collect('3,1');
      keyed.countWindow(3).reduce(inPlace as unknown as (a: E, b: E) => E).map((x) => `${x.k}:${x.v}`).collect('3');
    }, { parallelism });
    expect(sorted(result.collected('3,1'))).toEqual(sorted(['a:1', 'a:3', 'a:7', 'a:14', 'a:28', 'a:56', 'a:112', 'b:10', 'b:30', 'b:70']));
    expect(sorted(result.collected('3'))).toEqual(sorted(['a:7', 'a:56', 'b:70']));
  });

  it('countWindowAll: counts over all keys at parallelism 1', async () => {
    // Arrival order 1 10 2 4 20 8 16 40 32 64: pairs 11, 6, 28, 56, 96.
    const result = await runInline((env) => {
      env.fromCollection(data, { timestamp: (x) => x.ts }).countWindowAll(2).aggregate(sum, {
        open(ctx) {
          expect(ctx.taskInfo.parallelism).toBe(1);
        },
        process: (_ctx, [total]) => [total],
      }).collect();
    }, { parallelism });
    expect(result.collected()).toEqual([11, 6, 28, 56, 96]);
  });
});

describe('countWindow: checks', () => {
  it('refuses sizes and slides that are not positive integers', async () => {
    await runInline((env) => {
      const keyed = env.fromElements(1).keyBy((x) => x);
      expect(() => keyed.countWindow(0)).toThrow(/countWindow: size must be a positive integer, got 0/);
      expect(() => keyed.countWindow(2, 1.5)).toThrow(/countWindow: slide must be a positive integer, got 1.5/);
      expect(() => env.fromElements(1).countWindowAll(-1)).toThrow(/countWindowAll: size/);
      keyed.countWindow(1).reduce((a, b) => a + b).print();
    });
  });
});

describe('countWindow: the window function object', () => {
  it('the first subtask gets the function itself, #private fields and all (keyed, and countWindowAll with and without a reduce)', async () => {
    class Calls {
      #calls = 0;
      process(...args: unknown[]): void {
        const [els, out] = args.length === 4 ? [args[2], args[3]] : [args[1], args[2]];
        this.#calls++;
        (out as { collect(s: string): void }).collect(`${(els as number[]).join('+')} call ${this.#calls}`);
      }
    }
    const r = await runInline((env) => {
      const xs = env.fromElements(1, 2, 3, 4);
      xs.keyBy(() => 'k').countWindow(2).process(new Calls() as never).collect('keyed');
      xs.countWindowAll(2).process(new Calls() as never).collect('all');
      xs.keyBy(() => 'k').countWindow(2).reduce((a, b) => a + b, new Calls() as never).collect('keyed-reduce');
    });
    // Before: "Cannot read private member #calls" at the first firing (a copy, not the object).
    expect(r.collected('keyed')).toEqual(['1+2 call 1', '3+4 call 2']);
    expect(r.collected('all')).toEqual(['1+2 call 1', '3+4 call 2']);
    expect(r.collected('keyed-reduce')).toEqual(['3 call 1', '7 call 2']);
  });
});
