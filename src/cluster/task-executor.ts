/**
 * A task executor hosts the subtasks placed on one worker (a worker thread, or the main
 * thread with --workers 1): it wires their channels, runs them on one scheduler, and
 * reports to the job manager through a message function.
 */
import { WeirError } from '../core/errors.ts';
import type { MalformedRecord, SourceSplit } from '../core/source.ts';
import { appendDeadLetters } from '../connectors/file/dead-letter-file.ts';
import { consumersOf, type JobGraph } from '../graph/job-graph.ts';
import type { ExecutionPlan } from '../graph/execution-plan.ts';
import { channelCredits, InputChannel, OutputChannel } from '../runtime/channels/channel.ts';
import { decodeBatch } from '../core/codec.ts';
import type { ChannelElement } from '../runtime/events.ts';
import { InputGate } from '../runtime/input-gate.ts';
import type { RuntimeServices } from '../runtime/operators/operator.ts';
import { RecordWriter } from '../runtime/record-writer.ts';
import { Scheduler } from '../runtime/scheduler.ts';
import { StreamTask, type TaskListener } from '../runtime/task.ts';
import type { Clock } from '../core/clock.ts';
import type { DataPlane } from './data-plane.ts';
import { serializeError, type FromExecutor, type TaskMetrics, type ToExecutor } from './messages.ts';
import type { CheckpointingMode } from '../checkpoint/config.ts';
import type { IncrementalSettings } from '../state/backend.ts';
import type { UnalignedSettings } from '../runtime/checkpointing/barrier-decision.ts';
import { SubtaskCheckpointer, type TriggerRequest } from '../runtime/checkpointing/subtask-checkpointer.ts';
import type { TaskRestore } from '../core/checkpoint-format.ts';
import { taskId, type TaskId } from '../core/task-id.ts';
import type { CheckpointStorageWorkerView } from '../checkpoint/storage.ts';
import { keyedStateBackendFactory, type StateBackendOptions } from '../state/backends.ts';
import { quoteRaw } from '../core/redact.ts';
import { SINK_IO_ABORT_MS } from '../runtime/operators/commit-sink.ts';

/**
 * How long a cancel waits for the I/O its tasks had under way (TaskExecutor.cancel): below
 * deployment.ts's WORKER_EXIT_WAIT_MS, so that a worker thread still ends by itself after it,
 * and above the commit sink's SINK_IO_ABORT_MS, so that a sink's stuck request is stopped
 * before the wait gives up on it.
 */
export const CANCEL_IO_WAIT_MS = 4_000;
if (!(SINK_IO_ABORT_MS < CANCEL_IO_WAIT_MS)) throw new Error('SINK_IO_ABORT_MS must be below CANCEL_IO_WAIT_MS');

export interface ExecutorConfig {
  readonly workerIndex: number;
  readonly graph: JobGraph;
  readonly plan: ExecutionPlan;
  readonly splits: Readonly<Record<TaskId, readonly SourceSplit[]>>;
  readonly attempt: number;
  /** Buffer credits of every channel, when the job sets them; undefined: each channel's default (channelCredits). */
  readonly credits: number | undefined;
  readonly clock: Clock;
  readonly send: (m: FromExecutor) => void;
  /** Present when some channels cross to other workers. */
  readonly dataPlane: DataPlane | undefined;
  /** Where print() output goes; the main thread's stdout by default. */
  readonly writeStdout?: (text: string) => void;
  /** `inlineThresholdBytes`: keyed state files up to this size go into the metadata (0 or absent: none). */
  readonly checkpointing: { readonly mode: CheckpointingMode; readonly periodic: boolean; readonly inlineThresholdBytes?: number; readonly incremental?: IncrementalSettings; readonly unaligned?: UnalignedSettings };
  readonly restore: Readonly<Record<TaskId, TaskRestore>>;
  /**
   * The task side of checkpoint storage: the only source of state streams. Locations in trigger
   * requests and barriers resolve through it, and restores open their state files through it.
   */
  readonly storage: CheckpointStorageWorkerView;
  /** Name of the keyed state backend (state.backend.type); 'heap' when absent. */
  readonly stateBackend?: string;
  /** Settings of the keyed state backend (state.backend.<name>.*). */
  readonly stateBackendOptions?: StateBackendOptions;
  /** Where sources' dead letters are written; without one, the first few go to the job's log. */
  readonly deadLetterDir?: string | undefined;
  /** Count records per task and operator (metrics); true when absent. */
  readonly recordCounters?: boolean;
  /**
   * The id this attempt's first checkpoint takes: above the restored snapshot's and above what
   * any sink committed (an earlier run's output, --allow-duplicate-output): a sink skips ids it
   * committed, so reusing one dropped the new output. Sinks commit at the end after it too.
   */
  readonly firstCheckpointId?: number;
}

/** Dead letters shown in the log per source subtask when there is no dead-letter directory; the rest are counted. */
const DEAD_LETTERS_LOGGED = 10;

export class TaskExecutor implements TaskListener {
  readonly scheduler = new Scheduler();
  readonly tasks: StreamTask[] = [];
  private readonly taskKey = new Map<StreamTask, { vertex: number; subtask: number }>();
  private readonly byId = new Map<string, { task: StreamTask; checkpointer: SubtaskCheckpointer }>();

  constructor(private readonly cfg: ExecutorConfig) {
    const { graph, plan, workerIndex } = cfg;
    const dp = cfg.dataPlane;
    const inputs = new Map<number, InputChannel>();
    const outputs = new Map<number, OutputChannel>();
    // Gate position of each channel: per consumer subtask and input, edges in order, producers in order.
    const gateIndexOf = new Map<number, number>();
    const byConsumer = new Map<string, number[]>();
    // The channel of (edge, producer, consumer), found in one lookup: a scan of every channel
    // per pair made deployment O(p^4) on an all-to-all edge (minutes at p=200).
    const channelId = new Map<string, number>();
    for (const ch of plan.channels) {
      channelId.set(`${ch.edge}:${ch.producer}:${ch.consumer}`, ch.id);
      const e = graph.edges[ch.edge]!;
      const k = `${e.target.index}:${ch.consumer}:${e.inputIndex}`;
      const list = byConsumer.get(k) ?? [];
      list.push(ch.id);
      byConsumer.set(k, list);
    }
    for (const list of byConsumer.values()) {
      list.sort((a, b) => a - b); // channel ids are assigned edge by edge, producer by producer
      list.forEach((id, i) => gateIndexOf.set(id, i));
    }

    const decode = (bytes: Uint8Array): ChannelElement => decodeBatch(bytes);
    for (const ch of plan.channels) {
      const producerLocal = ch.producerWorker === workerIndex;
      const consumerLocal = ch.consumerWorker === workerIndex;
      if (producerLocal && consumerLocal) {
        let input: InputChannel | undefined = undefined;
        const out = new OutputChannel(ch.id, channelCredits(cfg.credits, true), (el) => input!.push(el));
        input = new InputChannel(ch.id, gateIndexOf.get(ch.id)!, () => out.addCredit(1));
        inputs.set(ch.id, input);
        outputs.set(ch.id, out);
      } else if (producerLocal) {
        if (!dp) throw new Error('a channel crosses workers but there is no data plane');
        const out = new OutputChannel(ch.id, channelCredits(cfg.credits, false), dp.transmitTo(ch.consumerWorker, ch.id));
        dp.registerOutput(out);
        outputs.set(ch.id, out);
      } else if (consumerLocal) {
        if (!dp) throw new Error('a channel crosses workers but there is no data plane');
        const input = new InputChannel(ch.id, gateIndexOf.get(ch.id)!, dp.creditTo(ch.producerWorker, ch.id), decode);
        dp.registerInput(input);
        inputs.set(ch.id, input);
      }
    }
    if (dp) {
      this.scheduler.onEndOfSlice(() => dp.flushCredits());
      this.scheduler.onAfterStep(() => dp.poll());
    }

    // Resolved once, before any task exists: an unknown name fails the deployment, not a task.
    const keyedStateBackend = keyedStateBackendFactory(cfg.stateBackend, cfg.stateBackendOptions);
    const services: RuntimeServices = {
      collect: (sink, subtask, values) => cfg.send({ type: 'collect', sink, subtask, values }),
      writeStdout: cfg.writeStdout ?? ((t) => void process.stdout.write(t)),
      log: (line) => cfg.send({ type: 'log', line }),
      deadLetters: (source, subtask, records) => this.deadLetters(source, subtask, records),
      sourceEvent: (operator, subtask, event) => cfg.send({ type: 'source-event', operator, subtask, event }),
    };

    for (const st of plan.subtasks) {
      if (st.worker !== workerIndex) continue;
      const v = graph.vertices[st.vertex]!;
      // Input gates: one per logical input.
      const numGates = v.operators[0]!.node.transformation.kind === 'two-input' ? 2 : v.isSource ? 0 : 1;
      const gates: InputGate[] = [];
      for (let g = 0; g < numGates; g++) {
        const ids = (byConsumer.get(`${v.index}:${st.index}:${g}`) ?? []);
        const gate = new InputGate(g, ids.map((id) => inputs.get(id)!));
        gate.broadcastFed = graph.edges.some((e) => e.target.index === v.index && e.inputIndex === g && e.partition.kind === 'broadcast');
        const hash = graph.edges.find((e) => e.target.index === v.index && e.inputIndex === g && e.partition.kind === 'hash');
        if (hash?.partition.keySelector !== undefined) gate.hashFed = { keySelector: hash.partition.keySelector, maxParallelism: hash.targetMaxParallelism };
        gates.push(gate);
      }
      // Record writers: one per network edge leaving any operator of the chain.
      const writers = new Map<number, RecordWriter>();
      for (const op of v.operators) {
        for (const e of op.networkOutputs) {
          const consumers = consumersOf(e.partition.kind, st.index, v.parallelism, e.target.parallelism);
          const chans = consumers.map((c) => outputs.get(channelId.get(`${e.index}:${st.index}:${c}`)!)!);
          writers.set(
            e.index,
            new RecordWriter(e.partition.kind, chans, consumers, e.target.parallelism, e.partition.keySelector, e.targetMaxParallelism, {
              operatorName: op.node.name,
              operatorId: op.node.id,
              uid: op.node.uid,
              subtaskIndex: st.index,
              parallelism: v.parallelism,
            }, undefined, cfg.recordCounters ?? true),
          );
        }
      }
      const task = new StreamTask({
        vertex: v,
        subtaskIndex: st.index,
        attempt: cfg.attempt,
        keyGroupRange: st.keyGroupRange,
        inputGates: gates,
        writers,
        splits: cfg.splits[taskId(v.index, st.index)] ?? [],
        sourceSplitTotal: splitTotal(cfg.splits, v.index, v.parallelism),
        clock: cfg.clock,
        services,
        scheduler: this.scheduler,
        listener: this,
        bufferTimeoutMs: graph.bufferTimeout,
        // Every task waits at the end for the job manager's word: after a final checkpoint or
        // savepoint when there is one, at once otherwise.
        waitForFinalCheckpoint: true,
        checkpointing: cfg.checkpointing.periodic,
        restore: cfg.restore[taskId(v.index, st.index)],
        gated: Object.keys(cfg.restore).length > 0,
        objectReuse: graph.objectReuse,
        recordCounters: cfg.recordCounters ?? true,
        firstCheckpointId: cfg.firstCheckpointId ?? 1,
        keyedStateBackend,
        storage: cfg.storage,
      });
      const id = taskId(v.index, st.index);
      // Savepoints can be taken whether or not periodic checkpoints are on.
      const checkpointer = new SubtaskCheckpointer(task, id, cfg.checkpointing.mode, {
        ack: (cid, ack) => cfg.send({ type: 'ack', id: cid, ack }),
        decline: (cid, reason, message) => cfg.send({ type: 'decline', id: cid, task: id, reason, message }),
      }, this.scheduler, () => cfg.clock.now());
      checkpointer.inlineThresholdBytes = cfg.checkpointing.inlineThresholdBytes ?? 0;
      checkpointer.incremental = cfg.checkpointing.incremental;
      if (cfg.checkpointing.unaligned !== undefined) checkpointer.configureUnaligned(cfg.checkpointing.unaligned);
      task.barrierHandler = checkpointer;
      this.tasks.push(task);
      this.taskKey.set(task, { vertex: v.index, subtask: st.index });
      this.byId.set(id, { task, checkpointer });
    }
  }

  start(): void {
    for (const t of this.tasks) t.start();
  }

  /**
   * Cancels every task; resolves once the I/O their operators had under way has ended (a
   * sink's commit or upload in flight; nothing new starts after the cancel), at most
   * CANCEL_IO_WAIT_MS later. The attempt is reported ended only after (deployment.ts), so a
   * cancelled job's commits no longer land after CANCELED, racing a restore started then.
   */
  cancel(): Promise<void> {
    for (const t of this.tasks) t.cancel();
    return Promise.all(this.tasks.map((t) => t.ioEnded(CANCEL_IO_WAIT_MS))).then((ended) => {
      const left = ended.filter((e) => !e).length;
      if (left > 0) this.cfg.send({ type: 'log', line: `weir: ${left} cancelled task(s) still had a commit or upload under way after ${CANCEL_IO_WAIT_MS / 1000} s; the attempt ends without waiting for it (the restore commits what it was committing again)` });
    });
  }

  /** Starts a checkpoint at the given tasks (sources, and tasks whose input has ended). */
  trigger(taskIds: readonly string[], req: TriggerRequest): void {
    for (const id of taskIds) {
      const e = this.byId.get(id);
      if (e?.checkpointer === undefined) continue;
      const { task, checkpointer } = e;
      task.mail(() => checkpointer.triggerDirect(req));
    }
  }

  notifyComplete(id: number): void {
    for (const { task, checkpointer } of this.byId.values()) {
      if (checkpointer) task.mail(() => checkpointer.notifyComplete(id));
    }
  }

  notifyAborted(id: number): void {
    for (const { task, checkpointer } of this.byId.values()) {
      if (checkpointer) task.mail(() => checkpointer.notifyAborted(id));
    }
  }

  /** After the final checkpoint: every waiting task closes. */
  finishTasks(): void {
    for (const t of this.tasks) t.mail(() => t.finishNow());
  }

  handle(m: ToExecutor): void {
    switch (m.type) {
      case 'start':
        return this.start();
      case 'proceed':
        for (const t of this.tasks) t.proceed();
        return;
      case 'cancel':
        void this.cancel();
        return;
      case 'trigger':
        return this.trigger(m.tasks, m.req);
      case 'notify-complete':
        return this.notifyComplete(m.id);
      case 'notify-abort':
        return this.notifyAborted(m.id);
      case 'finish-tasks':
        return this.finishTasks();
      case 'end-sources':
        for (const t of this.tasks) if (t.source) t.mail(() => t.endSource(m.drain));
        return;
      case 'resume-sources':
        for (const t of this.tasks) t.mail(() => t.resumeSource());
        return;
      case 'add-splits': {
        const t = this.byId.get(m.task)?.task;
        if (t?.source) t.mail(() => t.source!.addSplits([...m.splits]));
        return;
      }
      case 'reader-event': {
        const t = this.byId.get(m.task)?.task;
        if (t?.source) t.mail(() => t.source!.handleReaderEvent(m.event));
        return;
      }
      default:
        return;
    }
  }

  onTaskRestored(task: StreamTask): void {
    const k = this.taskKey.get(task)!;
    this.cfg.send({ type: 'task-restored', task: taskId(k.vertex, k.subtask) });
  }

  onTaskRunning(task: StreamTask): void {
    const k = this.taskKey.get(task)!;
    this.cfg.send({ type: 'task-running', task: taskId(k.vertex, k.subtask) });
  }

  onTaskWaiting(task: StreamTask): void {
    const k = this.taskKey.get(task)!;
    this.cfg.send({ type: 'task-waiting', task: taskId(k.vertex, k.subtask) });
  }

  private readonly deadLettersLogged = new Map<string, number>();

  /**
   * To the dead-letter directory; without one, the first few to the log (and all counted). A
   * directory that cannot be written fails the source's task: its malformed records would be
   * lost otherwise (the restart reads them again, and the job fails if the directory stays unwritable).
   */
  private deadLetters(source: string, subtask: number, records: readonly MalformedRecord[]): void {
    const dir = this.cfg.deadLetterDir;
    if (dir !== undefined) {
      try {
        appendDeadLetters(dir, source, subtask, records);
        return;
      } catch (e) {
        throw new WeirError('STORAGE', `cannot write dead letters to ${dir}: ${(e as Error).message}; the source fails rather than lose its malformed records`);
      }
    }
    const key = `${source}\u0000${subtask}`;
    const logged = this.deadLettersLogged.get(key) ?? 0;
    let n = logged;
    for (const r of records) {
      if (n === DEAD_LETTERS_LOGGED) {
        this.cfg.send({ type: 'log', line: `weir: more dead letters from ${source} (subtask ${subtask + 1}) are counted but not shown; give --dead-letter-dir to keep them all` });
        n++;
        break;
      }
      if (n > DEAD_LETTERS_LOGGED) break;
      this.cfg.send({ type: 'log', line: `weir: dead letter from ${source} at ${r.location}: ${r.error} (raw: ${quoteRaw(r.raw)})` });
      n++;
    }
    this.deadLettersLogged.set(key, n);
  }

  onTaskFinished(task: StreamTask): void {
    const k = this.taskKey.get(task)!;
    const metrics = task.metricsSample(k.vertex, k.subtask);
    this.cfg.send({ type: 'task-finished', vertex: k.vertex, subtask: k.subtask, metrics });
  }

  onTaskFailed(task: StreamTask, error: unknown): void {
    const k = this.taskKey.get(task)!;
    this.cfg.send({ type: 'task-failed', vertex: k.vertex, subtask: k.subtask, error: serializeError(error) });
  }

  metrics(): TaskMetrics[] {
    return this.tasks.map((t) => {
      const k = this.taskKey.get(t)!;
      return t.metricsSample(k.vertex, k.subtask);
    });
  }
}

/** The splits of a source vertex over all its subtasks. */
function splitTotal(splits: Readonly<Record<TaskId, readonly SourceSplit[]>>, vertex: number, parallelism: number): number {
  let n = 0;
  for (let i = 0; i < parallelism; i++) n += splits[taskId(vertex, i)]?.length ?? 0;
  return n;
}
