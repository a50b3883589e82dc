/**
 * The runtime operator contract. One operator instance per subtask; all calls come from the
 * subtask's mailbox loop, one at a time, so operators never need locks. Input arrives as
 * batches; watermarks, status changes and end-of-input arrive between batches.
 */
import { copyValue } from '../../core/copy.ts';
import type { RuntimeContext, TaskInfo } from '../../core/functions.ts';
import type { ListStateDescriptor } from '../../core/state.ts';
import type { Clock } from '../../core/clock.ts';
import type { KeyedStateBackend } from '../../state/backend.ts';
import type { OperatorStateStore } from '../../state/operator-state.ts';
import type { Batch } from '../../core/batch.ts';
import type { MalformedRecord } from '../../core/source.ts';
import { attribute, JobDefinitionError, type ErrorLocation } from '../../core/errors.ts';
import { MIN_WATERMARK } from '../events.ts';
import type { Output } from '../output.ts';
import type { KeySelectorFn } from '../../core/partitioning.ts';
import { broadcastSerializerKey, listSerializerKey, type InlineOperatorState } from '../../core/checkpoint-format.ts';


/** What the task gives an operator when it is set up. */
export interface OperatorEnvironment {
  readonly taskInfo: TaskInfo;
  /** The operator's uid(...), if the job gave one (for error messages). */
  readonly operatorUid?: string | undefined;
  readonly clock: Clock;
  /** Runs fn in the task's mailbox (between batches) at or after atMs of processing time. */
  scheduleMail(atMs: number, fn: () => void): { cancel(): void };
  /**
   * As scheduleMail, for mail that emits records (processing-time timers): it runs only when the
   * task's outputs have room, as Flink's onTimer waits in collect() for a buffer. Absent (a test
   * harness), scheduleMail serves.
   */
  scheduleOutputMail?(atMs: number, fn: () => void): { cancel(): void };
  /** Runs fn as output mail (see scheduleOutputMail) as soon as the outputs have room. */
  outputMail?(fn: () => void): void;
  /** Present on keyed operators. */
  readonly keyedBackend: KeyedStateBackend | undefined;
  /** Key selector per input, for keyed operators. */
  readonly keySelectors: readonly (KeySelectorFn | undefined)[];
  readonly operatorState: OperatorStateStore;
  /**
   * True while the task's source is held at a stop-with-savepoint barrier (or the task is
   * ending for one): nothing may happen after the savepoint, not even periodic watermarks.
   */
  isSuspended(): boolean;
  /**
   * True while the task cannot take its input (back-pressured: output full, an operator without
   * room) or has input it has not taken yet. Not idle input: an idleness timeout must not count
   * this time (Flink's input activity clock pauses under backpressure).
   */
  isHeldBack(): boolean;
  /** Whether the job checkpoints (sinks commit at checkpoints, else at end of input). */
  readonly checkpointing: boolean;
  /** Object reuse (env.enableObjectReuse): skip defensive copies of emitted accumulators. */
  readonly objectReuse: boolean;
  /** Id of the checkpoint or savepoint this subtask restored from, if any. */
  readonly restoredCheckpointId: number | undefined;
  /** The id of this attempt's first checkpoint: ids below it may be committed by sinks already (an end-of-input commit goes above). */
  readonly firstCheckpointId?: number;
  /**
   * Sinks: every committable of this operator in the restored checkpoint, over all subtasks
   * (each subtask commits only its share, but tells leftovers apart from the whole).
   */
  readonly referencedCommittables: readonly unknown[] | undefined;
  /** Process-wide facilities of the worker (collect sinks, stdout). */
  readonly services: RuntimeServices;
}

/** Hands records from collect sinks to the job's client (tests, the CLI). */
export interface RuntimeServices {
  collect(sinkName: string, subtaskIndex: number, values: unknown[]): void;
  /** Where print() writes. */
  writeStdout(text: string): void;
  /** A line for the job's log (the job manager's log, stderr by default). */
  log(line: string): void;
  /** Malformed records of a source with malformed: 'dead-letter', a poll's worth at a time: to the dead-letter file, or the log. */
  deadLetters(source: string, subtaskIndex: number, records: readonly MalformedRecord[]): void;
  /** A source reader's event for its split enumerator on the job manager. */
  sourceEvent?(operatorId: string, subtaskIndex: number, event: unknown): void;
}

/**
 * A user function that returned a Promise (an async function): weir calls user functions
 * synchronously and never awaits them, so what one does after its first await ran unchecked,
 * after its checkpoint and even after the job ended (an async sink lost its last writes with the
 * job FINISHED), and a map's or filter's Promise was taken for its result. An async function
 * always returns one, so checking one result per batch (and the first chained call) finds it.
 */
export function refusePromise(returned: unknown, what: string): void {
  if (returned !== null && typeof returned === 'object' && typeof (returned as PromiseLike<unknown>).then === 'function') {
    throw new TypeError(`${what} returned a Promise (is it async?); weir calls it synchronously and never awaits it, so its work after an await would be lost: make it synchronous (a sink that writes asynchronously belongs in a TwoPhaseCommitSink's committer)`);
  }
}

export abstract class StreamOperator {
  output!: Output;
  env!: OperatorEnvironment;
  location!: ErrorLocation;
  /** Combined (minimum) watermark over inputs. */
  currentWatermark = MIN_WATERMARK;
  private inputWatermarks: number[] = [];
  private inputIdle: boolean[] = [];
  private statusIdle = false;
  /** Malformed records this operator handed to the dead letters (this attempt): a source's, a sink's. */
  deadLetterCount = 0;
  /** Number of logical inputs (0 for sources, 1 or 2). */
  numInputs = 1;
  /** The user function's result in a chained call is still to be checked once (see refusePromise). */
  firstCall = true;

  /**
   * Emits exactly one record on its main output per input record, and nothing on side outputs
   * (map, the timestamp assigner). Its numRecordsOut is then its numRecordsIn, and the task
   * builds its output without a counter per record (StreamTask.metricsSample).
   */
  get oneToOne(): boolean {
    return false;
  }

  setup(env: OperatorEnvironment, output: Output, numInputs: number): void {
    this.env = env;
    this.output = output;
    this.numInputs = numInputs;
    this.location = {
      operatorName: env.taskInfo.operatorName,
      operatorId: env.taskInfo.operatorId,
      uid: env.operatorUid,
      subtaskIndex: env.taskInfo.subtaskIndex,
      parallelism: env.taskInfo.parallelism,
    };
    this.inputWatermarks = new Array(Math.max(1, numInputs)).fill(MIN_WATERMARK);
    this.inputIdle = new Array(Math.max(1, numInputs)).fill(false);
  }

  /**
   * The function the user gave this operator (a process, window, co-process or sink function),
   * if any: opened after the operator's own setUp, closed before its tearDown, and given the
   * checkpoint hooks (snapshotState, notifyCheckpointComplete). Set in the constructor.
   */
  protected userFunction: object | undefined;

  /**
   * Opens the operator: its own setUp, then its user function (state handles can be created
   * from here on). Operators extend setUp and tearDown, never open and close.
   */
  open(): void {
    this.setUp();
    callOptional(this, this.userFunction as LifecycleFn | undefined, 'open', this.userFunctionContext());
  }

  /** The operator's own preparation before its user function opens (backends, contexts, files). */
  protected setUp(): void {}

  /** What the user function's open() receives. */
  protected userFunctionContext(): unknown {
    return this.runtimeContext();
  }

  abstract processBatch(batch: Batch, input: number): void;

  /**
   * Optional single-record entry for chained one-input operators: when every operator an
   * Output feeds has it, records go through the chain one by one without batch arrays.
   * Must behave exactly as processBatch would on a batch of one record.
   */
  processRecord?(value: unknown, timestamp: number): void;

  /** After a batch of input (or a run of processRecord calls): work deferred per batch. */
  afterRecords(): void {}

  /** A watermark on one input; the operator acts on the minimum over active inputs. */
  processWatermark(timestamp: number, input: number): void {
    if (this.numInputs <= 1) {
      if (timestamp > this.currentWatermark) {
        this.currentWatermark = timestamp;
        this.onWatermark(timestamp);
      }
      return;
    }
    if (timestamp <= this.inputWatermarks[input]!) return;
    this.inputWatermarks[input] = timestamp;
    this.advanceCombined();
  }

  private advanceCombined(): void {
    let min = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.inputWatermarks.length; i++) {
      if (!this.inputIdle[i] && this.inputWatermarks[i]! < min) min = this.inputWatermarks[i]!;
    }
    if (min !== Number.POSITIVE_INFINITY && min > this.currentWatermark) {
      this.currentWatermark = min;
      this.onWatermark(min);
    }
  }

  processWatermarkStatus(idle: boolean, input: number): void {
    if (this.numInputs <= 1) {
      if (idle !== this.statusIdle) {
        this.statusIdle = idle;
        this.output.emitWatermarkStatus(idle);
      }
      return;
    }
    this.inputIdle[input] = idle;
    const allIdle = this.inputIdle.every((x) => x);
    if (allIdle !== this.statusIdle) {
      this.statusIdle = allIdle;
      this.output.emitWatermarkStatus(allIdle);
    }
    if (!allIdle) this.advanceCombined();
  }

  /** Event time has advanced to `timestamp`: fire what is due, then forward. */
  protected onWatermark(timestamp: number): void {
    this.output.emitWatermark(timestamp);
  }

  /** One logical input has ended. */
  endInput(_input: number): void {}

  /** All input has ended: emit what is buffered. The output is ended by the chain afterwards. */
  finish(): void {}

  /** Closes the user function, then the operator's own resources; called once, whatever happened. */
  close(): void {
    try {
      callOptional(this, this.userFunction as LifecycleFn | undefined, 'close');
    } finally {
      this.tearDown();
    }
  }

  /** The operator's own resources, released after its user function closed. */
  protected tearDown(): void {}

  /**
   * After close(): resolves once I/O the operator had under way has ended (a sink's commit or
   * upload in flight), undefined when there is none. close() starts nothing new; a cancelled
   * attempt is reported ended only after this (bounded: Task.ioEnded), so none of its requests
   * reach an external system once the job is said to be cancelled.
   */
  closed(): Promise<void> | undefined {
    return undefined;
  }

  // ---- checkpoint hooks (defaults cover operator list state and broadcast state)

  /**
   * Before the barrier goes downstream: a last chance to emit records that belong before it.
   * `stop`: the barrier is a stop-with-savepoint's (without drain): the task ends after it.
   * `savepoint`: the barrier is a savepoint's (of any kind), not a checkpoint's.
   */
  prepareSnapshotPreBarrier(_checkpointId: number, _stop?: boolean, _savepoint?: boolean): void {}

  /** Synchronous phase: small non-keyed state, captured now (keyed state is frozen by the task). */
  snapshotInline(checkpointId: number): InlineOperatorState | undefined {
    for (const fn of this.userFunctions()) {
      const f = fn as { snapshotState?(ctx: { checkpointId: number }): void };
      if (typeof f.snapshotState === 'function') {
        try {
          f.snapshotState({ checkpointId });
        } catch (e) {
          throw this.fail(e, 'snapshotState');
        }
      }
    }
    return this.env.operatorState.snapshot();
  }

  /** Before open(): state this subtask was given by the restore (already redistributed). */
  restoreInline(state: InlineOperatorState): void {
    const store = this.env.operatorState;
    const serializers = state.serializers ?? {};
    for (const [name, l] of Object.entries(state.lists ?? {})) store.restoreList(name, l.distribution, l.items, serializers[listSerializerKey(name)]);
    for (const [name, entries] of Object.entries(state.broadcast ?? {})) store.restoreBroadcast(name, entries, serializers[broadcastSerializerKey(name)]);
  }

  /**
   * Before open(): the event time the operator had reached at the snapshot it restores. It
   * starts there (inputs must pass it to move it on), so what was late or fired before the
   * failure is late or fired after it, exactly as in a run without the failure. Nothing fires
   * now: whatever was due at that watermark fired before the snapshot was taken.
   */
  restoreWatermark(watermark: number): void {
    if (watermark > this.currentWatermark) this.currentWatermark = watermark;
  }

  notifyCheckpointComplete(checkpointId: number): void {
    for (const fn of this.userFunctions()) {
      const f = fn as { notifyCheckpointComplete?(id: number): void };
      if (typeof f.notifyCheckpointComplete === 'function') {
        try {
          f.notifyCheckpointComplete(checkpointId);
        } catch (e) {
          throw this.fail(e, 'notifyCheckpointComplete');
        }
      }
    }
  }

  notifyCheckpointAborted(_checkpointId: number): void {}

  /**
   * After the synchronous phase: work the checkpoint's acknowledgement must wait for (a sink's
   * PREPARE TRANSACTION: the committables in the snapshot must name durable work before the
   * checkpoint can complete). A rejection declines the checkpoint.
   */
  durableBeforeAck(_checkpointId: number): Promise<void> | undefined {
    return undefined;
  }

  /** A result this operator keeps using (an accumulator), made safe to emit: copied unless object reuse is on. */
  protected detached<T>(v: T): T {
    if (this.env.objectReuse || v === null || typeof v !== 'object') return v;
    return copyValue(v);
  }

  /**
   * False while the operator cannot take more input (a sink whose bounded buffer of unacknowledged
   * writes is full): the task stops taking input until the operator wakes it. Asked once per batch.
   */
  hasRoom(): boolean {
    return true;
  }

  /** Work still running asynchronously (e.g. commits) that must end before the task finishes. */
  quiesce(): Promise<void> | undefined {
    return undefined;
  }

  /** The user function objects of this operator, for checkpoint hooks. */
  protected userFunctions(): readonly object[] {
    return this.userFunction === undefined ? [] : [this.userFunction];
  }

  /** Wraps an exception from user code with this operator, subtask and the record it was processing. */
  checkFirstResult(returned: unknown, what: string): void {
    this.firstCall = false;
    refusePromise(returned, what);
  }

  protected failOn(e: unknown, phase: string, record: unknown): Error {
    return withUserStack(attribute(e, this.location, phase, record, true), e);
  }

  /** Wraps an exception from user code that ran outside any record (timers, open, finish). */
  protected fail(e: unknown, phase: string): Error {
    return withUserStack(attribute(e, this.location, phase), e);
  }

  /** The RuntimeContext user functions receive in open(). */
  protected runtimeContext(): RuntimeContext {
    const store = this.env.operatorState;
    const name = this.env.taskInfo.operatorName;
    const keyedOnly = (method: string) => (d: { name?: string } | undefined) => {
      throw new JobDefinitionError(
        `operator "${name}": ${method}("${d?.name ?? '?'}") is keyed state, which exists only on a keyed stream; call keyBy(...) before this operator`,
      );
    };
    // The keyed-state getters are not in the type of a non-keyed context; JavaScript callers
    // (or casts) still reach them, and get a clear message instead of "not a function".
    return {
      taskInfo: this.env.taskInfo,
      getListState: <T>(d: ListStateDescriptor<T>) => store.getListState(d, 'split'),
      getUnionListState: <T>(d: ListStateDescriptor<T>) => store.getListState(d, 'union'),
      getState: keyedOnly('getState'),
      getMapState: keyedOnly('getMapState'),
      getReducingState: keyedOnly('getReducingState'),
      getAggregatingState: keyedOnly('getAggregatingState'),
    } as RuntimeContext;
  }
}

type LifecycleFn = { open?(c: unknown): void; close?(): void };

/** Calls a lifecycle method of a user function, attributing failures. */
function callOptional(op: StreamOperator, fn: LifecycleFn | undefined, method: 'open' | 'close', arg?: unknown): void {
  const m = fn?.[method];
  if (typeof m !== 'function') return;
  try {
    refusePromise((m as (a: unknown) => unknown).call(fn, arg), `${method}()`);
  } catch (e) {
    throw withUserStack(attribute(e, op.location, method), e);
  }
}

/**
 * The wrapper's own stack points into weir (where it was created), which is useless with
 * --verbose; show the user's exception stack under it instead, so the frame in the job
 * module that threw is there.
 */
function withUserStack(wrapper: Error, cause: unknown): Error {
  if (wrapper !== cause && cause instanceof Error && typeof cause.stack === 'string') {
    wrapper.stack = `${wrapper.name}: ${wrapper.message}\nCaused by: ${cause.stack}`;
  }
  return wrapper;
}
