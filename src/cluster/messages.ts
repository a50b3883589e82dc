/**
 * Messages between the job manager and task executors. They are structured-clone safe, so
 * the same protocol runs over a worker thread's port or, in one thread, by direct call.
 */
import type { S3Config } from '../checkpoint/s3/settings.ts';
import type { SourceSplit } from '../core/source.ts';
import type { CheckpointingMode } from '../checkpoint/config.ts';
import type { IncrementalSettings } from '../state/backend.ts';
import type { UnalignedSettings } from '../runtime/checkpointing/barrier-decision.ts';
import type { CheckpointFailureReason } from '../checkpoint/failure-reason.ts';
import type { TaskAck, TaskRestore } from '../core/checkpoint-format.ts';
import type { ExecutionPlan } from '../graph/execution-plan.ts';
import type { TriggerRequest } from '../runtime/checkpointing/subtask-checkpointer.ts';
import type { TaskId } from '../core/task-id.ts';
import type { StateBackendOptions } from '../state/backends.ts';
import type { TaskMetricsSample } from '../runtime/task-metrics.ts';
import { errorCode, isUserError, type ErrorCode } from '../core/errors.ts';

export interface JobSpec {
  /** Absolute path of the job module; undefined when the job is given in-process. */
  readonly modulePath: string | undefined;
  readonly args: readonly string[];
  readonly defaultParallelism: number;
  /** Keyed operators' max parallelism adopted from the restored snapshot (EnvironmentSettings). */
  readonly restoredMaxParallelism?: Readonly<Record<string, number>>;
}

export interface DeployMessage {
  readonly type: 'deploy';
  readonly job: JobSpec;
  readonly workerIndex: number;
  readonly plan: ExecutionPlan;
  readonly fingerprint: string;
  /** Source splits per "vertex:subtask". */
  readonly splits: Readonly<Record<TaskId, readonly SourceSplit[]>>;
  readonly attempt: number;
  /** Buffer credits of every channel, when the job sets them; undefined: each channel's default (channelCredits). */
  readonly credits: number | undefined;
  /** Snapshot settings: mode (alignment), and whether periodic checkpoints are on. */
  readonly checkpointing: { readonly mode: CheckpointingMode; readonly periodic: boolean; readonly inlineThresholdBytes?: number; readonly incremental?: IncrementalSettings; readonly unaligned?: UnalignedSettings };
  /** The keyed state backend's name (state.backend.type). */
  readonly stateBackend: string;
  /** Its settings (state.backend.<name>.*). */
  readonly stateBackendOptions: StateBackendOptions;
  /** Where sources write their dead letters (undefined: to the log). */
  readonly deadLetterDir: string | undefined;
  /** Records are counted per task and operator (metrics.record-counters.enabled). */
  readonly recordCounters: boolean;
  /**
   * The id this attempt's first checkpoint takes: above the restored snapshot's and above what
   * any sink committed (an earlier run's output, --allow-duplicate-output): a sink skips ids it
   * committed, so reusing one dropped the new output. Sinks commit at the end after it too.
   */
  readonly firstCheckpointId?: number;
  /** State to start from, per "vertex:subtask". */
  readonly restore: Readonly<Record<TaskId, TaskRestore>>;
  /** S3 settings: the worker resolves s3:// locations with its own client. */
  readonly s3: S3Config;
  /** The job checkpoints to S3: load the SDK while the job loads. */
  readonly preloadS3?: boolean;
}

export type ToExecutor =
  | DeployMessage
  /**
   * Sent by the worker pool to every worker it boots: import the job module now (see
   * worker-pool.ts); `moduleUrl`: the job bundled as plain JavaScript, imported instead of the file.
   */
  | { readonly type: 'preload'; readonly modulePath: string; readonly moduleUrl?: string | undefined }
  | { readonly type: 'start' }
  /** Every task of a restoring attempt has its state: open and run. */
  | { readonly type: 'proceed' }
  | { readonly type: 'cancel' }
  | { readonly type: 'trigger'; readonly tasks: readonly TaskId[]; readonly req: TriggerRequest }
  | { readonly type: 'notify-complete'; readonly id: number }
  | { readonly type: 'notify-abort'; readonly id: number }
  | { readonly type: 'finish-tasks' }
  /** Stop-with-savepoint: sources end (drain: as if their input ended; else at once, without finishing). */
  | { readonly type: 'end-sources'; readonly drain: boolean }
  /** A stop-with-savepoint failed: suspended sources read on. */
  | { readonly type: 'resume-sources' }
  /** A split enumerator assigned splits to a source task (ordered with 'trigger' on the same port). */
  | { readonly type: 'add-splits'; readonly task: TaskId; readonly splits: readonly SourceSplit[] }
  /** A split enumerator's event to one source task (SplitEnumeratorContext.sendEventToReader). */
  | { readonly type: 'reader-event'; readonly task: TaskId; readonly event: unknown };

export interface SerializedError {
  readonly name: string;
  /** The WeirError code, if it is one (what callers branch on). */
  readonly code: ErrorCode | undefined;
  readonly message: string;
  readonly stack: string | undefined;
  /** True when the error is the user's (a function threw, bad job definition, bad record). */
  readonly user: boolean;
}

/** A subtask's cumulative counters, sent in one message per worker about once a second. */
export type TaskMetrics = TaskMetricsSample;

export type FromExecutor =
  | { readonly type: 'deployed'; readonly workerIndex: number }
  /** A booted worker imported the job module (ok) or failed to (the pool drops it). */
  | { readonly type: 'preloaded'; readonly ok: boolean }
  | { readonly type: 'executor-failed'; readonly workerIndex: number; readonly error: SerializedError }
  | { readonly type: 'task-finished'; readonly vertex: number; readonly subtask: number; readonly metrics: TaskMetrics }
  | { readonly type: 'task-failed'; readonly vertex: number; readonly subtask: number; readonly error: SerializedError }
  | { readonly type: 'collect'; readonly sink: string; readonly subtask: number; readonly values: unknown[] }
  | { readonly type: 'metrics'; readonly workerIndex: number; readonly tasks: readonly TaskMetrics[]; readonly heapUsed: number }
  | { readonly type: 'stdout'; readonly text: string; readonly worker?: number; readonly kib?: number }
  /** A line for the job's log (what an operator found worth reporting, e.g. a sink's lost output). */
  | { readonly type: 'log'; readonly line: string }
  | { readonly type: 'task-restored'; readonly task: TaskId }
  | { readonly type: 'task-running'; readonly task: TaskId }
  | { readonly type: 'task-waiting'; readonly task: TaskId }
  | { readonly type: 'ack'; readonly id: number; readonly ack: TaskAck }
  | { readonly type: 'decline'; readonly id: number; readonly task: TaskId; readonly reason: CheckpointFailureReason; readonly message: string }
  /** A source reader's message to its split enumerator. */
  | { readonly type: 'source-event'; readonly operator: string; readonly subtask: number; readonly event: unknown };

export function serializeError(e: unknown): SerializedError {
  if (e instanceof Error) return { name: e.name, code: errorCode(e), message: e.message, stack: e.stack, user: isUserError(e) };
  return { name: 'Error', code: undefined, message: String(e), stack: undefined, user: true };
}
