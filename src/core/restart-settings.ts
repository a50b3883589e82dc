/**
 * Restart strategy settings as a user writes them (restart-strategy.* in Flink's keys); the job
 * manager resolves and validates them (src/cluster/restart-strategy.ts).
 */
import type { Duration } from './duration.ts';

export interface RestartStrategySettings {
  readonly type?: 'none' | 'fixed-delay' | 'failure-rate' | 'exponential-delay';
  /** fixed-delay: restart attempts (Flink default 1). */
  readonly attempts?: number;
  /** fixed-delay / failure-rate: delay between restarts (default 1 s). */
  readonly delay?: Duration;
  /** failure-rate: its own delay (Flink's restart-strategy.failure-rate.delay); `delay` when not given. */
  readonly failureRateDelay?: Duration;
  readonly maxFailuresPerInterval?: number;
  readonly failureRateInterval?: Duration;
  readonly initialBackoff?: Duration;
  readonly maxBackoff?: Duration;
  readonly backoffMultiplier?: number;
  readonly resetBackoffThreshold?: Duration;
  readonly jitterFactor?: number;
  readonly attemptsBeforeResetBackoff?: number;
}
