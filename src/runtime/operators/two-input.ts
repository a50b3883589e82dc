/**
 * Two-input operators: connect + co-process (keyed or not) and broadcast state patterns.
 * Input 0 is the first stream, input 1 the second (the broadcast stream for broadcast
 * operators). The watermark is the minimum over both inputs (StreamOperator does that).
 */
import type {
  BroadcastProcessFunction, CoProcessFunction, KeyedBroadcastProcessFunction, KeyedCoProcessFunction,
} from '../../core/functions.ts';
import type { BroadcastStateDescriptor, ValueState, ValueStateDescriptor } from '../../core/state.ts';
import { readOnlyView } from '../../state/operator-state.ts';
import { denormalizeKey } from '../../state/key-groups.ts';
import type { Batch } from '../../core/batch.ts';
import { BasicProcessContext, collectReturned, TimestampedCollector } from './basic.ts';
import { KeyedContextImpl, KeyedFunctionOperator } from './keyed.ts';
import type { KeySelectorFn } from '../../core/partitioning.ts';
import { StreamOperator } from './operator.ts';

export class CoProcessOperator extends StreamOperator {
  private readonly collector = new TimestampedCollector(this);
  private readonly ctx = new BasicProcessContext(this);
  constructor(private readonly fn: CoProcessFunction<any, any, any>) {
    super();
    this.userFunction = fn;
  }
  processBatch(batch: Batch, input: number): void {
    const { values, timestamps } = batch;
    const fn = this.fn;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        this.collector.timestamp = this.ctx.ts = timestamps[i]!;
        const r = input === 0 ? fn.processElement1(values[i], this.ctx, this.collector) : fn.processElement2(values[i], this.ctx, this.collector);
        if (r !== undefined) collectReturned(r, this.collector, input === 0 ? 'processElement1' : 'processElement2');
      }
    } catch (e) {
      throw this.failOn(e, input === 0 ? 'processElement1' : 'processElement2', values[i]);
    }
  }
}

export class KeyedCoProcessOperator extends KeyedFunctionOperator {
  protected readonly userOnTimer;
  constructor(private readonly fn: KeyedCoProcessFunction<any, any, any, any>) {
    super();
    this.userOnTimer = fn.onTimer?.bind(fn);
    this.userFunction = fn;
  }
  processBatch(batch: Batch, input: number): void {
    const { values, timestamps } = batch;
    const kgs = this.keyGroupsOf(batch);
    const sel = this.env.keySelectors[input] as KeySelectorFn;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const v = values[i];
        this.keyFrom(sel, v, kgs, i);
        this.collector.timestamp = this.ctx.ts = timestamps[i]!;
        const r = input === 0 ? this.fn.processElement1(v, this.ctx, this.collector) : this.fn.processElement2(v, this.ctx, this.collector);
        if (r !== undefined) collectReturned(r, this.collector, input === 0 ? 'processElement1' : 'processElement2');
      }
    } catch (e) {
      throw this.failOn(e, input === 0 ? 'processElement1' : 'processElement2', values[i]);
    }
  }
}

/**
 * A broadcast state the job declared in broadcast(...descriptors), or an error naming it, as
 * Flink refuses a state not given to broadcast(): one made up at the call (a typo in its name)
 * would be a state of its own, empty, that the broadcast side never writes.
 */
function declaredBroadcastState(op: StreamOperator, declared: readonly string[], d: BroadcastStateDescriptor<unknown, unknown>) {
  if (!declared.includes(d.name)) {
    throw new Error(`broadcast state "${d.name}" was not declared: pass its descriptor to broadcast(...) (declared: ${declared.map((n) => `"${n}"`).join(', ')})`);
  }
  return op.env.operatorState.getBroadcastState(d);
}

class BroadcastContexts extends BasicProcessContext {
  constructor(op: StreamOperator, private readonly writable: boolean, private readonly declared: readonly string[]) {
    super(op);
  }
  getBroadcastState<K, V>(d: BroadcastStateDescriptor<K, V>): any {
    const s = declaredBroadcastState(this.op, this.declared, d as BroadcastStateDescriptor<unknown, unknown>);
    return this.writable ? s : readOnlyView(s);
  }
}

export class BroadcastProcessOperator extends StreamOperator {
  private readonly collector = new TimestampedCollector(this);
  private readonly readCtx: BroadcastContexts;
  private readonly writeCtx: BroadcastContexts;
  constructor(private readonly fn: BroadcastProcessFunction<any, any, any>, declared: readonly string[]) {
    super();
    this.userFunction = fn;
    this.readCtx = new BroadcastContexts(this, false, declared);
    this.writeCtx = new BroadcastContexts(this, true, declared);
  }
  processBatch(batch: Batch, input: number): void {
    const { values, timestamps } = batch;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const ts = timestamps[i]!;
        this.collector.timestamp = ts;
        if (input === 0) {
          this.readCtx.ts = ts;
          const r = this.fn.processElement(values[i], this.readCtx, this.collector);
          if (r !== undefined) collectReturned(r, this.collector, 'processElement');
        } else {
          this.writeCtx.ts = ts;
          const r = this.fn.processBroadcastElement(values[i], this.writeCtx, this.collector);
          if (r !== undefined) collectReturned(r, this.collector, 'processBroadcastElement');
        }
      }
    } catch (e) {
      throw this.failOn(e, input === 0 ? 'processElement' : 'processBroadcastElement', values[i]);
    }
  }
}

export class KeyedBroadcastProcessOperator extends KeyedFunctionOperator {
  protected readonly userOnTimer;
  private writeCtx!: BroadcastContexts & { applyToKeyedState: unknown };
  constructor(private readonly fn: KeyedBroadcastProcessFunction<any, any, any, any>, private readonly declared: readonly string[]) {
    super();
    this.userOnTimer = fn.onTimer?.bind(fn);
    this.userFunction = fn;
  }
  protected override setUp(): void {
    super.setUp();
    const op = this;
    const ctx = this.ctx as KeyedContextImpl & { getBroadcastState?: unknown };
    ctx.getBroadcastState = (d: BroadcastStateDescriptor<unknown, unknown>) => readOnlyView(declaredBroadcastState(op, this.declared, d));
    const w = new BroadcastContexts(this, true, this.declared) as BroadcastContexts & { applyToKeyedState: unknown };
    w.applyToKeyedState = <S>(d: ValueStateDescriptor<S>, fn: (key: unknown, state: ValueState<S>) => void) => {
      const state = op.backend.getValueState(d);
      for (const { key, keyGroup } of op.backend.keys(d.name)) {
        op.backend.setCurrentNormalizedKey(key, keyGroup, denormalizeKey(key));
        fn(denormalizeKey(key), state);
      }
    };
    this.writeCtx = w;
  }
  processBatch(batch: Batch, input: number): void {
    const { values, timestamps } = batch;
    const kgs = this.keyGroupsOf(batch);
    let i = 0;
    try {
      if (input === 0) {
        const sel = this.env.keySelectors[0] as KeySelectorFn;
        for (; i < values.length; i++) {
          const v = values[i];
          this.keyFrom(sel, v, kgs, i);
          this.collector.timestamp = this.ctx.ts = timestamps[i]!;
          const r = this.fn.processElement(v, this.ctx as any, this.collector);
          if (r !== undefined) collectReturned(r, this.collector, 'processElement');
        }
      } else {
        for (; i < values.length; i++) {
          this.collector.timestamp = this.writeCtx.ts = timestamps[i]!;
          const r = this.fn.processBroadcastElement(values[i], this.writeCtx as any, this.collector);
          if (r !== undefined) collectReturned(r, this.collector, 'processBroadcastElement');
        }
      }
    } catch (e) {
      throw this.failOn(e, input === 0 ? 'processElement' : 'processBroadcastElement', values[i]);
    }
  }
}
