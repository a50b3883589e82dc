/**
 * Deploys one attempt's task executors: worker threads (peer ports for the data plane, a
 * shared stdout window per worker), or, with one worker, a task executor in this thread
 * (batches pass by reference, nothing is serialized, the injected clock drives it).
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { SourceSplit } from '../core/source.ts';
import type { TaskRestore } from '../core/checkpoint-format.ts';
import type { Clock } from '../core/clock.ts';
import type { TaskId } from '../core/task-id.ts';
import type { CheckpointingMode } from '../checkpoint/config.ts';
import type { IncrementalSettings } from '../state/backend.ts';
import type { UnalignedSettings } from '../runtime/checkpointing/barrier-decision.ts';
import type { CheckpointStorageWorkerView } from '../checkpoint/storage.ts';
import type { S3Config } from '../checkpoint/s3/settings.ts';
import type { ExecutionPlan } from '../graph/execution-plan.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import { serializeError, type FromExecutor, type JobSpec, type SerializedError, type ToExecutor } from './messages.ts';
import { TaskExecutor } from './task-executor.ts';
import { WorkerPool } from './worker-pool.ts';
import type { StateBackendOptions } from '../state/backends.ts';
import { setTimeout as delay } from 'node:timers/promises';

/** How long a cancelled worker thread is given to end by itself before it is terminated (deployThreads). */
export const WORKER_EXIT_WAIT_MS = 5_000;

export interface ExecutorHandle {
  send(m: ToExecutor, transfer?: MessagePort[]): void;
  terminate(): Promise<void>;
}

export interface DeploymentSpec {
  readonly workers: number;
  readonly job: JobSpec & { readonly fingerprint: string };
  /** The graph the in-thread executor runs (rebuilt per attempt, see Attempt). */
  readonly graph: JobGraph;
  readonly plan: ExecutionPlan;
  readonly splits: Record<TaskId, SourceSplit[]>;
  readonly attempt: number;
  /** Buffer credits of every channel, when the job sets them; undefined: each channel's default (channelCredits). */
  readonly credits: number | undefined;
  readonly clock: Clock;
  readonly checkpointing: { readonly mode: CheckpointingMode; readonly periodic: boolean; readonly inlineThresholdBytes?: number; readonly incremental?: IncrementalSettings; readonly unaligned?: UnalignedSettings };
  /** The keyed state backend's name, resolved by each executor. */
  readonly stateBackend: string;
  /** Its settings (state.backend.<name>.*). */
  readonly stateBackendOptions: StateBackendOptions;
  readonly deadLetterDir: string | undefined;
  /** Records are counted per task and operator (metrics). */
  readonly recordCounters: boolean;
  /**
   * The id this attempt's first checkpoint takes: above the restored snapshot's and above what
   * any sink committed (an earlier run's output, --allow-duplicate-output): a sink skips ids it
   * committed, so reusing one dropped the new output. Sinks commit at the end after it too.
   */
  readonly firstCheckpointId?: number;
  readonly restore: Record<TaskId, TaskRestore>;
  /** Where tasks in this thread write and read state (worker threads resolve local paths themselves). */
  readonly storage: CheckpointStorageWorkerView;
  /** S3 settings for worker threads (each makes its own client; credentials stay with the SDK). */
  readonly s3: S3Config;
  readonly preloadS3?: boolean;
  /** Worker threads booted ahead (the job's pool; workers > 1 with a module path). */
  readonly pool: WorkerPool | undefined;
  readonly onMessage: (m: FromExecutor) => void;
  /** A worker thread failed or exited while the attempt still ran. */
  readonly onWorkerFailure: (e: SerializedError) => void;
  readonly isEnded: () => boolean;
  /** Writes print() output; `done` runs once the OS took it. */
  readonly writeStdout: (text: string, done?: () => void) => void;
}

export class Deployment {
  readonly executors: ExecutorHandle[] = [];
  /** The executor in this thread (workers: 1), for metrics without messages. */
  local: TaskExecutor | undefined;
  /** Per worker: KiB of print() output sent to this thread and not yet written (a bounded window). */
  private readonly stdoutCredits: Int32Array[] = [];
  private fallbackPool: WorkerPool | undefined;

  private constructor(private readonly spec: DeploymentSpec) {}

  static start(spec: DeploymentSpec): Deployment {
    const d = new Deployment(spec);
    if (spec.workers === 1) d.deployInThread();
    else d.deployThreads();
    return d;
  }

  broadcast(m: ToExecutor): void {
    for (const e of this.executors) e.send(m);
  }

  /** Writes a worker's print() output, then gives its bytes back to the worker's window. */
  writeStdout(m: Extract<FromExecutor, { type: 'stdout' }>): void {
    const credit = this.stdoutCredits[m.worker ?? -1];
    this.spec.writeStdout(m.text, credit === undefined ? undefined : () => {
      Atomics.sub(credit, 0, m.kib ?? 0);
      Atomics.notify(credit, 0);
    });
  }

  terminate(): Promise<void> {
    return Promise.all(this.executors.map((e) => e.terminate())).then(() => {});
  }

  private deployInThread(): void {
    const s = this.spec;
    const ex = new TaskExecutor({
      workerIndex: 0, graph: s.graph, plan: s.plan, splits: s.splits, attempt: s.attempt, credits: s.credits, clock: s.clock,
      send: (m) => queueMicrotask(() => s.onMessage(m)), dataPlane: undefined, writeStdout: (t) => s.writeStdout(t),
      checkpointing: s.checkpointing, stateBackend: s.stateBackend, stateBackendOptions: s.stateBackendOptions, deadLetterDir: s.deadLetterDir, recordCounters: s.recordCounters, firstCheckpointId: s.firstCheckpointId, restore: s.restore, storage: s.storage,
    });
    this.local = ex;
    // Waits for what the tasks had under way (bounded): the attempt ends after it.
    this.executors.push({ send: (m) => ex.handle(m), terminate: () => ex.cancel() });
    queueMicrotask(() => s.onMessage({ type: 'deployed', workerIndex: 0 }));
  }

  /** "Map (1/2), Sink (1/2)": the subtasks worker `w` runs, at most 6 named. */
  private subtasksOn(w: number): string {
    const names = this.spec.plan.subtasks.filter((st) => st.worker === w).map((st) => {
      const v = this.spec.graph.vertices[st.vertex]!;
      return `${v.name} (${st.index + 1}/${v.parallelism})`;
    });
    return names.length > 6 ? `${names.slice(0, 6).join(', ')} and ${names.length - 6} more` : names.join(', ');
  }

  private deployThreads(): void {
    const s = this.spec;
    const peerPorts = this.peerPorts();
    for (let w = 0; w < s.workers; w++) {
      const worker = (s.pool ?? this.ownPool()).take();
      let exited = false;
      let exitSeen: (() => void) | undefined;
      const exitedNow = new Promise<void>((resolve) => (exitSeen = resolve));
      worker.on('message', (m: FromExecutor) => s.onMessage(m));
      // What ran there, for a failure no task caught (an async throw, running out of memory, process.exit in user code).
      const ran = this.subtasksOn(w);
      worker.on('error', (e) => {
        const err = serializeError(e);
        s.onWorkerFailure({ ...err, message: `worker thread ${w} (${ran}): ${err.message}` });
      });
      worker.on('exit', (code) => {
        exited = true;
        exitSeen!();
        if (!s.isEnded()) s.onWorkerFailure({ name: 'WorkerExit', code: undefined, message: `worker thread ${w} (${ran}) exited unexpectedly (code ${code})`, stack: undefined, user: false });
      });
      this.executors.push({
        send: (m, transfer) => worker.postMessage(m, transfer ?? []),
        terminate: async () => {
          if (exited) return;
          // A cancelled worker ends by itself once its tasks are disposed and its snapshot reader
          // has closed its stores (worker-main.ts). terminate() at once stopped it wherever it
          // was, inside the disk backend's native LMDB calls too (closing a store, or its reader
          // opening one): the addon's throw fails in a terminating thread, which aborts the whole
          // process ("FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw"). Bounded: a
          // worker that does not end (user code holding its event loop) is terminated as before.
          const late = await Promise.race([exitedNow.then(() => false), delay(WORKER_EXIT_WAIT_MS, undefined, { ref: false }).then(() => true)]);
          if (late && !exited) await worker.terminate();
        },
      });
      const peers = peerPorts[w]!;
      const credit = new Int32Array(new SharedArrayBuffer(4));
      this.stdoutCredits[w] = credit;
      const msg: ToExecutor & { peers: Record<number, MessagePort>; stdoutCredit: Int32Array } = {
        type: 'deploy',
        job: { modulePath: s.job.modulePath, args: s.job.args, defaultParallelism: s.job.defaultParallelism, ...(s.job.restoredMaxParallelism !== undefined ? { restoredMaxParallelism: s.job.restoredMaxParallelism } : {}) },
        workerIndex: w, plan: s.plan, fingerprint: s.job.fingerprint, splits: s.splits, attempt: s.attempt, credits: s.credits,
        checkpointing: s.checkpointing, stateBackend: s.stateBackend, stateBackendOptions: s.stateBackendOptions, deadLetterDir: s.deadLetterDir, recordCounters: s.recordCounters, firstCheckpointId: s.firstCheckpointId, restore: s.restore, s3: s.s3, preloadS3: s.preloadS3, peers, stdoutCredit: credit,
      };
      worker.postMessage(msg, Object.values(peers));
    }
  }

  /** Without the job's pool (runJob always gives one): workers booted now, at deploy. */
  private ownPool(): WorkerPool {
    const path = this.spec.job.modulePath;
    if (path === undefined) throw new Error('worker threads need the job module path');
    this.fallbackPool ??= new WorkerPool(path, this.spec.workers);
    return this.fallbackPool;
  }

  /** One MessageChannel per pair of workers: worker i's port to j and j's to i. */
  private peerPorts(): Record<number, MessagePort>[] {
    const n = this.spec.workers;
    const ports: Record<number, MessagePort>[] = Array.from({ length: n }, () => ({}));
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const { port1, port2 } = new MessageChannel();
        ports[i]![j] = port1;
        ports[j]![i] = port2;
      }
    }
    return ports;
  }
}
