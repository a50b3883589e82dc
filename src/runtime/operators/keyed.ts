/**
 * Keyed one-input operators: the keyed process function and rolling reduce/aggregate.
 * Before user code sees a record, the operator sets the backend's current key from the
 * record, so state handles and timers act on that key.
 */
import type {
  AggregateFunction, KeyedProcessFunction, KeyedRuntimeContext, OnTimerContext, CallableTimerService,
} from '../../core/functions.ts';
import {
  ValueStateDescriptor, type AggregatingStateDescriptor, type ListStateDescriptor, type MapStateDescriptor,
  type ReducingStateDescriptor, type ValueState,
} from '../../core/state.ts';
import type { KeyedStateBackend } from '../../state/backend.ts';
import { NO_TIMESTAMP, type Batch } from '../../core/batch.ts';
import { InternalTimerService, type Timer, type TimerTarget } from '../timers.ts';
import { checkCombined, collectReturned, ContextBase, TimestampedCollector } from './basic.ts';
import type { KeySelectorFn } from '../../core/partitioning.ts';
import { describeOperator, describeRecord, WeirError, type ErrorLocation } from '../../core/errors.ts';
import type { InlineOperatorState } from '../../core/checkpoint-format.ts';
import { keyBits, keyGroupOfBits, keyKindBit, keyKindMask, keyKindNames, normalizeKey, type NormKey } from '../../state/key-groups.ts';
import { keyHashOfBits } from '../../state/key-table.ts';
import { StreamOperator } from './operator.ts';

/** Batches smaller than this are not prefetched (KeyedOperator.prefetchKeys). */
const PREFETCH_MIN_BATCH = 16;
/**
 * Records prefetched at once: their index slots, entries and key strings (~3 cache lines each)
 * stay well inside a core's L2 until the records run.
 */
const PREFETCH_CHUNK = 256;

/**
 * Records after a restore whose keys are all of kinds the restored state was not keyed by
 * before the job is refused (KeyedOperator.noteKeyKind).
 */
const KEY_KIND_CHECKS = 64;
/**
 * Checkpoints declined in a row with no record in between while the check waits
 * (durableBeforeAck) before it ends the job: an input that went quiet after a few records of
 * other kinds would otherwise hold every checkpoint and savepoint back for good, the job
 * running on. A slow input that still comes is checked to KEY_KIND_CHECKS records.
 */
const KEY_KIND_MAX_DECLINES = 3;

function keyKindChanged(operator: ErrorLocation, restored: number, now: number, record: unknown, records = KEY_KIND_CHECKS, declined = 0): Error {
  const last = record !== undefined ? `the last: ${describeRecord(record)}` : declined > 0 ? `then none came while ${declined} checkpoints waited for one` : 'then its input ended';
  return new WeirError(
    'STATE_RESTORE',
    `${describeOperator(operator)}: its restored state is keyed by ${keyKindNames(restored).join(' and ')} keys, but ${records === KEY_KIND_CHECKS ? `${records} records in a row` : `all ${records} records`} after the restore had ${keyKindNames(now).join(' and ')} keys (${last}): ` +
      `no record would find the restored state. Restore with the key selector the snapshot was taken with, or give the operator a new uid and restore with --allow-non-restored-state to start it empty`,
  );
}

/** Base of operators on keyed streams: backend access, key setting and a timer service. */
export abstract class KeyedOperator extends StreamOperator implements TimerTarget {
  backend!: KeyedStateBackend;
  private timerService: InternalTimerService | undefined;
  /** Whether the backend sees values changed in place without update() (the heap backend). */
  private inPlaceKept = false;
  /** keyKindBit of every key set from a record since the start (key-groups.ts), for snapshots. */
  private keyKindsSeen = 0;
  /** The kinds of keys the restored state was keyed by; 0: none recorded (nothing to check). */
  private restoredKeyKinds = 0;
  /** Records still to check against restoredKeyKinds; 0 once one matched (or nothing to check). */
  private keyKindChecksLeft = 0;
  /** Checkpoints declined in a row with no record checked in between (KEY_KIND_MAX_DECLINES). */
  private keyKindDeclines = 0;
  private keyKindWaitLogged = false;

  protected override setUp(): void {
    const b = this.env.keyedBackend;
    if (b === undefined) throw this.fail(new Error('keyed operator has no keyed state backend'), 'open');
    this.backend = b;
    this.inPlaceKept = b.keepsInPlaceChanges === true;
  }

  /**
   * `value`, read from `state`, was changed in place (pushed to, an entry rewritten): updates
   * the state where the backend would not see it otherwise (disk: dropped when the entry leaves
   * its cache, or checkpointed as it was), and costs nothing on the heap backend.
   */
  protected changedInPlace<T>(state: ValueState<T>, value: T): void {
    if (!this.inPlaceKept) state.update(value);
  }

  override restoreInline(state: InlineOperatorState): void {
    super.restoreInline(state);
    this.restoredKeyKinds = keyKindMask(state.keyKinds ?? []);
    if (this.restoredKeyKinds !== 0) this.keyKindChecksLeft = KEY_KIND_CHECKS;
  }

  override snapshotInline(checkpointId: number): InlineOperatorState | undefined {
    const base = super.snapshotInline(checkpointId);
    // An operator without keyed state or timers has nothing a key could miss (and recording
    // kinds would make its inline state count as state: removing it would need
    // --allow-non-restored-state). While the check runs, only the restored kinds: a snapshot
    // taken then must be checked the same way when it is restored.
    if (!this.backend.hasStates() && this.timerServiceIfCreated() === undefined) return base;
    const kinds = this.keyKindChecksLeft > 0 ? this.restoredKeyKinds : this.keyKindsSeen | this.restoredKeyKinds;
    return kinds === 0 ? base : { ...base, keyKinds: keyKindNames(kinds) };
  }

  /**
   * No checkpoint completes while records after a restore had only keys of kinds the restored
   * state was not keyed by: an exactly-once sink would commit what they produced (counts started
   * again), and the checkpoint would hold it. Declined as not ready (not counted as a failure),
   * until a record of a restored kind passes the check or the check ends the job.
   */
  override durableBeforeAck(checkpointId: number): Promise<void> | undefined {
    const base = super.durableBeforeAck(checkpointId);
    if (this.keyKindChecksLeft === 0 || this.keyKindChecksLeft === KEY_KIND_CHECKS) return base;
    const other = this.keyKindsSeen & ~this.restoredKeyKinds;
    if (++this.keyKindDeclines >= KEY_KIND_MAX_DECLINES) {
      throw keyKindChanged(this.location, this.restoredKeyKinds, other, undefined, KEY_KIND_CHECKS - this.keyKindChecksLeft, this.keyKindDeclines);
    }
    const e = new Error(`${describeOperator(this.location)}: ${KEY_KIND_CHECKS - this.keyKindChecksLeft} records after the restore had keys of other kinds (${keyKindNames(this.keyKindsSeen & ~this.restoredKeyKinds).join(' and ')}) than its restored state (${keyKindNames(this.restoredKeyKinds).join(' and ')}); no checkpoint until a record of a restored kind comes (${KEY_KIND_CHECKS} in a row without one, or ${KEY_KIND_MAX_DECLINES} checkpoints waiting, end the job)`);
    if (!this.keyKindWaitLogged) {
      this.keyKindWaitLogged = true;
      this.env.services.log(`weir: ${e.message}`);
    }
    return Promise.reject(Object.assign(e, { declineReason: 'CHECKPOINT_DECLINED_TASK_NOT_READY' }));
  }

  /** The end of input with the check still failing ends the job as the check would have. */
  override finish(): void {
    super.finish();
    if (this.keyKindChecksLeft > 0 && this.keyKindChecksLeft < KEY_KIND_CHECKS) {
      throw keyKindChanged(this.location, this.restoredKeyKinds, this.keyKindsSeen & ~this.restoredKeyKinds, undefined, KEY_KIND_CHECKS - this.keyKindChecksLeft);
    }
  }

  /**
   * Notes the kind of the key just set from a record and, after a restore, checks it: restored
   * state keyed by strings is never found by number keys (and so on), which is silent state
   * loss. The first record of a restored kind ends the check; KEY_KIND_CHECKS records in a row
   * of other kinds end the job (a job with keys of several kinds meets a restored kind among
   * them long before).
   */
  private noteKeyKind(v: unknown): void {
    const bit = keyKindBit(this.backend.ctx.key);
    this.keyKindsSeen |= bit;
    if (this.keyKindChecksLeft === 0) return;
    if ((bit & this.restoredKeyKinds) !== 0) {
      this.keyKindChecksLeft = 0;
      return;
    }
    this.keyKindDeclines = 0; // input still comes: the check goes on
    if (--this.keyKindChecksLeft === 0) throw keyKindChanged(this.location, this.restoredKeyKinds, bit, v);
  }

  /** User functions on a keyed stream open with keyed state access. */
  protected override userFunctionContext(): unknown {
    return this.keyedRuntimeContext();
  }

  get timers(): InternalTimerService {
    if (this.timerService === undefined) {
      this.timerService = new InternalTimerService(
        this.backend,
        this,
        () => this.env.clock.now(),
        (at, fn) => (this.env.scheduleOutputMail ?? this.env.scheduleMail).call(this.env, at, fn),
        this.env.outputMail?.bind(this.env),
      );
      this.timerService.currentWatermark = this.currentWatermark;
    }
    return this.timerService;
  }

  override restoreWatermark(watermark: number): void {
    super.restoreWatermark(watermark);
    if (this.timerService !== undefined && this.currentWatermark > this.timerService.currentWatermark) {
      this.timerService.currentWatermark = this.currentWatermark;
    }
  }

  /** The timer service if any timer was ever registered or restored (snapshots skip it otherwise). */
  timerServiceIfCreated(): InternalTimerService | undefined {
    return this.timerService;
  }

  /**
   * Sets the current key from a record: the key selector's result, in the key group the
   * partitioner computed when there is one. A selector that throws or returns no usable key
   * fails with the keyBy named as the place.
   */
  protected keyFrom(sel: KeySelectorFn, v: unknown, kgs: number[] | undefined, i: number): void {
    let key: unknown;
    try {
      key = sel(v);
      if (kgs === undefined) this.backend.setCurrentKey(key);
      else if (kgs === this.hashedGroups) this.backend.setCurrentPreparedKey(key, normalizeKey(key), kgs[i]!, this.groupHashes![i]!);
      else this.backend.setCurrentKeyInGroup(key, kgs[i]!);
    } catch (e) {
      throw this.failOn(e, 'keyBy key selector', v);
    }
    this.noteKeyKind(v);
  }

  /** The key groups of the batch being processed whose key hashes came with it (keyGroupsOf). */
  private hashedGroups: number[] | undefined;
  private groupHashes: number[] | undefined;

  /**
   * The batch's key groups (undefined unless it comes from hash partitioning), and its key
   * hashes noted beside them for keyFrom and prefetchKeys: tied to that key group array, so a
   * batch's hashes are never read for another's records.
   */
  protected keyGroupsOf(batch: Batch): number[] | undefined {
    const kgs = batch.keyGroups;
    const hashes = batch.keyHashes;
    if (hashes !== undefined && kgs !== undefined && hashes.length === kgs.length) {
      this.hashedGroups = kgs;
      this.groupHashes = hashes;
    }
    return kgs;
  }

  private prefetchKeyList: NormKey[] = [];
  private readonly prefetchGroups = new Int32Array(PREFETCH_CHUNK);
  private readonly prefetchHashes = new Int32Array(PREFETCH_CHUNK);
  /** The key selector's results for the records prefetched: their keys are set from these (keyPrepared). */
  private readonly preparedKeys: unknown[] = [];
  /** Records [preparedFrom, preparedTo) of the batch in hand have their keys prepared. */
  protected preparedFrom = 0;
  protected preparedTo = 0;
  /** What the prefetches read, kept so that no compiler can drop the reads. */
  prefetched = 0;
  /** The prepared chunk's key kinds are in keyKindsSeen already (prefetchKeys). */
  private preparedKindsNoted = false;

  /**
   * Lets the backend read the memory that the state lookups of records [from, from + chunk)
   * will start with, all keys at once (KeyedStateBackend.prefetch), and returns the index of
   * the record before which to call it again (the batch's length when the batch is not
   * prefetched: small, or state that fits the caches, asked at its first record). A chunk at a
   * time, so what it reads is still in cache when its records run. The keys it computes (the
   * selector's result, normalised, its group and hash from one hash of the key) are kept for
   * the records to take (keyPrepared), so that each record's key is selected and hashed once;
   * a selector that throws here leaves the chunk unprepared, for the record loop to report the
   * error at its record.
   */
  protected prefetchKeys(sel: KeySelectorFn, values: readonly unknown[], kgs: number[] | undefined, from: number): number {
    const b = this.backend;
    const n = values.length;
    this.preparedFrom = this.preparedTo = from;
    if (from === 0 && (b.prefetch === undefined || n < PREFETCH_MIN_BATCH || !b.wantsPrefetch!())) return n;
    const to = Math.min(n, from + PREFETCH_CHUNK);
    const originals = this.preparedKeys;
    const keys = this.prefetchKeyList;
    const groups = this.prefetchGroups;
    const hashes = this.prefetchHashes;
    const start = b.keyGroupRange.start;
    const maxP = b.maxParallelism;
    let kinds = 0;
    try {
      for (let i = from; i < to; i++) {
        const original = sel(values[i]);
        const k = normalizeKey(original);
        originals[i - from] = original;
        keys[i - from] = k;
        if (kgs !== undefined && kgs === this.hashedGroups) {
          // Both from the partitioner's one hash of the key: nothing to hash here.
          groups[i - from] = kgs[i]! - start;
          hashes[i - from] = this.groupHashes![i]!;
        } else {
          const bits = keyBits(k);
          groups[i - from] = (kgs !== undefined ? kgs[i]! : keyGroupOfBits(bits, maxP)) - start;
          hashes[i - from] = keyHashOfBits(k, bits);
        }
        kinds |= keyKindBit(k);
      }
    } catch {
      return to;
    }
    // The chunk's key kinds at once, not per record (keyPrepared), unless a restore's check of
    // them is on: that one goes record by record, to fail at the record that breaks it.
    this.preparedKindsNoted = this.keyKindChecksLeft === 0;
    if (this.preparedKindsNoted) this.keyKindsSeen |= kinds;
    // Kept a small integer: a sum that outgrew V8's small integers changed the operator's
    // hidden class mid-run (the field turned into a double) and deoptimized every function
    // that had inlined an access to the operator, the whole record path among them.
    this.prefetched = (this.prefetched + b.prefetch!(keys, groups, hashes, to - from)) & 0xfffffff;
    this.preparedTo = to;
    return to;
  }

  /** Sets the current key of record i, prepared by prefetchKeys (preparedFrom <= i < preparedTo). */
  protected keyPrepared(i: number, v: unknown): void {
    const j = i - this.preparedFrom;
    const b = this.backend;
    try {
      b.setCurrentPreparedKey(this.preparedKeys[j], this.prefetchKeyList[j]!, this.prefetchGroups[j]! + b.keyGroupRange.start, this.prefetchHashes[j]!);
    } catch (e) {
      throw this.failOn(e, 'keyBy key selector', v);
    }
    if (!this.preparedKindsNoted) this.noteKeyKind(v);
  }

  protected override onWatermark(timestamp: number): void {
    if (this.timerService !== undefined) {
      try {
        this.timerService.advanceWatermark(timestamp);
      } catch (e) {
        throw this.fail(e, 'onTimer (event time)');
      }
    }
    this.output.emitWatermark(timestamp);
  }

  onEventTime(_timer: Timer): void {}
  onProcessingTime(_timer: Timer): void {}

  protected override tearDown(): void {
    this.timerService?.dispose();
  }

  keyedRuntimeContext(): KeyedRuntimeContext {
    const base = this.runtimeContext();
    const b = () => this.backend;
    return {
      taskInfo: base.taskInfo,
      getUnionListState: base.getUnionListState,
      getState: <T>(d: ValueStateDescriptor<T>) => b().getValueState(d),
      // On a keyed stream, getListState with a ListStateDescriptor means keyed list state, as in Flink.
      getListState: <T>(d: ListStateDescriptor<T>) => b().getListState(d),
      getMapState: <K, V>(d: MapStateDescriptor<K, V>) => b().getMapState(d),
      getReducingState: <T>(d: ReducingStateDescriptor<T>) => b().getReducingState(d),
      getAggregatingState: <I, A, O>(d: AggregatingStateDescriptor<I, A, O>) => b().getAggregatingState(d),
    };
  }
}

/** The context handed to keyed user functions, reused for every record and timer. */
export class KeyedContextImpl extends ContextBase implements OnTimerContext<unknown> {
  declare protected readonly op: KeyedOperator;
  timeDomain: 'event-time' | 'processing-time' = 'event-time';
  readonly timerService: CallableTimerService;
  readonly taskInfo;
  private readonly rc: KeyedRuntimeContext;

  constructor(op: KeyedOperator) {
    super(op);
    this.rc = op.keyedRuntimeContext();
    this.taskInfo = this.rc.taskInfo;
    // Callable as well (returning itself), for Flink's ctx.timerService().registerEventTimeTimer(t).
    const service: CallableTimerService = Object.assign(() => service, {
      currentProcessingTime: () => op.env.clock.now(),
      currentWatermark: () => op.currentWatermark,
      registerEventTimeTimer: (t: number) => op.timers.registerEventTimeTimer('', t),
      registerProcessingTimeTimer: (t: number) => op.timers.registerProcessingTimeTimer('', t),
      deleteEventTimeTimer: (t: number) => op.timers.deleteEventTimeTimer('', t),
      deleteProcessingTimeTimer: (t: number) => op.timers.deleteProcessingTimeTimer('', t),
    });
    this.timerService = service;
  }
  get currentKey(): unknown {
    return this.op.backend.ctx.originalKey;
  }
  getCurrentKey(): unknown {
    return this.op.backend.ctx.originalKey;
  }
  getState<T>(d: ValueStateDescriptor<T>) {
    return this.rc.getState(d);
  }
  getListState<T>(d: ListStateDescriptor<T>) {
    return this.rc.getListState(d);
  }
  getUnionListState<T>(d: ListStateDescriptor<T>) {
    return this.rc.getUnionListState(d);
  }
  getMapState<K, V>(d: MapStateDescriptor<K, V>) {
    return this.rc.getMapState(d);
  }
  getReducingState<T>(d: ReducingStateDescriptor<T>) {
    return this.rc.getReducingState(d);
  }
  getAggregatingState<I, A, O>(d: AggregatingStateDescriptor<I, A, O>) {
    return this.rc.getAggregatingState(d);
  }
}

/**
 * Base of keyed operators that run a user function with a keyed context: the context, the
 * collector and the firing of the function's onTimer, if it has one.
 */
export abstract class KeyedFunctionOperator extends KeyedOperator {
  protected readonly collector = new TimestampedCollector(this);
  protected ctx!: KeyedContextImpl;
  protected abstract readonly userOnTimer: ((ts: number, ctx: any, out: any) => unknown) | undefined;
  protected override setUp(): void {
    super.setUp();
    this.ctx = new KeyedContextImpl(this);
  }
  override onEventTime(timer: Timer): void {
    this.fire(timer, 'event-time', timer.timestamp);
  }
  override onProcessingTime(timer: Timer): void {
    try {
      this.fire(timer, 'processing-time', NO_TIMESTAMP);
    } catch (e) {
      throw this.fail(e, 'onTimer (processing time)');
    }
  }
  private fire(timer: Timer, domain: 'event-time' | 'processing-time', outTs: number): void {
    if (this.userOnTimer === undefined) return;
    // As Flink's OnTimerContext: ctx.timestamp and side outputs carry the timer's time in both
    // domains; records collected from a processing-time timer carry none.
    this.ctx.ts = timer.timestamp;
    this.ctx.timeDomain = domain;
    this.collector.timestamp = outTs;
    const r = this.userOnTimer(timer.timestamp, this.ctx, this.collector);
    if (r !== undefined) collectReturned(r, this.collector, 'onTimer');
  }
}

export class KeyedProcessOperator extends KeyedFunctionOperator {
  protected readonly userOnTimer;
  constructor(private readonly fn: KeyedProcessFunction<any, any, any>) {
    super();
    this.userOnTimer = fn.onTimer?.bind(fn);
    this.userFunction = fn;
  }
  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    const kgs = this.keyGroupsOf(batch);
    const sel = this.env.keySelectors[0] as KeySelectorFn;
    const prefetchAt = this.prefetchKeys(sel, values, kgs, 0);
    // Two loops, each compiled apart: one loop holding both ways of setting the key had V8
    // inline one of them or the user's processElement, whichever its feedback ranked first
    // when it compiled (state small at first: no prefetch), and runs differed by ~10 %.
    if (prefetchAt < values.length || this.preparedTo > 0) this.prefetchedLoop(values, timestamps, kgs, sel, prefetchAt);
    else this.plainLoop(values, timestamps, kgs, sel);
  }

  /** Records whose keys are prepared a chunk at a time (prefetchKeys); a chunk it could not prepare goes through keyFrom. */
  private prefetchedLoop(values: readonly unknown[], timestamps: readonly number[], kgs: number[] | undefined, sel: KeySelectorFn, firstPrefetchAt: number): void {
    const c = this.collector;
    const ctx = this.ctx;
    const fn = this.fn;
    let prefetchAt = firstPrefetchAt;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        if (i === prefetchAt) prefetchAt = this.prefetchKeys(sel, values, kgs, i);
        const v = values[i];
        if (i < this.preparedTo) this.keyPrepared(i, v);
        else this.keyFrom(sel, v, kgs, i);
        c.timestamp = ctx.ts = timestamps[i]!;
        const r = fn.processElement(v, ctx, c);
        if (r !== undefined) collectReturned(r, c, 'processElement');
      }
    } catch (e) {
      throw this.failOn(e, 'processElement', values[i]);
    }
  }

  /** Records whose keys are set one by one (no prefetch: a small batch, or state that fits the caches). */
  private plainLoop(values: readonly unknown[], timestamps: readonly number[], kgs: number[] | undefined, sel: KeySelectorFn): void {
    const c = this.collector;
    const ctx = this.ctx;
    const fn = this.fn;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        const v = values[i];
        this.keyFrom(sel, v, kgs, i);
        c.timestamp = ctx.ts = timestamps[i]!;
        const r = fn.processElement(v, ctx, c);
        if (r !== undefined) collectReturned(r, c, 'processElement');
      }
    } catch (e) {
      throw this.failOn(e, 'processElement', values[i]);
    }
  }
}

const ROLLING_STATE = '__rolling';

/**
 * KeyedStream.reduce and KeyedStream.aggregate: a running aggregate per key in one value
 * state, its result emitted after every record. A reduce is the aggregate whose accumulator is
 * the running value itself (no accumulator before the first record).
 */
export class RollingOperator extends KeyedOperator {
  private state!: ValueState<unknown>;
  private constructor(private readonly agg: AggregateFunction<any, any, any>, private readonly phase: 'reduce' | 'aggregate') {
    super();
  }

  static reduce(reduce: (a: any, b: any) => unknown): RollingOperator {
    return new RollingOperator({
      createAccumulator: () => undefined,
      add: (v, acc) => (acc === undefined ? v : reduce(acc, v)),
      getResult: (acc) => acc,
    }, 'reduce');
  }

  static aggregate(agg: AggregateFunction<any, any, any>): RollingOperator {
    return new RollingOperator(agg, 'aggregate');
  }

  protected override setUp(): void {
    super.setUp();
    this.state = this.backend.getValueState(new ValueStateDescriptor<unknown>(ROLLING_STATE));
  }

  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    const kgs = this.keyGroupsOf(batch);
    const sel = this.env.keySelectors[0] as KeySelectorFn;
    const out = this.output;
    const state = this.state;
    const agg = this.agg;
    let prefetchAt = this.prefetchKeys(sel, values, kgs, 0);
    let i = 0;
    try {
      for (; i < values.length; i++) {
        if (i === prefetchAt) prefetchAt = this.prefetchKeys(sel, values, kgs, i);
        const v = values[i];
        if (i < this.preparedTo) this.keyPrepared(i, v);
        else this.keyFrom(sel, v, kgs, i);
        let acc = state.value();
        // A reduce's first record becomes its accumulator: a copy (object reuse off), so a reducer
        // that updates its accumulator in place never changes a record another consumer holds.
        if (acc === undefined && this.phase === 'reduce') acc = this.detached(v);
        else acc = checkCombined(agg.add(v, acc === undefined ? agg.createAccumulator() : acc), this.phase);
        state.update(acc);
        out.emit(this.detached(agg.getResult(acc)), timestamps[i]!);
      }
    } catch (e) {
      throw this.failOn(e, this.phase, values[i]);
    }
  }
}
