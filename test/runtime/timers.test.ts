/**
 * Keyed timers against hand-computed results: KeyedProcessFunction and KeyedCoProcessFunction,
 * event time (driven by punctuated watermarks and the final MAX watermark of bounded sources)
 * and processing time (driven by a ManualClock moved by a scripted source, one record per poll).
 * Flink semantics: timers fire in timestamp order; one timer per key and timestamp; deleting
 * removes it; records emitted from an event-time onTimer carry the timer's timestamp,
 * those from a processing-time onTimer carry none; processing-time timers still pending at
 * the end of input do not fire.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  MAX_WATERMARK, MIN_WATERMARK, ManualClock, ValueStateDescriptor,
  type Collector, type KeyedContext, type KeyedCoProcessFunction, type KeyedProcessFunction, type KeyedRuntimeContext,
  type OnTimerContext, type ValueState,
} from '../../src/index.ts';
import { runInline } from '../helpers/run.ts';
import { byJson, punctuated, scripted, Signal, stamped, type Step } from './support.ts';

/** A record: key, event time, an event-time timer to register and/or one to delete. */
interface T {
  readonly k: string;
  readonly ts: number;
  readonly timer?: number;
  readonly del?: number;
  readonly wm?: number;
}

interface Fired {
  key: string;
  t: number;
  domain: string;
  ctxTs: number | undefined;
  wm: number;
}

/** Registers/deletes event-time timers as the record says; reports every firing. */
const eventTimers: KeyedProcessFunction<string, T, Fired> = {
  processElement(x, ctx) {
    if (x.timer !== undefined) ctx.timerService.registerEventTimeTimer(x.timer);
    if (x.del !== undefined) ctx.timerService.deleteEventTimeTimer(x.del);
  },
  onTimer(t, ctx, out) {
    out.collect({ key: ctx.currentKey, t, domain: ctx.timeDomain, ctxTs: ctx.timestamp, wm: ctx.timerService.currentWatermark() });
  },
};

function runEventTimers(data: T[], fn: KeyedProcessFunction<string, T, Fired> = eventTimers) {
  return runInline((env) => {
    env.setAutoWatermarkInterval(0);
    const s = env.fromCollection(data).assignTimestampsAndWatermarks(punctuated<T>()).keyBy((x) => x.k).process(fn);
    stamped(s).collect();
  });
}

describe('event-time timers (KeyedProcessFunction)', () => {
  it('fire in timestamp order when the watermark passes them, once per key and timestamp, with key, domain and timestamp', async () => {
    const data: T[] = [
      { k: 'a', ts: 1, timer: 30 },
      { k: 'b', ts: 2, timer: 20 },
      { k: 'a', ts: 3, timer: 30 }, // same key and time: still one timer
      { k: 'b', ts: 4, timer: 30 }, // same time, other key: a timer of its own
      { k: 'a', ts: 5, timer: 25, wm: 26 }, // wm 26 fires b@20 then a@25
      { k: 'c', ts: 27, timer: 27 }, // 27 > 26: waits
      { k: 'a', ts: 28, timer: 10 }, // already behind the watermark: fires with the next one
      { k: 'x', ts: 29, timer: 100, wm: 31 }, // wm 31 fires a@10, c@27, a@30, b@30
      // x@100 fires with the final watermark at the end of input
    ];
    const r = await runEventTimers(data);
    const got = r.collected<{ value: Fired; ts: number | undefined }>();
    // Firing order follows timestamps (ties between keys have no specified order).
    expect(got.map((x) => x.value.t)).toEqual([20, 25, 10, 27, 30, 30, 100]);
    expect(byJson(got)).toEqual(byJson([
      { value: { key: 'b', t: 20, domain: 'event-time', ctxTs: 20, wm: 26 }, ts: 20 },
      { value: { key: 'a', t: 25, domain: 'event-time', ctxTs: 25, wm: 26 }, ts: 25 },
      { value: { key: 'a', t: 10, domain: 'event-time', ctxTs: 10, wm: 31 }, ts: 10 },
      { value: { key: 'c', t: 27, domain: 'event-time', ctxTs: 27, wm: 31 }, ts: 27 },
      { value: { key: 'a', t: 30, domain: 'event-time', ctxTs: 30, wm: 31 }, ts: 30 },
      { value: { key: 'b', t: 30, domain: 'event-time', ctxTs: 30, wm: 31 }, ts: 30 },
      { value: { key: 'x', t: 100, domain: 'event-time', ctxTs: 100, wm: MAX_WATERMARK }, ts: 100 },
    ]));
  });

  it('a timer exactly at the watermark fires; one just above it does not', async () => {
    const data: T[] = [{ k: 'a', ts: 1, timer: 10 }, { k: 'b', ts: 2, timer: 11, wm: 10 }, { k: 'c', ts: 3, timer: 12, wm: 11 }];
    const r = await runEventTimers(data);
    expect(r.collected<{ value: Fired }>().map(({ value: f }) => [f.key, f.t, f.wm])).toEqual([
      ['a', 10, 10],
      ['b', 11, 11],
      ['c', 12, MAX_WATERMARK],
    ]);
  });

  it('deleting a timer prevents it from firing, for that key only; delete then register fires once', async () => {
    const data: T[] = [
      { k: 'a', ts: 1, timer: 50 },
      { k: 'b', ts: 2, timer: 50 },
      { k: 'a', ts: 3, del: 50 }, // a@50 gone, b@50 stays
      { k: 'c', ts: 4, timer: 60 },
      { k: 'c', ts: 5, del: 60 },
      { k: 'c', ts: 6, timer: 60 }, // registered again: fires once
      { k: 'd', ts: 7, del: 70 }, // deleting a timer that does not exist is harmless
      { k: 'e', ts: 8, timer: 40, wm: 39 },
      { k: 'e', ts: 9, del: 40 }, // deleted before the watermark reaches it
    ];
    const r = await runEventTimers(data);
    expect(r.collected<{ value: Fired }>().map(({ value: f }) => [f.key, f.t])).toEqual([['b', 50], ['c', 60]]);
  });

  it('timers registered in onTimer fire in the same watermark advance when due', async () => {
    const chain: KeyedProcessFunction<string, T, Fired> = {
      processElement(x, ctx) {
        if (x.timer !== undefined) ctx.timerService.registerEventTimeTimer(x.timer);
      },
      onTimer(t, ctx, out) {
        out.collect({ key: ctx.currentKey, t, domain: ctx.timeDomain, ctxTs: ctx.timestamp, wm: ctx.timerService.currentWatermark() });
        if (t < 20) ctx.timerService.registerEventTimeTimer(t + 5);
      },
    };
    // One timer at 5; wm 12 fires 5 and 10 (registered by the 5 firing); 15 waits until the end.
    const r = await runEventTimers([{ k: 'a', ts: 0, timer: 5 }, { k: 'a', ts: 1, wm: 12 }], chain);
    expect(r.collected<{ value: Fired }>().map(({ value: f }) => [f.t, f.wm])).toEqual([
      [5, 12], [10, 12], [15, MAX_WATERMARK], [20, MAX_WATERMARK],
    ]);
  });

  it('processElement sees the record timestamp and the watermark punctuated after the previous record', async () => {
    const seen: KeyedProcessFunction<string, T, [number | undefined, number]> = {
      processElement(_x, ctx, out) {
        out.collect([ctx.timestamp, ctx.timerService.currentWatermark()]);
      },
    };
    const r = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      env.fromCollection<T>([{ k: 'a', ts: 5 }, { k: 'a', ts: 7, wm: 6 }, { k: 'a', ts: 3 }])
        .assignTimestampsAndWatermarks(punctuated<T>()).keyBy((x) => x.k).process(seen).collect();
    });
    // The watermark emitted in onEvent follows its record: the ts-7 record still sees MIN.
    expect(r.collected()).toEqual([[5, MIN_WATERMARK], [7, MIN_WATERMARK], [3, 6]]);
  });

  it('state and timers are per key: onTimer reads the state of the key it fires for', async () => {
    class CountThenReport implements KeyedProcessFunction<string, T, [string, number, number]> {
      private n!: ValueState<number>;
      open(ctx: KeyedRuntimeContext) {
        this.n = ctx.getState(new ValueStateDescriptor<number>('n', { defaultValue: 0 }));
      }
      processElement(x: T, ctx: KeyedContext<string>) {
        this.n.update(this.n.value()! + 1);
        ctx.timerService.registerEventTimeTimer(x.timer!);
      }
      onTimer(t: number, ctx: OnTimerContext<string>, out: Collector<[string, number, number]>) {
        out.collect([ctx.currentKey, t, this.n.value()!]);
      }
    }
    // a: 3 records, all timers at 100 (one firing); b: 1 record, timer 50. Firings read each key's count.
    const data: T[] = [
      { k: 'a', ts: 1, timer: 100 }, { k: 'b', ts: 2, timer: 50 }, { k: 'a', ts: 3, timer: 100 }, { k: 'a', ts: 4, timer: 100 },
    ];
    const r = await runInline((env) => {
      env.fromCollection(data).assignTimestampsAndWatermarks(punctuated<T>()).keyBy((x) => x.k).process(new CountThenReport()).collect();
    });
    expect(r.collected()).toEqual([['b', 50, 1], ['a', 100, 3]]);
  });
});

describe('processing-time timers (KeyedProcessFunction, manual clock)', () => {
  /** Register a processing-time timer at `at` and/or delete the one at `del`; `et`: an event-time timer. */
  interface P { k: string; at?: number; del?: number; et?: number }

  it('fire when the clock passes them, with domain processing-time, the timer\'s time as ctx.timestamp (Flink\'s OnTimerContext) and no record timestamp; dedupe and delete; pending ones do not fire at the end', async () => {
    const clock = new ManualClock(0);
    const steps: Step<P>[] = [
      { emit: { k: 'a', at: 10 }, ts: 1 },
      { emit: { k: 'b', at: 10 }, ts: 2 },
      { advanceTo: 3 },
      { emit: { k: 'a', at: 10 }, ts: 3 }, // duplicate of a@10
      { emit: { k: 'c', at: 15 }, ts: 4 },
      { advanceTo: 5 },
      { emit: { k: 'c', del: 15 }, ts: 5 },
      { emit: { k: 'c', at: 16 }, ts: 6 },
      { advanceTo: 12 }, // fires a@10 and b@10 (clock 12)
      { emit: { k: 'a', at: 30, et: 1000 }, ts: 7 }, // et: an event-time timer, fires at the end
      { advanceTo: 16 }, // exactly c@16's time: fires it
      { emit: { k: 'b', at: 100 }, ts: 8 },
      // End of input at clock 16: a@30 and b@100 never fire.
    ];
    const fn: KeyedProcessFunction<string, P, unknown> = {
      processElement(x, ctx) {
        if (x.at !== undefined) ctx.timerService.registerProcessingTimeTimer(x.at);
        if (x.del !== undefined) ctx.timerService.deleteProcessingTimeTimer(x.del);
        if (x.et !== undefined) ctx.timerService.registerEventTimeTimer(x.et);
      },
      onTimer(t, ctx, out) {
        out.collect({ key: ctx.currentKey, t, domain: ctx.timeDomain, ctxTs: ctx.timestamp ?? null, now: ctx.timerService.currentProcessingTime() });
      },
    };
    const r = await runInline((env) => {
      env.setBufferTimeout(0);
      const s = env.fromSource(scripted(steps, { clock })).keyBy((x) => x.k).process(fn);
      stamped(s).map(({ value, ts }) => ({ ...(value as object), outTs: ts ?? null })).collect();
    }, { clock });
    expect(byJson(r.collected())).toEqual(byJson([
      { key: 'a', t: 10, domain: 'processing-time', ctxTs: 10, now: 12, outTs: null },
      { key: 'b', t: 10, domain: 'processing-time', ctxTs: 10, now: 12, outTs: null },
      { key: 'c', t: 16, domain: 'processing-time', ctxTs: 16, now: 16, outTs: null },
      { key: 'a', t: 1000, domain: 'event-time', ctxTs: 1000, now: 16, outTs: 1000 },
    ]));
  });
});

describe('KeyedCoProcessFunction timers', () => {
  interface A { k: string; ts: number; del?: number }

  /** Counts records per key over both inputs; a timer at ts + 10 per record; reports key, time and count. */
  class Both implements KeyedCoProcessFunction<string, A, A, [string, number, string, number | undefined, number]> {
    private n!: ValueState<number>;
    open(ctx: KeyedRuntimeContext) {
      this.n = ctx.getState(new ValueStateDescriptor<number>('n', { defaultValue: 0 }));
    }
    private on(x: A, ctx: KeyedContext<string>) {
      this.n.update(this.n.value()! + 1);
      if (x.del !== undefined) ctx.timerService.deleteEventTimeTimer(x.del);
      else ctx.timerService.registerEventTimeTimer(x.ts + 10);
    }
    processElement1(x: A, ctx: KeyedContext<string>) {
      this.on(x, ctx);
    }
    processElement2(x: A, ctx: KeyedContext<string>) {
      this.on(x, ctx);
    }
    onTimer(t: number, ctx: OnTimerContext<string>, out: Collector<[string, number, string, number | undefined, number]>) {
      out.collect([ctx.currentKey, t, ctx.timeDomain, ctx.timestamp, this.n.value()!]);
    }
  }

  it('event-time timers from both inputs: one per key and time, key state shared, fire in time order at the end of input', async () => {
    // Input 1: a@0 -> 10, b@5 -> 15, c@7 -> 17. Input 2: a@0 -> 10 (same key and time as
    // input 1: one firing), e@20 -> 30, then e deletes 30 (same input, so the order is fixed).
    // No watermarks but the final ones: everything fires when both inputs have ended.
    const r = await runInline((env) => {
      const one = env.fromCollection<A>([{ k: 'a', ts: 0 }, { k: 'b', ts: 5 }, { k: 'c', ts: 7 }], { timestamp: (x) => x.ts });
      const two = env.fromCollection<A>([{ k: 'a', ts: 0 }, { k: 'e', ts: 20 }, { k: 'e', ts: 21, del: 30 }], { timestamp: (x) => x.ts });
      one.connect(two).keyBy((x) => x.k, (x) => x.k).process(new Both()).collect();
    });
    expect(r.collected()).toEqual([
      ['a', 10, 'event-time', 10, 2], // a: one record on each input
      ['b', 15, 'event-time', 15, 1],
      ['c', 17, 'event-time', 17, 1],
    ]);
  });

  it('processing-time timers from both inputs (manual clock): dedupe across inputs, fire as the clock passes', async () => {
    interface Q { k: string; at: number; last?: boolean }
    const clock = new ManualClock(0);
    const input2Done = new Signal();
    // Input 2 registers a@10 and c@10 at clock 0; input 1 starts only after that.
    const steps: Step<Q>[] = [
      { waitFor: input2Done, timeoutMs: 5000 },
      { advanceTo: 5 },
      { emit: { k: 'a', at: 10 } }, // duplicate of input 2's a@10
      { emit: { k: 'b', at: 20 } },
      { advanceTo: 11 }, // fires a@10, c@10
      { emit: { k: 'a', at: 12 } },
      { advanceTo: 30 }, // fires a@12, b@20
      { emit: { k: 'c', at: 100 } }, // never fires: end of input at clock 30
    ];
    const fn: KeyedCoProcessFunction<string, Q, Q, unknown> = {
      processElement1(x, ctx) {
        ctx.timerService.registerProcessingTimeTimer(x.at);
      },
      processElement2(x, ctx) {
        if (x.last) input2Done.set();
        else ctx.timerService.registerProcessingTimeTimer(x.at);
      },
      onTimer(t, ctx, out) {
        out.collect([ctx.currentKey, t, ctx.timeDomain, ctx.timestamp ?? null, ctx.timerService.currentProcessingTime()]);
      },
    };
    const r = await runInline((env) => {
      env.setBufferTimeout(0);
      const one = env.fromSource(scripted(steps, { clock }));
      const two = env.fromCollection<Q>([{ k: 'a', at: 10 }, { k: 'c', at: 10 }, { k: 'z', at: 0, last: true }]);
      one.connect(two).keyBy((x) => x.k, (x) => x.k).process(fn).collect();
    }, { clock });
    expect(input2Done.isSet).toBe(true);
    expect(byJson(r.collected())).toEqual(byJson([
      ['a', 10, 'processing-time', 10, 11],
      ['c', 10, 'processing-time', 10, 11],
      ['a', 12, 'processing-time', 12, 30],
      ['b', 20, 'processing-time', 20, 30],
    ]));
  });
});

describe('timers at the end of input', () => {
  it('a processing-time timer does not fire while the task waits for the final checkpoint (before: its output was emitted, and committed)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-quiesce-'));
    try {
      const r = await runInline((env) => {
        env.fromCollection([{ k: 'a' }]).keyBy((x) => x.k).process<string>({
          processElement(x, ctx, out) {
            ctx.timerService.registerProcessingTimeTimer(ctx.timerService.currentProcessingTime() + 200);
            out.collect(`rec ${x.k}`);
          },
          onTimer(_t, ctx, out) {
            out.collect(`fired ${ctx.currentKey}`);
          },
        } satisfies KeyedProcessFunction<string, { k: string }, string>).collect();
        // A second branch keeps the job (and so the final checkpoint) going for about 1.5 s.
        env.fromGenerator((i) => i, { count: 15, ratePerSecond: 10 }).addSink(() => {});
      }, { checkpoint: { interval: 300, dir } });
      expect(r.collected()).toEqual(['rec a']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an event-time timer registered past the end of event time (Number.MAX_VALUE) fires at the end of input', async () => {
    const r = await runEventTimers([{ k: 'a', ts: 1, timer: Number.MAX_VALUE }, { k: 'a', ts: 2, timer: 2 ** 53 + 2 }, { k: 'b', ts: 3, timer: MAX_WATERMARK }]);
    expect(r.collected().map((x) => (x as { value: Fired }).value.t).sort((a, b) => a - b)).toEqual([MAX_WATERMARK, 2 ** 53 + 2, Number.MAX_VALUE]);
  });
});

