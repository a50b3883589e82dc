/**
 * Two-input operators: connect + CoProcessFunction, connect().keyBy() + KeyedCoProcessFunction
 * with shared keyed state, and the broadcast state pattern (keyed and non-keyed).
 *
 * The order in which two inputs interleave is not deterministic, so every function here is
 * written to give the same result in any order (as a correct Flink job must), and the tests
 * assert that exact result.
 */
import { describe, expect, it } from 'vitest';
import {
  BroadcastStateDescriptor, ListStateDescriptor, OutputTag, ValueStateDescriptor,
  type BroadcastProcessFunction, type BroadcastWriteContext, type Collector, type CoProcessFunction,
  type KeyedBroadcastProcessFunction, type KeyedCoProcessFunction, type ListState, type ProcessContext,
  type RuntimeContext,
} from '../../src/index.ts';
import { runInline, sorted } from '../helpers/run.ts';
import { failureOf } from './util.ts';

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

describe('connect + CoProcessFunction', () => {
  it('sees both inputs, each through its own method, with different types', async () => {
    const tooLong = new OutputTag<string>('too-long');
    const r = await runInline((env) => {
      const numbers = env.fromCollection(range(10));
      const words = env.fromElements('alpha', 'be', 'gamma-delta');
      const merged = numbers.connect(words).process<string>({
        processElement1: (n, _ctx, out) => out.collect(`n:${n * n}`),
        processElement2: (w, ctx, out) => (w.length > 6 ? ctx.output(tooLong, w) : out.collect(`w:${w.toUpperCase()}`)),
      } satisfies CoProcessFunction<number, string, string>);
      merged.collect('main');
      merged.getSideOutput(tooLong).collect('side');
    }, { parallelism: 2 });
    expect(sorted(r.collected('main'))).toEqual(sorted([...range(10).map((n) => `n:${n * n}`), 'w:ALPHA', 'w:BE']));
    expect(r.collected('side')).toEqual(['gamma-delta']);
  });

  it('keeps the order of each input (one subtask, forward edges)', async () => {
    const r = await runInline((env) => {
      const a = env.fromCollection(range(3000));
      const b = env.fromCollection(range(3000, 100_000));
      a.connect(b).process<[number, number]>({
        processElement1: (v, _c, out) => out.collect([1, v]),
        processElement2: (v, _c, out) => out.collect([2, v]),
      }).collect();
    });
    const out = r.collected<[number, number]>();
    expect(out.filter((x) => x[0] === 1).map((x) => x[1])).toEqual(range(3000));
    expect(out.filter((x) => x[0] === 2).map((x) => x[1])).toEqual(range(3000, 100_000));
  });

  it('an exception in processElement2 names the method and the record', async () => {
    const msg = await failureOf((env) => {
      env.fromElements(1).connect(env.fromElements('boom')).process({
        processElement1() {},
        processElement2(w: string) {
          throw new Error(`cannot take ${w}`);
        },
      }).name('Joiner').collect();
    });
    expect(msg).toBe('operator "Joiner" (subtask 1/1) failed in processElement2 on record "boom": cannot take boom');
  });

  it('connect() rejects something that is not a stream, process() a function without both methods', async () => {
    await expect(runInline((env) => void env.fromElements(1).connect({} as never))).rejects.toThrow('connect() takes a DataStream or a BroadcastStream');
    await expect(runInline((env) => void env.fromElements(1).connect(env.fromElements(2)).process({ processElement1() {} } as never)))
      .rejects.toThrow('connect().process needs an object with a processElement2(...) method');
  });
});

interface Order {
  id: number;
  item: string;
}
interface Payment {
  orderId: number;
  amount: number;
}

/** Joins orders and payments by id with state shared by both inputs, in either arrival order. */
const joinOrders: KeyedCoProcessFunction<number, Order, Payment, string> = {
  processElement1(o, ctx, out) {
    const paid = ctx.getState(new ValueStateDescriptor<number>('paid'));
    const amount = paid.value();
    if (amount !== undefined) {
      out.collect(`${o.id}:${o.item}:${amount}`);
      paid.clear();
    } else ctx.getState(new ValueStateDescriptor<string>('ordered')).update(o.item);
  },
  processElement2(p, ctx, out) {
    if (ctx.currentKey !== p.orderId) throw new Error(`wrong key ${String(ctx.currentKey)}`);
    const ordered = ctx.getState(new ValueStateDescriptor<string>('ordered'));
    const item = ordered.value();
    if (item !== undefined) {
      out.collect(`${p.orderId}:${item}:${p.amount}`);
      ordered.clear();
    } else ctx.getState(new ValueStateDescriptor<number>('paid')).update(p.amount);
  },
};

describe('connect().keyBy() + KeyedCoProcessFunction', () => {
  it('both inputs partitioned by key meet the same keyed state (parallelism 4)', async () => {
    const n = 2000;
    const r = await runInline((env) => {
      const orders = env.fromGenerator((i) => ({ id: i, item: `item${i % 7}` }), { count: n });
      // Payments arrive in another order, from another source, for every other order.
      const payments = env.fromGenerator((i) => ({ orderId: (i * 7919) % n, amount: i }), { count: n }).filter((p) => p.orderId % 2 === 0);
      orders.connect(payments).keyBy((o) => o.id, (p) => p.orderId).process(joinOrders).collect();
    }, { parallelism: 4 });
    const want: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = (i * 7919) % n;
      if (id % 2 === 0) want.push(`${id}:item${id % 7}:${i}`);
    }
    expect(sorted(r.collected<string>())).toEqual(sorted(want));
  });

  it('KeyedStream.connect(KeyedStream) is the same as connect().keyBy()', async () => {
    const r = await runInline((env) => {
      const orders = env.fromElements<Order>({ id: 1, item: 'a' }, { id: 2, item: 'b' }).keyBy((o) => o.id);
      const payments = env.fromElements<Payment>({ orderId: 2, amount: 20 }, { orderId: 3, amount: 30 }, { orderId: 1, amount: 10 }).keyBy((p) => p.orderId);
      orders.connect(payments).process(joinOrders).collect();
    }, { parallelism: 3 });
    expect(sorted(r.collected())).toEqual(['1:a:10', '2:b:20']);
  });

  it('a keyed stream connects only to a keyed or broadcast stream', async () => {
    await expect(runInline((env) => void env.fromElements(1).keyBy((x) => x).connect(env.fromElements(2) as never)))
      .rejects.toThrow('a keyed stream connects to another keyed stream (same key type) or a broadcast stream');
  });
});

interface Rule {
  name: string;
  factor: number;
}
const rulesDesc = new BroadcastStateDescriptor<string, Rule>('rules');
const pendingDesc = new ValueStateDescriptor<number[]>('pending');

/**
 * Scales every value by the "scale" rule. Values that arrive before the rule wait in keyed
 * state; when the rule arrives, applyToKeyedState releases them. Any interleaving gives the
 * same output.
 */
class KeyedScaler implements KeyedBroadcastProcessFunction<string, { k: string; v: number }, Rule, string> {
  sub = -1;
  open(ctx: RuntimeContext) {
    this.sub = ctx.taskInfo.subtaskIndex;
  }
  processElement(e: { k: string; v: number }, ctx: Parameters<KeyedBroadcastProcessFunction<string, { k: string; v: number }, Rule, string>['processElement']>[1], out: Collector<string>) {
    const rule = ctx.getBroadcastState(rulesDesc).get('scale');
    if (rule !== undefined) out.collect(`${e.k}=${e.v * rule.factor}`);
    else {
      const p = ctx.getState(pendingDesc);
      p.update([...(p.value() ?? []), e.v]);
    }
  }
  processBroadcastElement(rule: Rule, ctx: Parameters<KeyedBroadcastProcessFunction<string, { k: string; v: number }, Rule, string>['processBroadcastElement']>[1], out: Collector<string>) {
    ctx.getBroadcastState(rulesDesc).put(rule.name, rule);
    out.collect(`rule ${rule.name} on subtask ${this.sub}`);
    if (rule.name !== 'scale') return;
    ctx.applyToKeyedState(pendingDesc, (key, state) => {
      for (const v of state.value() ?? []) out.collect(`${String(key)}=${v * rule.factor}`);
      state.clear();
    });
  }
}

describe('broadcast state', () => {
  it('keyed: rules reach every subtask; elements are evaluated against them; applyToKeyedState visits pending keys', async () => {
    const values = range(500).map((i) => ({ k: `k${i % 13}`, v: i }));
    const r = await runInline((env) => {
      const rules = env.fromElements<Rule>({ name: 'other', factor: 0 }, { name: 'scale', factor: 3 }).broadcast(rulesDesc);
      env.fromCollection(values).keyBy((e) => e.k).connect(rules).process(new KeyedScaler()).collect();
    }, { parallelism: 3 });
    const out = r.collected<string>();
    expect(sorted(out.filter((s) => s.startsWith('rule')))).toEqual(sorted(
      ['other', 'scale'].flatMap((name) => [0, 1, 2].map((sub) => `rule ${name} on subtask ${sub}`)),
    ));
    expect(sorted(out.filter((s) => !s.startsWith('rule')))).toEqual(sorted(values.map((e) => `${e.k}=${e.v * 3}`)));
  });

  it('keyed: applyToKeyedState hands over the user key (composite keys too) and writes reach that key', async () => {
    const seenDesc = new ValueStateDescriptor<number>('seen');
    const r = await runInline((env) => {
      const bump = env.fromElements('bump').broadcast(rulesDesc);
      env
        .fromElements({ a: 'x', b: 1 }, { a: 'x', b: 2 }, { a: 'x', b: 1 })
        .keyBy((e) => [e.a, e.b])
        .connect(bump)
        .process<string>({
          processElement(_e, ctx, out) {
            const s = ctx.getState(seenDesc);
            s.update((s.value() ?? 0) + 1);
            out.collect(`element ${JSON.stringify(ctx.currentKey)} seen=${s.value()}`);
          },
          processBroadcastElement(_b, ctx, out) {
            const keys: string[] = [];
            ctx.applyToKeyedState(seenDesc, (key, state) => {
              keys.push(`${JSON.stringify(key)}:${state.value()}`);
              state.update(state.value()! * 100);
            });
            out.collect(`bump visited ${keys.sort().join(' ')}`);
          },
        })
        .collect();
    });
    // The broadcast element may come before, between or after the elements; each order has
    // exactly one right outcome. Keys come back as the user's arrays.
    const out = r.collected<string>();
    const bump = out.find((s) => s.startsWith('bump'));
    const x1 = out.filter((s) => s.startsWith('element ["x",1]')).map((s) => s.split('seen=')[1]).join(',');
    const x2 = out.filter((s) => s.startsWith('element ["x",2]')).map((s) => s.split('seen=')[1]).join(',');
    const outcomes = [
      'bump visited |1,2|1', // before all
      'bump visited ["x",1]:1|1,101|1', // after the first
      'bump visited ["x",1]:1 ["x",2]:1|1,101|1', // after the second
      'bump visited ["x",1]:2 ["x",2]:1|1,2|1', // after all
    ];
    expect(outcomes).toContain(`${bump}|${x1}|${x2}`);
  });

  it('keyed: the read-only view in processElement reads get, contains and entries', async () => {
    const r = await runInline((env) => {
      const rules = env.fromElements<Rule>({ name: 'a', factor: 1 }, { name: 'b', factor: 2 }).broadcast(rulesDesc);
      env
        .fromElements(1)
        .keyBy((x) => x)
        .connect(rules)
        .process<string>({
          processElement(_v, ctx, out) {
            const s = ctx.getBroadcastState(rulesDesc);
            out.collect(`${[...s.entries()].map(([k]) => k).sort().join('')} ${s.contains('a')} ${s.get('b')?.factor}`);
          },
          processBroadcastElement(rule, ctx) {
            ctx.getBroadcastState(rulesDesc).put(rule.name, rule);
          },
        })
        .collect();
    });
    // Depending on arrival order the element sees none, one or both rules; all three reads agree.
    expect([' false undefined', 'a true undefined', 'ab true 2']).toContain(r.collected<string>()[0]);
  });

  it('keyed: processElement sees a read-only view; writing to it fails with a clear message', async () => {
    const msg = await failureOf((env) => {
      const rules = env.fromElements<Rule>({ name: 'r', factor: 1 }).broadcast(rulesDesc);
      env
        .fromElements(1)
        .keyBy((x) => x)
        .connect(rules)
        .process({
          processElement(_v, ctx) {
            (ctx.getBroadcastState(rulesDesc) as unknown as { put(k: string, v: Rule): void }).put('x', { name: 'x', factor: 2 });
          },
          processBroadcastElement() {},
        })
        .name('Rules')
        .collect();
    });
    expect(msg).toContain('operator "Rules" (subtask 1/1) failed in processElement on record 1');
    expect(msg).toContain('broadcast state "rules" is read-only in processElement');
  });

  it('non-keyed: BroadcastProcessFunction with pending elements in operator list state', async () => {
    const pending = new ListStateDescriptor<number>('pending');
    class Scaler implements BroadcastProcessFunction<number, Rule, string> {
      buffer!: ListState<number>;
      open(ctx: RuntimeContext) {
        this.buffer = ctx.getListState(pending);
      }
      processElement(v: number, ctx: ProcessContext & { getBroadcastState: BroadcastWriteContext['getBroadcastState'] }, out: Collector<string>) {
        const rule = ctx.getBroadcastState(rulesDesc).get('scale');
        if (rule === undefined) this.buffer.add(v);
        else out.collect(`${v * rule.factor}`);
      }
      processBroadcastElement(rule: Rule, ctx: BroadcastWriteContext, out: Collector<string>) {
        const state = ctx.getBroadcastState(rulesDesc);
        state.put(rule.name, rule);
        out.collect(`rules: ${[...state.entries()].map(([k]) => k).join(',')}`);
        for (const v of this.buffer.get()) out.collect(`${v * rule.factor}`);
        this.buffer.clear();
      }
    }
    const r = await runInline((env) => {
      const rules = env.fromElements<Rule>({ name: 'scale', factor: 2 }).broadcast(rulesDesc);
      env.fromGenerator((i) => i, { count: 3000 }).connect(rules).process(new Scaler()).collect();
    }, { parallelism: 2 });
    const out = r.collected<string>();
    expect(out.filter((s) => s.startsWith('rules'))).toEqual(['rules: scale', 'rules: scale']);
    expect(out.filter((s) => !s.startsWith('rules')).map(Number).sort((a, b) => a - b)).toEqual(range(3000).map((i) => 2 * i));
  });

  it('non-keyed: remove and clear change the broadcast state on every subtask', async () => {
    const r = await runInline((env) => {
      const rules = env.fromElements<Rule | 'clear' | { remove: string }>({ name: 'a', factor: 1 }, { name: 'b', factor: 2 }, { remove: 'a' }, 'clear', { name: 'c', factor: 3 })
        .broadcast(rulesDesc);
      env.fromElements<number>().connect(rules).process<string>({
        processElement() {},
        processBroadcastElement(x, ctx, out) {
          const s = ctx.getBroadcastState(rulesDesc);
          if (x === 'clear') s.clear();
          else if ('remove' in x) s.remove(x.remove);
          else s.put(x.name, x);
          out.collect([...s.entries()].map(([k, v]) => `${k}${v.factor}`).join(',') + ` contains(b)=${s.contains('b')}`);
        },
      }).setParallelism(2).collect();
    }, { parallelism: 2 });
    const want = ['a1 contains(b)=false', 'a1,b2 contains(b)=true', 'b2 contains(b)=true', ' contains(b)=false', 'c3 contains(b)=false'];
    expect(sorted(r.collected<string>())).toEqual(sorted([...want, ...want]));
  });

  it('every two-input function emits what it returns, as process() does (before: dropped without a word); a string returned is refused', async () => {
    const r = await runInline((env) => {
      const a = env.fromElements(1, 2);
      const b = env.fromElements('x');
      a.connect(b).process({ processElement1: (n) => [`co1:${n}`], processElement2: (w) => [`co2:${w}`] }).collect('co');
      a.keyBy((n) => String(n)).connect(b.keyBy((w) => w)).process({ processElement1: (n) => [`kco1:${n}`], processElement2: (w) => [`kco2:${w}`] }).collect('keyed-co');
      const rules = env.fromElements<Rule>({ name: 'r', factor: 1 }).broadcast(rulesDesc);
      a.connect(rules).process({ processElement: (n) => [`b:${n}`], processBroadcastElement: (rule) => [`rule:${rule.name}`] }).collect('broadcast');
      a.keyBy((n) => n).connect(rules).process({ processElement: (n) => [`kb:${n}`], processBroadcastElement: (rule) => [`krule:${rule.name}`] }).collect('keyed-broadcast');
    });
    expect(sorted(r.collected<string>('co'))).toEqual(['co1:1', 'co1:2', 'co2:x']);
    expect(sorted(r.collected<string>('keyed-co'))).toEqual(['kco1:1', 'kco1:2', 'kco2:x']);
    expect(sorted(r.collected<string>('broadcast'))).toEqual(['b:1', 'b:2', 'rule:r']);
    expect(sorted(r.collected<string>('keyed-broadcast'))).toEqual(['kb:1', 'kb:2', 'krule:r']);
    const e = await failureOf((env) => {
      env.fromElements(1).connect(env.fromElements('x')).process({ processElement1: () => 'one record', processElement2: () => undefined }).collect();
    });
    expect(e).toMatch(/processElement1 returned a string; return an array of outputs/);
  });

  it('a broadcast state not declared in broadcast(...) is refused naming it, as in Flink (before: an empty state of its own)', async () => {
    const typo = new BroadcastStateDescriptor<string, Rule>('rulez');
    for (const keyed of [false, true]) {
      const msg = await failureOf((env) => {
        const rules = env.fromElements<Rule>({ name: 'r', factor: 1 }).broadcast(rulesDesc);
        const fn = { processElement() {}, processBroadcastElement: (rule: Rule, ctx: BroadcastWriteContext) => void ctx.getBroadcastState(typo).put(rule.name, rule) };
        (keyed ? env.fromElements(1).keyBy((n) => n).connect(rules).process(fn) : env.fromElements(1).connect(rules).process(fn)).collect();
      });
      expect(msg).toMatch(/broadcast state "rulez" was not declared: pass its descriptor to broadcast\(\.\.\.\) \(declared: "rules"\)/);
    }
  });

  it('broadcast() without descriptors is a plain partitioner; with them, a stream for connect only', async () => {
    const r = await runInline((env) => {
      env.fromElements(1, 2).broadcast().map((x) => x * 10).setParallelism(3).collect();
    });
    expect(r.collected<number>().sort((a, b) => a - b)).toEqual([10, 10, 10, 20, 20, 20]);
  });
});
