/**
 * The job manager's own limits: how long it waits, and how often it tries again, before it
 * gives up on a step. Configuration, not constants in the shell: RunOptions.jobManager
 * overrides any of them (the option registry will expose them as settings); every loop and
 * every wait of the job manager is bounded by one of these (or by the restart strategy).
 */
import { ConfigError } from '../checkpoint/config.ts';

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

export const DEFAULT_JOB_MANAGER_CONFIG: JobManagerConfig = Object.freeze({
  deployTimeoutMs: 120_000,
  restoreTimeoutMs: 600_000,
  finalCheckpointMaxAttempts: 10,
  drainSavepointMaxAttempts: 4,
  drainTimeoutMs: 600_000,
  maxCorruptFallbacks: 10,
  maxPendingRequests: 100,
  progressIntervalMs: 1000,
});

const MINIMA: Readonly<Record<keyof JobManagerConfig, number>> = {
  deployTimeoutMs: 1,
  restoreTimeoutMs: 1,
  finalCheckpointMaxAttempts: 1,
  drainSavepointMaxAttempts: 1,
  drainTimeoutMs: 1,
  maxCorruptFallbacks: 0,
  maxPendingRequests: 1,
  progressIntervalMs: 1,
};

/** Applies overrides over the defaults; every value an integer at or above its minimum. */
export function resolveJobManagerConfig(overrides: Partial<JobManagerConfig> = {}, where = 'job manager settings'): JobManagerConfig {
  const out: Record<string, number> = { ...DEFAULT_JOB_MANAGER_CONFIG };
  for (const [k, v] of Object.entries(overrides)) {
    const min = MINIMA[k as keyof JobManagerConfig];
    if (min === undefined) throw new ConfigError(`${where}: unknown setting "${k}"`);
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw new ConfigError(`${where}: ${k} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
    out[k] = v;
  }
  return Object.freeze(out) as unknown as JobManagerConfig;
}
