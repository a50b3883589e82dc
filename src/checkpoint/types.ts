/** What tasks report when they acknowledge a checkpoint, and what the metadata records. */
import type { KeyGroupRange } from '../state/key-groups.ts';

/** "vertex:subtask", unique within one deployment of a job. */
export type TaskId = string;

export type CheckpointType = 'checkpoint' | 'savepoint';

/** Where one operator subtask's state went. */
export interface OperatorStateHandle {
  readonly operatorId: string;
  /** Keyed state and timers: a state file, relative to the job directory. */
  readonly file?: string;
  readonly fileSize?: number;
  readonly keyGroupRange?: KeyGroupRange;
  /** Small non-keyed state (operator lists, broadcast state, source splits, sink committables), msgpack, base64. */
  readonly inline?: string;
  /** Bytes of state described by this handle. */
  readonly stateSize: number;
}

export interface SubtaskCheckpointStats {
  /** Synchronous phase (records blocked), ms. */
  readonly syncMs: number;
  /** Asynchronous phase (records flowing), ms. */
  readonly asyncMs: number;
  /** First to last barrier of the checkpoint at this subtask, ms (0 for sources). */
  readonly alignmentMs: number;
  /** Barrier creation to its first arrival at this subtask, ms. */
  readonly startDelayMs: number;
  readonly stateSize: number;
}

export interface TaskAck {
  readonly task: TaskId;
  readonly operators: readonly OperatorStateHandle[];
  readonly stats: SubtaskCheckpointStats;
}
