/** Stateless one-input operators: map, filter, flatMap and the non-keyed process function. */
import type { Collector, ProcessContext, ProcessFunction } from '../../core/functions.ts';
import type { OutputTag } from '../../core/output-tag.ts';
import { hasTimestamp, NO_TIMESTAMP, type Batch } from '../../core/batch.ts';
import { JobDefinitionError } from '../../core/errors.ts';
import { specialize } from '../output.ts';
import { refusePromise, StreamOperator } from './operator.ts';

export class MapOperator extends StreamOperator {
  constructor(private readonly fn: (value: any) => unknown) {
    super();
    // Records from a chained predecessor, one at a time; own code per instance (see
    // specialize), so the user function's call site stays monomorphic in a job of many maps.
    this.processRecord = specialize('map', 'op', 'fn',
      'let r; try { r = fn(value); if (op.firstCall) op.checkFirstResult(r, "map"); } catch (e) { throw op.failOn(e, "map", value); } op.output.emit(r, timestamp);')(this, fn);
  }
  override get oneToOne(): boolean {
    return true;
  }
  processBatch(batch: Batch): void {
    const values = batch.values;
    const n = values.length;
    const fn = this.fn;
    const out = new Array(n);
    let i = 0;
    try {
      for (; i < n; i++) out[i] = fn(values[i]);
      if (n > 0) refusePromise(out[0], 'map');
    } catch (e) {
      throw this.failOn(e, 'map', values[i < n ? i : 0]); // after the loop: the Promise check of out[0]
    }
    this.output.emitBatch({ values: out, timestamps: batch.timestamps });
  }
}

export class FilterOperator extends StreamOperator {
  constructor(private readonly fn: (value: any) => boolean) {
    super();
    this.processRecord = specialize('filter', 'op', 'fn',
      'let keep; try { keep = fn(value); if (op.firstCall) op.checkFirstResult(keep, "filter"); } catch (e) { throw op.failOn(e, "filter", value); } if (keep) op.output.emit(value, timestamp);')(this, fn);
  }
  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    const n = values.length;
    const fn = this.fn;
    const outV: unknown[] = [];
    const outT: number[] = [];
    let i = 0;
    try {
      if (n > 0) {
        const keep = fn(values[0]);
        refusePromise(keep, 'filter');
        if (keep) {
          outV.push(values[0]);
          outT.push(timestamps[0]!);
        }
        i = 1;
      }
      for (; i < n; i++) {
        const v = values[i];
        if (fn(v)) {
          outV.push(v);
          outT.push(timestamps[i]!);
        }
      }
    } catch (e) {
      throw this.failOn(e, 'filter', values[i]);
    }
    this.output.emitBatch({ values: outV, timestamps: outT });
  }
}

/** Collector that stamps every emitted record with the timestamp of the record being processed. */
export class TimestampedCollector implements Collector<unknown> {
  timestamp = Number.NEGATIVE_INFINITY;
  constructor(private readonly op: StreamOperator) {}
  collect(value: unknown): void {
    this.op.output.emit(value, this.timestamp);
  }
}

export type FlatMapFn = (value: any, out: Collector<any>) => void | Iterable<unknown>;

export class FlatMapOperator extends StreamOperator {
  private readonly collector = new TimestampedCollector(this);
  constructor(private readonly fn: FlatMapFn) {
    super();
  }
  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    const c = this.collector;
    const fn = this.fn;
    const out = this.output;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const ts = timestamps[i]!;
        c.timestamp = ts;
        const r = fn(values[i], c);
        if (r !== undefined && r !== null) {
          checkReturnedOutputs(r, 'flatMap');
          for (const v of r as Iterable<unknown>) out.emit(v, ts);
        }
      }
    } catch (e) {
      throw this.failOn(e, 'flatMap', values[i]);
    }
  }
  override processRecord(value: unknown, timestamp: number): void {
    this.collector.timestamp = timestamp;
    let r: void | Iterable<unknown>;
    try {
      r = this.fn(value, this.collector);
      if (r !== undefined && r !== null) {
        checkReturnedOutputs(r, 'flatMap');
        for (const v of r as Iterable<unknown>) this.output.emit(v, timestamp);
      }
    } catch (e) {
      throw this.failOn(e, 'flatMap', value);
    }
  }
}

/**
 * Emits what a process-style function returned (issue 15: returning outputs is what lets
 * TypeScript infer a process function's output type). Nothing is the common case and costs
 * one comparison per record.
 */
export function collectReturned(returned: unknown, out: Collector<unknown>, method: string): void {
  if (returned === undefined || returned === null) return;
  checkReturnedOutputs(returned, method);
  for (const v of returned as Iterable<unknown>) out.collect(v);
}

/**
 * A reduce or an aggregate's add must return the value it made: one that returns nothing (a
 * reducer changing its accumulator in place and forgetting `return a`) gave undefined, which
 * cleared the state and was emitted as a record, the running value silently restarting.
 */
export function checkCombined<T>(v: T, method: 'reduce' | 'aggregate'): T {
  if (v === undefined) {
    throw new TypeError(method === 'reduce'
      ? 'the reduce function returned undefined; it must return the combined value'
      : 'the aggregate function\'s add returned undefined; it must return the accumulator');
  }
  return v;
}

/**
 * What a function returned must be outputs: an iterable, but not a string. A string is
 * iterable too, and emitting it character by character is never what was meant (in Flink a
 * String is one record): refused, as a number or an object is.
 */
export function checkReturnedOutputs(returned: unknown, method: string): void {
  if (typeof returned === 'string' || typeof (returned as Iterable<unknown>)[Symbol.iterator] !== 'function') {
    refusePromise(returned, method);
    throw new TypeError(`${method} returned ${typeof returned === 'object' ? 'an object' : `a ${typeof returned}`}; return an array of outputs, or nothing and emit with out.collect(value)`);
  }
}

/**
 * What every process-style context has, keyed or not: the current record's timestamp, side
 * outputs and the two clocks. Fields are updated per record, never reallocated.
 */
export class ContextBase {
  ts = NO_TIMESTAMP;
  constructor(protected readonly op: StreamOperator) {}
  get timestamp(): number | undefined {
    return hasTimestamp(this.ts) ? this.ts : undefined;
  }
  output<X>(tag: OutputTag<X>, value: X): void {
    this.op.output.emitSide(tag.id, value, this.ts);
  }
  currentProcessingTime(): number {
    return this.op.env.clock.now();
  }
  currentWatermark(): number {
    return this.op.currentWatermark;
  }
}

/** The context of non-keyed process functions: keyed state and timers are refused with a clear message. */
export class BasicProcessContext extends ContextBase implements ProcessContext {
  // Not part of ProcessContext's type: a clear message for JavaScript callers and casts.
  getState(d?: { name?: string }): never {
    return keyedStateMisuse(this.op, 'getState', d);
  }
  getMapState(d?: { name?: string }): never {
    return keyedStateMisuse(this.op, 'getMapState', d);
  }
  getListState(d?: { name?: string }): never {
    return keyedStateMisuse(this.op, 'getListState', d);
  }
  getReducingState(d?: { name?: string }): never {
    return keyedStateMisuse(this.op, 'getReducingState', d);
  }
  getAggregatingState(d?: { name?: string }): never {
    return keyedStateMisuse(this.op, 'getAggregatingState', d);
  }
  get timerService(): never {
    throw new JobDefinitionError(
      `operator "${this.op.env.taskInfo.operatorName}": timers exist only on a keyed stream; call keyBy(...) before process()`,
    );
  }
}

function keyedStateMisuse(op: StreamOperator, method: string, d: { name?: string } | undefined): never {
  throw new JobDefinitionError(
    `operator "${op.env.taskInfo.operatorName}": ${method}("${d?.name ?? '?'}") is keyed state, which exists only on a keyed stream; call keyBy(...) before process()`,
  );
}

export class ProcessOperator extends StreamOperator {
  private readonly collector = new TimestampedCollector(this);
  private readonly ctx = new BasicProcessContext(this);
  constructor(private readonly fn: ProcessFunction<any, any>) {
    super();
    this.userFunction = fn;
  }
  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    const c = this.collector;
    const ctx = this.ctx;
    const fn = this.fn;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        c.timestamp = ctx.ts = timestamps[i]!;
        const r = fn.processElement(values[i], ctx, c);
        if (r !== undefined) collectReturned(r, c, 'processElement');
      }
    } catch (e) {
      throw this.failOn(e, 'processElement', values[i]);
    }
  }
  override processRecord(value: unknown, timestamp: number): void {
    this.collector.timestamp = this.ctx.ts = timestamp;
    try {
      const r = this.fn.processElement(value, this.ctx, this.collector);
      if (r !== undefined) collectReturned(r, this.collector, 'processElement');
    } catch (e) {
      throw this.failOn(e, 'processElement', value);
    }
  }
}
