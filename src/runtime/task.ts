/**
 * A subtask: one parallel instance of a job vertex (a chain of operators) and its mailbox
 * loop. The default action processes one batch of input (or pulls one batch from the source);
 * mail (timers, control messages, later checkpoint triggers) runs between batches and never
 * concurrently with record processing. No per-record promise, no await on the data path.
 */
import { WeirError, describeOperator } from '../core/errors.ts';
import type { TaskInfo } from '../core/functions.ts';
import type { SourceSplit } from '../core/source.ts';
import type { ChainedOperatorSpec, TaskChain } from './task-spec.ts';
import type { Clock } from '../core/clock.ts';
import type { KeyedStateBackend, KeyedStateBackendFactory } from '../state/backend.ts';
import type { CheckpointStorageWorkerView } from '../checkpoint/storage.ts';
import { OperatorStateStore } from '../state/operator-state.ts';
import type { Batch } from '../core/batch.ts';
import { Deque } from './channels/deque.ts';
import { isEvent, MAX_WATERMARK, type ChannelElement, type StreamEvent } from './events.ts';
import type { InputGate, ValveOutput } from './input-gate.ts';
import type { StreamOperator, RuntimeServices } from './operators/operator.ts';
import { KeyedOperator } from './operators/keyed.ts';
import { loadKeyedState, type RestoredTimers } from './checkpointing/restore.ts';
import { loadChannelState, replayChannelState, type LoadedChannelState, type ReplayTarget } from './checkpointing/channel-state-restore.ts';
import { keyGroupOf, normalizeKey } from '../state/key-groups.ts';
import { SourceOperator } from './operators/source.ts';
import type { SourceMetricsSnapshot } from './operators/source-metrics.ts';
import { directRecordFn, Output, specialize, type BatchConsumer } from './output.ts';
import type { RecordWriter } from './record-writer.ts';
import type { Schedulable, Scheduler } from './scheduler.ts';
import type { KeyGroupRange, TaskRestore, InlineOperatorState } from '../core/checkpoint-format.ts';
import { TaskTimeAccount, type TaskMetricsSample } from './task-metrics.ts';

/**
 * created -> restoring -> running -> finishing (end of input, output draining) ->
 * [waiting-final: with checkpointing, operators stay open until the final checkpoint
 * completes, so sinks can commit everything] -> finished. Or failed / canceled.
 */
export type TaskState = 'created' | 'restoring' | 'restored' | 'running' | 'finishing' | 'waiting-final' | 'finished' | 'failed' | 'canceled';

export interface TaskListener {
  /** A gated task has its state in memory and waits for proceed() (see TaskDeployment.gated). */
  onTaskRestored(task: StreamTask): void;
  /** State restored, operators open: the task processes records and takes part in checkpoints. */
  onTaskRunning(task: StreamTask): void;
  /** End of input processed and output drained; waits for the final checkpoint. */
  onTaskWaiting(task: StreamTask): void;
  onTaskFinished(task: StreamTask): void;
  onTaskFailed(task: StreamTask, error: unknown): void;
}

/** Hook for in-band checkpoint events; the checkpoint layer plugs in here. */
export interface BarrierHandler {
  onEvent(task: StreamTask, gate: InputGate, channel: number, event: StreamEvent): void;
  onChannelEnded(): void;
  dispose(): void;
}


export interface TaskDeployment {
  readonly vertex: TaskChain;
  readonly subtaskIndex: number;
  readonly attempt: number;
  readonly keyGroupRange: KeyGroupRange;
  readonly inputGates: InputGate[];
  /** Record writer per network edge index leaving this vertex. */
  readonly writers: ReadonlyMap<number, RecordWriter>;
  readonly splits: readonly SourceSplit[];
  /** Splits of this task's source over all its subtasks: a rate limit is shared in proportion to splits. */
  readonly sourceSplitTotal: number;
  readonly clock: Clock;
  readonly services: RuntimeServices;
  readonly scheduler: Scheduler;
  readonly listener: TaskListener;
  readonly bufferTimeoutMs: number;
  /** A task waits for the job manager before it closes (final checkpoint or savepoint). */
  readonly waitForFinalCheckpoint: boolean;
  /** Periodic checkpoints are on (sinks commit at checkpoints, else at end of input). */
  readonly checkpointing: boolean;
  readonly restore: TaskRestore | undefined;
  /**
   * The attempt restores from a snapshot: the task loads its state, reports it, and opens only
   * when the job manager says every task has (proceed). A snapshot that fails to load anywhere
   * (a corrupt file) thus fails the job before any subtask processed a record.
   */
  readonly gated: boolean;
  readonly objectReuse: boolean;
  /**
   * Count records per operator and task (numRecordsIn/Out). Off, the per-record paths are built
   * without counting and the counters stay 0 (metrics.record-counters.enabled: false).
   */
  readonly recordCounters: boolean;
  /** The id of this attempt's first checkpoint (ids below it may be committed by sinks already); 1 when absent. */
  readonly firstCheckpointId?: number;
  /** Makes the keyed state backend of each keyed operator (chosen by the configuration). */
  readonly keyedStateBackend: KeyedStateBackendFactory;
  /**
   * The task side of checkpoint storage, the only source of state streams: the checkpointer
   * resolves snapshot locations through it, and a restore opens its state files through it.
   */
  readonly storage: CheckpointStorageWorkerView;
}

/**
 * For each chained operator, the predecessor that feeds it alone: the only chained edge into
 * it, from that predecessor's main output, which has no other target (chained or network).
 */
function soleFeeders(ops: readonly { readonly chainedOutputs: readonly { readonly target: number; readonly sideTag: string | undefined }[]; readonly networkOutputs: readonly { readonly sideTag?: string | undefined }[] }[]): (number | undefined)[] {
  const edgesInto = new Array<number>(ops.length).fill(0);
  for (const op of ops) for (const c of op.chainedOutputs) edgesInto[c.target]!++;
  const from: (number | undefined)[] = new Array(ops.length).fill(undefined);
  ops.forEach((op, p) => {
    const main = op.chainedOutputs.filter((c) => c.sideTag === undefined);
    const mainNetwork = op.networkOutputs.filter((e) => e.sideTag === undefined);
    if (main.length !== 1 || mainNetwork.length > 0) return;
    const target = main[0]!.target;
    if (edgesInto[target] === 1) from[target] = p;
  });
  return from;
}

/** Feeds a chained operator from its predecessor's Output. */
class ChainedInput implements BatchConsumer {
  declare processRecord?: (value: unknown, timestamp: number) => void;
  constructor(protected readonly op: StreamOperator, protected readonly task: StreamTask, protected readonly index: number) {}
  processBatch(batch: Batch): void {
    if (this.task.countsRecords) this.task.recordsIn[this.index]! += batch.values.length;
    this.op.processBatch(batch, 0);
    this.flush();
  }
  /** The producer's batch is done (record-at-a-time mode): pass the flush down the chain. */
  flush(): void {
    this.op.afterRecords();
    this.op.output.flush();
  }
  processWatermark(ts: number): void {
    this.op.processWatermark(ts, 0);
  }
  processWatermarkStatus(idle: boolean): void {
    this.op.processWatermarkStatus(idle, 0);
  }
  endInput(): void {
    // A stop without drain ends operators without finishing them: nothing more is emitted.
    if (!this.task.stopping) {
      this.op.endInput(0);
      this.op.finish();
    }
    this.op.output.endInput();
  }
}

/** A chained operator that takes single records: its predecessor's Output calls it per record. */
class RecordChainedInput extends ChainedInput {
  override readonly processRecord: (value: unknown, timestamp: number) => void;
  constructor(op: StreamOperator, task: StreamTask, index: number) {
    super(op, task, index);
    // An operator fed by one predecessor's main output alone gets its count from that output's (metricsSample).
    const count = task.countsRecords && task.recordsInFrom[index] === undefined ? `counts[${index | 0}]++; ` : '';
    this.processRecord = specialize('toOperator', 'f', 'counts', `${count}f(value, timestamp);`)(directRecordFn(op), task.recordsIn);
  }
}

export class StreamTask implements Schedulable {
  queued = false;
  state: TaskState = 'created';
  readonly name: string;
  readonly operators: StreamOperator[] = [];
  readonly head: StreamOperator;
  readonly source: SourceOperator | undefined;
  readonly writers: RecordWriter[];
  readonly gates: InputGate[];
  private readonly mailbox = new Deque<() => void>();
  /** Mail that emits records, run when the outputs have room (outputMail). */
  private readonly outputMailbox = new Deque<() => void>();
  private readonly valves: ValveOutput[];
  private nextGate = 0;
  private lastFlush = 0;
  barrierHandler: BarrierHandler | undefined;
  /** Records taken in per operator index (metrics); all 0 when records are not counted. */
  readonly recordsIn: number[];
  /**
   * Per operator: the chained predecessor whose main output is its only input and has no other
   * target, or undefined. Its records in are that output's records out, so the per-record path
   * counts once per hand-over instead of twice.
   */
  readonly recordsInFrom: (number | undefined)[];
  /** Records are counted (metrics.record-counters.enabled); read when the chain is built and per batch. */
  readonly countsRecords: boolean;
  /** Operators whose output count is their input count (oneToOne, no side outputs): their outputs do not count. */
  private readonly derivedOut: boolean[];
  /** Malformed records this task's source and sinks sent to the dead letters. */
  get deadLetters(): number {
    let n = 0;
    for (const op of this.operators) n += op.deadLetterCount;
    return n;
  }
  /** Idle / back-pressured / busy time (metrics), accounted per blocked interval, not per batch. */
  readonly time = new TaskTimeAccount();
  private readonly timers = new Set<{ cancel(): void }>();
  private readonly keyedBackends: KeyedStateBackend[] = [];

  constructor(readonly d: TaskDeployment) {
    const v = d.vertex;
    this.name = `${v.name} (${d.subtaskIndex + 1}/${v.parallelism})`;
    this.gates = d.inputGates;
    this.writers = [...d.writers.values()];
    this.recordsIn = new Array(v.operators.length).fill(0);
    this.countsRecords = d.recordCounters;
    this.recordsInFrom = soleFeeders(v.operators);
    this.derivedOut = new Array<boolean>(v.operators.length).fill(false);
    // Build operators children-first so every Output can point at its targets.
    const built: StreamOperator[] = new Array(v.operators.length);
    const inputs: ChainedInput[] = new Array(v.operators.length);
    for (let i = v.operators.length - 1; i >= 0; i--) {
      const spec = v.operators[i]!;
      const op = this.createOperator(spec);
      built[i] = op;
      const targetsFor = (tag: string | undefined): BatchConsumer[] => [
        ...spec.chainedOutputs.filter((c) => c.sideTag === tag).map((c) => inputs[c.target]!),
        ...spec.networkOutputs.filter((e) => e.sideTag === tag).map((e) => d.writers.get(e.index)!),
      ];
      const tags = new Set<string>();
      for (const c of spec.chainedOutputs) if (c.sideTag !== undefined) tags.add(c.sideTag);
      for (const e of spec.networkOutputs) if (e.sideTag !== undefined) tags.add(e.sideTag);
      // A rate-limited source paces itself by its output's count: that one counts regardless. A
      // one-to-one operator's count is its input's (metricsSample): its output counts nothing.
      const t = spec.node.transformation;
      const derived = op.oneToOne && tags.size === 0;
      if (derived) this.derivedOut[i] = true;
      const counting = (this.countsRecords && !derived) || (t.kind === 'source' && t.ratePerSecond !== undefined);
      const sides = new Map<string, Output>([...tags].map((tag) => [tag, new Output(targetsFor(tag), undefined, undefined, this.countsRecords)]));
      const numInputs = t.kind === 'two-input' ? 2 : t.kind === 'source' ? 0 : 1;
      op.setup(this.operatorEnvironment(spec, op), new Output(targetsFor(undefined), sides, undefined, counting), numInputs);
      inputs[i] = op.processRecord !== undefined ? new RecordChainedInput(op, this, i) : new ChainedInput(op, this, i);
    }
    this.operators.push(...built);
    this.head = built[0]!;
    this.source = this.head instanceof SourceOperator ? this.head : undefined;
    if (this.source) {
      this.source.assignedSplits = [...d.splits];
      this.source.wake = () => this.wake();
    }
    this.valves = this.gates.map((_, gi) => ({
      watermark: (ts: number) => this.head.processWatermark(ts, gi),
      status: (idle: boolean) => this.head.processWatermarkStatus(idle, gi),
    }));
    for (const g of this.gates) g.listener = { onGateNonEmpty: () => this.wake() };
    for (const w of this.writers) w.onAvailable = () => this.wake();
  }

  private createOperator(spec: ChainedOperatorSpec): StreamOperator {
    const t = spec.node.transformation;
    if (t.kind === 'source') return new SourceOperator(t.source, t.malformedPolicy, undefined, rateShare(t.ratePerSecond, this.d.splits.length, this.d.sourceSplitTotal), t.watermarks);
    return t.factory();
  }

  private operatorEnvironment(spec: ChainedOperatorSpec, _op: StreamOperator) {
    const d = this.d;
    const node = spec.node;
    const t = node.transformation;
    const taskInfo: TaskInfo = {
      operatorName: node.name,
      operatorId: node.id,
      subtaskIndex: d.subtaskIndex,
      parallelism: node.parallelism,
      maxParallelism: node.maxParallelism,
      attemptNumber: d.attempt,
    };
    const keySelectors = t.kind === 'one-input' ? [t.keySelector] : t.kind === 'two-input' ? [...t.keySelectors] : [];
    const keyed = keySelectors.some((k) => k !== undefined);
    const where = describeOperator({ operatorName: node.name, operatorId: node.id, uid: node.uid, subtaskIndex: d.subtaskIndex, parallelism: node.parallelism });
    const keyedBackend = keyed ? d.keyedStateBackend.create({ keyGroupRange: d.keyGroupRange, maxParallelism: node.maxParallelism, clock: d.clock, where }) : undefined;
    if (keyedBackend !== undefined) this.keyedBackends.push(keyedBackend);
    return {
      taskInfo,
      operatorUid: node.uid,
      clock: d.clock,
      scheduleMail: (at: number, fn: () => void) => this.scheduleMail(at, fn),
      scheduleOutputMail: (at: number, fn: () => void) => this.scheduleMail(at, fn, true),
      outputMail: (fn: () => void) => this.outputMail(fn),
      keyedBackend,
      keySelectors,
      operatorState: new OperatorStateStore(where, d.subtaskIndex),
      restoredCheckpointId: d.restore?.checkpointId,
      firstCheckpointId: d.firstCheckpointId ?? 1,
      referencedCommittables: d.restore?.operators[node.id]?.referencedCommittables,
      objectReuse: d.objectReuse,
      checkpointing: d.checkpointing,
      isSuspended: () => this.sourceSuspended || this.stopping,
      isHeldBack: () => this.isHeldBack(),
      services: d.services,
    };
  }


  /** See OperatorEnvironment.isHeldBack; asked by idleness timers, once per interval. */
  private isHeldBack(): boolean {
    for (const w of this.writers) if (!w.isAvailable()) return true;
    for (const op of this.operators) if (!op.hasRoom()) return true;
    return this.gates.some((g) => g.hasData());
  }

  wake(): void {
    if (this.state === 'running' || this.state === 'finishing' || this.state === 'waiting-final') this.d.scheduler.wake(this);
  }

  /** Runs fn in the mailbox, between batches. */
  mail(fn: () => void): void {
    this.mailbox.push(fn);
    this.wake();
  }

  /**
   * Mail that emits records (processing-time timers), run only once the writers are available
   * and every operator has room, before the next input: it ran first with the other mail, so
   * timers firing every second went on emitting with the source stopped by back pressure, their
   * records queued without bound at the output channel (10 MiB/s of heap in an audit's job).
   */
  outputMail(fn: () => void): void {
    this.outputMailbox.push(fn);
    this.wake();
  }

  scheduleMail(atMs: number, fn: () => void, output = false): { cancel(): void } {
    let handle: { cancel(): void } | undefined = undefined;
    const timer = this.d.clock.schedule(atMs, () => {
      if (handle) this.timers.delete(handle);
      if (output) this.outputMail(fn);
      else this.mail(fn);
    });
    handle = { cancel: () => { timer.cancel(); this.timers.delete(handle!); } };
    this.timers.add(handle);
    return handle;
  }

  start(): void {
    if (this.state !== 'created') return;
    const r = this.d.restore;
    if (r === undefined) {
      if (this.d.gated) this.restored(new Map());
      else this.open(new Map());
      return;
    }
    this.state = 'restoring';
    // Reading state files is asynchronous; the task opens when everything is in memory.
    const channelState = r.channelState === undefined ? Promise.resolve(undefined) : loadChannelState(r.channelState, this.d.storage);
    const keyed = Promise.all(
      this.operators.map(async (op) => {
        const spec = r.operators[op.env.taskInfo.operatorId];
        if (spec?.inline) op.restoreInline(spec.inline);
        if (spec?.watermark !== undefined) op.restoreWatermark(spec.watermark);
        const files = spec?.keyedFiles ?? [];
        if (files.length === 0) return [op, undefined] as const;
        // A restore error, not a failure to retry: every restart would read the same snapshot.
        if (op.env.keyedBackend === undefined) throw new WeirError('RESTORE', `operator "${op.env.taskInfo.operatorName}" has keyed state in the checkpoint but is not keyed now; give the new operator another uid(), and pass --allow-non-restored-state to drop that state`);
        return [op, await loadKeyedState(op.env.keyedBackend, files, this.d.storage)] as const;
      }),
    );
    Promise.all([keyed, channelState]).then(
      ([loaded, cs]) => {
        if (this.state !== 'restoring') return;
        this.restoredChannels = cs;
        const timers = new Map(loaded.filter(([, t]) => t !== undefined) as [StreamOperator, RestoredTimers][]);
        if (this.d.gated) this.restored(timers);
        else this.open(timers);
      },
      (e) => this.fail(e),
    );
  }

  private restoredTimers: Map<StreamOperator, RestoredTimers> | undefined;
  /** In-flight data of an unaligned checkpoint, replayed when the task opens. */
  private restoredChannels: LoadedChannelState[] | undefined;

  private restored(timers: Map<StreamOperator, RestoredTimers>): void {
    this.state = 'restored';
    this.restoredTimers = timers;
    this.d.listener.onTaskRestored(this);
  }

  /** Every task of the attempt has restored: open and run. */
  proceed(): void {
    if (this.state !== 'restored') return;
    const timers = this.restoredTimers!;
    this.restoredTimers = undefined;
    this.open(timers);
  }

  private open(timers: Map<StreamOperator, RestoredTimers>): void {
    this.state = 'running';
    try {
      // In-flight data of the restored checkpoint goes before anything new, in and out.
      const cs = this.restoredChannels;
      this.restoredChannels = undefined;
      if (cs !== undefined) replayChannelState(cs, this.d.restore?.channelState?.rescaled ?? false, this.replayTarget());
      for (const op of this.operators) {
        op.open();
        const t = timers.get(op);
        if (t !== undefined && op instanceof KeyedOperator) {
          for (const x of t) op.timers.restoreTimer(x.domain, x.timestamp, x.key, x.keyGroup, x.originalKey, x.namespace);
        }
      }
    } catch (e) {
      this.fail(e);
      return;
    }
    this.d.listener.onTaskRunning(this);
    this.lastFlush = performance.now();
    this.time.open(this.lastFlush);
    // A subtask with no input channels at all (e.g. no producer maps to it) ends at once.
    if (this.source === undefined && this.gates.every((g) => g.numChannels() === 0)) {
      this.mail(() => this.finishChain());
    } else {
      // An input no producer maps to (a global() edge, for every subtask but the first) has ended:
      // it must not hold the operator's event time at its minimum for good.
      this.gates.forEach((g, gi) => {
        if (g.numChannels() === 0) {
          this.mail(() => {
            this.valves[gi]!.watermark(MAX_WATERMARK);
            this.head.endInput(gi);
          });
        }
      });
    }
    this.wake();
  }

  /**
   * Where restored channel state goes; the input of a keyBy keeps only records of its own key
   * groups, also when its operator keeps no keyed state (keyBy(k).map(f): replayed by the old
   * subtask's number, a key's older records went to another subtask than its new ones).
   */
  private replayTarget(): ReplayTarget {
    const env = this.head.env;
    const range = this.d.keyGroupRange;
    const owns = this.gates.map((gate, g) => {
      const hashFed = gate.hashFed;
      if (hashFed !== undefined) {
        const { keySelector, maxParallelism } = hashFed;
        // The key group again from the key: one stored with the batch was for the old graph's max parallelism.
        return (value: unknown): boolean => {
          const kg = keyGroupOf(normalizeKey(keySelector(value)), maxParallelism);
          return kg >= range.start && kg <= range.end;
        };
      }
      const maxP = env.taskInfo.maxParallelism;
      const sel = env.keyedBackend === undefined ? undefined : env.keySelectors[g];
      if (sel === undefined) return undefined;
      return (value: unknown, keyGroup: number | undefined): boolean => {
        const kg = keyGroup ?? keyGroupOf(normalizeKey(sel(value)), maxP);
        return kg >= range.start && kg <= range.end;
      };
    });
    return { gates: this.gates, writers: this.d.writers, owns, taskName: this.name };
  }

  step(): boolean {
    if (this.state !== 'running' && this.state !== 'finishing' && this.state !== 'waiting-final') return false;
    const startedAt = performance.now();
    try {
      return this.stepRunning(startedAt);
    } finally {
      this.time.addBusy(performance.now() - startedAt);
    }
  }

  private stepRunning(now: number): boolean {
    if (this.time.isBlocked) this.time.resume(now);
    try {
      let ranMail = false;
      while (this.mailbox.length > 0) {
        this.mailbox.shift()!();
        ranMail = true;
        if (this.state !== 'running' && this.state !== 'finishing' && this.state !== 'waiting-final') return false;
      }
      // What mail emitted (a processing-time timer's output, a window it fired) goes on now:
      // operators' batches are otherwise flushed after input, which a quiet source never gives.
      if (ranMail) this.flushOperatorOutputs();
      if (this.state === 'waiting-final') {
        this.time.block('idle', performance.now());
        return false;
      }
      if (this.state === 'finishing') {
        this.checkDrained();
        if (this.state === 'finishing') this.time.block('backpressure', performance.now());
        return false;
      }
      // Woken by onAvailable, or by the operator (a mail) when it has room again.
      if (this.outputsBlocked()) return false;
      // Suspended after a stop's savepoint barrier: nothing more is emitted (its timers are in the savepoint).
      if (this.outputMailbox.length > 0 && !this.sourceSuspended) {
        if (!this.runOutputMail() || this.outputsBlocked()) return false;
      }
      return this.source !== undefined ? this.sourceStep() : this.inputStep();
    } catch (e) {
      this.fail(e);
      return false;
    }
  }

  /** A writer without credit, or an operator without room: the task waits, back-pressured. */
  private outputsBlocked(): boolean {
    for (const w of this.writers) {
      if (!w.isAvailable()) {
        this.time.block('backpressure', performance.now());
        return true;
      }
    }
    const ops = this.operators;
    for (let i = 0; i < ops.length; i++) {
      if (!ops[i]!.hasRoom()) {
        this.time.block('backpressure', performance.now());
        return true;
      }
    }
    return false;
  }

  /** The output mail queued now (what it queues runs at a later step, after the checks again); false when the task stopped running. */
  private runOutputMail(): boolean {
    for (let n = this.outputMailbox.length; n > 0; n--) {
      this.outputMailbox.shift()!();
      if (this.state !== 'running') return false;
    }
    this.flushOperatorOutputs();
    return true;
  }

  private sourceStep(): boolean {
    if (this.sourceSuspended) {
      this.flushWriters();
      this.time.block('idle', performance.now());
      return false; // woken by resumeSource or endSource
    }
    const status = this.source!.emitNext();
    if (this.countsRecords) this.recordsIn[0] = this.source!.output.count;
    if (status === 'more') {
      this.maybeFlushOnTimeout();
      return true;
    }
    this.flushWriters();
    if (status === 'end') this.finishChain();
    else this.time.block('idle', performance.now());
    return false;
  }

  private inputStep(): boolean {
    const gates = this.gates;
    let el: ChannelElement | undefined;
    let gate: InputGate | undefined;
    for (let k = 0; k < gates.length && el === undefined; k++) {
      gate = gates[(this.nextGate + k) % gates.length]!;
      el = gate.poll();
    }
    this.nextGate = (this.nextGate + 1) % Math.max(1, gates.length);
    if (el === undefined || gate === undefined) {
      const now = performance.now();
      this.flushWriters(now);
      this.time.block('idle', now);
      return false; // woken when a gate gets data
    }
    if (!isEvent(el)) {
      if (this.countsRecords) this.recordsIn[0]! += el.values.length;
      this.head.processBatch(el, gate.index);
      this.head.afterRecords();
      this.head.output.flush();
      this.maybeFlushOnTimeout();
      return true;
    }
    this.onEvent(gate, gate.lastChannel, el);
    return this.state === 'running';
  }

  private onEvent(gate: InputGate, channel: number, e: StreamEvent): void {
    switch (e.kind) {
      case 'watermark':
        gate.onWatermark(channel, e.timestamp, this.valves[gate.index]!);
        return;
      case 'status':
        gate.onStatus(channel, e.idle, this.valves[gate.index]!);
        return;
      case 'end': {
        if (e.stop) this.stopping = true;
        const allEnded = gate.endChannel(channel, this.valves[gate.index]!, e.stop === true);
        // An ended channel delivers no barrier: alignment may complete now, before end of input.
        this.barrierHandler?.onChannelEnded();
        if (allEnded) {
          if (!this.stopping) this.head.endInput(gate.index);
          if (this.gates.every((g) => g.isEnded())) this.finishChain();
        }
        return;
      }
      default:
        if (this.barrierHandler === undefined) throw new Error(`unexpected ${e.kind} event: checkpointing is not enabled for this job`);
        this.barrierHandler.onEvent(this, gate, channel, e);
    }
  }

  private maybeFlushOnTimeout(): void {
    const now = performance.now();
    if (now - this.lastFlush >= this.d.bufferTimeoutMs) this.flushWriters(now);
  }

  /** Every operator's output batch, head to tail (a flushed batch may fill the next operator's). */
  private flushOperatorOutputs(): void {
    for (const op of this.operators) op.output.flush();
  }

  flushWriters(now = performance.now()): void {
    this.lastFlush = now;
    for (const w of this.writers) w.flushAll();
  }

  /** End of all input: operators finish head to tail, end-of-data goes downstream. */
  private finishChain(): void {
    if (this.state !== 'running') return;
    // No processing-time timer fires past the end of input (nor past a stop's savepoint barrier).
    for (const op of this.operators) if (op instanceof KeyedOperator) op.timerServiceIfCreated()?.quiesce();
    if (this.stopping) {
      for (const w of this.writers) w.stopping = true;
    } else {
      this.head.finish();
    }
    this.head.output.endInput();
    this.state = 'finishing';
    this.checkDrained();
  }

  /**
   * Each operator's numRecordsIn and numRecordsOut, in chain order: an operator fed by one
   * predecessor's main output alone has that output's count as its input count (the chain
   * counts each record once, at the output), and a one-to-one operator's output count is its
   * input count. Chains run forward (a predecessor's index is below its target's), so one pass
   * in order computes every derived count from counts already known.
   */
  private recordCounts(): { recordsIn: number[]; recordsOut: number[] } {
    const ops = this.operators;
    const recordsIn = new Array<number>(ops.length);
    const recordsOut = new Array<number>(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const from = this.recordsInFrom[i];
      if (from !== undefined && from >= i) throw new Error(`operator ${i} is fed by operator ${from}, not one before it in the chain`);
      recordsIn[i] = from !== undefined ? recordsOut[from]! - this.sideCount(from) : this.recordsIn[i]!;
      recordsOut[i] = this.derivedOut[i] ? recordsIn[i]! : ops[i]!.output.countWithSides;
    }
    return { recordsIn, recordsOut };
  }

  /** Records operator i emitted on its side outputs (recordsOut counts them, as Flink's CountingOutput). */
  private sideCount(i: number): number {
    const o = this.operators[i]!.output;
    return o.countWithSides - o.count;
  }

  /** The task's counters now (read about once a second by the executor, never per record). */
  metricsSample(vertex: number, subtask: number): TaskMetricsSample {
    const now = performance.now();
    const t = this.time.totals(now);
    let taskRecordsOut = 0;
    let bytesOut = 0;
    for (const w of this.writers) {
      taskRecordsOut += w.recordsOut;
      for (const c of w.channels) bytesOut += c.bytesOut;
    }
    const ops = this.operators;
    const counts = this.countsRecords ? this.recordCounts() : undefined;
    return {
      vertex, subtask, state: this.state, sampledAt: performance.timeOrigin + now,
      recordsIn: counts?.recordsIn ?? ops.map(() => 0),
      // A rate-limited source counts for its pacing even when records are not counted for metrics.
      recordsOut: counts?.recordsOut ?? ops.map(() => 0),
      taskRecordsOut, bytesOut,
      idleMs: t.idleMs, backPressuredMs: t.backPressuredMs, elapsedMs: t.elapsedMs, busyMs: t.busyMs, isBackPressured: t.isBackPressured,
      inputWatermark: ops.map((o) => o.currentWatermark),
      outputWatermark: ops.map((o) => o.output.lastWatermark),
      lateRecordsDropped: ops.map((o) => ('numLateRecordsDropped' in o && typeof o.numLateRecordsDropped === 'number' ? o.numLateRecordsDropped : 0)),
      mailboxSize: this.mailbox.length + this.outputMailbox.length,
      deadLetters: this.deadLetters,
      ...(this.source !== undefined ? { source: this.source.metrics.snapshot() } : {}),
    };
  }

  /** Ending because of a stop-with-savepoint without drain (see EndOfDataEvent.stop). */
  stopping = false;
  private sourceSuspended = false;

  /**
   * After a stop-with-savepoint barrier, until the savepoint is decided: a source stops reading,
   * and every task stops firing processing-time timers (output mail). A timer that fired between
   * the barrier and the stop wrote output after the savepoint, and fired again after the resume.
   */
  suspendSource(): void {
    this.sourceSuspended = true;
  }

  resumeSource(): void {
    if (!this.sourceSuspended) return;
    this.sourceSuspended = false;
    this.wake();
  }

  /**
   * Ends a source early for stop-with-savepoint: with drain, as if its input had ended
   * (event time goes to the end, windows and timers fire, operators finish); without drain,
   * right away and without finishing anything.
   */
  endSource(drain: boolean): void {
    if (this.source === undefined || this.state !== 'running') return;
    this.sourceSuspended = false;
    if (drain) {
      this.source.endNow();
    } else {
      this.stopping = true;
    }
    this.flushWriters();
    this.finishChain();
  }

  /** A finishing task ends once every queued output has been accepted downstream. */
  private checkDrained(): void {
    for (const w of this.writers) if (w.backlog() > 0) return; // woken by onAvailable
    if (this.d.waitForFinalCheckpoint) {
      this.state = 'waiting-final';
      this.d.listener.onTaskWaiting(this);
      return;
    }
    this.finishNow();
  }

  /** After the final checkpoint (or without checkpointing): close and report finished. */
  finishNow(): void {
    if (this.state !== 'finishing' && this.state !== 'waiting-final') return;
    // Asynchronous work (a sink's last commit) must complete first.
    const pending = this.operators.map((o) => o.quiesce()).filter((p): p is Promise<void> => p !== undefined);
    if (pending.length > 0 && !this.quiesced) {
      Promise.all(pending).then(
        () => this.mail(() => {
          this.quiesced = true;
          this.finishNow();
        }),
        (e) => this.mail(() => this.fail(e)),
      );
      return;
    }
    // A user close() that throws fails the task, as in Flink (a sink flushing in close() lost
    // that flush without a word when the job ended normally).
    const closeFailure = this.closeOperators();
    if (closeFailure !== undefined) {
      this.state = 'failed';
      this.d.listener.onTaskFailed(this, closeFailure);
      return;
    }
    this.state = 'finished';
    this.d.listener.onTaskFinished(this);
  }
  private quiesced = false;

  fail(e: unknown): void {
    if (this.state === 'failed' || this.state === 'canceled' || this.state === 'finished') return;
    this.state = 'failed';
    this.closeOperators();
    this.d.listener.onTaskFailed(this, e);
  }

  cancel(): void {
    if (this.state === 'failed' || this.state === 'canceled' || this.state === 'finished') return;
    this.state = 'canceled';
    this.closeOperators();
  }

  /** Closes every operator; the first close() that threw (after a failure, already reported, or ignored by the caller). */
  private closeOperators(): unknown {
    this.barrierHandler?.dispose();
    for (const t of [...this.timers]) t.cancel();
    this.mailbox.clear();
    this.outputMailbox.clear();
    let first: unknown;
    const under: Promise<void>[] = [];
    for (const op of this.operators) {
      try {
        op.close();
      } catch (e) {
        first ??= e;
      }
      const p = op.closed();
      if (p !== undefined) under.push(p);
    }
    for (const b of this.keyedBackends) b.dispose();
    if (under.length > 0) this.ioUnderWay = Promise.all(under).then(() => {}, () => {});
    return first;
  }

  /** What the operators had under way when they closed (StreamOperator.closed). */
  private ioUnderWay: Promise<void> | undefined;

  /**
   * Resolves once the I/O the operators had under way when they closed has ended (a sink's
   * commit or upload in flight), or after `timeoutMs`, whichever comes first: true if it ended.
   */
  ioEnded(timeoutMs: number): Promise<boolean> {
    const under = this.ioUnderWay;
    if (under === undefined) return Promise.resolve(true);
    let t: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      t = setTimeout(() => resolve(false), timeoutMs);
      t.unref();
    });
    return Promise.race([under.then(() => true), late]).finally(() => clearTimeout(t));
  }
}

/**
 * A subtask's share of its source's rate limit: the rate is the source's, so it is dealt out in
 * proportion to the splits each subtask reads. A subtask without splits reads nothing and gets
 * no share (dividing by parallelism instead left a single file at p=2 with half the rate).
 */
export function rateShare(ratePerSecond: number | undefined, mySplits: number, totalSplits: number): number | undefined {
  if (ratePerSecond === undefined || mySplits === 0 || totalSplits === 0) return undefined;
  return (ratePerSecond * Math.min(mySplits, totalSplits)) / totalSplits;
}
