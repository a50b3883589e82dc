/**
 * Checkpoint settings with Flink's semantics and defaults (idiomatic names; the Flink key is
 * given next to each). Their bounds and defaults are the option registry's, so job code, CLI
 * flags and a config file are held to the same rules.
 */
import { toMillis, type Duration } from '../core/duration.ts';
import { WeirError } from '../core/errors.ts';
import { fieldsUnder } from '../core/options/lookup.ts';
import { defaultOf } from '../core/options/option.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { codeProblem } from '../core/options/values.ts';

export type CheckpointingMode = 'exactly-once' | 'at-least-once';

/**
 * What happens to completed checkpoints when the job ends (Flink's externalized-checkpoint-retention):
 * - 'none' (NO_EXTERNALIZED_CHECKPOINTS, Flink's default): discarded when the job finishes, is cancelled or fails;
 * - 'delete-on-cancel' (DELETE_ON_CANCELLATION): kept when the job fails, discarded on cancel and finish;
 * - 'retain-on-cancel' (RETAIN_ON_CANCELLATION, weir's default): kept on cancel and failure, discarded on finish.
 * A killed process discards nothing. weir's default differs from Flink's on purpose: `weir run`
 * is stopped with Ctrl-C / SIGTERM (a cancel), and the checkpoints are what `--from latest`
 * resumes from; deleting them on Ctrl-C lost the very state the user meant to keep (issue 15).
 * A cluster's Flink default suits a job managed by an operator, not a command a user interrupts.
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
  /**
   * state.storage.fs.memory-threshold: keyed state files up to this size go inline into the
   * metadata; undefined: the storage's default (memoryThresholdFor).
   */
  readonly memoryThresholdBytes: number | undefined;
  /** execution.checkpointing.incremental, default off: checkpoints write changed keyed state only. */
  readonly incremental: boolean;
  /** state.backend.incremental.max-deltas: deltas after a base before a full base again. */
  readonly incrementalMaxDeltas: number;
  /** state.backend.incremental.max-delta-ratio: a chain's delta bytes may reach this times its base's. */
  readonly incrementalMaxDeltaRatio: number;
  /** execution.checkpointing.unaligned.enabled, default false (exactly-once only). */
  readonly unaligned: boolean;
  /**
   * execution.checkpointing.aligned-checkpoint-timeout, default 0: with unaligned checkpoints, a
   * checkpoint starts aligned and a subtask switches to unaligned once this long has passed since
   * the trigger; 0 is unaligned from the start.
   */
  readonly alignedCheckpointTimeoutMs: number;
}

export const DEFAULT_CHECKPOINT_CONFIG: CheckpointConfig = Object.freeze({
  intervalMs: undefined,
  mode: defaultOf(OPTIONS.checkpointMode),
  timeoutMs: toMillis(defaultOf(OPTIONS.checkpointTimeout), 'default checkpoint timeout'),
  minPauseMs: toMillis(defaultOf(OPTIONS.checkpointMinPause), 'default checkpoint min pause'),
  maxConcurrent: defaultOf(OPTIONS.checkpointMaxConcurrent),
  tolerableFailures: defaultOf(OPTIONS.checkpointTolerableFailures),
  retention: defaultOf(OPTIONS.checkpointRetention),
  numRetained: defaultOf(OPTIONS.checkpointsRetained),
  dir: undefined,
  savepointDir: undefined,
  memoryThresholdBytes: undefined,
  incremental: defaultOf(OPTIONS.incrementalCheckpoints),
  incrementalMaxDeltas: defaultOf(OPTIONS.incrementalMaxDeltas),
  incrementalMaxDeltaRatio: defaultOf(OPTIONS.incrementalMaxDeltaRatio),
  unaligned: defaultOf(OPTIONS.unalignedCheckpoints),
  alignedCheckpointTimeoutMs: toMillis(defaultOf(OPTIONS.alignedCheckpointTimeout), 'default aligned checkpoint timeout'),
});

/** The registry's options under checkpoint.*, by field name. */
const FIELDS = fieldsUnder('checkpoint');

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
  /** Bytes; see CheckpointConfig.memoryThresholdBytes. */
  readonly memoryThreshold?: number;
  readonly incremental?: boolean;
  readonly incrementalMaxDeltas?: number;
  readonly incrementalMaxDeltaRatio?: number;
  readonly unaligned?: boolean;
  readonly alignedCheckpointTimeout?: Duration;
}

export class ConfigError extends WeirError {
  constructor(message: string) {
    super('CONFIG', message);
  }
}

/** Applies `s` over `base`; `where` names the source in error messages (e.g. "job code (enableCheckpointing)"). */
export function applyCheckpointSettings(base: CheckpointConfig, s: CheckpointSettings, where: string): CheckpointConfig {
  for (const [field, value] of Object.entries(s)) {
    const option = FIELDS.get(field);
    if (option === undefined) throw new ConfigError(`${where}: unknown checkpoint setting "${field}"`);
    const problem = value === undefined ? undefined : codeProblem(option, value, where);
    if (problem !== undefined) throw new ConfigError(problem);
  }
  const out: { -readonly [K in keyof CheckpointConfig]: CheckpointConfig[K] } = { ...base };
  if (s.interval !== undefined) out.intervalMs = toMillis(s.interval, where);
  if (s.mode !== undefined) out.mode = s.mode;
  if (s.timeout !== undefined) out.timeoutMs = toMillis(s.timeout, where);
  if (s.minPause !== undefined) out.minPauseMs = toMillis(s.minPause, where);
  if (s.maxConcurrent !== undefined) out.maxConcurrent = s.maxConcurrent;
  if (s.tolerableFailures !== undefined) out.tolerableFailures = s.tolerableFailures;
  if (s.numRetained !== undefined) out.numRetained = s.numRetained;
  if (s.retention !== undefined) out.retention = s.retention;
  if (s.dir !== undefined) out.dir = s.dir;
  if (s.savepointDir !== undefined) out.savepointDir = s.savepointDir;
  if (s.memoryThreshold !== undefined) out.memoryThresholdBytes = s.memoryThreshold;
  if (s.incremental !== undefined) out.incremental = s.incremental;
  if (s.incrementalMaxDeltas !== undefined) out.incrementalMaxDeltas = s.incrementalMaxDeltas;
  if (s.incrementalMaxDeltaRatio !== undefined) out.incrementalMaxDeltaRatio = s.incrementalMaxDeltaRatio;
  if (s.unaligned !== undefined) out.unaligned = s.unaligned;
  if (s.alignedCheckpointTimeout !== undefined) out.alignedCheckpointTimeoutMs = toMillis(s.alignedCheckpointTimeout, where);
  const problem = unalignedProblem(out);
  if (problem !== undefined) throw new ConfigError(`${where}: ${problem}`);
  return out;
}

/**
 * Why a configuration cannot take unaligned checkpoints, or undefined. As in Flink: in-flight data
 * is only worth storing when records are processed exactly once, and channel state is recorded
 * for one checkpoint at a time.
 */
export function unalignedProblem(c: CheckpointConfig): string | undefined {
  if (!c.unaligned) return undefined;
  if (c.mode !== 'exactly-once') return 'unaligned checkpoints (execution.checkpointing.unaligned.enabled) need checkpoint mode exactly-once, not at-least-once';
  if (c.maxConcurrent > 1) return `unaligned checkpoints (execution.checkpointing.unaligned.enabled) need max-concurrent-checkpoints 1, not ${c.maxConcurrent}`;
  return undefined;
}

/** Whether completed checkpoints are discarded when the job ends in `status` (Flink's CheckpointProperties). */
export function discardOnJobEnd(retention: CheckpointRetention, status: 'FINISHED' | 'CANCELED' | 'FAILED'): boolean {
  if (status === 'FINISHED') return true;
  if (retention === 'none') return true;
  if (retention === 'delete-on-cancel') return status === 'CANCELED';
  return false;
}

/** The chain bounds tasks get when incremental checkpoints are on; undefined when off. */
export function incrementalSettingsOf(config: CheckpointConfig): { readonly maxDeltas: number; readonly maxDeltaRatio: number } | undefined {
  return config.incremental ? { maxDeltas: config.incrementalMaxDeltas, maxDeltaRatio: config.incrementalMaxDeltaRatio } : undefined;
}

/** Flink's default memory threshold (20 KB), used where a stored object costs a request. */
export const OBJECT_STORE_MEMORY_THRESHOLD_BYTES = 20 * 1024;

/**
 * The memory threshold in force: the setting, else 20 KB on an object store (every object is
 * a PUT and a later GET) and 0 on a local directory (a small file is cheap there, and a state
 * file per subtask is what tools and tests look at).
 */
export function memoryThresholdFor(config: CheckpointConfig, storageRoot: string | undefined): number {
  if (config.memoryThresholdBytes !== undefined) return config.memoryThresholdBytes;
  return storageRoot !== undefined && /^s3:\/\//.test(storageRoot) ? OBJECT_STORE_MEMORY_THRESHOLD_BYTES : 0;
}
