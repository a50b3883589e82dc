/**
 * How a subtask treats a checkpoint barrier (pure: settings, the barrier and the time in, a
 * decision out; the checkpointer does the holding, timers and I/O):
 * - 'none': at-least-once; nothing is held, the snapshot is taken when the last barrier comes;
 * - 'aligned': channels that delivered the barrier are held until every channel has;
 * - 'unaligned': the barrier overtakes the data queued before it; the subtask snapshots at
 *   once and the overtaken data is stored as channel state (Flink's unaligned checkpoints);
 * - 'aligned-until': aligned, but switch to unaligned at `switchAtMs` if the subtask is still
 *   waiting for the checkpoint then (execution.checkpointing.aligned-checkpoint-timeout).
 * Savepoints are always aligned (as in Flink: a savepoint holds no in-flight data).
 */
import type { CheckpointingMode } from '../../checkpoint/config.ts';

export interface UnalignedSettings {
  /** execution.checkpointing.unaligned.enabled */
  readonly enabled: boolean;
  /** execution.checkpointing.aligned-checkpoint-timeout; 0 = unaligned from the start. */
  readonly alignedTimeoutMs: number;
}

export const ALIGNED_ONLY: UnalignedSettings = Object.freeze({ enabled: false, alignedTimeoutMs: 0 });

export type BarrierHandling =
  | { readonly kind: 'none' }
  | { readonly kind: 'aligned' }
  | { readonly kind: 'unaligned' }
  | { readonly kind: 'aligned-until'; readonly switchAtMs: number };

export interface BarrierFacts {
  readonly type: 'checkpoint' | 'savepoint';
  /** When the checkpoint was triggered (the barrier's timestamp), ms since the epoch. */
  readonly timestamp: number;
}

/**
 * The handling of `barrier` at `nowMs`. The timeout counts from the trigger, as in Flink: a
 * barrier that spent the timeout queued upstream arrives already unaligned.
 */
export function barrierHandling(s: UnalignedSettings, mode: CheckpointingMode, barrier: BarrierFacts, nowMs: number): BarrierHandling {
  if (barrier.type === 'savepoint') return { kind: 'aligned' };
  if (mode === 'at-least-once') return { kind: 'none' };
  if (!s.enabled) return { kind: 'aligned' };
  if (s.alignedTimeoutMs <= 0) return { kind: 'unaligned' };
  const switchAtMs = barrier.timestamp + s.alignedTimeoutMs;
  return nowMs >= switchAtMs ? { kind: 'unaligned' } : { kind: 'aligned-until', switchAtMs };
}

/**
 * Whether a barrier must be seen when it arrives in an input channel rather than when the task
 * reaches it in the queue: only when unaligned checkpoints may happen at all.
 */
export function watchesArrivals(s: UnalignedSettings, mode: CheckpointingMode): boolean {
  return s.enabled && mode === 'exactly-once';
}
