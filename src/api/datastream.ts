/**
 * The DataStream API: DataStream, KeyedStream, WindowedStream, connected and broadcast
 * streams. Each call records a transformation; types flow from sources through keyBy into
 * keyed state and window functions.
 */
import type {
  ChainingStrategy, OneInputTransformation, OperatorFactory, PartitionTransformation,
  SideOutputTransformation, Transformation, TwoInputTransformation, UnionTransformation,
} from '../graph/transformation.ts';
import { collectReturned, FilterOperator, FlatMapOperator, MapOperator, ProcessOperator } from '../runtime/operators/basic.ts';
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
import { CountWindowOperator } from '../runtime/operators/count-window.ts';
import { IntervalJoinOperator } from '../runtime/operators/interval-join.ts';
import { TimestampsAndWatermarksOperator } from '../runtime/operators/watermarks.ts';
import { validateMaxParallelism } from '../state/key-groups.ts';
import { signedMillis, toMillis, type Duration } from '../core/duration.ts';
import type { StreamExecutionEnvironment } from './environment.ts';
import type {
  AggregateFunction, BroadcastProcessFunction, CoGroupFunction, Collector, CoProcessFunction, FlatJoinFunction,
  JoinFunction, KeyedBroadcastProcessFunction, KeyedCoProcessFunction, KeyedProcessFunction, ProcessAllWindowFunction,
  ProcessFunction, ProcessJoinFunction, ProcessWindowFunction, ReduceFunction, SinkFunction, WindowContext,
} from '../core/functions.ts';
import { OutputTag } from '../core/output-tag.ts';
import type { MalformedRecord } from '../core/source.ts';
import type { BroadcastStateDescriptor } from '../core/state.ts';
import type { GlobalWindow, TimeWindow, WindowAssigner } from '../core/windows.ts';
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
    if (t.kind === 'one-input' && t.nonParallel === true && p !== 1) {
      throw new RangeError(`setParallelism(${p}): "${t.name}" is a window over the whole stream (windowAll), which runs at parallelism 1; key the stream and use window() to run in parallel`);
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

  /** Keeps the records fn accepts; a type guard narrows the stream's type (`filter((e): e is Bid => e.kind === 'bid')`). */
  filter<S extends T>(fn: (value: T) => value is S): DataStream<S>;
  filter(fn: (value: T) => boolean): DataStream<T>;
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
    const t = sink.transformation as OneInputTransformation;
    t.outputDir = dir;
    if (!overwrite) t.preflight = () => refuseExistingPartFiles(dir);
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
    const d = this.sink(sink.name, 'commit-sink', () => new CommitSinkOperator(s), s);
    if (typeof sink.outputDir === 'string') (d.transformation as OneInputTransformation).outputDir = sink.outputDir;
    return d;
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

  /**
   * A window over the whole stream, not per key (Flink's windowAll): one subtask sees every
   * record, so the window operator runs at parallelism 1 (setParallelism refuses more).
   */
  windowAll(assigner: WindowAssigner): AllWindowedStream<T> {
    checkAssigner(assigner, 'windowAll');
    return new AllWindowedStream<T>(this.keyBy(allKey), assigner);
  }

  /** Count windows over the whole stream (Flink's countWindowAll), at parallelism 1; see KeyedStream.countWindow. */
  countWindowAll(size: number, slide?: number): AllCountWindowedStream<T> {
    checkCount(size, slide, 'countWindowAll');
    return new AllCountWindowedStream<T>(this.keyBy(allKey), size, slide);
  }

  /**
   * Window join (Flink's `join(other).where(k1).equalTo(k2).window(assigner).apply(fn)`):
   * every pair of records, one from each stream, with equal keys in the same window.
   */
  join<U>(other: DataStream<U>): JoinedStreams<T, U> {
    if (!(other instanceof DataStream) || other.env !== this.env) throw new TypeError('join() takes a DataStream of the same environment');
    return new JoinedStreams<T, U>(this, other);
  }

  /**
   * Window coGroup (Flink's `coGroup(other).where(k1).equalTo(k2).window(assigner).apply(fn)`):
   * per key and window, all records of each stream at once (one side may be empty).
   */
  coGroup<U>(other: DataStream<U>): CoGroupedStreams<T, U> {
    if (!(other instanceof DataStream) || other.env !== this.env) throw new TypeError('coGroup() takes a DataStream of the same environment');
    return new CoGroupedStreams<T, U>(this, other);
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
    checkAssigner(assigner, 'window');
    return new WindowedStream<T, K>(this, assigner);
  }

  /**
   * Count windows per key (Flink's countWindow): without `slide`, every `size` records of a key
   * form a window that fires as the last one arrives; with it, the window fires every `slide`
   * records with the last `size` ones. Records count in arrival order, whatever their event
   * time; a window short of its count at the end of input does not fire.
   */
  countWindow(size: number, slide?: number): CountWindowedStream<T, K> {
    checkCount(size, slide, 'countWindow');
    return new CountWindowedStream<T, K>(this, size, slide);
  }

  /**
   * Interval join with another keyed stream of the same key type (Flink's intervalJoin): a
   * record of this stream at time t meets the other's records of its key in [t + lower, t + upper].
   */
  intervalJoin<U>(other: KeyedStream<U, K>): IntervalJoin<T, U, K> {
    if (!(other instanceof KeyedStream) || other.env !== this.env) throw new TypeError('intervalJoin() takes a KeyedStream of the same environment (call keyBy on the other stream)');
    return new IntervalJoin<T, U, K>(this, other);
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

  /**
   * Keep windows this long after they fire; late records within it update and re-fire them.
   * Processing-time windows have no late records: there it is checked and ignored, as in Flink.
   */
  allowedLateness(d: Duration): this {
    const ms = toMillis(d, 'allowedLateness');
    this.lateness = this.assigner.eventTime ? ms : 0;
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
    return this.buildWith<O>(name, 'window', contents, windowFn === undefined ? undefined : perSubtask(windowFn));
  }

  /** @internal The operator, with a factory of window functions (one per subtask). */
  buildWith<O>(name: string, kind: string, contents: WindowContents, windowFunction: (() => ProcessWindowFunction<any, any, any>) | undefined): DataStream<O> {
    const spec = { assigner: this.assigner, contents, allowedLateness: this.lateness, lateDataTag: this.lateTag };
    return this.keyed.addOperator<O>(`${name} ${this.assigner.description}`, kind, () => new WindowOperator({ ...spec, windowFunction: windowFunction?.() }));
  }
}

/** The key of every record of a non-keyed window: one key, so one subtask holds the window. */
const allKey = (): number => 0;

function checkAssigner(assigner: WindowAssigner, what: string): void {
  if (assigner === null || typeof assigner !== 'object' || !('kind' in assigner)) {
    throw new TypeError(`${what}() needs a window assigner such as TumblingEventTimeWindows.of("1 min")`);
  }
}

function checkCount(size: number, slide: number | undefined, what: string): void {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`${what}: size must be a positive integer, got ${String(size)}`);
  if (slide !== undefined && (!Number.isInteger(slide) || slide < 1)) throw new RangeError(`${what}: slide must be a positive integer, got ${String(slide)}`);
}

/** Lifecycle hooks of a user function, forwarded from the adapter weir builds around it. */
function forwardLifecycle(target: Record<string, unknown>, fn: object): void {
  for (const m of ['open', 'close', 'snapshotState', 'notifyCheckpointComplete'] as const) {
    const f = (fn as Record<string, unknown>)[m];
    if (typeof f === 'function') target[m] = (arg: unknown) => (f as (a: unknown) => unknown).call(fn, arg);
  }
}

/** A keyed window function around a key-less one (windowAll). */
function dropKey<I, O, W>(fn: ProcessAllWindowFunction<I, O, W>): ProcessWindowFunction<I, O, number, W> {
  const adapter: Record<string, unknown> = {
    process: (_key: number, ctx: WindowContext<W>, elements: readonly I[], out: Collector<O>) => fn.process(ctx, elements, out),
  };
  forwardLifecycle(adapter, fn);
  return adapter as unknown as ProcessWindowFunction<I, O, number, W>;
}

/** Marks a windowAll operator: parallelism 1, and setParallelism may not raise it. */
function nonParallel<O>(s: DataStream<O>): DataStream<O> {
  const t = s.transformation as OneInputTransformation;
  t.parallelism = 1;
  t.nonParallel = true;
  return s;
}

/** A window over the whole stream (DataStream.windowAll): runs at parallelism 1. */
export class AllWindowedStream<T> {
  private readonly windowed: WindowedStream<T, number>;
  constructor(keyed: KeyedStream<T, number>, assigner: WindowAssigner) {
    this.windowed = new WindowedStream<T, number>(keyed, assigner);
  }

  /** Keep windows this long after they fire; late records within it update and re-fire them. */
  allowedLateness(d: Duration): this {
    this.windowed.allowedLateness(d);
    return this;
  }

  /** Records too late for every window they belong to go to this side output instead of being dropped. */
  sideOutputLateData(tag: OutputTag<T>): this {
    this.windowed.sideOutputLateData(tag);
    return this;
  }

  reduce(fn: ReduceFunction<T>): DataStream<T>;
  reduce<O>(fn: ReduceFunction<T>, windowFn: ProcessAllWindowFunction<T, O, TimeWindow>): DataStream<O>;
  reduce<O>(fn: ReduceFunction<T>, windowFn?: ProcessAllWindowFunction<T, O, TimeWindow>): DataStream<O | T> {
    requireFn(fn, 'windowAll reduce');
    return this.build('AllWindowReduce', { kind: 'reduce', reduce: fn }, windowFn);
  }

  aggregate<ACC, R>(fn: AggregateFunction<T, ACC, R>): DataStream<R>;
  aggregate<ACC, R, O>(fn: AggregateFunction<T, ACC, R>, windowFn: ProcessAllWindowFunction<R, O, TimeWindow>): DataStream<O>;
  aggregate<ACC, R, O>(fn: AggregateFunction<T, ACC, R>, windowFn?: ProcessAllWindowFunction<R, O, TimeWindow>): DataStream<O | R> {
    requireAggregate(fn, 'windowAll aggregate');
    return this.build('AllWindowAggregate', { kind: 'aggregate', aggregate: fn }, windowFn);
  }

  /** Full-window processing: the function sees all the window's elements when it fires. */
  process<O>(fn: ProcessAllWindowFunction<T, O, TimeWindow>): DataStream<O> {
    requireMethod(fn, 'process', 'windowAll process');
    return this.build('AllWindowProcess', { kind: 'list' }, fn);
  }

  private build<O>(name: string, contents: WindowContents, windowFn: ProcessAllWindowFunction<any, any, TimeWindow> | undefined): DataStream<O> {
    if (windowFn !== undefined) requireMethod(windowFn, 'process', 'window function');
    const instance = windowFn === undefined ? undefined : perSubtask(windowFn);
    return nonParallel(this.windowed.buildWith<O>(name, 'window-all', contents, instance === undefined ? undefined : () => dropKey(instance())));
  }
}

function requireAggregate(fn: unknown, what: string): void {
  requireMethod(fn, 'add', what);
  requireMethod(fn, 'createAccumulator', what);
  requireMethod(fn, 'getResult', what);
}

/** Count windows per key (KeyedStream.countWindow). */
export class CountWindowedStream<T, K> {
  constructor(private readonly keyed: KeyedStream<T, K>, private readonly size: number, private readonly slide: number | undefined) {}

  reduce(fn: ReduceFunction<T>): DataStream<T>;
  reduce<O>(fn: ReduceFunction<T>, windowFn: ProcessWindowFunction<T, O, K, GlobalWindow>): DataStream<O>;
  reduce<O>(fn: ReduceFunction<T>, windowFn?: ProcessWindowFunction<T, O, K, GlobalWindow>): DataStream<O | T> {
    requireFn(fn, 'count window reduce');
    if (windowFn !== undefined) requireMethod(windowFn, 'process', 'window function');
    return this.build('CountWindowReduce', { kind: 'reduce', reduce: fn }, windowFn === undefined ? undefined : perSubtask(windowFn));
  }

  aggregate<ACC, R>(fn: AggregateFunction<T, ACC, R>): DataStream<R>;
  aggregate<ACC, R, O>(fn: AggregateFunction<T, ACC, R>, windowFn: ProcessWindowFunction<R, O, K, GlobalWindow>): DataStream<O>;
  aggregate<ACC, R, O>(fn: AggregateFunction<T, ACC, R>, windowFn?: ProcessWindowFunction<R, O, K, GlobalWindow>): DataStream<O | R> {
    requireAggregate(fn, 'count window aggregate');
    if (windowFn !== undefined) requireMethod(windowFn, 'process', 'window function');
    return this.build('CountWindowAggregate', { kind: 'aggregate', aggregate: fn }, windowFn === undefined ? undefined : perSubtask(windowFn));
  }

  /** The function sees the window's records in arrival order. */
  process<O>(fn: ProcessWindowFunction<T, O, K, GlobalWindow>): DataStream<O> {
    requireMethod(fn, 'process', 'count window process');
    return this.build('CountWindowProcess', { kind: 'list' }, perSubtask(fn));
  }

  /**
   * @internal The window function is checked by the callers, on the function itself: calling
   * the factory here would take the instance the first subtask of the thread is owed (a copy
   * then lost its #private fields and failed at the first firing).
   */
  build<O>(name: string, contents: WindowContents, windowFunction: (() => ProcessWindowFunction<any, any, any, GlobalWindow>) | undefined, kind = 'count-window'): DataStream<O> {
    const { size, slide } = this;
    const label = slide === undefined ? `CountWindow(${size})` : `CountWindow(${size}, ${slide})`;
    return this.keyed.addOperator<O>(`${name} ${label}`, kind, () => new CountWindowOperator({ size, slide, contents, windowFunction: windowFunction?.() }));
  }
}

/** Count windows over the whole stream (DataStream.countWindowAll): runs at parallelism 1. */
export class AllCountWindowedStream<T> {
  private readonly counted: CountWindowedStream<T, number>;
  constructor(keyed: KeyedStream<T, number>, size: number, slide: number | undefined) {
    this.counted = new CountWindowedStream<T, number>(keyed, size, slide);
  }

  reduce(fn: ReduceFunction<T>): DataStream<T>;
  reduce<O>(fn: ReduceFunction<T>, windowFn: ProcessAllWindowFunction<T, O, GlobalWindow>): DataStream<O>;
  reduce<O>(fn: ReduceFunction<T>, windowFn?: ProcessAllWindowFunction<T, O, GlobalWindow>): DataStream<O | T> {
    requireFn(fn, 'countWindowAll reduce');
    return this.build('AllCountWindowReduce', { kind: 'reduce', reduce: fn }, windowFn);
  }

  aggregate<ACC, R>(fn: AggregateFunction<T, ACC, R>): DataStream<R>;
  aggregate<ACC, R, O>(fn: AggregateFunction<T, ACC, R>, windowFn: ProcessAllWindowFunction<R, O, GlobalWindow>): DataStream<O>;
  aggregate<ACC, R, O>(fn: AggregateFunction<T, ACC, R>, windowFn?: ProcessAllWindowFunction<R, O, GlobalWindow>): DataStream<O | R> {
    requireAggregate(fn, 'countWindowAll aggregate');
    return this.build('AllCountWindowAggregate', { kind: 'aggregate', aggregate: fn }, windowFn);
  }

  process<O>(fn: ProcessAllWindowFunction<T, O, GlobalWindow>): DataStream<O> {
    requireMethod(fn, 'process', 'countWindowAll process');
    return this.build('AllCountWindowProcess', { kind: 'list' }, fn);
  }

  private build<O>(name: string, contents: WindowContents, windowFn: ProcessAllWindowFunction<any, any, GlobalWindow> | undefined): DataStream<O> {
    if (windowFn !== undefined) requireMethod(windowFn, 'process', 'window function');
    const instance = windowFn === undefined ? undefined : perSubtask(windowFn);
    return nonParallel(this.counted.build<O>(name, contents, instance === undefined ? undefined : () => dropKey(instance()), 'count-window-all'));
  }
}

/** KeyedStream.intervalJoin(other): waits for between(lower, upper). */
export class IntervalJoin<A, B, K> {
  constructor(private readonly first: KeyedStream<A, K>, private readonly second: KeyedStream<B, K>) {}

  /**
   * Joins a record of the first stream at time t with the second's records of its key at times
   * in [t + lower, t + upper], both bounds included (see lowerBoundExclusive, upperBoundExclusive).
   * Bounds may be negative: between(-5000, 0) looks back five seconds. Event time only.
   */
  between(lower: Duration, upper: Duration): IntervalJoined<A, B, K> {
    const lo = signedMillis(lower, 'intervalJoin lower bound');
    const hi = signedMillis(upper, 'intervalJoin upper bound');
    if (lo > hi) throw new RangeError(`intervalJoin: the lower bound (${lo} ms) must not be above the upper bound (${hi} ms)`);
    return new IntervalJoined<A, B, K>(this.first, this.second, lo, hi);
  }
}

export class IntervalJoined<A, B, K> {
  private lowerExclusive = false;
  private upperExclusive = false;
  private leftLate: OutputTag<A> | undefined;
  private rightLate: OutputTag<B> | undefined;
  constructor(private readonly first: KeyedStream<A, K>, private readonly second: KeyedStream<B, K>, private readonly lower: number, private readonly upper: number) {}

  /** Excludes the lower bound: t + lower < other's time. */
  lowerBoundExclusive(): this {
    this.lowerExclusive = true;
    return this;
  }

  /** Excludes the upper bound: other's time < t + upper. */
  upperBoundExclusive(): this {
    this.upperExclusive = true;
    return this;
  }

  /** Late records of the first (left) stream go to this side output instead of being dropped. */
  sideOutputLeftLateData(tag: OutputTag<A>): this {
    if (!(tag instanceof OutputTag)) throw new TypeError('sideOutputLeftLateData needs an OutputTag');
    this.leftLate = tag;
    return this;
  }

  /** Late records of the second (right) stream go to this side output instead of being dropped. */
  sideOutputRightLateData(tag: OutputTag<B>): this {
    if (!(tag instanceof OutputTag)) throw new TypeError('sideOutputRightLateData needs an OutputTag');
    this.rightLate = tag;
    return this;
  }

  /** Calls fn once per matching pair; results carry the larger of the two timestamps. */
  process<O>(fn: ProcessJoinFunction<A, B, O>): DataStream<O> {
    requireMethod(fn, 'processElement', 'intervalJoin process');
    const lower = this.lowerExclusive ? this.lower + 1 : this.lower;
    const upper = this.upperExclusive ? this.upper - 1 : this.upper;
    if (lower > upper) throw new RangeError(`intervalJoin: with exclusive bounds the interval [${this.lower}, ${this.upper}] holds no time`);
    const instance = perSubtask(fn);
    const { leftLate, rightLate } = this;
    const t = twoInput(this.first.env, 'IntervalJoin', 'interval-join', this.first.transformation, this.second.transformation,
      [this.first.keySelector as KeySelectorFn, this.second.keySelector as KeySelectorFn],
      () => new IntervalJoinOperator({ lower, upper, fn: instance(), leftLateTag: leftLate, rightLateTag: rightLate }));
    return new DataStream<O>(this.first.env, t);
  }
}

/** The second half of where(key1).equalTo(key2).window(assigner): the other stream's key, of the same type, then the window. */
export interface EqualTo<B, K, W> {
  equalTo(key2: (b: B) => K): { window(assigner: WindowAssigner): W };
}

/** where(...).equalTo(...).window(...) for join and coGroup: keys each input by its own selector. */
function whereEqualTo<A, B, K, W>(
  what: 'join' | 'coGroup', first: DataStream<A>, second: DataStream<B>, key1: (a: A) => K,
  make: (a: KeyedStream<A, K>, b: KeyedStream<B, K>, assigner: WindowAssigner) => W,
): EqualTo<B, K, W> {
  requireFn(key1, `${what}().where`);
  return {
    equalTo(key2) {
      requireFn(key2, `${what}().equalTo`);
      return {
        window(assigner) {
          checkAssigner(assigner, `${what}().window`);
          return make(first.keyBy(key1), second.keyBy(key2), assigner);
        },
      };
    },
  };
}

/** The windowed two-input operator shared by join and coGroup. */
abstract class TwoStreamWindow<A, B, K> {
  private lateness = 0;
  constructor(protected readonly first: KeyedStream<A, K>, protected readonly second: KeyedStream<B, K>, protected readonly assigner: WindowAssigner) {}

  /** Keep windows this long after they fire; late records within it re-fire them with the pairs seen so far (event time; ignored for processing time, as in Flink). */
  allowedLateness(d: Duration): this {
    const ms = toMillis(d, 'allowedLateness');
    this.lateness = this.assigner.eventTime ? ms : 0;
    return this;
  }

  protected build<O>(name: string, kind: string, makeFn: () => ProcessWindowFunction<[unknown[], unknown[]], unknown, K>): DataStream<O> {
    const spec = { assigner: this.assigner, contents: { kind: 'cogroup' } as const, allowedLateness: this.lateness, lateDataTag: undefined };
    const t = twoInput(this.first.env, `${name} ${this.assigner.description}`, kind, this.first.transformation, this.second.transformation,
      [this.first.keySelector as KeySelectorFn, this.second.keySelector as KeySelectorFn],
      () => new WindowOperator({ ...spec, windowFunction: makeFn() }));
    return new DataStream<O>(this.first.env, t);
  }
}

/** `a.join(b)`: continue with where(key of a).equalTo(key of b).window(assigner). */
export class JoinedStreams<A, B> {
  constructor(readonly first: DataStream<A>, readonly second: DataStream<B>) {}
  /** The first stream's key; equalTo gives the second's, of the same type. */
  where<K>(key1: (a: A) => K): EqualTo<B, K, WindowedJoin<A, B, K>> {
    return whereEqualTo('join', this.first, this.second, key1, (a, b, w) => new WindowedJoin<A, B, K>(a, b, w));
  }
}

/** `a.coGroup(b)`: continue with where(key of a).equalTo(key of b).window(assigner). */
export class CoGroupedStreams<A, B> {
  constructor(readonly first: DataStream<A>, readonly second: DataStream<B>) {}
  /** The first stream's key; equalTo gives the second's, of the same type. */
  where<K>(key1: (a: A) => K): EqualTo<B, K, WindowedCoGroup<A, B, K>> {
    return whereEqualTo('coGroup', this.first, this.second, key1, (a, b, w) => new WindowedCoGroup<A, B, K>(a, b, w));
  }
}

/** A window join: apply or flatApply runs per pair of records with equal keys in one window. */
export class WindowedJoin<A, B, K> extends TwoStreamWindow<A, B, K> {
  /**
   * One result per pair (Flink's JoinFunction): for each record of the first stream in the
   * window, in arrival order, each record of the second (merged sessions: session by session,
   * by start). Results carry the window's end - 1.
   */
  apply<O>(fn: JoinFunction<A, B, O>): DataStream<O> {
    requireFn(fn, 'join().apply');
    return this.build<O>('WindowJoin', 'window-join', () => ({
      process(_key, ctx, [pair], out) {
        const [as, bs] = pair! as [A[], B[]];
        for (const a of as) for (const b of bs) out.collect(fn(a, b, ctx.window));
      },
    }));
  }

  /** Any number of results per pair (Flink's FlatJoinFunction): emit with out.collect or return an iterable. */
  flatApply<O>(fn: FlatJoinFunction<A, B, O>): DataStream<O> {
    requireFn(fn, 'join().flatApply');
    return this.build<O>('WindowFlatJoin', 'window-join', () => ({
      process(_key, ctx, [pair], out) {
        const [as, bs] = pair! as [A[], B[]];
        for (const a of as) {
          for (const b of bs) {
            const r = fn(a, b, out as Collector<O>, ctx.window);
            if (r !== undefined) collectReturned(r, out as Collector<unknown>, 'flatApply');
          }
        }
      },
    }));
  }
}

/** A window coGroup: apply runs once per key and window with both inputs' records. */
export class WindowedCoGroup<A, B, K> extends TwoStreamWindow<A, B, K> {
  /** Flink's CoGroupFunction, plus the window; results carry the window's end - 1. */
  apply<O>(fn: CoGroupFunction<A, B, O>): DataStream<O> {
    requireFn(fn, 'coGroup().apply');
    return this.build<O>('WindowCoGroup', 'window-cogroup', () => ({
      process(_key, ctx, [pair], out) {
        const [as, bs] = pair! as [A[], B[]];
        return fn(as, bs, out as Collector<O>, ctx.window) as Iterable<unknown> | void;
      },
    }));
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
    const declared = this.second.descriptors.map((d) => d.name);
    const t = twoInput(this.first.env, 'BroadcastProcess', 'broadcast-process', this.first.transformation, this.second.transformation, [undefined, undefined], () => new BroadcastProcessOperator(instance(), declared));
    return new DataStream<O>(this.first.env, t);
  }
}

export class KeyedBroadcastConnectedStream<A, B, K> {
  constructor(readonly first: KeyedStream<A, K>, readonly second: BroadcastStream<B>) {}
  process<O>(fn: KeyedBroadcastProcessFunction<K, A, B, O>): DataStream<O> {
    requireMethod(fn, 'processElement', 'broadcast process');
    requireMethod(fn, 'processBroadcastElement', 'broadcast process');
    const instance = perSubtask(fn);
    const declared = this.second.descriptors.map((d) => d.name);
    const t = twoInput(this.first.env, 'KeyedBroadcastProcess', 'keyed-broadcast-process', this.first.transformation, this.second.transformation,
      [this.first.keySelector as KeySelectorFn, undefined], () => new KeyedBroadcastProcessOperator(instance(), declared));
    return new DataStream<O>(this.first.env, t);
  }
}
