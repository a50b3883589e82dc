/**
 * The job manager's own limits: how long it waits, and how often it tries again, before it
 * gives up on a step. Configuration, not constants in the shell: they are the option
 * registry's jobmanager.* settings (config file keys; RunOptions.jobManager in code, defaults
 * and bounds from the registry); every loop and every wait of the job manager is bounded by
 * one of these (or by the restart strategy).
 */
import { ConfigError } from '../checkpoint/config.ts';
import { toMillis, type Duration } from '../core/duration.ts';
import { fieldsUnder } from '../core/options/lookup.ts';
import { defaultOf } from '../core/options/option.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { codeProblem } from '../core/options/values.ts';

export interface JobManagerConfig {
  /** Longest a worker may take to load the job module and build its graph. */
  readonly deployTimeoutMs: number;
  /**
   * How long a restoring attempt waits for every task to have loaded its state before it fails
   * (and the restart strategy decides). Generous: 10 M keys load in a few seconds here; the
   * bound exists so that a stalled file system cannot hold a job in INITIALIZING forever.
   */
  readonly restoreTimeoutMs: number;
  /**
   * Tries at the final checkpoint of a bounded job (it commits the last output) before the
   * attempt fails and the restart strategy decides. Each try ends by the checkpoint timeout.
   */
  readonly finalCheckpointMaxAttempts: number;
  /** Tries at the final savepoint of stop --drain before the job finishes without one (as Flink: 1 + 3 retries). */
  readonly drainSavepointMaxAttempts: number;
  /** How long stop --drain waits for the job to drain; then the request fails and the job finishes by itself. */
  readonly drainTimeoutMs: number;
  /** Corrupt checkpoints skipped in a row (each falls back to the one before) before the job fails. */
  readonly maxCorruptFallbacks: number;
  /** Savepoint and checkpoint requests (REST, CLI) in progress at once; more are refused. */
  readonly maxPendingRequests: number;
  /** How often RunOptions.onProgress is called. */
  readonly progressIntervalMs: number;
}

/** The settings as a user writes them (durations as "2 min" or ms), each optional. */
export interface JobManagerSettings {
  readonly deployTimeout?: Duration;
  readonly restoreTimeout?: Duration;
  readonly finalCheckpointMaxAttempts?: number;
  readonly drainSavepointMaxAttempts?: number;
  readonly drainTimeout?: Duration;
  readonly maxCorruptFallbacks?: number;
  readonly maxPendingRequests?: number;
  readonly progressInterval?: Duration;
}

const FIELDS = fieldsUnder('jobManager');

const ms = (d: Duration, what: string): number => toMillis(d, what);

export const DEFAULT_JOB_MANAGER_CONFIG: JobManagerConfig = Object.freeze({
  deployTimeoutMs: ms(defaultOf(OPTIONS.deployTimeout), 'default deploy timeout'),
  restoreTimeoutMs: ms(defaultOf(OPTIONS.restoreTimeout), 'default restore timeout'),
  finalCheckpointMaxAttempts: defaultOf(OPTIONS.finalCheckpointMaxAttempts),
  drainSavepointMaxAttempts: defaultOf(OPTIONS.drainSavepointMaxAttempts),
  drainTimeoutMs: ms(defaultOf(OPTIONS.drainTimeout), 'default drain timeout'),
  maxCorruptFallbacks: defaultOf(OPTIONS.maxCorruptFallbacks),
  maxPendingRequests: defaultOf(OPTIONS.maxPendingRequests),
  progressIntervalMs: ms(defaultOf(OPTIONS.progressInterval), 'default progress interval'),
});

/** Applies settings over the defaults, each checked against its option (bounds, type). */
export function resolveJobManagerConfig(s: JobManagerSettings = {}, where = 'job manager settings'): JobManagerConfig {
  for (const [field, value] of Object.entries(s)) {
    const option = FIELDS.get(field);
    if (option === undefined) throw new ConfigError(`${where}: unknown job manager setting "${field}"`);
    const problem = value === undefined ? undefined : codeProblem(option, value, where);
    if (problem !== undefined) throw new ConfigError(problem);
  }
  const d = DEFAULT_JOB_MANAGER_CONFIG;
  return Object.freeze({
    deployTimeoutMs: s.deployTimeout === undefined ? d.deployTimeoutMs : ms(s.deployTimeout, where),
    restoreTimeoutMs: s.restoreTimeout === undefined ? d.restoreTimeoutMs : ms(s.restoreTimeout, where),
    finalCheckpointMaxAttempts: s.finalCheckpointMaxAttempts ?? d.finalCheckpointMaxAttempts,
    drainSavepointMaxAttempts: s.drainSavepointMaxAttempts ?? d.drainSavepointMaxAttempts,
    drainTimeoutMs: s.drainTimeout === undefined ? d.drainTimeoutMs : ms(s.drainTimeout, where),
    maxCorruptFallbacks: s.maxCorruptFallbacks ?? d.maxCorruptFallbacks,
    maxPendingRequests: s.maxPendingRequests ?? d.maxPendingRequests,
    progressIntervalMs: s.progressInterval === undefined ? d.progressIntervalMs : ms(s.progressInterval, where),
  });
}
