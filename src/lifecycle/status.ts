/**
 * What the reconciler knows and remembers: the desired application (spec plus the user's
 * imperative requests), the observation of the deployment target, and the application's status.
 * The status is the write-ahead log: an `operation` is written into it before the action that
 * carries it out, so a manager that dies between the two finds the intent on restart and carries
 * it out again (actions are idempotent: keyed by deployment and savepoint ids).
 */
import type { AppSpec } from './spec.ts';

export type Lifecycle = 'CREATED' | 'DEPLOYED' | 'STABLE' | 'UPGRADING' | 'SUSPENDED' | 'ROLLING_BACK' | 'ROLLED_BACK' | 'FAILED' | 'FINISHED' | 'DELETING' | 'DELETED';

/** The desired application: the user's spec, its generation (bumped by every apply), and requests. */
export interface Desired {
  readonly spec: AppSpec;
  readonly generation: number;
  /** `weir apps delete [--savepoint]`. */
  readonly deletion?: { readonly savepoint: boolean };
  /** `weir apps rollback`: the generation it was asked for (a newer spec cancels it). */
  readonly rollbackGeneration?: number;
}

export type JobState = 'STARTING' | 'RUNNING' | 'RESTARTING' | 'FINISHED' | 'FAILED' | 'CANCELED' | 'GONE';
export const TERMINAL: ReadonlySet<JobState> = new Set<JobState>(['FINISHED', 'FAILED', 'CANCELED', 'GONE']);

export interface CheckpointRef {
  readonly path: string;
  /** Epoch ms. */
  readonly completedAt: number;
}

/** One deployment as the target sees it. */
export interface ObservedDeployment {
  readonly state: JobState;
  /** Restarts of the job inside its process (its attempt number). */
  readonly restarts: number;
  readonly lastCheckpoint?: CheckpointRef;
  readonly error?: string;
}

export interface OperationOutcome {
  readonly state: 'in-progress' | 'completed' | 'failed';
  /** A completed savepoint's path. */
  readonly path?: string;
  readonly error?: string;
}

export interface Observation {
  /** Deployments the target knows of (running or ended), by id. */
  readonly deployments: Readonly<Record<string, ObservedDeployment>>;
  /** Outcomes of savepoint, stop and dispose actions, by operation key (see opKey). */
  readonly operations: Readonly<Record<string, OperationOutcome>>;
  /**
   * The savepoint found in the folder of each stop-with-savepoint record asked about (see
   * stopSavepointsToProbe), by record id: a fact on disk, so it outlives the target's memory of
   * outcomes and a stop the reconciler gave up on that completed later.
   */
  readonly savepoints?: Readonly<Record<string, CheckpointRef>>;
}

export type SavepointTrigger = 'MANUAL' | 'PERIODIC' | 'UPGRADE';
export type SavepointState = 'PENDING' | 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'ABANDONED';

export interface SavepointRecord {
  /** sp-<n>; the target puts it in a folder of this name. */
  readonly id: string;
  readonly trigger: SavepointTrigger;
  state: SavepointState;
  readonly deploymentId: string;
  readonly createdAt: number;
  path?: string;
  error?: string;
  failures: number;
  completedAt?: number;
  /** A failed trigger is retried at this time. */
  retryAt?: number;
  readonly nonce?: number | string;
}

export interface Deployment {
  readonly id: string;
  readonly spec: AppSpec;
  /** The snapshot it was started from. */
  readonly from?: string;
  readonly startedAt: number;
  /** A rollback deployment (of the last stable spec). */
  readonly rollback: boolean;
  /** Seen running (at least once). */
  runningSince?: number;
  stable: boolean;
  lastCheckpoint?: CheckpointRef;
  restarts: number;
  /** When restarts were seen, within the health window. */
  restartTimes: number[];
}

export type Purpose = 'deploy' | 'upgrade' | 'suspend' | 'delete' | 'rollback' | 'restart';

export type Operation =
  | { readonly kind: 'start'; readonly deploymentId: string; readonly purpose: Purpose; readonly issuedAt: number }
  /** Stop with a savepoint (savepointId), or cancel; keepState: a cancelled job resumes from its latest checkpoint. */
  | { readonly kind: 'stop'; readonly deploymentId: string; readonly savepointId?: string; readonly keepState: boolean; readonly purpose: Purpose; readonly issuedAt: number }
  | { readonly kind: 'savepoint'; readonly deploymentId: string; readonly savepointId: string; readonly attempt: number; readonly issuedAt: number }
  | { readonly kind: 'dispose'; readonly savepointId: string; readonly path: string; readonly issuedAt: number };

export interface LifecycleEvent {
  readonly at: number;
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

export interface AppStatus {
  lifecycle: Lifecycle;
  /** The generation of the desired spec last acted on. */
  observedGeneration: number;
  lastReconciledSpec?: AppSpec;
  lastStableSpec?: AppSpec;
  deployment?: Deployment;
  /** The write-ahead intent: set before its action, cleared once observed done. */
  operation?: Operation;
  /** A deployment of this application (since its creation) was started: initialSavepointPath is not used again. */
  deployedOnce?: true;
  /** What a stopped application resumes from (an upgrade savepoint, the last checkpoint). */
  restorePath?: string;
  /** A rollback in progress or done, for this generation of the spec. */
  rollback?: { readonly generation: number };
  /** An upgrade waiting for a retry (its savepoint failed): not before this time. */
  upgradeRetryAt?: number;
  upgradeFailures: number;
  /** A job that ended on its own: why, and the generation it ended at (a newer one, or resume, redeploys). */
  ended?: { readonly state: 'FAILED' | 'FINISHED'; readonly reason: string; readonly generation: number };
  savepoints: SavepointRecord[];
  lastNonce?: number | string;
  lastPeriodicAt?: number;
  nextDeployment: number;
  nextSavepoint: number;
  events: LifecycleEvent[];
}

/** Events kept in the status (the newest). */
export const MAX_EVENTS = 200;
/** Failed or abandoned savepoint records kept (the newest). */
export const MAX_FAILED_SAVEPOINT_RECORDS = 20;

export function initialStatus(): AppStatus {
  return { lifecycle: 'CREATED', observedGeneration: 0, savepoints: [], nextDeployment: 1, nextSavepoint: 1, upgradeFailures: 0, events: [] };
}

/** The key of an action's outcome in Observation.operations. */
export function opKey(op: Operation): string {
  switch (op.kind) {
    case 'start':
      return `start:${op.deploymentId}`;
    case 'stop':
      return `stop:${op.deploymentId}:${op.savepointId ?? 'cancel'}`;
    case 'savepoint':
      return `savepoint:${op.savepointId}:${op.attempt}`;
    case 'dispose':
      return `dispose:${op.savepointId}`;
  }
}

/** Stop-with-savepoint records probed per pass at most (the newest); older ones were probed before. */
export const MAX_PROBED_STOP_SAVEPOINTS = 5;

/**
 * The stop-with-savepoint records of the current deployment without a completed savepoint: the
 * target looks for a savepoint in their folders (Observation.savepoints). A stop given up on
 * (timed out, a manager restarted past its timeout) may still have completed and ended the job.
 */
export function stopSavepointsToProbe(s: AppStatus): string[] {
  const d = s.deployment?.id;
  if (d === undefined) return [];
  return s.savepoints.filter((r) => r.trigger === 'UPGRADE' && r.deploymentId === d && r.state !== 'COMPLETED').slice(-MAX_PROBED_STOP_SAVEPOINTS).map((r) => r.id);
}
