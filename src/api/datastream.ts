/**
 * The DataStream API: DataStream, KeyedStream, WindowedStream, connected and broadcast
 * streams. Each call records a transformation; types flow from sources through keyBy into
 * keyed state and window functions.
 */
import type {
  ChainingStrategy, OneInputTransformation, OperatorFactory, PartitionTransformation,
  SideOutputTransformation, Transformation, TwoInputTransformation, UnionTransformation,
} from '../graph/transformation.ts';
import { FilterOperator, FlatMapOperator, MapOperator, ProcessOperator } from '../runtime/operators/basic.ts';
import { KeyedProcessOperator, RollingOperator } from '../runtime/operators/keyed.ts';
import type { KeySelectorFn, PartitionSpec } from '../core/partitioning.ts';
import {
  CollectSinkOperator, FunctionSinkOperator, JsonLinesFileSinkOperator, PrintSinkOperator, refuseExistingPartFiles,
} from '../runtime/operators/sinks.ts';
import { DEAD_LETTER_TAG_ID } from '../runtime/operators/source.ts';
import { CommitSinkOperator } from '../runtime/operators/commit-sink.ts';
import type { TwoPhaseCommitSink } from '../core/sink.ts';
import {
  BroadcastProcessOperator, CoProcessOperator, KeyedBroadcastProcessOperator, KeyedCoProcessOperator,
} from '../runtime/operators/two-input.ts';
import { WindowOperator, type WindowContents } from '../runtime/operators/window.ts';
import { TimestampsAndWatermarksOperator } from '../runtime/operators/watermarks.ts';
import { validateMaxParallelism } from '../state/key-groups.ts';
import { toMillis, type Duration } from '../core/duration.ts';
import type { StreamExecutionEnvironment } from './environment.ts';
import type {
  AggregateFunction, BroadcastProcessFunction, Collector, CoProcessFunction, KeyedBroadcastProcessFunction,
  KeyedCoProcessFunction, KeyedProcessFunction, ProcessFunction, ProcessWindowFunction, ReduceFunction, SinkFunction,
} from '../core/functions.ts';
import { OutputTag } from '../core/output-tag.ts';
import type { MalformedRecord } from '../core/source.ts';
import type { BroadcastStateDescriptor } from '../core/state.ts';
import type { TimeWindow, WindowAssigner } from '../core/windows.ts';
import type { WatermarkStrategy } from '../core/watermark-strategy.ts';

/** The side output of a source with malformed: 'dead-letter'. */
export const DEAD_LETTERS = new OutputTag<MalformedRecord>(DEAD_LETTER_TAG_ID);

function requireFn(fn: unknown, what: string): void {
  if (typeof fn !== 'function') throw new TypeError(`${what} needs a function, got ${fn === null ? 'null' : typeof fn}`);
}

function requireMethod(obj: unknown, method: string, what: string): void {
  if (obj === null || typeof obj !== 'object' || typeof (obj as Record<string, unknown>)[method] !== 'function') {
    throw new TypeError(`${what} needs an object with ${/^[aeiou]/i.test(method) ? 'an' : 'a'} ${method}(...) method`);
  }
}

/**
 * One user-function object per parallel subtask, as in Flink, where every subtask
 * deserializes its own copy. The operator factory runs once per subtask; subtasks of one
 * operator that share a thread (parallelism > workers) would otherwise share one object, and
 * the canonical `open(ctx) { this.state = ctx.getState(...) }` would leave every subtask
 * using the handles of the subtask opened last: silently wrong state. The first subtask
 * built in a thread gets the object itself, so one subtask per thread behaves exactly as
 * before (#private fields included); every further one gets a shallow copy with the same
 * prototype and own properties (objects those reference, such as arrays, stay shared).
 */
function perSubtask<F extends object>(fn: F): () => F {
  let handedOut = false;
  return () => {
    if (!handedOut) {
      handedOut = true;
      return fn;
    }
    return Object.create(Object.getPrototypeOf(fn), Object.getOwnPropertyDescriptors(fn)) as F;
  };
}

/** Settings shared by every stream that is the output of a physical operator. */
abstract class StreamBase<T> {
  declare readonly __type?: T;
  constructor(readonly env: StreamExecutionEnvironment, readonly transformation: Transformation) {}

  private physical(what: string) {
    const t = this.transformation;
    if (t.kind === 'union' || t.kind === 'partition' || t.kind === 'side-output') {
      throw new TypeError(`${what}() applies to an operator; this stream is a ${t.kind} (call it on the operator that produced the stream)`);
    }
    return t;
  }

  /** Stable operator id: state in checkpoints and savepoints is matched by it. */
  uid(uid: string): this {
    if (typeof uid !== 'string' || uid === '') throw new TypeError('uid() needs a non-empty string');
    this.physical('uid').uid = uid;
    return this;
  }

  name(name: string): this {
    if (typeof name !== 'string' || name === '') throw new TypeError('name() needs a non-empty string');
    this.physical('name').name = name;
    return this;
  }

  setParallelism(p: number): this {
    if (!Number.isInteger(p) || p < 1) throw new RangeError(`setParallelism: expected a positive integer, got ${String(p)}`);
    const t = this.physical('setParallelism');
    if (t.kind === 'source' && t.source.maxReaders !== undefined && p > t.source.maxReaders) {
      throw new RangeError(`source "${t.name}" supports at most ${t.source.maxReaders} reader(s), cannot set parallelism ${p}`);
    }
    t.parallelism = p;
    return this;
  }

  setMaxParallelism(p: number): this {
    validateMaxParallelism(p, 'setMaxParallelism');
    this.physical('setMaxParallelism').maxParallelism = p;
    return this;
  }

  /** Do not chain this operator with its neighbours. */
  disableChaining(): this {
    this.physical('disableChaining').chaining = 'never';
    return this;
  }

  /** Start a new chain at this operator. */
  startNewChain(): this {
    this.physical('startNewChain').chaining = 'head' satisfies ChainingStrategy;
    return this;
  }

  protected oneInput<O>(name: string, operatorKind: string, factory: OperatorFactory, keySelector: KeySelectorFn | undefined, input: Transformation = this.transformation, isSink = false, commitSink?: TwoPhaseCommitSink<unknown, unknown>): OneInputTransformation {
    return this.env.add<OneInputTransformation>({
      ...(commitSink !== undefined ? { commitSink } : {}),
      kind: 'one-input',
      name,
      uid: undefined,
      parallelism: undefined,
      maxParallelism: undefined,
      chaining: 'always',
      input,
      factory,
      keySelector,
      isSink,
      operatorKind,
    });
  }

  protected stream<O>(t: Transformation): DataStream<O> {
    return new DataStream<O>(this.env, t);
  }

  /** The records this operator emitted to a side output. */
  getSideOutput<X>(tag: OutputTag<X>): DataStream<X> {
    if (!(tag instanceof OutputTag)) throw new TypeError('getSideOutput needs an OutputTag');
    const t = this.env.add<SideOutputTransformation>({
      kind: 'side-output', name: `side-output ${tag.id}`, uid: undefined, parallelism: undefined,
      maxParallelism: undefined, chaining: 'always', input: this.physical('getSideOutput'), tagId: tag.id,
    });
    return this.stream<X>(t);
  }

  // ---- record-at-a-time transformations, shared by keyed and non-keyed streams

  map<O>(fn: (value: T) => O): DataStream<O> {
    requireFn(fn, 'map');
    return this.stream(this.oneInput('Map', 'map', () => new MapOperator(fn), undefined));
  }

  filter(fn: (value: T) => boolean): DataStream<T> {
    requireFn(fn, 'filter');
    return this.stream(this.oneInput('Filter', 'filter', () => new FilterOperator(fn), undefined));
  }

  /** fn emits through the collector, or returns an iterable of results. */
  flatMap<O>(fn: (value: T, out: Collector<O>) => void | Iterable<O>): DataStream<O> {
    requireFn(fn, 'flatMap');
    return this.stream(this.oneInput('FlatMap', 'flatMap', () => new FlatMapOperator(fn as never), undefined));
  }

  // ---- sinks

  /** Writes records to stdout, one per line; prefixed with the subtask number when parallel. */
  print(label?: string): DataSink {
    return this.sink('Print', 'print', () => new PrintSinkOperator(label));
  }

  /** Gathers records for the job's client (tests and embedding): JobResult.collected(name). */
  collect(sinkName = 'collect'): DataSink {
    if (typeof sinkName !== 'string' || sinkName === '') throw new TypeError('collect() needs a non-empty sink name');
    return this.sink(`Collect ${sinkName}`, 'collect', () => new CollectSinkOperator(sinkName));
  }

  /**
   * Writes JSON lines to <dir>/part-<subtask>.jsonl. Not exactly-once: use the exactly-once file
   * sink for that. Part files already in `dir` make the job refuse to start (Flink's
   * NO_OVERWRITE), unless `overwrite: true`.
   */
  writeAsJsonLines(dir: string, options: { overwrite?: boolean } = {}): DataSink {
    if (typeof dir !== 'string' || dir === '') throw new TypeError('writeAsJsonLines() needs a directory path');
    const overwrite = options.overwrite ?? false;
    if (typeof overwrite !== 'boolean') throw new TypeError(`writeAsJsonLines() option "overwrite" must be true or false, got ${JSON.stringify(overwrite)}`);
    const sink = this.sink(`JsonLines ${dir}`, 'file-sink', () => new JsonLinesFileSinkOperator(dir));
    if (!overwrite) (sink.transformation as OneInputTransformation).preflight = () => refuseExistingPartFiles(dir);
    return sink;
  }

  addSink(fn: SinkFunction<T> | ((value: T) => void)): DataSink {
    const f: SinkFunction<T> = typeof fn === 'function' ? { invoke: (v) => fn(v) } : fn;
    requireMethod(f, 'invoke', 'addSink');
    const instance = perSubtask(f);
    return this.sink('Sink', 'sink', () => new FunctionSinkOperator(instance()));
  }

  /**
   * Writes to a two-phase-commit sink: output becomes visible when the checkpoint that covers
   * it completes (exactly-once with checkpointing on; without checkpoints, at the end of input).
   */
  sinkTo<C>(sink: TwoPhaseCommitSink<T, C>): DataSink {
    requireMethod(sink, 'createWriter', 'sinkTo');
    requireMethod(sink, 'createCommitter', 'sinkTo');
    const s = sink as TwoPhaseCommitSink<unknown, unknown>;
    return this.sink(sink.name, 'commit-sink', () => new CommitSinkOperator(s), s);
  }

  protected sink(name: string, kind: string, factory: OperatorFactory, commitSink?: TwoPhaseCommitSink<unknown, unknown>): DataSink {
    const t = this.oneInput(name, kind, factory, undefined, this.transformation, true, commitSink);
    return new DataSink(this.env, t);
  }
}

/** The handle of a sink: settings only. */
export class DataSink extends StreamBase<never> {}

export class DataStream<T> extends StreamBase<T> {
  process<O>(fn: ProcessFunction<T, O>): DataStream<O> {
    requireMethod(fn, 'processElement', 'process');
    const instance = perSubtask(fn);
    return this.stream(this.oneInput('Process', 'process', () => new ProcessOperator(instance()), undefined));
  }

  /** Partitions by key: records with the same key go to the same subtask and share keyed state. */
  keyBy<K>(selector: (value: T) => K): KeyedStream<T, K> {
    requireFn(selector, 'keyBy');
    const t = this.partitioned({ kind: 'hash', keySelector: selector });
    return new KeyedStream<T, K>(this.env, t, selector);
  }

  private partitioned(p: PartitionSpec): PartitionTransformation {
    return this.env.add<PartitionTransformation>({
      kind: 'partition', name: p.kind, uid: undefined, parallelism: undefined, maxParallelism: undefined,
      chaining: 'always', input: this.transformation, partition: p,
    });
  }

  /** Round-robin over all downstream subtasks, a buffer at a time, to the ones with room first. */
  rebalance(): DataStream<T> {
    return this.stream(this.partitioned({ kind: 'rebalance' }));
  }
  /** Round-robin over a subset of downstream subtasks (pointwise). */
  rescale(): DataStream<T> {
    return this.stream(this.partitioned({ kind: 'rescale' }));
  }
  /** To the downstream subtask with the same index; parallelism must match. */
  forward(): DataStream<T> {
    return this.stream(this.partitioned({ kind: 'forward' }));
  }
  /** Everything to downstream subtask 0. */
  global(): DataStream<T> {
    return this.stream(this.partitioned({ kind: 'global' }));
  }

  /** Every record to every downstream subtask; with descriptors, a stream for broadcast state. */
  broadcast(): DataStream<T>;
  broadcast(...descriptors: BroadcastStateDescriptor<any, any>[]): BroadcastStream<T>;
  broadcast(...descriptors: BroadcastStateDescriptor<any, any>[]): DataStream<T> | BroadcastStream<T> {
    const t = this.partitioned({ kind: 'broadcast' });
    if (descriptors.length === 0) return this.stream(t);
    return new BroadcastStream<T>(this.env, t, descriptors);
  }

  union(...others: DataStream<T>[]): DataStream<T> {
    for (const o of others) {
      if (!(o instanceof StreamBase)) throw new TypeError('union() takes DataStreams');
      if (o.env !== this.env) throw new TypeError('union() of streams from different environments');
    }
    const t = this.env.add<UnionTransformation>({
      kind: 'union', name: 'Union', uid: undefined, parallelism: undefined, maxParallelism: undefined,
      chaining: 'always', inputs: [this.transformation, ...others.map((o) => o.transformation)],
    });
    return this.stream(t);
  }

  connect<U>(other: BroadcastStream<U>): BroadcastConnectedStream<T, U>;
  connect<U>(other: DataStream<U>): ConnectedStreams<T, U>;
  connect<U>(other: DataStream<U> | BroadcastStream<U>): ConnectedStreams<T, U> | BroadcastConnectedStream<T, U> {
    if (other instanceof BroadcastStream) return new BroadcastConnectedStream<T, U>(this, other);
    if (!(other instanceof DataStream)) throw new TypeError('connect() takes a DataStream or a BroadcastStream');
    return new ConnectedStreams<T, U>(this, other);
  }

  assignTimestampsAndWatermarks(strategy: WatermarkStrategy<T>): DataStream<T> {
    requireMethod(strategy, 'createGenerator', 'assignTimestampsAndWatermarks');
    const env = this.env;
    return this.stream(
      this.oneInput('Timestamps/Watermarks', 'watermarks', () => new TimestampsAndWatermarksOperator(strategy, env.autoWatermarkInterval), undefined),
    );
  }
}

export class KeyedStream<T, K> extends StreamBase<T> {
  constructor(env: StreamExecutionEnvironment, t: Transformation, readonly keySelector: (value: T) => K) {
    super(env, t);
  }

  process<O>(fn: KeyedProcessFunction<K, T, O>): DataStream<O> {
    requireMethod(fn, 'processElement', 'process');
    const instance = perSubtask(fn);
    return this.stream(this.oneInput('KeyedProcess', 'keyed-process', () => new KeyedProcessOperator(instance()), this.keySelector));
  }

  /** Running reduction per key; emits the new value after every record. */
  reduce(fn: ReduceFunction<T>): DataStream<T> {
    requireFn(fn, 'reduce');
    return this.stream(this.oneInput('Reduce', 'reduce', () => RollingOperator.reduce(fn), this.keySelector));
  }

  /** Running aggregate per key; emits getResult(accumulator) after every record. */
  aggregate<ACC, O>(fn: AggregateFunction<T, ACC, O>): DataStream<O> {
    requireMethod(fn, 'add', 'aggregate');
    requireMethod(fn, 'createAccumulator', 'aggregate');
    requireMethod(fn, 'getResult', 'aggregate');
    const instance = perSubtask(fn);
    return this.stream(this.oneInput('Aggregate', 'aggregate', () => RollingOperator.aggregate(instance()), this.keySelector));
  }

  window(assigner: WindowAssigner): WindowedStream<T, K> {
    if (assigner === null || typeof assigner !== 'object' || !('kind' in assigner)) {
      throw new TypeError('window() needs a window assigner such as TumblingEventTimeWindows.of("1 min")');
    }
    return new WindowedStream<T, K>(this, assigner);
  }

  connect<U>(other: BroadcastStream<U>): KeyedBroadcastConnectedStream<T, U, K>;
  connect<U>(other: KeyedStream<U, K>): KeyedConnectedStreams<T, U, K>;
  connect<U>(other: KeyedStream<U, K> | BroadcastStream<U>): KeyedConnectedStreams<T, U, K> | KeyedBroadcastConnectedStream<T, U, K> {
    if (other instanceof BroadcastStream) return new KeyedBroadcastConnectedStream<T, U, K>(this, other);
    if (!(other instanceof KeyedStream)) throw new TypeError('a keyed stream connects to another keyed stream (same key type) or a broadcast stream');
    return new KeyedConnectedStreams<T, U, K>(this, other);
  }

  /** @internal */
  addOperator<O>(name: string, kind: string, factory: OperatorFactory): DataStream<O> {
    return this.stream(this.oneInput(name, kind, factory, this.keySelector));
  }
}

export class WindowedStream<T, K> {
  private lateness = 0;
  private lateTag: OutputTag<T> | undefined;
  constructor(private readonly keyed: KeyedStream<T, K>, private readonly assigner: WindowAssigner) {}

  /** Keep windows this long after they fire; late records within it update and re-fire them. */
  allowedLateness(d: Duration): this {
    if (!this.assigner.eventTime) throw new TypeError('allowedLateness applies to event-time windows only');
    this.lateness = toMillis(d, 'allowedLateness');
    return this;
  }

  /** Records too late for every window they belong to go to this side output instead of being dropped. */
  sideOutputLateData(tag: OutputTag<T>): this {
    if (!(tag instanceof OutputTag)) throw new TypeError('sideOutputLateData needs an OutputTag');
    this.lateTag = tag;
    return this;
  }

  reduce(fn: ReduceFunction<T>): DataStream<T>;
  reduce<O>(fn: ReduceFunction<T>, windowFn: ProcessWindowFunction<T, O, K, TimeWindow>): DataStream<O>;
  reduce<O>(fn: ReduceFunction<T>, windowFn?: ProcessWindowFunction<T, O, K, TimeWindow>): DataStream<O | T> {
    requireFn(fn, 'window reduce');
    return this.build('WindowReduce', { kind: 'reduce', reduce: fn }, windowFn);
  }

  aggregate<ACC, R>(fn: AggregateFunction<T, ACC, R>): DataStream<R>;
  aggregate<ACC, R, O>(fn: AggregateFunction<T, ACC, R>, windowFn: ProcessWindowFunction<R, O, K, TimeWindow>): DataStream<O>;
  aggregate<ACC, R, O>(fn: AggregateFunction<T, ACC, R>, windowFn?: ProcessWindowFunction<R, O, K, TimeWindow>): DataStream<O | R> {
    requireMethod(fn, 'add', 'window aggregate');
    requireMethod(fn, 'createAccumulator', 'window aggregate');
    requireMethod(fn, 'getResult', 'window aggregate');
    return this.build('WindowAggregate', { kind: 'aggregate', aggregate: fn }, windowFn);
  }

  /** Full-window processing: the function sees all the window's elements when it fires. */
  process<O>(fn: ProcessWindowFunction<T, O, K, TimeWindow>): DataStream<O> {
    requireMethod(fn, 'process', 'window process');
    return this.build('WindowProcess', { kind: 'list' }, fn);
  }

  private build<O>(name: string, contents: WindowContents, windowFn: ProcessWindowFunction<any, any, any> | undefined): DataStream<O> {
    if (windowFn !== undefined) requireMethod(windowFn, 'process', 'window function');
    const spec = { assigner: this.assigner, contents, windowFunction: windowFn, allowedLateness: this.lateness, lateDataTag: this.lateTag };
    const windowFunction = windowFn === undefined ? undefined : perSubtask(windowFn);
    return this.keyed.addOperator<O>(`${name} ${this.assigner.description}`, 'window', () => new WindowOperator({ ...spec, windowFunction: windowFunction?.() }));
  }
}

function twoInput(env: StreamExecutionEnvironment, name: string, kind: string, a: Transformation, b: Transformation, keys: [KeySelectorFn | undefined, KeySelectorFn | undefined], factory: OperatorFactory): TwoInputTransformation {
  return env.add<TwoInputTransformation>({
    kind: 'two-input', name, uid: undefined, parallelism: undefined, maxParallelism: undefined,
    chaining: 'head', input1: a, input2: b, factory, keySelectors: keys, operatorKind: kind,
  });
}

export class ConnectedStreams<A, B> {
  constructor(readonly first: DataStream<A>, readonly second: DataStream<B>) {}

  process<O>(fn: CoProcessFunction<A, B, O>): DataStream<O> {
    requireMethod(fn, 'processElement1', 'connect().process');
    requireMethod(fn, 'processElement2', 'connect().process');
    const instance = perSubtask(fn);
    const t = twoInput(this.first.env, 'CoProcess', 'co-process', this.first.transformation, this.second.transformation, [undefined, undefined], () => new CoProcessOperator(instance()));
    return new DataStream<O>(this.first.env, t);
  }

  /** Keys both inputs, so a keyed co-process function can keep state per key. */
  keyBy<K>(key1: (a: A) => K, key2: (b: B) => K): KeyedConnectedStreams<A, B, K> {
    return new KeyedConnectedStreams<A, B, K>(this.first.keyBy(key1), this.second.keyBy(key2));
  }
}

export class KeyedConnectedStreams<A, B, K> {
  constructor(readonly first: KeyedStream<A, K>, readonly second: KeyedStream<B, K>) {}
  process<O>(fn: KeyedCoProcessFunction<K, A, B, O>): DataStream<O> {
    requireMethod(fn, 'processElement1', 'connect().process');
    requireMethod(fn, 'processElement2', 'connect().process');
    const instance = perSubtask(fn);
    const t = twoInput(this.first.env, 'KeyedCoProcess', 'keyed-co-process', this.first.transformation, this.second.transformation,
      [this.first.keySelector as KeySelectorFn, this.second.keySelector as KeySelectorFn], () => new KeyedCoProcessOperator(instance()));
    return new DataStream<O>(this.first.env, t);
  }
}

export class BroadcastStream<T> {
  constructor(readonly env: StreamExecutionEnvironment, readonly transformation: Transformation, readonly descriptors: readonly BroadcastStateDescriptor<any, any>[]) {}
}

export class BroadcastConnectedStream<A, B> {
  constructor(readonly first: DataStream<A>, readonly second: BroadcastStream<B>) {}
  process<O>(fn: BroadcastProcessFunction<A, B, O>): DataStream<O> {
    requireMethod(fn, 'processElement', 'broadcast process');
    requireMethod(fn, 'processBroadcastElement', 'broadcast process');
    const instance = perSubtask(fn);
    const t = twoInput(this.first.env, 'BroadcastProcess', 'broadcast-process', this.first.transformation, this.second.transformation, [undefined, undefined], () => new BroadcastProcessOperator(instance()));
    return new DataStream<O>(this.first.env, t);
  }
}

export class KeyedBroadcastConnectedStream<A, B, K> {
  constructor(readonly first: KeyedStream<A, K>, readonly second: BroadcastStream<B>) {}
  process<O>(fn: KeyedBroadcastProcessFunction<K, A, B, O>): DataStream<O> {
    requireMethod(fn, 'processElement', 'broadcast process');
    requireMethod(fn, 'processBroadcastElement', 'broadcast process');
    const instance = perSubtask(fn);
    const t = twoInput(this.first.env, 'KeyedBroadcastProcess', 'keyed-broadcast-process', this.first.transformation, this.second.transformation,
      [this.first.keySelector as KeySelectorFn, undefined], () => new KeyedBroadcastProcessOperator(instance()));
    return new DataStream<O>(this.first.env, t);
  }
}
