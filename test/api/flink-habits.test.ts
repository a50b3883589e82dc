/**
 * Flink habits (issue 15, point 10): ctx.timerService() and ctx.getCurrentKey() beside the
 * properties, and process-style functions whose output type is inferred from what they return,
 * without an explicit Collector<T>. The expectTypeOf lines are checked by tsc (npm test runs it
 * first): with a void-only return type the inferred output is `unknown` and they fail to compile.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { TumblingEventTimeWindows, TumblingProcessingTimeWindows, WatermarkStrategy, type DataStream } from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';
import { failureOf } from './util.ts';

interface Click { user: string; ts: number }
const clicks: Click[] = [
  { user: 'ann', ts: 1_000 }, { user: 'bob', ts: 2_000 }, { user: 'ann', ts: 3_000 },
  { user: 'ann', ts: 61_000 }, { user: 'bob', ts: 62_000 },
];

describe('Flink spellings on the keyed context', () => {
  it('ctx.timerService() and ctx.getCurrentKey() work as ctx.timerService and ctx.currentKey do', async () => {
    const r = await runInline((env) => {
      env
        .fromCollection(clicks)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<Click>().withTimestampAssigner((c) => c.ts))
        .keyBy((c) => c.user)
        .process({
          processElement(c, ctx) {
            expect(ctx.getCurrentKey()).toBe(ctx.currentKey);
            expect(ctx.timerService()).toBe(ctx.timerService);
            ctx.timerService().registerEventTimeTimer(c.ts + 500);
            return [`${ctx.getCurrentKey()} saw ${c.ts} at watermark ${ctx.timerService().currentWatermark() < c.ts ? 'before' : 'after'}`];
          },
          onTimer(ts, ctx) {
            return [`${ctx.getCurrentKey()} timer ${ts} ${ctx.timeDomain}`];
          },
        })
        .collect('out');
    });
    expect(sorted(r.collected<string>('out').filter((l) => l.includes('timer')))).toEqual(
      sorted(['ann timer 1500 event-time', 'bob timer 2500 event-time', 'ann timer 3500 event-time', 'ann timer 61500 event-time', 'bob timer 62500 event-time']),
    );
    expect(r.collected<string>('out').filter((l) => l.includes('saw'))).toHaveLength(5);
  });
});

describe('output types inferred from returned outputs', () => {
  it('window aggregate(agg, windowFn): the window function returns its outputs', async () => {
    const r = await runInline((env) => {
      const perMinute = env
        .fromCollection(clicks)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<Click>().withTimestampAssigner((c) => c.ts))
        .keyBy((c) => c.user)
        .window(TumblingEventTimeWindows.of('1 min'))
        .aggregate(
          { createAccumulator: () => 0, add: (_c, n: number) => n + 1, getResult: (n) => n },
          { process: (user, ctx, [count]) => [{ user, minute: ctx.window.start / 60_000, clicks: count! }] },
        );
      expectTypeOf(perMinute).toEqualTypeOf<DataStream<{ user: string; minute: number; clicks: number }>>();
      perMinute.map((o) => `${o.user}@${o.minute}=${o.clicks}`).collect('out');
    });
    expect(sorted(r.collected<string>('out'))).toEqual(['ann@0=2', 'ann@1=1', 'bob@0=1', 'bob@1=1']);
  });

  it('window process(), keyed process() and process(): outputs inferred, out.collect still works beside return', async () => {
    const r = await runInline((env) => {
      const keyed = env
        .fromCollection(clicks)
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<Click>().withTimestampAssigner((c) => c.ts))
        .keyBy((c) => c.user);
      const windowed = keyed
        .window(TumblingEventTimeWindows.of('1 min'))
        .process({ process: (user, _ctx, all) => [{ user, n: all.length }] });
      expectTypeOf(windowed).toEqualTypeOf<DataStream<{ user: string; n: number }>>();

      const tagged = keyed.process({ processElement: (c, ctx) => [{ key: ctx.currentKey, at: c.ts }] });
      expectTypeOf(tagged).toEqualTypeOf<DataStream<{ key: string; at: number }>>();

      // A function that declares `out` fixes the output type from its parameters before TypeScript
      // sees the return, so it takes a type argument (or `out: Collector<number>`), as before.
      const both = tagged.process<number>({
        processElement(t, _ctx, out) {
          out.collect(t.at);
          return [t.at + 1];
        },
      });
      both.collect('both');
      windowed.map((w) => `${w.user}:${w.n}`).collect('windows');
    });
    expect(r.collected<number>('both').sort((a, b) => a - b)).toEqual([1000, 1001, 2000, 2001, 3000, 3001, 61000, 61001, 62000, 62001]);
    expect(sorted(r.collected<string>('windows'))).toEqual(['ann:2', 'ann:1', 'bob:1', 'bob:1'].sort());
  });

  it('async user functions are refused naming the operator, not run unawaited (before: an async sink lost its last writes with the job FINISHED, an async map emitted Promises, an async filter kept everything)', async () => {
    const written: number[] = [];
    const cases: [string, RegExp][] = [];
    cases.push([await failureOf((env) => {
      env.fromElements(1, 2, 3).addSink({ async invoke(v: number) { await Promise.resolve(); written.push(v); } });
    }), /the sink's invoke returned a Promise \(is it async\?\)/]);
    cases.push([await failureOf((env) => {
      env.fromElements(1, 2, 3).map(async (v) => v * 2).collect('out');
    }), /map returned a Promise/]);
    cases.push([await failureOf((env) => {
      env.fromElements(1, 2, 3).filter((async (v: number) => v > 1) as never).collect('out');
    }), /filter returned a Promise/]);
    cases.push([await failureOf((env) => {
      env.fromElements(1, 2, 3).process({ async open() {}, processElement() {} } as never).collect('out');
    }), /open\(\) returned a Promise/]);
    cases.push([await failureOf((env) => {
      env.fromElements(1, 2, 3).flatMap((async (v: number) => [v]) as never).collect('out');
    }), /flatMap returned a Promise/]);
    for (const [msg, re] of cases) expect(msg).toMatch(re);
    expect(written.length).toBeLessThanOrEqual(1); // the first call ran before its result was seen
  });

  it('a close() that throws when the job ends normally fails the job naming the operator (before: swallowed, the job FINISHED, a sink\'s last flush lost without a word)', async () => {
    const msg = await failureOf((env) => {
      env.fromElements(1, 2, 3).addSink({ invoke() {}, close() { throw new Error('flush failed'); } });
    });
    expect(msg).toMatch(/close.*flush failed|flush failed.*close/);
  });

  it('a process function that returns something other than outputs fails naming the method', async () => {
    const msg = await failureOf((env) => {
      env.fromElements(1, 2).process({ processElement: (v) => ({ v }) as never }).collect('out');
    });
    expect(msg).toMatch(/processElement returned an object; return an array of outputs, or nothing and emit with out\.collect\(value\)/);
    // A string is iterable, but one record, never its characters (as in Flink); process and flatMap alike.
    const str = await failureOf((env) => {
      env.fromElements('anna').process({ processElement: (v) => v.toUpperCase() }).collect('out');
    });
    expect(str).toMatch(/processElement returned a string; return an array of outputs/);
    const flat = await failureOf((env) => {
      env.fromElements('a b').flatMap((v) => v).collect('out');
    });
    expect(flat).toMatch(/flatMap returned a string; return an array of outputs/);
  });

  it('a reduce that returns nothing fails naming it (rolling, windowed and count-windowed), instead of emitting undefined and restarting', async () => {
    type N = { k: string; n: number };
    const forgets = (a: N, b: N) => void (a.n += b.n) as unknown as N;
    const rolling = await failureOf((env) => {
      env.fromElements<N>({ k: 'a', n: 1 }, { k: 'a', n: 2 }).keyBy((x) => x.k).reduce(forgets).collect('out');
    });
    expect(rolling).toMatch(/the reduce function returned undefined; it must return the combined value/);
    const counted = await failureOf((env) => {
      env.fromElements<N>({ k: 'a', n: 1 }, { k: 'a', n: 2 }).keyBy((x) => x.k).countWindow(2).reduce(forgets).collect('out');
    });
    expect(counted).toMatch(/the reduce function returned undefined/);
    const windowed = await failureOf((env) => {
      env.fromElements<N>({ k: 'a', n: 1 }, { k: 'a', n: 2 }).keyBy((x) => x.k).window(TumblingProcessingTimeWindows.of('1h')).reduce(forgets).collect('out');
    });
    expect(windowed).toMatch(/the reduce function returned undefined/);
  });
});
