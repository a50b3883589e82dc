/**
 * Messages between the job manager and task executors. They are structured-clone safe, so
 * the same protocol runs over a worker thread's port or, in one thread, by direct call.
 */
import type { SourceSplit } from '../api/source.ts';
import type { ExecutionPlan } from '../graph/execution-plan.ts';

export interface JobSpec {
  /** Absolute path of the job module; undefined when the job is given in-process. */
  readonly modulePath: string | undefined;
  readonly args: readonly string[];
  readonly defaultParallelism: number;
}

export interface DeployMessage {
  readonly type: 'deploy';
  readonly job: JobSpec;
  readonly workerIndex: number;
  readonly plan: ExecutionPlan;
  readonly fingerprint: string;
  /** Source splits per "vertex:subtask". */
  readonly splits: Readonly<Record<string, readonly SourceSplit[]>>;
  readonly attempt: number;
  readonly credits: number;
}

export type ToExecutor =
  | DeployMessage
  | { readonly type: 'start' }
  | { readonly type: 'cancel' };

export interface SerializedError {
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  /** True when the error is the user's (a function threw, bad job definition, bad record). */
  readonly user: boolean;
}

export interface TaskMetrics {
  readonly vertex: number;
  readonly subtask: number;
  readonly recordsIn: readonly number[];
  readonly state: string;
}

export type FromExecutor =
  | { readonly type: 'deployed'; readonly workerIndex: number }
  | { readonly type: 'executor-failed'; readonly workerIndex: number; readonly error: SerializedError }
  | { readonly type: 'task-finished'; readonly vertex: number; readonly subtask: number; readonly metrics: TaskMetrics }
  | { readonly type: 'task-failed'; readonly vertex: number; readonly subtask: number; readonly error: SerializedError }
  | { readonly type: 'collect'; readonly sink: string; readonly subtask: number; readonly values: unknown[] }
  | { readonly type: 'metrics'; readonly workerIndex: number; readonly tasks: readonly TaskMetrics[]; readonly heapUsed: number }
  | { readonly type: 'stdout'; readonly text: string };

export function serializeError(e: unknown): SerializedError {
  if (e instanceof Error) {
    const user = ['UserCodeError', 'JobDefinitionError', 'MalformedRecordError'].includes(e.name);
    return { name: e.name, message: e.message, stack: e.stack, user };
  }
  return { name: 'Error', message: String(e), stack: undefined, user: true };
}
