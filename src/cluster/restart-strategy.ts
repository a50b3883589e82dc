/**
 * Restart strategies with Flink's semantics and defaults (restart-strategy.type): none
 * (default without checkpointing), exponential-delay (default with checkpointing, FLIP-364),
 * fixed-delay and failure-rate. Pure: time and randomness come in as arguments.
 */
import { toMillis, type Duration } from '../core/duration.ts';
import { ConfigError } from '../checkpoint/config.ts';
import type { RestartStrategySettings } from '../core/restart-settings.ts';

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
  return checkpointing ? resolveRestartStrategy({ type: 'exponential-delay' }, 'default') : { type: 'none' };
}

function ms(d: Duration | undefined, dflt: number, what: string): number {
  if (d === undefined) return dflt;
  try {
    return toMillis(d, what);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}

function num(v: number | undefined, dflt: number, what: string, min: number, integer: boolean): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || Number.isNaN(v) || v < min || (integer && !Number.isInteger(v) && v !== Infinity)) {
    throw new ConfigError(`${what} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(v)}`);
  }
  return v;
}

export function resolveRestartStrategy(s: RestartStrategySettings, where: string): RestartStrategyConfig {
  const known = new Set(['type', 'attempts', 'delay', 'maxFailuresPerInterval', 'failureRateInterval', 'initialBackoff', 'maxBackoff', 'backoffMultiplier', 'resetBackoffThreshold', 'jitterFactor', 'attemptsBeforeResetBackoff']);
  for (const k of Object.keys(s)) if (!known.has(k)) throw new ConfigError(`${where}: unknown restart strategy setting "${k}"`);
  switch (s.type ?? 'exponential-delay') {
    case 'none':
      return { type: 'none' };
    case 'fixed-delay':
      return { type: 'fixed-delay', attempts: num(s.attempts, 1, `${where}: restart attempts`, 0, true), delayMs: ms(s.delay, 1000, `${where}: restart delay`) };
    case 'failure-rate':
      return {
        type: 'failure-rate',
        maxFailuresPerInterval: num(s.maxFailuresPerInterval, 1, `${where}: max failures per interval`, 1, true),
        intervalMs: ms(s.failureRateInterval, 60_000, `${where}: failure rate interval`),
        delayMs: ms(s.delay, 1000, `${where}: restart delay`),
      };
    case 'exponential-delay': {
      const initialBackoffMs = ms(s.initialBackoff, 1000, `${where}: initial backoff`);
      const maxBackoffMs = ms(s.maxBackoff, 60_000, `${where}: max backoff`);
      if (maxBackoffMs < initialBackoffMs) throw new ConfigError(`${where}: max backoff (${maxBackoffMs} ms) is smaller than the initial backoff (${initialBackoffMs} ms)`);
      const jitter = num(s.jitterFactor, 0.1, `${where}: jitter factor`, 0, false);
      if (jitter > 1) throw new ConfigError(`${where}: jitter factor must be between 0 and 1, got ${jitter}`);
      return {
        type: 'exponential-delay',
        initialBackoffMs,
        maxBackoffMs,
        multiplier: num(s.backoffMultiplier, 1.5, `${where}: backoff multiplier`, 1, false),
        resetThresholdMs: ms(s.resetBackoffThreshold, 3_600_000, `${where}: reset backoff threshold`),
        jitter,
        attemptsBeforeReset: num(s.attemptsBeforeResetBackoff, Number.POSITIVE_INFINITY, `${where}: attempts before reset backoff`, 1, true),
      };
    }
    default:
      throw new ConfigError(`${where}: restart strategy must be none, fixed-delay, failure-rate or exponential-delay, got ${JSON.stringify(s.type)}`);
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
  private lastFailureAt = Number.NEGATIVE_INFINITY;
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
        if (now - this.lastFailureAt >= c.resetThresholdMs || this.attemptsSinceReset >= c.attemptsBeforeReset) {
          this.backoff = c.initialBackoffMs;
          this.attemptsSinceReset = 0;
        } else if (Number.isFinite(this.lastFailureAt)) {
          this.backoff = Math.min(this.backoff * c.multiplier, c.maxBackoffMs);
        }
        this.lastFailureAt = now;
        this.attemptsSinceReset++;
        const jittered = this.backoff * (1 + c.jitter * (2 * this.random() - 1));
        return { restart: true, delayMs: Math.max(0, Math.round(Math.min(jittered, c.maxBackoffMs))), reason: `exponential backoff ${Math.round(this.backoff)} ms` };
      }
    }
  }
}
