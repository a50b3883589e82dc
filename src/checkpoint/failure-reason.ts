/**
 * Why a checkpoint failed: Flink's CheckpointFailureReason vocabulary. Only the reasons
 * Flink's CheckpointFailureManager counts toward the tolerable-failure limit can fail the
 * job; the others (subsumed, declined because a task is finishing, ...) are normal events.
 */
export const CheckpointFailureReason = {
  // Pre-flight
  PERIODIC_SCHEDULER_SHUTDOWN: 'PERIODIC_SCHEDULER_SHUTDOWN',
  TOO_MANY_CHECKPOINT_REQUESTS: 'TOO_MANY_CHECKPOINT_REQUESTS',
  MINIMUM_TIME_BETWEEN_CHECKPOINTS: 'MINIMUM_TIME_BETWEEN_CHECKPOINTS',
  NOT_ALL_REQUIRED_TASKS_RUNNING: 'NOT_ALL_REQUIRED_TASKS_RUNNING',
  IO_EXCEPTION: 'IO_EXCEPTION',
  // In flight
  CHECKPOINT_ASYNC_EXCEPTION: 'CHECKPOINT_ASYNC_EXCEPTION',
  CHECKPOINT_EXPIRED: 'CHECKPOINT_EXPIRED',
  CHECKPOINT_SUBSUMED: 'CHECKPOINT_SUBSUMED',
  CHECKPOINT_DECLINED: 'CHECKPOINT_DECLINED',
  CHECKPOINT_DECLINED_TASK_NOT_READY: 'CHECKPOINT_DECLINED_TASK_NOT_READY',
  CHECKPOINT_DECLINED_TASK_CLOSING: 'CHECKPOINT_DECLINED_TASK_CLOSING',
  CHECKPOINT_DECLINED_SUBSUMED: 'CHECKPOINT_DECLINED_SUBSUMED',
  CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER: 'CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER',
  CHECKPOINT_DECLINED_INPUT_END_OF_STREAM: 'CHECKPOINT_DECLINED_INPUT_END_OF_STREAM',
  CHECKPOINT_COORDINATOR_SHUTDOWN: 'CHECKPOINT_COORDINATOR_SHUTDOWN',
  CHECKPOINT_COORDINATOR_SUSPEND: 'CHECKPOINT_COORDINATOR_SUSPEND',
  JOB_FAILOVER_REGION: 'JOB_FAILOVER_REGION',
  TASK_FAILURE: 'TASK_FAILURE',
  TASK_CHECKPOINT_FAILURE: 'TASK_CHECKPOINT_FAILURE',
  UNKNOWN_TASK_CHECKPOINT_NOTIFICATION_FAILURE: 'UNKNOWN_TASK_CHECKPOINT_NOTIFICATION_FAILURE',
  FINALIZE_CHECKPOINT_FAILURE: 'FINALIZE_CHECKPOINT_FAILURE',
  TRIGGER_CHECKPOINT_FAILURE: 'TRIGGER_CHECKPOINT_FAILURE',
} as const;

export type CheckpointFailureReason = (typeof CheckpointFailureReason)[keyof typeof CheckpointFailureReason];

/** The reasons CheckpointFailureManager#checkFailureCounter counts. */
const COUNTED: ReadonlySet<CheckpointFailureReason> = new Set<CheckpointFailureReason>([
  CheckpointFailureReason.IO_EXCEPTION,
  CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION,
  CheckpointFailureReason.CHECKPOINT_EXPIRED,
  CheckpointFailureReason.CHECKPOINT_DECLINED,
  CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE,
]);

export function countsTowardTolerableFailures(r: CheckpointFailureReason): boolean {
  return COUNTED.has(r);
}

const MESSAGES: Partial<Record<CheckpointFailureReason, string>> = {
  CHECKPOINT_EXPIRED: 'Checkpoint expired before completing',
  CHECKPOINT_SUBSUMED: 'Checkpoint has been subsumed',
  CHECKPOINT_DECLINED: 'Checkpoint was declined',
  CHECKPOINT_DECLINED_SUBSUMED: 'Checkpoint was declined (a newer barrier arrived)',
  CHECKPOINT_DECLINED_TASK_NOT_READY: 'Checkpoint was declined (tasks not ready)',
  CHECKPOINT_DECLINED_TASK_CLOSING: 'Checkpoint was declined (task is closing)',
  CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER: 'Checkpoint was canceled by a cancellation barrier',
  CHECKPOINT_DECLINED_INPUT_END_OF_STREAM: 'Checkpoint was declined because one input stream is finished',
  CHECKPOINT_ASYNC_EXCEPTION: 'Asynchronous task checkpoint failed',
  TASK_FAILURE: 'Task has failed',
  TASK_CHECKPOINT_FAILURE: 'Task local checkpoint failure',
  FINALIZE_CHECKPOINT_FAILURE: 'Failure to finalize checkpoint',
  IO_EXCEPTION: 'An Exception occurred while triggering the checkpoint (I/O)',
  NOT_ALL_REQUIRED_TASKS_RUNNING: 'Not all required tasks are currently running',
  MINIMUM_TIME_BETWEEN_CHECKPOINTS: 'The minimum time between checkpoints is still pending',
  TOO_MANY_CHECKPOINT_REQUESTS: 'The maximum number of queued checkpoint requests exceeded',
  CHECKPOINT_COORDINATOR_SHUTDOWN: 'CheckpointCoordinator shutdown',
  CHECKPOINT_COORDINATOR_SUSPEND: 'Checkpoint Coordinator is suspending',
  TRIGGER_CHECKPOINT_FAILURE: 'Trigger checkpoint failure',
};

export function describeReason(r: CheckpointFailureReason): string {
  return MESSAGES[r] ?? r;
}
