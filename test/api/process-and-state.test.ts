/**
 * Process functions: ProcessFunction with side outputs, KeyedProcessFunction with every
 * kind of keyed state (and TTL on a manual clock), operator list state.
 */
import { describe, expect, it } from 'vitest';
import {
  AggregatingStateDescriptor, ListStateDescriptor, ManualClock, MapStateDescriptor, OutputTag, ReducingStateDescriptor,
  ValueStateDescriptor,
  type AggregatingState, type Collector, type KeyedContext, type KeyedProcessFunction, type KeyedRuntimeContext, type ListState,
  type MapState, type ProcessContext, type ProcessFunction, type ReducingState, type RuntimeContext, type StateTtlConfig,
  type StreamExecutionEnvironment, type ValueState,
} from '../../src/index.ts';
import { fileURLToPath } from 'node:url';
import { runInline, runModule, sorted } from '../helpers/run.ts';
import { byNumber, failureOf, groupBy, runInlineResult } from './util.ts';

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

describe('ProcessFunction and side outputs', () => {
  const odd = new OutputTag<number>('odd');
  const big = new OutputTag<string>('big');

  it('routes records to the main output and to two side outputs by tag', async () => {
    const r = await runInline((env) => {
      const main = env.fromCollection(range(20)).process<number>({
        processElement(v, ctx, out) {
          if (v % 2 === 1) ctx.output(odd, v);
          else out.collect(v);
          if (v >= 15) ctx.output(big, `big:${v}`);
        },
      });
      main.collect('main');
      main.getSideOutput(odd).map((x) => x * 10).collect('odd');
      main.getSideOutput(big).collect('big');
    });
    expect(r.collected('main')).toEqual(range(10).map((i) => i * 2));
    expect(r.collected('odd')).toEqual(range(10).map((i) => (i * 2 + 1) * 10));
    expect(r.collected('big')).toEqual(['big:15', 'big:16', 'big:17', 'big:18', 'big:19']);
  });

  it('side outputs work at parallelism 3 and after a repartitioning (rebalance) downstream', async () => {
    const r = await runInline((env) => {
      const main = env
        .fromGenerator((i) => i, { count: 3000 })
        .process<number>({ processElement: (v, ctx, out) => (v % 3 === 0 ? ctx.output(odd, v) : out.collect(v)) });
      main.getSideOutput(odd).rebalance().map((x) => x).setParallelism(2).collect('side');
      main.collect('main');
    }, { parallelism: 3 });
    expect(r.collected<number>('side').sort(byNumber)).toEqual(range(3000).filter((x) => x % 3 === 0));
    expect(r.collected<number>('main').sort(byNumber)).toEqual(range(3000).filter((x) => x % 3 !== 0));
  });

  it('a side output nobody reads is dropped, and tags with the same id are the same output', async () => {
    const r = await runInline((env) => {
      const main = env.fromElements(1, 2, 3).process<number>({
        processElement(v, ctx, out) {
          ctx.output(new OutputTag<number>('unread'), v);
          ctx.output(new OutputTag<number>('same'), v * 100);
          out.collect(v);
        },
      });
      main.collect('main');
      main.getSideOutput(new OutputTag<number>('same')).collect('same');
    });
    expect(r.collected('main')).toEqual([1, 2, 3]);
    expect(r.collected('same')).toEqual([100, 200, 300]);
  });

  it('a keyed process function emits side outputs too', async () => {
    const r = await runInline((env) => {
      const main = env
        .fromElements('a', 'b', 'a', 'a', 'b')
        .keyBy((w) => w)
        .process<string>({
          processElement(w, ctx, out) {
            const n = ctx.getState(new ValueStateDescriptor<number>('n', { defaultValue: 0 }));
            n.update(n.value()! + 1);
            if (n.value() === 2) ctx.output(big, `${w} seen twice`);
            out.collect(`${w}${n.value()}`);
          },
        });
      main.collect('main');
      main.getSideOutput(big).collect('side');
    }, { parallelism: 2 });
    expect(sorted(r.collected('main'))).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
    expect(sorted(r.collected('side'))).toEqual(['a seen twice', 'b seen twice']);
  });

  it('getSideOutput needs an OutputTag and an operator (not a union)', async () => {
    await expect(runInline((env) => void env.fromElements(1).process({ processElement() {} }).getSideOutput('odd' as never)))
      .rejects.toThrow('getSideOutput needs an OutputTag');
    await expect(runInline((env) => {
      const a = env.fromElements(1);
      void a.union(env.fromElements(2)).getSideOutput(odd);
    })).rejects.toThrow('getSideOutput() applies to an operator; this stream is a union');
    expect(() => new OutputTag('')).toThrow('OutputTag needs a non-empty id');
  });

  it('open and close run once per subtask, open receives the task facts', async () => {
    const calls: string[] = [];
    const r = await runInline((env) => {
      env
        .fromGenerator((i) => i, { count: 100 })
        .process<number>({
          open(ctx: RuntimeContext) {
            calls.push(`open ${ctx.taskInfo.operatorName} ${ctx.taskInfo.subtaskIndex}/${ctx.taskInfo.parallelism}`);
          },
          processElement: (v, _ctx, out) => out.collect(v),
          close() {
            calls.push('close');
          },
        })
        .name('Tracker')
        .collect();
    }, { parallelism: 2 });
    expect(r.collected()).toHaveLength(100);
    expect(calls.filter((c) => c.startsWith('open')).sort()).toEqual(['open Tracker 0/2', 'open Tracker 1/2']);
    expect(calls.filter((c) => c === 'close')).toHaveLength(2);
  });

  it('ProcessContext gives the processing time of the clock and the watermark', async () => {
    const clock = new ManualClock(1234);
    const r = await runInline((env) => {
      env.fromElements(1).process<string>({
        processElement: (_v, ctx: ProcessContext, out) => out.collect(`${ctx.currentProcessingTime()} ${ctx.currentWatermark() < 0}`),
      }).collect();
    }, { clock });
    expect(r.collected()).toEqual(['1234 true']);
  });

  it('a function that keeps things on `this` gets its own instance per subtask (parallelism 3, one thread)', async () => {
    class Tagger implements ProcessFunction<number, { sub: number; v: number; seen: number }> {
      sub = -1;
      seen = 0;
      open(ctx: RuntimeContext) {
        this.sub = ctx.taskInfo.subtaskIndex;
      }
      processElement(v: number, _ctx: ProcessContext, out: Collector<{ sub: number; v: number; seen: number }>) {
        this.seen++;
        out.collect({ sub: this.sub, v, seen: this.seen });
      }
    }
    const r = await runInline((env) => {
      // forward from a 3-lane generator: lane k (i % 3 === k) feeds subtask k.
      env.fromGenerator((i) => i, { count: 300 }).process(new Tagger()).collect();
    }, { parallelism: 3 });
    const out = r.collected<{ sub: number; v: number; seen: number }>();
    const bySub = groupBy(out, (o) => o.sub);
    expect([...bySub.keys()].sort()).toEqual([0, 1, 2]);
    for (const [sub, items] of bySub) {
      expect(items.every((o) => o.v % 3 === sub)).toBe(true);
      expect(items.map((o) => o.seen)).toEqual(range(100, 1));
    }
  });
});

/** Keeps every kind of keyed state per key and reports a snapshot of it after each record. */
interface Ev {
  k: string;
  v: number;
}
interface Snapshot {
  k: string;
  count: number;
  values: number[];
  hist: [number, number][];
  max: number | undefined;
  avg: number | undefined;
}

const countDesc = new ValueStateDescriptor<number>('count', { defaultValue: 0 });
const listDesc = new ListStateDescriptor<number>('values');
const mapDesc = new MapStateDescriptor<number, number>('histogram');
const maxDesc = new ReducingStateDescriptor<number>('max', (a, b) => Math.max(a, b));
const avgDesc = new AggregatingStateDescriptor<number, { s: number; n: number }, number>('avg', {
  createAccumulator: () => ({ s: 0, n: 0 }),
  add: (v, a) => ({ s: a.s + v, n: a.n + 1 }),
  getResult: (a) => a.s / a.n,
});

class AllStates implements KeyedProcessFunction<string, Ev, Snapshot> {
  count!: ValueState<number>;
  values!: ListState<number>;
  hist!: MapState<number, number>;
  max!: ReducingState<number>;
  avg!: AggregatingState<number, number>;
  open(ctx: KeyedRuntimeContext) {
    this.count = ctx.getState(countDesc);
    this.values = ctx.getListState(listDesc);
    this.hist = ctx.getMapState(mapDesc);
    this.max = ctx.getReducingState(maxDesc);
    this.avg = ctx.getAggregatingState(avgDesc);
  }
  processElement(e: Ev, ctx: KeyedContext<string>, out: Collector<Snapshot>) {
    if (ctx.currentKey !== e.k) throw new Error(`currentKey ${ctx.currentKey} != ${e.k}`);
    this.count.update(this.count.value()! + 1);
    this.values.add(e.v);
    this.hist.put(e.v % 3, (this.hist.get(e.v % 3) ?? 0) + 1);
    this.max.add(e.v);
    this.avg.add(e.v);
    out.collect({
      k: e.k,
      count: this.count.value()!,
      values: [...this.values.get()],
      hist: [...this.hist.entries()].sort((a, b) => a[0] - b[0]),
      max: this.max.get(),
      avg: this.avg.get(),
    });
  }
}

describe('KeyedProcessFunction with keyed state', () => {
  it('value, list, map, reducing and aggregating state match a reference model per key (parallelism 3)', async () => {
    const events: Ev[] = range(600).map((i) => ({ k: `k${(i * 31) % 23}`, v: (i * 17) % 50 }));
    const r = await runInline((env) => {
      env.fromCollection(events).keyBy((e) => e.k).process(new AllStates()).collect();
    }, { parallelism: 3 });
    const out = r.collected<Snapshot>();
    expect(out).toHaveLength(600);
    // Reference: per key, in input order.
    const want: Snapshot[] = [];
    const model = new Map<string, number[]>();
    for (const e of events) {
      const vs = [...(model.get(e.k) ?? []), e.v];
      model.set(e.k, vs);
      const hist = new Map<number, number>();
      for (const v of vs) hist.set(v % 3, (hist.get(v % 3) ?? 0) + 1);
      want.push({
        k: e.k, count: vs.length, values: vs, hist: [...hist].sort((a, b) => a[0] - b[0]),
        max: Math.max(...vs), avg: vs.reduce((a, b) => a + b, 0) / vs.length,
      });
    }
    const gotByKey = groupBy(out, (s) => s.k);
    const wantByKey = groupBy(want, (s) => s.k);
    expect(gotByKey.size).toBe(23);
    for (const [k, snaps] of wantByKey) expect(gotByKey.get(k), k).toEqual(snaps);
  });

  it('every state handle operation: defaults, clear, update, remove, putAll, isEmpty, keys/values', async () => {
    const r = await runInline((env) => {
      env
        .fromElements('x')
        .keyBy((w) => w)
        .process<unknown>({
          processElement(_w, ctx, out) {
            const v = ctx.getState(new ValueStateDescriptor<string>('v', { defaultValue: 'dflt' }));
            const noDefault = ctx.getState(new ValueStateDescriptor<string>('nd'));
            out.collect(['value', v.value(), noDefault.value()]);
            v.update('set');
            out.collect(['value', v.value()]);
            v.clear();
            out.collect(['value', v.value()]);
            v.update('again');
            v.update(undefined as unknown as string); // undefined clears, like Flink's update(null)
            out.collect(['value', v.value()]);

            const l = ctx.getListState(new ListStateDescriptor<number>('l'));
            out.collect(['list', [...l.get()]]);
            l.add(1);
            l.addAll([2, 3]);
            l.addAll([]);
            out.collect(['list', [...l.get()]]);
            l.update([9, 8]);
            out.collect(['list', [...l.get()]]);
            l.update([]);
            out.collect(['list', [...l.get()]]);
            l.add(5);
            l.clear();
            out.collect(['list', [...l.get()]]);

            const m = ctx.getMapState(new MapStateDescriptor<string, number>('m'));
            out.collect(['map', m.isEmpty(), m.get('a'), m.contains('a')]);
            m.put('a', 1);
            m.putAll([['b', 2], ['c', 3]]);
            out.collect(['map', m.isEmpty(), m.get('a'), m.contains('a'), [...m.keys()], [...m.values()]]);
            m.remove('a');
            m.remove('zzz');
            out.collect(['map', [...m.entries()]]);
            m.remove('b');
            m.remove('c');
            out.collect(['map', m.isEmpty(), [...m.entries()]]);
            m.put('d', 4);
            m.clear();
            out.collect(['map', m.isEmpty()]);

            const red = ctx.getReducingState(new ReducingStateDescriptor<string>('r', (a, b) => a + b));
            out.collect(['reducing', red.get()]);
            red.add('a');
            red.add('b');
            out.collect(['reducing', red.get()]);
            red.clear();
            out.collect(['reducing', red.get()]);

            const agg = ctx.getAggregatingState(new AggregatingStateDescriptor<number, number[], string>('g', {
              createAccumulator: () => [],
              add: (v, acc) => [...acc, v],
              getResult: (acc) => acc.join('+'),
            }));
            out.collect(['aggregating', agg.get()]);
            agg.add(1);
            agg.add(2);
            out.collect(['aggregating', agg.get()]);
            agg.clear();
            out.collect(['aggregating', agg.get()]);
          },
        })
        .collect();
    });
    expect(r.collected()).toEqual([
      ['value', 'dflt', undefined],
      ['value', 'set'],
      ['value', 'dflt'],
      ['value', 'dflt'],
      ['list', []],
      ['list', [1, 2, 3]],
      ['list', [9, 8]],
      ['list', []],
      ['list', []],
      ['map', true, undefined, false],
      ['map', false, 1, true, ['a', 'b', 'c'], [1, 2, 3]],
      ['map', [['b', 2], ['c', 3]]],
      ['map', true, []],
      ['map', true],
      ['reducing', undefined],
      ['reducing', 'ab'],
      ['reducing', undefined],
      ['aggregating', undefined],
      ['aggregating', '1+2'],
      ['aggregating', undefined],
    ]);
  });

  it('state is separate per key and per state name', async () => {
    const r = await runInline((env) => {
      env
        .fromElements(['a', 1], ['b', 2], ['a', 3])
        .keyBy((t) => t[0])
        .process<string>({
          processElement(t, ctx, out) {
            const x = ctx.getListState(new ListStateDescriptor<number>('x'));
            const y = ctx.getListState(new ListStateDescriptor<number>('y'));
            x.add(t[1] as number);
            y.add((t[1] as number) * 10);
            y.add((t[1] as number) * 100);
            out.collect(`${t[0]} x=${x.get().join(',')} y=${y.get().join(',')}`);
          },
        })
        .collect();
    });
    expect(r.collected()).toEqual(['a x=1 y=10,100', 'b x=2 y=20,200', 'a x=1,3 y=10,100,30,300']);
  });

  it('one state name used as two kinds fails with a message naming the state and the operator', async () => {
    const msg = await failureOf((env) => {
      env
        .fromElements(1)
        .keyBy((x) => x)
        .process({
          processElement(_v, ctx) {
            ctx.getState(new ValueStateDescriptor<number>('dual'));
            ctx.getListState(new ListStateDescriptor<number>('dual'));
          },
        })
        .name('Dual')
        .collect();
    });
    expect(msg).toContain('operator "Dual" (subtask 1/1)');
    expect(msg).toContain('state "dual" is registered as value state and cannot be used as list state');
  });

  it('state descriptors validate their arguments', () => {
    expect(() => new ValueStateDescriptor('')).toThrow('a state descriptor needs a non-empty name');
    expect(() => new ReducingStateDescriptor('r', 5 as never)).toThrow('reducing state "r" needs a reduce function');
    expect(() => new ValueStateDescriptor('t', { ttl: { ttlMs: 0 } })).toThrow('state "t": ttl.ttlMs must be a positive number, got 0');
  });

  it('keyed state on a non-keyed stream fails with a clear message, in processElement and in open', async () => {
    const inProcess = await failureOf((env) => {
      env
        .fromElements(1)
        .process({
          processElement(_v, ctx) {
            (ctx as unknown as KeyedContext<number>).getState(new ValueStateDescriptor<number>('count'));
          },
        })
        .name('NotKeyed')
        .collect();
    });
    expect(inProcess).toBe(
      'operator "NotKeyed": getState("count") is keyed state, which exists only on a keyed stream; call keyBy(...) before process()',
    );
    const inOpen = await failureOf((env) => {
      env
        .fromElements(1)
        .process({
          open(ctx) {
            (ctx as unknown as KeyedRuntimeContext).getMapState(new MapStateDescriptor<string, number>('m'));
          },
          processElement() {},
        })
        .name('NotKeyedOpen')
        .collect();
    });
    expect(inOpen).toContain('operator "NotKeyedOpen": getMapState("m") is keyed state, which exists only on a keyed stream; call keyBy(...)');
    const timers = await failureOf((env) => {
      env
        .fromElements(1)
        .process({
          processElement(_v, ctx) {
            (ctx as unknown as KeyedContext<number>).timerService.registerProcessingTimeTimer(5);
          },
        })
        .name('NoTimers')
        .collect();
    });
    expect(timers).toBe('operator "NoTimers": timers exist only on a keyed stream; call keyBy(...) before process()');
  });

  it('a throwing keyed process function fails the job naming operator, subtask, phase and record', async () => {
    const msg = await failureOf((env) => {
      env
        .fromCollection(range(50).map((i) => ({ id: i })))
        .keyBy((r) => r.id % 2)
        .process({
          processElement(r) {
            if (r.id === 33) throw new Error('bad id');
          },
        })
        .name('Checker')
        .collect();
    }, { parallelism: 2 });
    expect(msg).toMatch(/^operator "Checker" \(subtask [12]\/2\) failed in processElement on record \{"id":33\}: bad id$/);
  });

  it('with parallelism 4 on one thread, state kept on `this` from open() stays per subtask', async () => {
    // Flink's canonical pattern: take handles in open(), use them per record.
    const words = range(2000).map((i) => `w${i % 40}`);
    const r = await runInline((env) => {
      env.fromCollection(words.map((w, i) => ({ k: w, v: i }))).keyBy((e) => e.k).process(new AllStates()).collect();
    }, { parallelism: 4 });
    const last = new Map<string, number>();
    for (const s of r.collected<Snapshot>()) last.set(s.k, Math.max(last.get(s.k) ?? 0, s.count));
    expect(last.size).toBe(40);
    expect([...last.values()].every((n) => n === 50)).toBe(true);
  });
});

describe('state TTL on a manual clock', () => {
  /**
   * Records carry the processing time at which they are handled; the function moves the
   * manual clock there first (in the keyed operator itself, so batching cannot reorder it).
   */
  interface Step {
    at: number;
    op: string;
  }

  function ttlJob(clock: ManualClock, ttl: StateTtlConfig, steps: Step[]) {
    return (env: StreamExecutionEnvironment) => {
      env
        .fromCollection(steps)
        .keyBy(() => 'k')
        .process<string>({
          processElement(s, ctx, out) {
            clock.advanceTo(s.at);
            const v = ctx.getState(new ValueStateDescriptor<string>('v', { ttl, defaultValue: 'none' }));
            const l = ctx.getListState(new ListStateDescriptor<string>('l', { ttl }));
            const m = ctx.getMapState(new MapStateDescriptor<string, number>('m', { ttl }));
            const red = ctx.getReducingState(new ReducingStateDescriptor<number>('r', (a, b) => a + b, { ttl }));
            const agg = ctx.getAggregatingState(new AggregatingStateDescriptor<number, number, number>('g', {
              createAccumulator: () => 0, add: (x, a) => a + x, getResult: (a) => a,
            }, { ttl }));
            const [verb, arg] = s.op.split(' ');
            switch (verb) {
              case 'set':
                v.update(arg!);
                return;
              case 'get':
                out.collect(`${s.at} v=${v.value()}`);
                return;
              case 'add':
                l.add(arg!);
                red.add(Number(arg));
                agg.add(Number(arg));
                return;
              case 'list':
                out.collect(`${s.at} l=${l.get().join(',')} r=${red.get()} g=${agg.get()}`);
                return;
              case 'put':
                m.put(arg!, s.at);
                return;
              case 'map':
                out.collect(`${s.at} m=${[...m.keys()].join(',')} a?${m.contains('a')} empty=${m.isEmpty()}`);
                return;
            }
          },
        })
        .collect();
    };
  }

  it('onCreateAndWrite: a value expires ttl ms after its last write, reads do not extend it', async () => {
    const clock = new ManualClock(1000);
    const r = await runInline(ttlJob(clock, { ttlMs: 100 }, [
      { at: 1000, op: 'get' },
      { at: 1000, op: 'set a' },
      { at: 1050, op: 'get' },
      { at: 1099, op: 'get' },
      { at: 1100, op: 'get' },
      { at: 1150, op: 'set b' },
      { at: 1200, op: 'get' },
      { at: 1249, op: 'set c' },
      { at: 1348, op: 'get' },
      { at: 1349, op: 'get' },
    ]), { clock });
    expect(r.collected()).toEqual(['1000 v=none', '1050 v=a', '1099 v=a', '1100 v=none', '1200 v=b', '1348 v=c', '1349 v=none']);
  });

  it('onReadAndWrite: every read restarts the expiry clock', async () => {
    const clock = new ManualClock(0);
    const r = await runInline(ttlJob(clock, { ttlMs: 100, updateType: 'onReadAndWrite' }, [
      { at: 0, op: 'set a' },
      { at: 90, op: 'get' },
      { at: 180, op: 'get' },
      { at: 270, op: 'get' },
      { at: 370, op: 'get' },
    ]), { clock });
    expect(r.collected()).toEqual(['90 v=a', '180 v=a', '270 v=a', '370 v=none']);
  });

  it('returnExpiredIfNotCleanedUp: an expired value is still returned', async () => {
    const clock = new ManualClock(0);
    const r = await runInline(ttlJob(clock, { ttlMs: 100, visibility: 'returnExpiredIfNotCleanedUp' }, [
      { at: 0, op: 'set a' },
      { at: 500, op: 'get' },
    ]), { clock });
    expect(r.collected()).toEqual(['500 v=a']);
  });

  it('list entries expire one by one; reducing and aggregating state expire as a whole', async () => {
    const clock = new ManualClock(0);
    const r = await runInline(ttlJob(clock, { ttlMs: 100 }, [
      { at: 0, op: 'add 1' },
      { at: 50, op: 'add 2' },
      { at: 60, op: 'list' },
      { at: 100, op: 'list' },
      { at: 149, op: 'list' },
      { at: 150, op: 'list' },
      { at: 160, op: 'add 5' },
      { at: 170, op: 'list' },
    ]), { clock });
    expect(r.collected()).toEqual([
      '60 l=1,2 r=3 g=3',
      '100 l=2 r=3 g=3', // the reduced value was last written at 50
      '149 l=2 r=3 g=3',
      '150 l= r=undefined g=undefined',
      '170 l=5 r=5 g=5',
    ]);
  });

  it('map entries expire one by one', async () => {
    const clock = new ManualClock(0);
    const r = await runInline(ttlJob(clock, { ttlMs: 100 }, [
      { at: 0, op: 'put a' },
      { at: 40, op: 'put b' },
      { at: 99, op: 'map' },
      { at: 100, op: 'map' },
      { at: 140, op: 'map' },
      { at: 150, op: 'put c' },
      { at: 160, op: 'map' },
    ]), { clock });
    expect(r.collected()).toEqual([
      '99 m=a,b a?true empty=false',
      '100 m=b a?false empty=false',
      '140 m= a?false empty=true',
      '160 m=c a?false empty=false',
    ]);
  });

  it('TTL list and map writes through every method stamp entries with the write time', async () => {
    const clock = new ManualClock(0);
    const ttl = { ttlMs: 100 };
    const r = await runInline((env) => {
      env
        .fromCollection([0, 50, 120, 160, 260])
        .keyBy(() => 'k')
        .process<string>({
          processElement(at, ctx, out) {
            clock.advanceTo(at);
            const l = ctx.getListState(new ListStateDescriptor<string>('l', { ttl }));
            const m = ctx.getMapState(new MapStateDescriptor<string, number>('m', { ttl }));
            if (at === 0) {
              l.addAll(['a', 'b']);
              m.putAll([['a', 1], ['b', 2]]);
            } else if (at === 50) {
              l.update(['c']); // replaces a, b: written at 50
              m.put('c', 3);
              m.remove('a');
            }
            out.collect(`${at} l=${l.get().join('')} m=${[...m.entries()].map(([k, v]) => k + v).join(',')} v=${[...m.values()].join('')}`);
            if (at === 160) {
              l.clear();
              m.clear();
            }
          },
        })
        .collect();
    }, { clock });
    expect(r.collected()).toEqual([
      '0 l=ab m=a1,b2 v=12',
      '50 l=c m=b2,c3 v=23',
      '120 l=c m=c3 v=3', // b (written at 0) expired at 100
      '160 l= m= v=', // c (written at 50) expired at 150
      '260 l= m= v=',
    ]);
  });

  it('TTL is per key: one key expiring leaves the others', async () => {
    const clock = new ManualClock(0);
    const r = await runInline((env) => {
      env
        .fromCollection([
          { at: 0, k: 'a', set: 1 }, { at: 60, k: 'b', set: 2 }, { at: 110, k: 'a' }, { at: 110, k: 'b' }, { at: 160, k: 'b' },
        ])
        .keyBy((s) => s.k)
        .process<string>({
          processElement(s, ctx, out) {
            clock.advanceTo(s.at);
            const v = ctx.getState(new ValueStateDescriptor<number>('v', { ttl: { ttlMs: 100 } }));
            if (s.set !== undefined) v.update(s.set);
            else out.collect(`${s.at} ${s.k}=${v.value()}`);
          },
        })
        .collect();
    }, { clock });
    expect(r.collected()).toEqual(['110 a=undefined', '110 b=2', '160 b=undefined']);
  });
});

describe('operator list state', () => {
  it('getListState and getUnionListState in open() hold values per subtask', async () => {
    const bufferDesc = new ListStateDescriptor<{ sub: number; v: number }>('buffer');
    const unionDesc = new ListStateDescriptor<string>('markers');
    class Buffering implements ProcessFunction<number, { sub: number; size: number; markers: string[]; allMine: boolean }> {
      buffer!: ListState<{ sub: number; v: number }>;
      markers!: ListState<string>;
      sub = -1;
      open(ctx: RuntimeContext) {
        this.sub = ctx.taskInfo.subtaskIndex;
        this.buffer = ctx.getListState(bufferDesc);
        this.markers = ctx.getUnionListState(unionDesc);
        this.markers.add(`opened ${this.sub}`);
      }
      processElement(v: number, _ctx: ProcessContext, out: Collector<{ sub: number; size: number; markers: string[]; allMine: boolean }>) {
        this.buffer.add({ sub: this.sub, v });
        const items = this.buffer.get();
        out.collect({ sub: this.sub, size: items.length, markers: [...this.markers.get()], allMine: items.every((x) => x.sub === this.sub) });
      }
    }
    const r = await runInline((env) => {
      env.fromGenerator((i) => i, { count: 900 }).process(new Buffering()).collect();
    }, { parallelism: 3 });
    const out = r.collected<{ sub: number; size: number; markers: string[]; allMine: boolean }>();
    expect(out).toHaveLength(900);
    expect(out.every((o) => o.allMine)).toBe(true);
    for (const [sub, items] of groupBy(out, (o) => o.sub)) {
      expect(items.map((o) => o.size)).toEqual(range(300, 1));
      expect(items.every((o) => o.markers.length === 1 && o.markers[0] === `opened ${sub}`)).toBe(true);
    }
  });

  it('operator list state: addAll, update and clear', async () => {
    const r = await runInline((env) => {
      env.fromElements('go').process<string>(new (class {
        seen = '';
        open(ctx: RuntimeContext) {
          const l = ctx.getListState(new ListStateDescriptor<number>('l'));
          l.addAll([1, 2]);
          l.add(3);
          const a = l.get().join('');
          l.update([9]);
          const b = l.get().join('');
          l.clear();
          this.seen = `${a}|${b}|${l.get().length}`;
        }
        processElement(_v: string, _ctx: ProcessContext, out: Collector<string>) {
          out.collect(this.seen);
        }
      })()).collect();
    });
    expect(r.collected()).toEqual(['123|9|0']);
  });

  it('one name used as split and as union list state fails with a message naming both', async () => {
    const msg = await failureOf((env) => {
      env
        .fromElements(1)
        .process({
          open(ctx) {
            ctx.getListState(new ListStateDescriptor<number>('pos'));
            ctx.getUnionListState(new ListStateDescriptor<number>('pos'));
          },
          processElement() {},
        })
        .name('Twice')
        .collect();
    });
    expect(msg).toContain('operator "Twice" (subtask 1/1)');
    expect(msg).toContain('operator state "pos" is registered as split list state, not union');
  });

  it('on a keyed stream getListState is keyed list state, getUnionListState stays operator state', async () => {
    const r = await runInline((env) => {
      env
        .fromElements('a', 'b', 'a')
        .keyBy((w) => w)
        .process<string>({
          processElement(w, ctx, out) {
            const keyed = ctx.getListState(new ListStateDescriptor<string>('keyed'));
            const op = ctx.getUnionListState(new ListStateDescriptor<string>('op'));
            keyed.add(w);
            op.add(w);
            out.collect(`${w}: keyed=${keyed.get().join('')} op=${op.get().join('')}`);
          },
        })
        .collect();
    });
    expect(r.collected()).toEqual(['a: keyed=a op=a', 'b: keyed=b op=ab', 'a: keyed=aa op=aba']);
  });
});

describe('failure attribution of process functions', () => {
  it('an exception in open() names the operator and the phase', async () => {
    const msg = await failureOf((env) => {
      env.fromElements(1).process({
        open() {
          throw new Error('no connection');
        },
        processElement() {},
      }).name('Opener').collect();
    });
    expect(msg).toBe('operator "Opener" (subtask 1/1) failed in open: no connection');
  });

  it('a thrown non-Error value is reported as text', async () => {
    const r = await runInlineResult((env) => {
      env.fromElements('x').map(() => {
        throw 'plain string'; // eslint-disable-line no-throw-literal
      }).collect();
    });
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toBe('operator "Map" (subtask 1/1) failed in map on record "x": plain string');
  });
});

describe('KeyedProcessFunction timers', () => {
  it('event-time timers fire in timestamp order per key, all by the end of input; deleted ones do not', async () => {
    const r = await runInline((env) => {
      env
        .fromCollection([{ k: 'a', t: 100 }, { k: 'b', t: 50 }, { k: 'a', t: 120 }, { k: 'b', t: 60 }], { timestamp: (e) => e.t })
        .keyBy((e) => e.k)
        .process<string>({
          processElement(e, ctx) {
            ctx.timerService.registerEventTimeTimer(e.t + 1000);
            ctx.timerService.registerEventTimeTimer(e.t + 1000); // a duplicate is one timer
            ctx.timerService.registerEventTimeTimer(e.t + 5000);
            ctx.timerService.deleteEventTimeTimer(e.t + 5000);
          },
          onTimer(ts, ctx, out) {
            out.collect(`${ctx.currentKey}@${ts} ${ctx.timeDomain} ts=${ctx.timestamp}`);
          },
        })
        .collect();
    }, { parallelism: 2 });
    const out = r.collected<string>();
    expect(out.filter((s) => s.startsWith('a'))).toEqual(['a@1100 event-time ts=1100', 'a@1120 event-time ts=1120']);
    expect(out.filter((s) => s.startsWith('b'))).toEqual(['b@1050 event-time ts=1050', 'b@1060 event-time ts=1060']);
  });

  it('processing-time timers fire when the manual clock passes them, with the key and its state', async () => {
    const clock = new ManualClock(0);
    const r = await runInline((env) => {
      env
        .fromCollection([{ k: 'x', at: 0 }, { k: 'y', at: 10 }, { k: 'x', at: 20 }, { k: 'z', at: 500 }])
        .keyBy((e) => e.k)
        .process<string>({
          processElement(e, ctx) {
            clock.advanceTo(e.at);
            const n = ctx.getState(new ValueStateDescriptor<number>('n', { defaultValue: 0 }));
            n.update(n.value()! + 1);
            ctx.timerService.registerProcessingTimeTimer(ctx.timerService.currentProcessingTime() + 100);
          },
          onTimer(ts, ctx, out) {
            out.collect(`${ctx.currentKey}@${ts} n=${ctx.getState(new ValueStateDescriptor<number>('n')).value()} ${ctx.timeDomain} ts=${ctx.timestamp}`);
          },
        })
        .collect();
    }, { clock });
    // Advancing to 500 passes the timers at 100, 110 and 120; the one at 600 never comes due.
    // ctx.timestamp is the timer's time, as Flink's OnTimerContext.timestamp() (before: undefined).
    expect(r.collected()).toEqual(['x@100 n=2 processing-time ts=100', 'y@110 n=1 processing-time ts=110', 'x@120 n=2 processing-time ts=120']);
  });

  it('deleted processing-time timers do not fire; the timer service reports clock time and watermark', async () => {
    const clock = new ManualClock(1000);
    const r = await runInline((env) => {
      env
        .fromCollection([{ at: 1000, del: false }, { at: 1010, del: true }, { at: 2000, del: false }])
        .keyBy(() => 'k')
        .process<string>({
          processElement(e, ctx, out) {
            clock.advanceTo(e.at);
            if (e.del) ctx.timerService.deleteProcessingTimeTimer(1500);
            else ctx.timerService.registerProcessingTimeTimer(e.at + 500);
            out.collect(`at ${ctx.timerService.currentProcessingTime()} wm<0 ${ctx.timerService.currentWatermark() < 0}`);
          },
          onTimer(ts, _ctx, out) {
            out.collect(`fired ${ts}`);
          },
        })
        .collect();
    }, { clock });
    // 1500 was deleted; 2500 is never reached.
    expect(r.collected()).toEqual(['at 1000 wm<0 true', 'at 1010 wm<0 true', 'at 2000 wm<0 true']);
  });

  it('an exception in onTimer names the operator and the timer phase', async () => {
    const msg = await failureOf((env) => {
      env
        .fromCollection([1], { timestamp: () => 5 })
        .keyBy((x) => x)
        .process({
          processElement(_x, ctx) {
            ctx.timerService.registerEventTimeTimer(10);
          },
          onTimer() {
            throw new Error('timer broke');
          },
        })
        .name('Alarm')
        .collect();
    });
    expect(msg).toBe('operator "Alarm" (subtask 1/1) failed in onTimer (event time): timer broke');
  });
});

describe('per-subtask function instances on worker threads', () => {
  it('state handles kept on `this` stay per subtask with 4 subtasks on 2 workers', async () => {
    const job = fileURLToPath(new URL('../fixtures/jobs/state-in-open.ts', import.meta.url));
    const r = await runModule(job, { workers: 2, parallelism: 4, args: ['4000'] });
    const out = r.collected<[string, number]>('counts');
    expect(out).toHaveLength(4000);
    // Every word occurs 100 times; its running counts are exactly 1..100 in arrival order.
    const byWord = groupBy(out, (o) => o[0]);
    expect(byWord.size).toBe(40);
    for (const [w, items] of byWord) expect(items.map((o) => o[1]), w).toEqual(range(100, 1));
  });
});

describe('Buffers in records', () => {
  it('stay Buffers when records cross threads (2 workers): user code reads the same text as on one thread', async () => {
    const job = fileURLToPath(new URL('../fixtures/jobs/buffer-records.ts', import.meta.url));
    const r = await runModule(job, { workers: 2, parallelism: 2, args: ['1000'] });
    const out = r.collected<string>('read');
    expect(out).toHaveLength(1000);
    for (const line of out) {
      const [i, own, prev] = line.split(':');
      expect(own, line).toBe(`v${i}`);
      if (prev !== '-') expect(prev, line).toMatch(/^v\d+$/);
    }
  });
});

describe('a restart gets fresh function objects', () => {
  it('a process function declared at module level starts its second attempt with fresh fields, on one worker as on two', async () => {
    const job = fileURLToPath(new URL('../fixtures/jobs/module-object.ts', import.meta.url));
    const want = [1, 2, 3, 4].map((x) => `attempt 1: record ${x} is #${x}`);
    for (const workers of [1, 2]) {
      const r = await runModule(job, { workers, parallelism: 1 });
      // Before, on one worker: "record 1 is #4" (the failed attempt's count carried over).
      expect(r.collected<string>().filter((l) => l.startsWith('attempt 1')), `workers ${workers}`).toEqual(want);
    }
  });
});
