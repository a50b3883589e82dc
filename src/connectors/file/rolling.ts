/**
 * When the exactly-once file sink closes a part file and starts the next (Flink's rolling
 * policy): by size, by age, by inactivity, and, for storages whose parts cannot stay open
 * across checkpoints (local directories: a part is renamed to pending at the barrier), at
 * every checkpoint. Pure: the writer asks with its part's progress and the time.
 */

export interface RollingPolicy {
  /** Roll once a part holds this many bytes. */
  readonly maxPartSize: number;
  /** Roll a part open this long (ms). */
  readonly rolloverMs: number;
  /** Roll a part nothing was written to for this long (ms), checked at writes and barriers. */
  readonly inactivityMs: number;
  /** Roll at every checkpoint barrier. */
  readonly onCheckpoint: boolean;
}

export interface PartProgress {
  readonly size: number;
  readonly openedAt: number;
  readonly lastWriteAt: number;
}

export type RollReason = 'size' | 'time' | 'inactivity' | 'checkpoint';

/** Before a write: a part too old or idle too long is closed first (the write opens the next). */
export function rollBeforeWrite(p: PartProgress, now: number, policy: RollingPolicy): RollReason | undefined {
  if (now - p.openedAt >= policy.rolloverMs) return 'time';
  if (now - p.lastWriteAt >= policy.inactivityMs) return 'inactivity';
  return undefined;
}

/** After a write: a part that reached the size is closed. */
export function rollAfterWrite(p: PartProgress, policy: RollingPolicy): RollReason | undefined {
  return p.size >= policy.maxPartSize ? 'size' : undefined;
}

/** At a checkpoint barrier. */
export function rollAtBarrier(p: PartProgress, now: number, policy: RollingPolicy): RollReason | undefined {
  if (policy.onCheckpoint) return 'checkpoint';
  return rollAfterWrite(p, policy) ?? rollBeforeWrite(p, now, policy);
}
