/**
 * Watermark semantics against hand-computed results: the built-in generators, periodic
 * emission (made deterministic with a ManualClock moved by a scripted source), the minimum
 * over the inputs of a union and of a two-input (connect) operator, and idleness.
 * Sequencing between two sources uses signals set by the downstream function (one thread).
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_WATERMARK, MIN_WATERMARK, ManualClock, OutputTag, TumblingEventTimeWindows, WatermarkStrategy,
  type DataStream, type KeyedCoProcessFunction, type KeyedProcessFunction, type ProcessWindowFunction,
  type WatermarkOutput,
} from '../../src/index.ts';
import { runInline } from '../helpers/run.ts';
import { failureOf } from '../api/util.ts';
import { InputChannel } from '../../src/runtime/channels/channel.ts';
import { InputGate, type ValveOutput } from '../../src/runtime/input-gate.ts';
import { punctuated, scripted, Signal, type Step } from './support.ts';

interface R {
  readonly src: string;
  readonly ts: number;
  readonly v: number;
  readonly wm?: number;
}
const r = (src: string, ts: number, v = 0, wm?: number): R => (wm === undefined ? { src, ts, v } : { src, ts, v, wm });

/** Collects what a generator emits. */
function recorder(): WatermarkOutput & { wms: number[]; idle: boolean[] } {
  const o = {
    wms: [] as number[],
    idle: [] as boolean[],
    emitWatermark: (t: number) => void o.wms.push(t),
    markIdle: () => void o.idle.push(true),
    markActive: () => void o.idle.push(false),
  };
  return o;
}

describe('built-in watermark generators', () => {
  it('forBoundedOutOfOrderness: watermark = highest timestamp seen - bound - 1; MIN before any record', () => {
    const gen = WatermarkStrategy.forBoundedOutOfOrderness<number>(50).createGenerator();
    const out = recorder();
    gen.onPeriodicEmit(out); // nothing seen yet
    gen.onEvent(100, 100, out);
    gen.onPeriodicEmit(out); // 100 - 50 - 1
    gen.onEvent(250, 250, out);
    gen.onEvent(180, 180, out); // out of order: does not lower the maximum
    gen.onPeriodicEmit(out); // 250 - 50 - 1
    expect(out.wms).toEqual([MIN_WATERMARK, 49, 199]);
  });

  it('forBoundedOutOfOrderness accepts a duration string', () => {
    const gen = WatermarkStrategy.forBoundedOutOfOrderness<number>('2s').createGenerator();
    const out = recorder();
    gen.onEvent(10_000, 10_000, out);
    gen.onPeriodicEmit(out);
    expect(out.wms).toEqual([7_999]); // 10000 - 2000 - 1
  });

  it('forMonotonousTimestamps: watermark = highest timestamp seen - 1', () => {
    const gen = WatermarkStrategy.forMonotonousTimestamps<number>().createGenerator();
    const out = recorder();
    gen.onEvent(100, 100, out);
    gen.onEvent(250, 250, out);
    gen.onPeriodicEmit(out);
    expect(out.wms).toEqual([249]);
  });
});

/** Window sums that report the watermark at which they fired; late records go to 'late'. */
function windowSums(s: DataStream<R>): void {
  const late = new OutputTag<R>('late');
  const w = s.keyBy(() => 'k').window(TumblingEventTimeWindows.of(10)).sideOutputLateData(late)
    .reduce((a, b) => ({ src: a.src, ts: Math.max(a.ts, b.ts), v: a.v + b.v }), {
      process(_k, ctx, [x], out) {
        out.collect([ctx.window.start, x!.v, ctx.currentWatermark()]);
      },
    } satisfies ProcessWindowFunction<R, [number, number, number], string>);
  w.collect('main');
  w.getSideOutput(late).map((x) => [x.ts, x.v]).collect('late');
}

describe('periodic watermarks (manual clock)', () => {
  it('bounded out-of-orderness decides lateness from the periodically emitted watermark', async () => {
    // Interval 100 ms of (manual) processing time; bound 10.
    const clock = new ManualClock(0);
    const steps: Step<R>[] = [
      { emit: r('a', 100, 1) },
      { emit: r('a', 115, 2) },
      { advanceTo: 100 }, // periodic: 115 - 10 - 1 = 104
      { emit: r('a', 103, 4) }, // [100,110) ends at 109 > 104: not late (though 12 behind the max)
      { emit: r('a', 95, 8) }, // [90,100) ends at 99 <= 104: late
      { emit: r('a', 130, 16) },
      { advanceTo: 200 }, // periodic: 130 - 11 = 119: fires [100,110) = 1+4 and [110,120) = 2
      { emit: r('a', 109, 32) }, // late
    ];
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(100);
      windowSums(env.fromSource(scripted(steps, { clock }))
        .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<R>(10).withTimestampAssigner((x) => x.ts)));
    }, { clock });
    expect(res.collected('main')).toEqual([[100, 5, 119], [110, 2, 119], [130, 16, MAX_WATERMARK]]);
    expect(res.collected('late')).toEqual([[95, 8], [109, 32]]);
  });

  it('monotonous timestamps: the window fires only once the watermark (max - 1) reaches end - 1', async () => {
    const clock = new ManualClock(0);
    const steps: Step<R>[] = [
      { emit: r('a', 5, 1) },
      { emit: r('a', 9, 2) },
      { advanceTo: 100 }, // wm 8: [0,10) needs 9
      { emit: r('a', 10, 4) },
      { advanceTo: 200 }, // wm 9: fires [0,10) = 3
      { emit: r('a', 9, 8) }, // late: 9 <= 9
    ];
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(100);
      windowSums(env.fromSource(scripted(steps, { clock }))
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<R>().withTimestampAssigner((x) => x.ts)));
    }, { clock });
    expect(res.collected('main')).toEqual([[0, 3, 9], [10, 4, MAX_WATERMARK]]);
    expect(res.collected('late')).toEqual([[9, 8]]);
  });
});

describe('source watermarks (fromSource with watermarks): periodic, and per poll only for alignment', () => {
  // One record per poll (the scripted reader); bound 10, interval 100 ms of manual time.
  const steps = (): Step<R>[] => [
    { emit: r('a', 100, 1) },
    { emit: r('a', 115, 2) },
    { emit: r('a', 95, 4) }, // periodic only: no watermark yet, so not late
    { advanceTo: 100 }, // periodic: 115 - 11 = 104: fires [90,100) = 4
    { emit: r('a', 99, 8) }, // late: [90,100) ends at 99 <= 104
    { emit: r('a', 140, 16) },
    { emit: r('a', 108, 32) }, // periodic only: the watermark is still 104, so not late
  ];
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness<R>(10).withTimestampAssigner((x) => x.ts);

  it('without alignment the reader emits watermarks every auto-watermark interval, not after every poll (as Flink)', async () => {
    const clock = new ManualClock(0);
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(100);
      windowSums(env.fromSource(scripted(steps(), { clock, splitOutput: true }), { watermarks: strategy }));
    }, { clock });
    expect(res.collected('main')).toEqual([[90, 4, 104], [100, 33, MAX_WATERMARK], [110, 2, MAX_WATERMARK], [140, 16, MAX_WATERMARK]]);
    expect(res.collected('late')).toEqual([[99, 8]]);
  });

  it('with maxDrift every poll also asks for a watermark, so alignment sees each split move', async () => {
    const clock = new ManualClock(0);
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(100);
      windowSums(env.fromSource(scripted(steps(), { clock, splitOutput: true }), { watermarks: strategy, maxDrift: 1_000 }));
    }, { clock });
    // After the poll of 115 the watermark is 104 at once: 95 and 99 are late; after 140 it is 129.
    expect(res.collected('main')).toEqual([[100, 1, 129], [110, 2, 129], [140, 16, MAX_WATERMARK]]);
    expect(res.collected('late')).toEqual([[95, 4], [99, 8], [108, 32]]);
  });

  it('with the interval off (0) every poll asks for a watermark, or event time would not move before the end', async () => {
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      windowSums(env.fromSource(scripted(steps().filter((s) => !('advanceTo' in s)), { splitOutput: true }), { watermarks: strategy }));
    });
    expect(res.collected('late')).toEqual([[95, 4], [99, 8], [108, 32]]);
  });
});

describe('watermark propagation', () => {
  it('a later assignTimestampsAndWatermarks ignores upstream watermarks except the final one', async () => {
    const fn: KeyedProcessFunction<string, R, [number, number]> = {
      processElement(x, ctx) {
        ctx.timerService.registerEventTimeTimer(x.ts);
      },
      onTimer(t, ctx, out) {
        out.collect([t, ctx.timerService.currentWatermark()]);
      },
    };
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      env.fromCollection([r('a', 50, 0, 100), r('a', 60, 0, 200)])
        .assignTimestampsAndWatermarks(punctuated<R>())
        .assignTimestampsAndWatermarks(WatermarkStrategy.noWatermarks<R>())
        .keyBy((x) => x.src).process(fn).collect();
    });
    // Without the second strategy, wm 100 would fire 50 at 100; here only the final watermark fires.
    expect(res.collected()).toEqual([[50, MAX_WATERMARK], [60, MAX_WATERMARK]]);
  });

  it('a two-input operator whose second input comes through global(): the subtask it reaches no channel of still moves its event time (before: held at the minimum for good)', async () => {
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      const a = env.fromCollection(Array.from({ length: 20 }, (_, i) => r('a', i * 10, i, i * 10))).assignTimestampsAndWatermarks(punctuated<R>()).rebalance();
      const b = env.fromCollection(['rule']).global();
      a.connect(b).process<number>({
        processElement1(_x, ctx, out) {
          out.collect(ctx.currentWatermark());
        },
        processElement2() {},
      }).setParallelism(2).collect();
    });
    const seen = res.collected<number>();
    expect(seen.length).toBe(20);
    // Each subtask's first record may come before any watermark; every later one sees one. Before,
    // every record of the subtask without a global() channel saw the minimum (10 of 20).
    expect(seen.filter((w) => w === MIN_WATERMARK).length).toBeLessThanOrEqual(2);
  });

  it('a watermark generator whose onEvent throws is named as such, not as the timestamp assigner', async () => {
    const msg = await failureOf((env) => {
      env.fromCollection([r('a', 1)]).assignTimestampsAndWatermarks(WatermarkStrategy.forGenerator<R>(() => ({
        onEvent() {
          throw new Error('generator broke');
        },
        onPeriodicEmit() {},
      })).withTimestampAssigner((x) => x.ts)).collect();
    });
    expect(msg).toMatch(/watermark generator.*generator broke/);
    expect(msg).not.toMatch(/timestamp assigner/);
  });

  it('an assigner that returns no finite number fails the job naming it, chained to the source or after an exchange', async () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, '12' as unknown as number]) {
      const chained = await failureOf((env) => {
        env.fromCollection([r('a', 1)]).assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<R>().withTimestampAssigner(() => bad)).collect();
      });
      expect(chained).toMatch(/timestamp assigner returned (NaN|Infinity|12); expected epoch milliseconds as a finite number/);
      const exchanged = await failureOf((env) => {
        env.fromCollection([r('a', 1)]).rebalance().assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<R>().withTimestampAssigner(() => bad)).collect();
      });
      expect(exchanged).toMatch(/timestamp assigner returned (NaN|Infinity|12); expected epoch milliseconds as a finite number/);
    }
    // No assigner and records without a timestamp: the same check, on the record's own (absent) one.
    const none = await failureOf((env) => {
      env.fromCollection([r('a', 1)]).assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<R>()).collect();
    });
    expect(none).toMatch(/timestamp assigner returned -Infinity/);
  });

  it('a watermark lower than an earlier one is ignored', async () => {
    const fn: KeyedProcessFunction<string, R, number> = {
      processElement(_x, ctx, out) {
        out.collect(ctx.timerService.currentWatermark());
      },
    };
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      env.fromCollection([r('a', 1, 0, 20), r('a', 2, 0, 10), r('a', 3, 0, 15), r('a', 4)])
        .assignTimestampsAndWatermarks(punctuated<R>()).keyBy((x) => x.src).process(fn).collect();
    });
    expect(res.collected()).toEqual([MIN_WATERMARK, 20, 20, 20]);
  });
});

/**
 * Two sources joined by union or connect, keyed onto one key. Every record registers an
 * event-time timer at its timestamp; each firing reports [timer, watermark, extra].
 */
type Join = 'union' | 'connect';

function joined(how: Join, a: DataStream<R>, b: DataStream<R>, onRecord: (x: R) => void, onFire: (t: number, wm: number) => unknown): void {
  if (how === 'union') {
    const fn: KeyedProcessFunction<string, R, unknown> = {
      processElement(x, ctx) {
        ctx.timerService.registerEventTimeTimer(x.ts);
        onRecord(x);
      },
      onTimer(t, ctx, out) {
        out.collect(onFire(t, ctx.timerService.currentWatermark()));
      },
    };
    a.union(b).keyBy(() => 'k').process(fn).collect();
  } else {
    const fn: KeyedCoProcessFunction<string, R, R, unknown> = {
      processElement1(x, ctx) {
        ctx.timerService.registerEventTimeTimer(x.ts);
        onRecord(x);
      },
      processElement2(x, ctx) {
        ctx.timerService.registerEventTimeTimer(x.ts);
        onRecord(x);
      },
      onTimer(t, ctx, out) {
        out.collect(onFire(t, ctx.timerService.currentWatermark()));
      },
    };
    a.connect(b).keyBy(() => 'k', () => 'k').process(fn).collect();
  }
}

describe.each<Join>(['union', 'connect'])('the watermark of a %s is the minimum over its inputs', (how) => {
  it('the slower input holds event time back until it advances', async () => {
    // A: 100, 200, 300 with punctuated watermarks 100, 200, 300. B: 50 (wm 50), then, once the
    // function has seen A's 300, 150 (wm 150). While B is at 50 the combined watermark is
    // min(A, 50) = 50: timer 50 fires at 50, and 100 does not. B's 150 makes it
    // min(>= 200, 150) = 150: 100 and 150 fire at 150. 200 and 300 fire once B ends.
    const sawA300 = new Signal();
    const fired150 = new Signal();
    const stepsA: Step<R>[] = [
      { emit: r('A', 100, 0, 100) }, { emit: r('A', 200, 0, 200) }, { emit: r('A', 300, 0, 300) },
      { waitFor: fired150, timeoutMs: 5000 },
    ];
    const stepsB: Step<R>[] = [
      { emit: r('B', 50, 0, 50) },
      { waitFor: sawA300, timeoutMs: 5000 },
      { emit: r('B', 150, 0, 150) },
      { waitFor: fired150, timeoutMs: 5000 },
    ];
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(0);
      env.setBufferTimeout(0);
      const a = env.fromSource(scripted(stepsA)).assignTimestampsAndWatermarks(punctuated<R>());
      const b = env.fromSource(scripted(stepsB)).assignTimestampsAndWatermarks(punctuated<R>());
      joined(how, a, b, (x) => {
        if (x.src === 'A' && x.ts === 300) sawA300.set();
      }, (t, wm) => {
        if (t === 150) fired150.set();
        return [t, wm];
      });
    });
    const got = res.collected<[number, number]>();
    expect(got.map(([t]) => t)).toEqual([50, 100, 150, 200, 300]);
    expect(got.slice(0, 3)).toEqual([[50, 50], [100, 150], [150, 150]]);
    // 200 and 300 fire after B has ended: at 300 or at the final watermark, depending on
    // which source's end is seen first; never before B's 150 (that would be a maximum).
    for (const [, wm] of got.slice(3)) expect([300, MAX_WATERMARK]).toContain(wm);
  });
});

/**
 * Idleness: A keeps producing while moving the manual clock; B produces one record and then
 * nothing. Watermarks are periodic (every 10 ms), monotonous (max - 1); idle timeout 50 ms.
 */
function idleScenario(how: Join, idleness: boolean, guardMs: number) {
  const clock = new ManualClock(0);
  const fired400 = new Signal();
  let bEnded = false;
  // A: each record, then 20 ms pass (the periodic emission then reports ts - 1).
  const stepsA: Step<R>[] = [100, 200, 300, 400, 500].flatMap((ts, i): Step<R>[] => [{ emit: r('A', ts) }, { advanceTo: 20 * (i + 1) }]);
  stepsA.push({ waitFor: fired400, timeoutMs: guardMs });
  const stepsB: Step<R>[] = [{ emit: r('B', 5) }, { waitFor: fired400, timeoutMs: guardMs }];
  const strategy = () => {
    const s = WatermarkStrategy.forMonotonousTimestamps<R>().withTimestampAssigner((x) => x.ts);
    return idleness ? s.withIdleness(50) : s;
  };
  return runInline((env) => {
    env.setAutoWatermarkInterval(10);
    env.setBufferTimeout(0);
    const a = env.fromSource(scripted(stepsA, { clock })).assignTimestampsAndWatermarks(strategy());
    const b = env.fromSource(scripted(stepsB, { clock, onEnd: () => (bEnded = true) })).assignTimestampsAndWatermarks(strategy());
    joined(how, a, b, () => {}, (t) => {
      if (t === 400) fired400.set();
      return [t, bEnded];
    });
  }, { clock });
}

describe.each<Join>(['union', 'connect'])('idleness on a %s', (how) => {
  it('an idle input does not hold back the watermark', async () => {
    // B's only record (ts 5) was read at clock <= 20; by clock 80 B is idle, so the
    // combined watermark follows A alone (ts - 1 after each of A's records): timers 5 .. 400
    // fire while B is still running (and waiting for timer 400). 500 needs the final watermark.
    const res = await idleScenario(how, true, 5000);
    expect(res.collected()).toEqual([[5, false], [100, false], [200, false], [300, false], [400, false], [500, true]]);
  });

  it('without withIdleness the silent input holds the watermark back until it ends', async () => {
    // B's watermark stays at 4: nothing can fire while B runs. B gives up waiting after the
    // (real-time) guard and ends; then everything fires.
    const res = await idleScenario(how, false, 300);
    expect(res.collected()).toEqual([[5, true], [100, true], [200, true], [300, true], [400, true], [500, true]]);
  });
});

describe('idleness on a union: an input resuming behind the watermark', () => {
  it('does not hold back the others until it catches up (Flink StatusWatermarkValve alignment)', async () => {
    // As above, until B is idle and timers 5, 100, 200 have fired (combined wm 299). Then B
    // resumes with ts 10 (its watermark becomes 9, far behind 299). In Flink's valve a channel
    // that becomes active again with a watermark below the last emitted one is not "aligned"
    // and is left out of the minimum until it catches up, so A's 399 and 499 still advance
    // event time: timer 10 (registered behind the watermark) and 300 fire at 399, 400 at 499,
    // all while B runs. (Only a two-input operator's combination has no such alignment.)
    const clock = new ManualClock(0);
    const fired200 = new Signal();
    const sawB10 = new Signal();
    const fired400 = new Signal();
    let bEnded = false;
    const stepsA: Step<R>[] = [
      { emit: r('A', 100) }, { advanceTo: 30 }, { emit: r('A', 200) }, { advanceTo: 60 }, { emit: r('A', 300) },
      { advanceTo: 90 }, // A's wm 299; B (last record at clock <= 30) is idle by the check at 90
      { waitFor: sawB10, timeoutMs: 5000 },
      // B's record at clock 90: the clock stays below 90 + 50 so that B does not go idle again.
      { emit: r('A', 400) }, { advanceTo: 100 }, { emit: r('A', 500) }, { advanceTo: 110 },
      { waitFor: fired400, timeoutMs: 3000 },
    ];
    const stepsB: Step<R>[] = [
      { emit: r('B', 5) },
      { waitFor: fired200, timeoutMs: 5000 },
      { emit: r('B', 10) }, // resumes: active again, watermark 9 at the next periodic emission
      { waitFor: fired400, timeoutMs: 3000 },
    ];
    const strategy = () => WatermarkStrategy.forMonotonousTimestamps<R>().withTimestampAssigner((x) => x.ts).withIdleness(50);
    const res = await runInline((env) => {
      env.setAutoWatermarkInterval(10);
      env.setBufferTimeout(0);
      const a = env.fromSource(scripted(stepsA, { clock })).assignTimestampsAndWatermarks(strategy());
      const b = env.fromSource(scripted(stepsB, { clock, onEnd: () => (bEnded = true) })).assignTimestampsAndWatermarks(strategy());
      joined('union', a, b, (x) => {
        if (x.src === 'B' && x.ts === 10) sawB10.set();
      }, (t) => {
        if (t === 200) fired200.set();
        if (t === 400) fired400.set();
        return [t, bEnded];
      });
    }, { clock });
    expect(res.collected()).toEqual([
      [5, false], [100, false], [200, false], // B idle
      [10, false], [300, false], // wm 399
      [400, false], // wm 499
      [500, true], // final watermark
    ]);
  });
});

describe('the input gate\'s valve (Flink\'s StatusWatermarkValve)', () => {
  /** A gate of two channels: A (0) at watermark 10, B (1); returns what it emitted after `steps`. */
  function valve(steps: (gate: InputGate, out: ValveOutput) => void): { watermarks: number[]; statuses: boolean[] } {
    const gate = new InputGate(0, [0, 1].map((i) => new InputChannel(i, i, () => {})));
    const got = { watermarks: [] as number[], statuses: [] as boolean[] };
    const out: ValveOutput = { watermark: (t) => void got.watermarks.push(t), status: (idle) => void got.statuses.push(idle) };
    gate.onWatermark(0, 10, out);
    gate.onWatermark(1, 10, out);
    steps(gate, out);
    return got;
  }

  it('a channel that ended stays active at the end of event time: A idle and B ended give MAX in either order (before: B first left the gate idle at 10)', () => {
    const bFirst = valve((g, out) => {
      g.endChannel(1, out);
      g.onStatus(0, true, out);
    });
    const aFirst = valve((g, out) => {
      g.onStatus(0, true, out);
      g.endChannel(1, out);
    });
    expect(bFirst.watermarks).toEqual([10, MAX_WATERMARK]);
    expect(aFirst.watermarks).toEqual([10, MAX_WATERMARK]);
    expect(bFirst.statuses).toEqual([]);
    expect(aFirst.statuses).toEqual([]);
  });

  it('the last active channel going idle at the gate\'s watermark moves it to the highest channel watermark first, in either order (Flink\'s valve)', () => {
    // A at 10 holds the gate back while B is at 50: whichever goes idle last, event time ends at
    // 50 before the gate is idle. Before, "B idle, then A" left the gate at 10 until traffic came back.
    const steps = (first: number, second: number) => (g: InputGate, out: ValveOutput) => {
      g.onWatermark(1, 50, out);
      g.onStatus(first, true, out);
      g.onStatus(second, true, out);
    };
    const aLast = valve(steps(1, 0));
    const bLast = valve(steps(0, 1));
    expect(aLast.watermarks).toEqual([10, 50]);
    expect(bLast.watermarks).toEqual([10, 50]);
    expect(aLast.statuses).toEqual([true]);
    expect(bLast.statuses).toEqual([true]);
    // Active again behind the gate's watermark: no regression; event time moves once it catches up.
    const back = valve((g, out) => {
      steps(1, 0)(g, out);
      g.onWatermark(0, 20, out);
      g.onWatermark(0, 60, out);
    });
    expect(back.watermarks).toEqual([10, 50, 60]);
    expect(back.statuses).toEqual([true, false]);
  });

  it('a status that follows a channel\'s end changes nothing: the ended channel stays active at the end of event time', () => {
    // An assignTimestampsAndWatermarks upstream used to send an idle status after its END_OF_DATA
    // (its periodic mail kept running); the gate made the ended channel idle, so B going idle left
    // the gate idle at 100 instead of at the end of event time: windows did not fire.
    const steps = (late: boolean) => (g: InputGate, out: ValveOutput) => {
      g.onWatermark(1, 100, out);
      g.endChannel(0, out);
      if (late) g.onStatus(0, true, out);
      g.onStatus(1, true, out);
    };
    const without = valve(steps(false));
    const withLate = valve(steps(true));
    expect(without.watermarks).toEqual([10, 100, MAX_WATERMARK]);
    expect(withLate).toEqual(without);
  });

  it('every channel idle: the gate is idle; a stop ends a channel without moving event time', () => {
    const idle = valve((g, out) => {
      g.onStatus(0, true, out);
      g.onStatus(1, true, out);
    });
    expect(idle.statuses).toEqual([true]);
    const stopped = valve((g, out) => {
      g.onWatermark(1, 50, out);
      g.endChannel(1, out, true);
      g.onStatus(0, true, out);
    });
    expect(stopped.watermarks).toEqual([10]);
    expect(stopped.statuses).toEqual([true]);
  });
});
