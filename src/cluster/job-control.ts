/**
 * What a running job offers to the outside (Flink's dispatcher gateway): its status, its
 * checkpoint statistics, and savepoint / stop / cancel requests. Services such as the REST
 * control API are built on it by the entry point and handed to runJob, so the job manager
 * knows nothing of HTTP or of the local job registry.
 */
import type { CheckpointConfig } from '../checkpoint/config.ts';
import type { CheckpointHistoryEntry } from '../checkpoint/history.ts';
import type { MetricValues, SubtaskMetricsView } from './metric-store.ts';

export interface ExceptionEntry {
  readonly exceptionName: string;
  readonly message: string;
  readonly stacktrace: string;
  readonly timestamp: number;
  /** The failing subtask, e.g. "Map (2/4)", when a task failed. */
  readonly taskName: string | undefined;
  readonly attempt: number;
}

export interface JobMetricsView {
  /** False when records are not counted (metrics.record-counters.enabled): numRecordsIn/Out and their rates are absent. */
  readonly recordCounters: boolean;
  readonly job: MetricValues;
  readonly subtasks: readonly SubtaskMetricsView[];
}

export interface CheckpointStatsView {
  /** Ended checkpoints of the job's whole life, oldest first. */
  readonly history: readonly CheckpointHistoryEntry[];
  /** Checkpoints in flight now. */
  readonly inProgress: readonly CheckpointHistoryEntry[];
  /** Checkpoints ended by outcome, ever: `history` is thinned past its bound, these never go down. */
  readonly ended: { readonly completed: number; readonly failed: number };
  /** The last restore (of this run), and how many restores there were (Flink's counts.restored). */
  readonly restored: { readonly id: number; readonly path: string; readonly at: number; readonly isSavepoint: boolean; readonly count: number } | undefined;
  readonly config: CheckpointConfig;
  readonly stateBackend: string;
}

/** A vertex of the job graph (a chain of operators), for the REST views and the dashboard. */
export interface VertexInfo {
  readonly index: number;
  readonly id: string;
  readonly name: string;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly operators: readonly { readonly id: string; readonly name: string }[];
  /** Edges into this vertex: producing vertex id and Flink's ship strategy name. */
  readonly inputs: readonly { readonly id: string; readonly shipStrategy: string }[];
}

export interface JobControl {
  readonly jobId: string;
  readonly jobName: string;
  /** Epoch ms when the job started. */
  readonly startedAt: number;
  overview(): Record<string, unknown>;
  vertices(): readonly VertexInfo[];
  checkpoints(): Record<string, unknown>;
  /** Checkpoint statistics for Flink's views: the whole-life history plus what is in flight. */
  checkpointStats(): CheckpointStatsView;
  /** The job's metrics (job scope) and every subtask's (task and operator scopes), Flink's names. */
  metrics(): JobMetricsView;
  /** Failures of the job's attempts, oldest first (bounded). */
  exceptions(): readonly ExceptionEntry[];
  triggerCheckpoint(): Promise<number>;
  savepoint(targetDirectory: string | undefined): Promise<string>;
  stop(targetDirectory: string | undefined, drain: boolean): Promise<string>;
  cancel(): void;
  /** Writes to the job's log (RunOptions.log). */
  logLine(line: string): void;
}

/** Served alongside a running job: started before its first attempt, stopped after it ends. */
export interface JobService {
  start(control: JobControl): Promise<void>;
  stop(): Promise<void>;
}
