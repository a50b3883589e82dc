/**
 * Restart strategies with Flink's semantics and defaults (restart-strategy.type): none
 * (default without checkpointing), exponential-delay (default with checkpointing, FLIP-364),
 * fixed-delay and failure-rate. Pure: time and randomness come in as arguments.
 */
import { toMillis, type Duration } from '../core/duration.ts';
import { ConfigError } from '../checkpoint/config.ts';
import type { RestartStrategySettings } from '../core/restart-settings.ts';
import { fieldsUnder } from '../core/options/lookup.ts';
import { defaultOf, type Option } from '../core/options/option.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { codeProblem } from '../core/options/values.ts';

export type { RestartStrategySettings } from '../core/restart-settings.ts';

export type RestartStrategyConfig =
  | { readonly type: 'none' }
  | { readonly type: 'fixed-delay'; readonly attempts: number; readonly delayMs: number }
  | { readonly type: 'failure-rate'; readonly maxFailuresPerInterval: number; readonly intervalMs: number; readonly delayMs: number }
  | {
      readonly type: 'exponential-delay';
      readonly initialBackoffMs: number;
      readonly maxBackoffMs: number;
      readonly multiplier: number;
      readonly resetThresholdMs: number;
      readonly jitter: number;
      readonly attemptsBeforeReset: number;
    };

export function defaultRestartStrategy(checkpointing: boolean): RestartStrategyConfig {
  return resolveRestartStrategy({}, 'default', untypedStrategy(checkpointing));
}

/** The registry's options under restart.*, by field name. */
const FIELDS = fieldsUnder('restart');

/** A setting checked against its option's bounds, or the option's default. */
function setting<T>(o: Option<T>, v: T | undefined, where: string): T {
  if (v === undefined) return defaultOf(o);
  const problem = codeProblem(o, v, where);
  if (problem !== undefined) throw new ConfigError(problem);
  return v;
}

function ms(o: Option<Duration>, v: Duration | undefined, where: string): number {
  return toMillis(setting(o, v, where), where);
}

/** The settings each strategy reads (the rest do not apply to it). */
const SETTINGS_OF: Record<RestartStrategyConfig['type'], readonly (keyof RestartStrategySettings)[]> = {
  'none': [],
  'fixed-delay': ['attempts', 'delay'],
  'failure-rate': ['maxFailuresPerInterval', 'failureRateInterval', 'failureRateDelay', 'delay'],
  'exponential-delay': ['initialBackoff', 'maxBackoff', 'jitterFactor', 'backoffMultiplier', 'resetBackoffThreshold', 'attemptsBeforeResetBackoff'],
};

/**
 * Settings given that the strategy in force does not read (--restart-attempts with
 * exponential-delay, say): one line naming them, for the job's log. Not refused: a Flink
 * configuration file may well hold every strategy's settings while one is chosen.
 */
export function ignoredRestartSettings(s: RestartStrategySettings, untyped: UntypedStrategy = 'exponential-delay'): string | undefined {
  const type = s.type ?? untyped;
  const reads = new Set<string>(['type', ...(SETTINGS_OF[type as RestartStrategyConfig['type']] ?? [])]);
  const ignored = Object.keys(s).filter((k) => !reads.has(k) && (s as Record<string, unknown>)[k] !== undefined);
  if (ignored.length === 0) return undefined;
  return `weir: restart strategy ${type} does not use ${ignored.map((k) => `"${k}"`).join(', ')}: ignored`;
}

/**
 * The strategy of settings without a type, as Flink's default: exponential-delay with
 * checkpointing, none without (defaultRestartStrategy). Backoff settings alone never turn
 * restarts on for a job without checkpoints: it would start over from its first record and
 * write its output again.
 */
export type UntypedStrategy = 'none' | 'exponential-delay';

export function untypedStrategy(checkpointing: boolean): UntypedStrategy {
  return checkpointing ? 'exponential-delay' : 'none';
}

/** `untyped` is the strategy of settings without a type; checks of settings alone pass exponential-delay, whose bounds they hold. */
export function resolveRestartStrategy(s: RestartStrategySettings, where: string, untyped: UntypedStrategy = 'exponential-delay'): RestartStrategyConfig {
  for (const k of Object.keys(s)) if (!FIELDS.has(k)) throw new ConfigError(`${where}: unknown restart strategy setting "${k}"`);
  switch (s.type === undefined ? untyped : setting(OPTIONS.restartStrategy, s.type, where)) {
    case 'none':
      return { type: 'none' };
    case 'fixed-delay':
      return { type: 'fixed-delay', attempts: setting(OPTIONS.restartAttempts, s.attempts, where), delayMs: ms(OPTIONS.restartDelay, s.delay, where) };
    case 'failure-rate':
      return {
        type: 'failure-rate',
        maxFailuresPerInterval: setting(OPTIONS.failureRateMaxFailures, s.maxFailuresPerInterval, where),
        intervalMs: ms(OPTIONS.failureRateInterval, s.failureRateInterval, where),
        delayMs: s.failureRateDelay !== undefined ? ms(OPTIONS.failureRateDelay, s.failureRateDelay, where) : ms(OPTIONS.restartDelay, s.delay, where),
      };
    case 'exponential-delay': {
      const initialBackoffMs = ms(OPTIONS.initialBackoff, s.initialBackoff, where);
      const maxBackoffMs = ms(OPTIONS.maxBackoff, s.maxBackoff, where);
      if (maxBackoffMs < initialBackoffMs) throw new ConfigError(`${where}: max backoff (${maxBackoffMs} ms) is smaller than the initial backoff (${initialBackoffMs} ms)`);
      return {
        type: 'exponential-delay',
        initialBackoffMs,
        maxBackoffMs,
        jitter: setting(OPTIONS.jitterFactor, s.jitterFactor, where),
        multiplier: setting(OPTIONS.backoffMultiplier, s.backoffMultiplier, where),
        resetThresholdMs: ms(OPTIONS.resetBackoffThreshold, s.resetBackoffThreshold, where),
        attemptsBeforeReset: setting(OPTIONS.attemptsBeforeResetBackoff, s.attemptsBeforeResetBackoff, where),
      };
    }
  }
}

export interface RestartDecision {
  readonly restart: boolean;
  readonly delayMs: number;
  readonly reason: string;
}

/** Tracks failures and decides whether and when to restart. */
export class RestartBackoff {
  private failures: number[] = [];
  private attempts = 0;
  private backoff: number;
  /** When the last restart was due (exponential-delay: stable time is measured from it). */
  private nextRestartAt = Number.NEGATIVE_INFINITY;
  private attemptsSinceReset = 0;

  constructor(readonly config: RestartStrategyConfig, private readonly random: () => number = Math.random) {
    this.backoff = config.type === 'exponential-delay' ? config.initialBackoffMs : 0;
  }

  onFailure(now: number): RestartDecision {
    const c = this.config;
    switch (c.type) {
      case 'none':
        return { restart: false, delayMs: 0, reason: 'restart strategy is none' };
      case 'fixed-delay':
        this.attempts++;
        if (this.attempts > c.attempts) return { restart: false, delayMs: 0, reason: `fixed-delay restart strategy exhausted its ${c.attempts} attempt(s)` };
        return { restart: true, delayMs: c.delayMs, reason: `attempt ${this.attempts} of ${c.attempts}` };
      case 'failure-rate': {
        this.failures.push(now);
        this.failures = this.failures.filter((t) => t > now - c.intervalMs);
        if (this.failures.length > c.maxFailuresPerInterval) {
          return { restart: false, delayMs: 0, reason: `failure-rate restart strategy: more than ${c.maxFailuresPerInterval} failure(s) within ${c.intervalMs} ms` };
        }
        return { restart: true, delayMs: c.delayMs, reason: `${this.failures.length} failure(s) in the current interval` };
      }
      case 'exponential-delay': {
        // As Flink's ExponentialDelayRestartBackoffTimeStrategy: the job ran resetThresholdMs
        // past its last restart without failing: the delay and the attempt count start over;
        // more than attemptsBeforeReset restarts without such a period fail the job.
        if (now - this.nextRestartAt >= c.resetThresholdMs) {
          this.backoff = c.initialBackoffMs;
          this.attemptsSinceReset = 0;
        } else {
          this.backoff = Math.min(this.backoff * c.multiplier, c.maxBackoffMs);
        }
        this.attemptsSinceReset++;
        if (this.attemptsSinceReset > c.attemptsBeforeReset) {
          return { restart: false, delayMs: 0, reason: `exponential-delay restart strategy exhausted its ${c.attemptsBeforeReset} attempt(s) without ${c.resetThresholdMs} ms of running between failures` };
        }
        const jittered = this.backoff * (1 + c.jitter * (2 * this.random() - 1));
        const delayMs = Math.max(0, Math.round(Math.min(jittered, c.maxBackoffMs)));
        this.nextRestartAt = now + delayMs;
        return { restart: true, delayMs, reason: `exponential backoff ${Math.round(this.backoff)} ms` };
      }
    }
  }
}
