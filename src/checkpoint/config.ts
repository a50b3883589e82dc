/**
 * Checkpoint settings with Flink's semantics and defaults (idiomatic names; the Flink key is
 * given next to each). Validated in one place, whatever the source: job code, CLI flags or a
 * config file.
 */
import { toMillis, type Duration } from '../core/duration.ts';
import { WeirError } from '../core/errors.ts';

export type CheckpointingMode = 'exactly-once' | 'at-least-once';

/**
 * What happens to completed checkpoints when the job ends (Flink's externalized-checkpoint-retention):
 * - 'none' (NO_EXTERNALIZED_CHECKPOINTS, Flink's default): discarded when the job finishes, is cancelled or fails;
 * - 'delete-on-cancel' (DELETE_ON_CANCELLATION): kept when the job fails, discarded on cancel and finish;
 * - 'retain-on-cancel' (RETAIN_ON_CANCELLATION): kept on cancel and failure, discarded on finish.
 * A killed process discards nothing.
 */
export type CheckpointRetention = 'none' | 'delete-on-cancel' | 'retain-on-cancel';

export interface CheckpointConfig {
  /** execution.checkpointing.interval; undefined = checkpointing off. Minimum 10 ms. */
  readonly intervalMs: number | undefined;
  /** execution.checkpointing.mode, default exactly-once. */
  readonly mode: CheckpointingMode;
  /** execution.checkpointing.timeout, default 10 min; then CHECKPOINT_EXPIRED. */
  readonly timeoutMs: number;
  /** execution.checkpointing.min-pause, default 0: from one checkpoint's end to the next's start. */
  readonly minPauseMs: number;
  /** execution.checkpointing.max-concurrent-checkpoints, default 1. */
  readonly maxConcurrent: number;
  /** execution.checkpointing.tolerable-failed-checkpoints, default 0 (consecutive, counted reasons only). */
  readonly tolerableFailures: number;
  /** execution.checkpointing.externalized-checkpoint-retention. */
  readonly retention: CheckpointRetention;
  /** execution.checkpointing.num-retained, default 1. */
  readonly numRetained: number;
  /** execution.checkpointing.dir. */
  readonly dir: string | undefined;
  /** execution.checkpointing.savepoint-dir: default target of savepoints. */
  readonly savepointDir: string | undefined;
}

export const DEFAULT_CHECKPOINT_CONFIG: CheckpointConfig = Object.freeze({
  intervalMs: undefined,
  mode: 'exactly-once',
  timeoutMs: 10 * 60_000,
  minPauseMs: 0,
  maxConcurrent: 1,
  tolerableFailures: 0,
  retention: 'none',
  numRetained: 1,
  dir: undefined,
  savepointDir: undefined,
});

/** Settings as a user writes them: durations as "1s" or ms, everything optional. */
export interface CheckpointSettings {
  readonly interval?: Duration;
  readonly mode?: CheckpointingMode;
  readonly timeout?: Duration;
  readonly minPause?: Duration;
  readonly maxConcurrent?: number;
  readonly tolerableFailures?: number;
  readonly retention?: CheckpointRetention;
  readonly numRetained?: number;
  readonly dir?: string;
  readonly savepointDir?: string;
}

export class ConfigError extends WeirError {
  constructor(message: string) {
    super('CONFIG', message);
  }
}

function int(v: unknown, what: string, min: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new ConfigError(`${what} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return v;
}

function duration(v: Duration, what: string): number {
  try {
    return toMillis(v, what);
  } catch (e) {
    throw new ConfigError(e instanceof Error ? e.message : String(e));
  }
}

/** Applies `s` over `base`; `where` names the source in error messages (e.g. "--checkpoint-interval", "weir.json"). */
export function applyCheckpointSettings(base: CheckpointConfig, s: CheckpointSettings, where: string): CheckpointConfig {
  const out: { -readonly [K in keyof CheckpointConfig]: CheckpointConfig[K] } = { ...base };
  const known = new Set(['interval', 'mode', 'timeout', 'minPause', 'maxConcurrent', 'tolerableFailures', 'retention', 'numRetained', 'dir', 'savepointDir']);
  for (const k of Object.keys(s)) if (!known.has(k)) throw new ConfigError(`${where}: unknown checkpoint setting "${k}"`);
  if (s.interval !== undefined) {
    const ms = duration(s.interval, `${where}: checkpoint interval`);
    if (ms < 10) throw new ConfigError(`${where}: checkpoint interval must be at least 10 ms, got ${ms} ms`);
    out.intervalMs = ms;
  }
  if (s.mode !== undefined) {
    if (s.mode !== 'exactly-once' && s.mode !== 'at-least-once') throw new ConfigError(`${where}: checkpoint mode must be "exactly-once" or "at-least-once", got ${JSON.stringify(s.mode)}`);
    out.mode = s.mode;
  }
  if (s.timeout !== undefined) {
    const ms = duration(s.timeout, `${where}: checkpoint timeout`);
    if (ms < 10) throw new ConfigError(`${where}: checkpoint timeout must be at least 10 ms, got ${ms} ms`);
    out.timeoutMs = ms;
  }
  if (s.minPause !== undefined) out.minPauseMs = duration(s.minPause, `${where}: checkpoint min pause`);
  if (s.maxConcurrent !== undefined) out.maxConcurrent = int(s.maxConcurrent, `${where}: max concurrent checkpoints`, 1);
  if (s.tolerableFailures !== undefined) out.tolerableFailures = int(s.tolerableFailures, `${where}: tolerable failed checkpoints`, 0);
  if (s.numRetained !== undefined) out.numRetained = int(s.numRetained, `${where}: number of retained checkpoints`, 1);
  if (s.retention !== undefined) {
    if (!['none', 'delete-on-cancel', 'retain-on-cancel'].includes(s.retention)) {
      throw new ConfigError(`${where}: checkpoint retention must be "none", "delete-on-cancel" or "retain-on-cancel", got ${JSON.stringify(s.retention)}`);
    }
    out.retention = s.retention;
  }
  if (s.dir !== undefined) {
    if (typeof s.dir !== 'string' || s.dir.trim() === '') throw new ConfigError(`${where}: checkpoint directory must be a non-empty path`);
    out.dir = s.dir;
  }
  if (s.savepointDir !== undefined) {
    if (typeof s.savepointDir !== 'string' || s.savepointDir.trim() === '') throw new ConfigError(`${where}: savepoint directory must be a non-empty path`);
    out.savepointDir = s.savepointDir;
  }
  return out;
}

/** Whether completed checkpoints are discarded when the job ends in `status` (Flink's CheckpointProperties). */
export function discardOnJobEnd(retention: CheckpointRetention, status: 'FINISHED' | 'CANCELED' | 'FAILED'): boolean {
  if (status === 'FINISHED') return true;
  if (retention === 'none') return true;
  if (retention === 'delete-on-cancel') return status === 'CANCELED';
  return false;
}
