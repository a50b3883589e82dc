/**
 * The user-function contracts of the DataStream API. Functions are plain objects or class
 * instances; every method but the processing one is optional. They are never serialized:
 * every worker builds the same job graph from the job module and gets its own instances.
 */
import type { OutputTag } from './output-tag.ts';
import type {
  AggregatingState, AggregatingStateDescriptor, ListState, ListStateDescriptor, MapState,
  MapStateDescriptor, ReducingState, ReducingStateDescriptor, ValueState, ValueStateDescriptor,
  BroadcastStateDescriptor, BroadcastState, ReadOnlyBroadcastState,
} from './state.ts';
import type { GlobalWindow, TimeWindow } from './windows.ts';

export interface Collector<T> {
  collect(value: T): void;
}

/** Facts about the running subtask, available to every rich function. */
export interface TaskInfo {
  readonly operatorName: string;
  readonly operatorId: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly attemptNumber: number;
}

/** What `open` receives in any function: task facts and operator (non-keyed) state. */
export interface RuntimeContext {
  readonly taskInfo: TaskInfo;
  /** Operator list state, split evenly over subtasks on rescaling. */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  /** Operator list state, given whole to every subtask on restore. */
  getUnionListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
}

/** Runtime context of a function on a keyed stream: keyed state handles scoped to the current key. */
export interface KeyedRuntimeContext extends RuntimeContext {
  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>;
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  getMapState<K, V>(descriptor: MapStateDescriptor<K, V>): MapState<K, V>;
  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): ReducingState<T>;
  getAggregatingState<IN, ACC, OUT>(descriptor: AggregatingStateDescriptor<IN, ACC, OUT>): AggregatingState<IN, OUT>;
}

export interface TimerService {
  currentProcessingTime(): number;
  currentWatermark(): number;
  registerEventTimeTimer(timestamp: number): void;
  registerProcessingTimeTimer(timestamp: number): void;
  deleteEventTimeTimer(timestamp: number): void;
  deleteProcessingTimeTimer(timestamp: number): void;
}

interface BaseContext {
  /** Event timestamp of the current record, or undefined if it has none. */
  readonly timestamp: number | undefined;
  /** Emit to a side output. */
  output<X>(tag: OutputTag<X>, value: X): void;
}

export interface ProcessContext extends BaseContext {
  /** Current processing time and watermark; timers need a keyed stream. */
  currentProcessingTime(): number;
  currentWatermark(): number;
}

/**
 * The timer service of a keyed context. It is also callable, returning itself, so that both
 * `ctx.timerService.registerEventTimeTimer(t)` and Flink's `ctx.timerService().registerEventTimeTimer(t)` work.
 */
export type CallableTimerService = TimerService & (() => TimerService);

export interface KeyedContext<K> extends BaseContext, KeyedRuntimeContext {
  readonly currentKey: K;
  /** Flink's spelling of `currentKey`. */
  getCurrentKey(): K;
  readonly timerService: CallableTimerService;
}

export interface OnTimerContext<K> extends KeyedContext<K> {
  /**
   * The firing timer's time, in either domain (as Flink's OnTimerContext.timestamp()); side
   * outputs carry it too. Records collected from a processing-time timer carry no timestamp.
   */
  readonly timestamp: number | undefined;
  readonly timeDomain: 'event-time' | 'processing-time';
}

export interface Lifecycle<C> {
  /** Called once per subtask before the first record. */
  open?(ctx: C): void;
  /** Called once when the subtask ends (finished, cancelled or failed). */
  close?(): void;
  /**
   * Checkpoint hook (Flink's CheckpointedFunction.snapshotState): called in the synchronous
   * phase, before operator state is captured; update operator list state here.
   */
  snapshotState?(ctx: { readonly checkpointId: number }): void;
  /** Called when a checkpoint this subtask took part in has completed (CheckpointListener). */
  notifyCheckpointComplete?(checkpointId: number): void;
}

/**
 * Process-style functions emit through `out.collect(v)`, or return their outputs (an array or
 * any iterable), or both. Returning is what lets TypeScript infer the output type `O` of a
 * function that does not declare `out`; one that declares `out` has `O` fixed from its
 * parameters first, so it takes an annotation (`out: Collector<O>`) or a type argument.
 */
export type Emitted<O> = void | Iterable<O>;

export interface ProcessFunction<I, O> extends Lifecycle<RuntimeContext> {
  processElement(value: I, ctx: ProcessContext, out: Collector<O>): Emitted<O>;
}

export interface KeyedProcessFunction<K, I, O> extends Lifecycle<KeyedRuntimeContext> {
  processElement(value: I, ctx: KeyedContext<K>, out: Collector<O>): Emitted<O>;
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<O>): Emitted<O>;
}

export interface CoProcessFunction<I1, I2, O> extends Lifecycle<RuntimeContext> {
  processElement1(value: I1, ctx: ProcessContext, out: Collector<O>): Emitted<O>;
  processElement2(value: I2, ctx: ProcessContext, out: Collector<O>): Emitted<O>;
}

export interface KeyedCoProcessFunction<K, I1, I2, O> extends Lifecycle<KeyedRuntimeContext> {
  processElement1(value: I1, ctx: KeyedContext<K>, out: Collector<O>): Emitted<O>;
  processElement2(value: I2, ctx: KeyedContext<K>, out: Collector<O>): Emitted<O>;
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<O>): Emitted<O>;
}

export interface BroadcastReadContext extends ProcessContext {
  getBroadcastState<K, V>(descriptor: BroadcastStateDescriptor<K, V>): ReadOnlyBroadcastState<K, V>;
}

export interface BroadcastWriteContext extends ProcessContext {
  getBroadcastState<K, V>(descriptor: BroadcastStateDescriptor<K, V>): BroadcastState<K, V>;
}

export interface KeyedBroadcastReadContext<K> extends KeyedContext<K> {
  getBroadcastState<BK, BV>(descriptor: BroadcastStateDescriptor<BK, BV>): ReadOnlyBroadcastState<BK, BV>;
}

export interface KeyedBroadcastWriteContext extends BroadcastWriteContext {
  /** Runs fn for every key that has state under the descriptor, in this subtask. */
  applyToKeyedState<S>(descriptor: ValueStateDescriptor<S>, fn: (key: unknown, state: ValueState<S>) => void): void;
}

export interface BroadcastProcessFunction<I, B, O> extends Lifecycle<RuntimeContext> {
  processElement(value: I, ctx: BroadcastReadContext, out: Collector<O>): Emitted<O>;
  processBroadcastElement(value: B, ctx: BroadcastWriteContext, out: Collector<O>): Emitted<O>;
}

export interface KeyedBroadcastProcessFunction<K, I, B, O> extends Lifecycle<KeyedRuntimeContext> {
  processElement(value: I, ctx: KeyedBroadcastReadContext<K>, out: Collector<O>): Emitted<O>;
  processBroadcastElement(value: B, ctx: KeyedBroadcastWriteContext, out: Collector<O>): Emitted<O>;
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<O>): Emitted<O>;
}

/** Incremental aggregation with an accumulator, as Flink's AggregateFunction. */
export interface AggregateFunction<IN, ACC, OUT> {
  createAccumulator(): ACC;
  add(value: IN, accumulator: ACC): ACC;
  getResult(accumulator: ACC): OUT;
  /** Needed by merging (session) windows. */
  merge?(a: ACC, b: ACC): ACC;
  /**
   * Declares that the result does not depend on the order records are added and accumulators
   * merged in (count, sum, min, max; not "the last record to arrive"). With merge() and a
   * number, bigint, string or boolean accumulator, sliding event-time windows are then kept as
   * panes: a record updates one slide-long pane instead of every window holding it, and a
   * window merges its panes when it fires, in time order rather than the records' arrival
   * order. Without it, every window accumulates its records in arrival order, as Flink's.
   */
  readonly commutative?: boolean;
}

export type ReduceFunction<T> = (a: T, b: T) => T;

export interface WindowContext<W = TimeWindow> {
  readonly window: W;
  currentWatermark(): number;
  currentProcessingTime(): number;
  output<X>(tag: OutputTag<X>, value: X): void;
}

/** Full-window function: sees every element of the window (or the pre-aggregated result). */
export interface ProcessWindowFunction<IN, OUT, K, W = TimeWindow> extends Lifecycle<RuntimeContext> {
  process(key: K, ctx: WindowContext<W>, elements: readonly IN[], out: Collector<OUT>): Emitted<OUT>;
}

/** A full-window function of a non-keyed window (windowAll, countWindowAll): no key. */
export interface ProcessAllWindowFunction<IN, OUT, W = TimeWindow> extends Lifecycle<RuntimeContext> {
  process(ctx: WindowContext<W>, elements: readonly IN[], out: Collector<OUT>): Emitted<OUT>;
}

/** The function of a count window (countWindow) sees Flink's GlobalWindow. */
export type ProcessCountWindowFunction<IN, OUT, K> = ProcessWindowFunction<IN, OUT, K, GlobalWindow>;

/**
 * A window join's function: called once per pair of records with equal keys in one window
 * (Flink's JoinFunction); the window is passed too, for results that name it.
 */
export type JoinFunction<A, B, O> = (first: A, second: B, window: TimeWindow) => O;

/** A window join's function that emits any number of results per pair (Flink's FlatJoinFunction). */
export type FlatJoinFunction<A, B, O> = (first: A, second: B, out: Collector<O>, window: TimeWindow) => Emitted<O>;

/**
 * A coGroup's function: called once per key and window with every record of each input in it,
 * in arrival order (after session windows merge: each merged session's records in turn, by
 * session start). Either list may be empty, never both. Flink's CoGroupFunction, plus the window.
 */
export type CoGroupFunction<A, B, O> = (first: readonly A[], second: readonly B[], out: Collector<O>, window: TimeWindow) => Emitted<O>;

/** What an interval join's function sees besides the pair. */
export interface ProcessJoinContext {
  /** Event timestamp of the left (first) record. */
  readonly leftTimestamp: number;
  /** Event timestamp of the right (second) record. */
  readonly rightTimestamp: number;
  /** The result's timestamp: the larger of the two. */
  readonly timestamp: number;
  /** Emit to a side output. */
  output<X>(tag: OutputTag<X>, value: X): void;
}

/** An interval join's function: called once per matching pair (Flink's ProcessJoinFunction). */
export interface ProcessJoinFunction<A, B, O> extends Lifecycle<RuntimeContext> {
  processElement(left: A, right: B, ctx: ProcessJoinContext, out: Collector<O>): Emitted<O>;
}

/** A sink function: called for every record; flush is called at end of input. */
export interface SinkFunction<T> extends Lifecycle<RuntimeContext> {
  invoke(value: T, ctx: { readonly timestamp: number | undefined }): void;
  /** Called when no more records will arrive. */
  finish?(): void;
}
