/**
 * Restart strategies: Flink's defaults per type, validation messages, and the decisions of
 * RestartBackoff over (injected) time and randomness for every type.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/checkpoint/config.ts';
import { defaultRestartStrategy, ignoredRestartSettings, resolveRestartStrategy, RestartBackoff, type RestartStrategyConfig, untypedStrategy } from '../../src/cluster/restart-strategy.ts';
import { defineJob, runJob } from '../../src/index.ts';

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;

describe('defaults (Flink RestartStrategyOptions)', () => {
  it('none without checkpointing, exponential-delay with checkpointing', () => {
    expect(defaultRestartStrategy(false)).toEqual({ type: 'none' });
    expect(defaultRestartStrategy(true)).toEqual({
      type: 'exponential-delay', initialBackoffMs: 1 * S, maxBackoffMs: 1 * MIN, multiplier: 1.5, resetThresholdMs: 1 * H, jitter: 0.1,
      attemptsBeforeReset: Number.POSITIVE_INFINITY,
    });
  });

  it('fixed-delay: 1 attempt, 1 s delay', () => {
    expect(resolveRestartStrategy({ type: 'fixed-delay' }, 'test')).toEqual({ type: 'fixed-delay', attempts: 1, delayMs: 1 * S });
  });

  it('failure-rate: 1 failure per 1 min, 1 s delay', () => {
    expect(resolveRestartStrategy({ type: 'failure-rate' }, 'test')).toEqual({ type: 'failure-rate', maxFailuresPerInterval: 1, intervalMs: 1 * MIN, delayMs: 1 * S });
  });

  it('exponential-delay: initial 1 s, max 1 min, multiplier 1.5, reset threshold 1 h, jitter 0.1; also when no type is given', () => {
    const want = { type: 'exponential-delay', initialBackoffMs: 1 * S, maxBackoffMs: 1 * MIN, multiplier: 1.5, resetThresholdMs: 1 * H, jitter: 0.1, attemptsBeforeReset: Number.POSITIVE_INFINITY };
    expect(resolveRestartStrategy({ type: 'exponential-delay' }, 'test')).toEqual(want);
    expect(resolveRestartStrategy({}, 'test')).toEqual(want);
  });

  it('none', () => {
    expect(resolveRestartStrategy({ type: 'none' }, 'test')).toEqual({ type: 'none' });
  });

  it('settings without a type follow the default of the job: without checkpointing none, their backoff ignored with a line (before: restarts from the first record)', () => {
    expect(resolveRestartStrategy({ maxBackoff: '5 min' }, 'test', untypedStrategy(false))).toEqual({ type: 'none' });
    expect(ignoredRestartSettings({ maxBackoff: '5 min' }, untypedStrategy(false))).toBe('weir: restart strategy none does not use "maxBackoff": ignored');
    expect(resolveRestartStrategy({ maxBackoff: '5 min' }, 'test', untypedStrategy(true))).toMatchObject({ type: 'exponential-delay', maxBackoffMs: 5 * MIN });
    expect(ignoredRestartSettings({ maxBackoff: '5 min' }, untypedStrategy(true))).toBeUndefined();
  });

  it('failure-rate: its own delay beside fixed-delay\'s (both in one Flink file), or --restart-delay\'s', () => {
    expect(resolveRestartStrategy({ type: 'failure-rate', failureRateDelay: '30 s', delay: '1 s' }, 'test')).toMatchObject({ delayMs: 30 * S });
    expect(resolveRestartStrategy({ type: 'failure-rate', delay: '2 s' }, 'test')).toMatchObject({ delayMs: 2 * S });
    expect(resolveRestartStrategy({ type: 'fixed-delay', failureRateDelay: '30 s', delay: '1 s' }, 'test')).toMatchObject({ delayMs: 1 * S });
  });

  it('takes durations as strings or milliseconds', () => {
    expect(resolveRestartStrategy({ type: 'fixed-delay', attempts: 5, delay: '250 ms' }, 'test')).toEqual({ type: 'fixed-delay', attempts: 5, delayMs: 250 });
    expect(resolveRestartStrategy({ type: 'fixed-delay', delay: 0 }, 'test')).toEqual({ type: 'fixed-delay', attempts: 1, delayMs: 0 });
    expect(resolveRestartStrategy({ type: 'failure-rate', maxFailuresPerInterval: 3, failureRateInterval: '5 min', delay: '2 s' }, 'test'))
      .toEqual({ type: 'failure-rate', maxFailuresPerInterval: 3, intervalMs: 5 * MIN, delayMs: 2 * S });
    expect(resolveRestartStrategy({ initialBackoff: '100ms', maxBackoff: '2s', backoffMultiplier: 2, resetBackoffThreshold: '10 min', jitterFactor: 0, attemptsBeforeResetBackoff: 4 }, 'test'))
      .toEqual({ type: 'exponential-delay', initialBackoffMs: 100, maxBackoffMs: 2 * S, multiplier: 2, resetThresholdMs: 10 * MIN, jitter: 0, attemptsBeforeReset: 4 });
  });
});

describe('validation', () => {
  function error(s: Parameters<typeof resolveRestartStrategy>[0]): string {
    try {
      resolveRestartStrategy(s, 'weir.json');
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as Error).message;
    }
    throw new Error('expected a ConfigError');
  }

  it('names the source and the setting', () => {
    expect(error({ type: 'sometimes' as 'none' })).toBe('weir.json: restart strategy must be none, fixed-delay, failure-rate or exponential-delay, got "sometimes"');
    expect(error({ type: 'none', retries: 3 } as never)).toBe('weir.json: unknown restart strategy setting "retries"');
    expect(error({ type: 'fixed-delay', attempts: -1 })).toBe('weir.json: restart attempts must be an integer >= 0, got -1');
    expect(error({ type: 'fixed-delay', attempts: 1.5 })).toBe('weir.json: restart attempts must be an integer >= 0, got 1.5');
    expect(error({ type: 'failure-rate', maxFailuresPerInterval: 0 })).toBe('weir.json: max failures per interval must be an integer >= 1, got 0');
    expect(error({ backoffMultiplier: 0.5 })).toBe('weir.json: backoff multiplier must be a number >= 1, got 0.5');
    expect(error({ backoffMultiplier: Number.NaN })).toMatch(/^weir\.json: backoff multiplier must be a number >= 1/);
    expect(error({ jitterFactor: 1.5 })).toBe('weir.json: jitter factor must be between 0 and 1, got 1.5');
    expect(error({ jitterFactor: -0.1 })).toBe('weir.json: jitter factor must be a number >= 0, got -0.1');
    expect(error({ initialBackoff: '10 s', maxBackoff: '1 s' })).toBe('weir.json: max backoff (1000 ms) is smaller than the initial backoff (10000 ms)');
    expect(error({ attemptsBeforeResetBackoff: 0 })).toBe('weir.json: attempts before reset backoff must be an integer >= 1, got 0');
  });

  it('a bad duration names the setting', () => {
    expect(error({ type: 'fixed-delay', delay: 'soon' })).toMatch(/restart delay/);
    expect(error({ type: 'failure-rate', failureRateInterval: 'often' })).toMatch(/failure rate interval/);
    expect(error({ initialBackoff: 'x' })).toMatch(/initial backoff/);
  });
});

function decisions(c: RestartStrategyConfig, times: readonly number[], random: () => number = () => 0.5): { restart: boolean; delayMs: number }[] {
  const b = new RestartBackoff(c, random);
  return times.map((t) => {
    const d = b.onFailure(t);
    return { restart: d.restart, delayMs: d.delayMs };
  });
}

describe('RestartBackoff', () => {
  it('none never restarts', () => {
    const d = new RestartBackoff({ type: 'none' }).onFailure(0);
    expect(d.restart).toBe(false);
    expect(d.reason).toMatch(/none/);
  });

  it('fixed-delay restarts `attempts` times with the delay, then is exhausted for good', () => {
    const c = resolveRestartStrategy({ type: 'fixed-delay', attempts: 3, delay: '2 s' }, 't');
    const b = new RestartBackoff(c);
    const got = [0, 1, 2, 3, 4].map((i) => b.onFailure(i * H));
    expect(got.map((d) => d.restart)).toEqual([true, true, true, false, false]);
    expect(got.slice(0, 3).map((d) => d.delayMs)).toEqual([2 * S, 2 * S, 2 * S]);
    expect(got[1]!.reason).toBe('attempt 2 of 3');
    expect(got[3]!.reason).toBe('fixed-delay restart strategy exhausted its 3 attempt(s)');
  });

  it('fixed-delay with 0 attempts never restarts', () => {
    expect(decisions(resolveRestartStrategy({ type: 'fixed-delay', attempts: 0 }, 't'), [0])).toEqual([{ restart: false, delayMs: 0 }]);
  });

  it('failure-rate allows at most N failures within any interval', () => {
    const c = resolveRestartStrategy({ type: 'failure-rate', maxFailuresPerInterval: 2, failureRateInterval: '10 s', delay: '1 s' }, 't');
    // 0 and 5 s: two in the window -> both restart; 9.999 s: a third within 10 s of the first -> stop.
    expect(decisions(c, [0, 5 * S, 9_999])).toEqual([{ restart: true, delayMs: S }, { restart: true, delayMs: S }, { restart: false, delayMs: 0 }]);
    // 0, 5 s, then 10 s: the first has left the window (exactly one interval old) -> restart.
    expect(decisions(c, [0, 5 * S, 10 * S, 14 * S, 15_500])).toEqual([
      { restart: true, delayMs: S }, { restart: true, delayMs: S }, { restart: true, delayMs: S }, { restart: false, delayMs: 0 }, { restart: false, delayMs: 0 },
    ]);
    // Failures spread out never exhaust it.
    expect(decisions(c, Array.from({ length: 20 }, (_, i) => i * 6 * S)).every((d) => d.restart)).toBe(true);
  });

  it('failure-rate default: a second failure within a minute stops', () => {
    const c = resolveRestartStrategy({ type: 'failure-rate' }, 't');
    expect(decisions(c, [0, 59_999]).map((d) => d.restart)).toEqual([true, false]);
    expect(decisions(c, [0, 60_000]).map((d) => d.restart)).toEqual([true, true]);
  });

  it('exponential-delay grows by the multiplier and is capped at the max (no jitter)', () => {
    const c = resolveRestartStrategy({ initialBackoff: '1 s', maxBackoff: '10 s', backoffMultiplier: 2, jitterFactor: 0 }, 't');
    const times = [0, 1, 2, 3, 4, 5, 6].map((i) => i * S);
    expect(decisions(c, times).map((d) => d.delayMs)).toEqual([1000, 2000, 4000, 8000, 10000, 10000, 10000]);
    expect(decisions(c, times).every((d) => d.restart)).toBe(true);
  });

  it('exponential-delay with Flink defaults: 1 s, 1.5 s, 2.25 s ... up to 1 min', () => {
    const c = resolveRestartStrategy({ jitterFactor: 0 }, 't');
    const got = decisions(c, Array.from({ length: 15 }, (_, i) => i * S)).map((d) => d.delayMs);
    expect(got.slice(0, 4)).toEqual([1000, 1500, 2250, 3375]);
    expect(got[got.length - 1]).toBe(60_000);
    for (let i = 1; i < got.length; i++) expect(got[i]!).toBeGreaterThanOrEqual(got[i - 1]!);
  });

  it('exponential-delay resets to the initial backoff once the job ran the reset threshold past its last restart', () => {
    const c = resolveRestartStrategy({ initialBackoff: '1 s', maxBackoff: '1 min', backoffMultiplier: 2, resetBackoffThreshold: '1 h', jitterFactor: 0 }, 't');
    // Failures at 0, 1 s, 3 s (restarts due at 1 s, 3 s, 7 s); then 1 h after the restart due at
    // 7 s less 1 ms: 8 s; then a full hour after the restart due at 7 s + 1 h + 8 s: reset to 1 s; then 2 s.
    const t3 = 7 * S + H - 1;
    const t4 = t3 + 8 * S + H;
    const got = decisions(c, [0, S, 3 * S, t3, t4, t4 + 2 * S]).map((d) => d.delayMs);
    expect(got).toEqual([1000, 2000, 4000, 8000, 1000, 2000]);
  });

  it('exponential-delay measures stable time from the restart, not from the failure: a long backoff is not a stable period', () => {
    // Every restart fails 5 s after it starts; the threshold is 30 s. Flink's delays keep growing to the max.
    const c = resolveRestartStrategy({ initialBackoff: '1 s', maxBackoff: '1 min', backoffMultiplier: 2, resetBackoffThreshold: '30 s', jitterFactor: 0 }, 't');
    const b = new RestartBackoff(c, () => 0.5);
    let now = 0;
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      const d = b.onFailure(now);
      delays.push(d.delayMs / S);
      now += d.delayMs + 5 * S;
    }
    expect(delays).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
  });

  it('exponential-delay fails the job after attemptsBeforeResetBackoff restarts without a stable period (Flink 1.19)', () => {
    const c = resolveRestartStrategy({ initialBackoff: '1 s', backoffMultiplier: 2, jitterFactor: 0, resetBackoffThreshold: '1 min', attemptsBeforeResetBackoff: 3 }, 't');
    const g = new RestartBackoff(c, () => 0.5);
    const got = [0, 1, 3, 7].map((t) => g.onFailure(t * S));
    expect(got.map((d) => d.restart)).toEqual([true, true, true, false]);
    expect(got[3]!.reason).toBe('exponential-delay restart strategy exhausted its 3 attempt(s) without 60000 ms of running between failures');
    // A stable minute after a restart counts the attempts from 0 again.
    const b = new RestartBackoff(c, () => 0.5);
    for (const t of [0, 1, 3]) expect(b.onFailure(t * S).restart).toBe(true);
    expect(b.onFailure(7 * S + 60 * S)).toMatchObject({ restart: true, delayMs: 1000 });
  });

  it('jitter stays within ±factor of the backoff, at its bounds with the extreme random values, and never above the max', () => {
    const c = resolveRestartStrategy({ initialBackoff: '1 s', maxBackoff: '4 s', backoffMultiplier: 2, jitterFactor: 0.25 }, 't');
    const times = [0, 1, 2, 3, 4].map((i) => i * S);
    expect(decisions(c, times, () => 0).map((d) => d.delayMs)).toEqual([750, 1500, 3000, 3000, 3000]);
    expect(decisions(c, times, () => 0.5).map((d) => d.delayMs)).toEqual([1000, 2000, 4000, 4000, 4000]);
    // Upper bound 1 + 0.25, but never above the max backoff.
    const hi = decisions(c, times, () => 0.999999).map((d) => d.delayMs);
    expect(hi).toEqual([1250, 2500, 4000, 4000, 4000]);
    // A sequence of randoms: every delay within the bounds.
    let x = 0.1;
    const rnd = () => (x = (x * 7.31) % 1);
    const b = new RestartBackoff(c, rnd);
    let base = 1000;
    for (let i = 0; i < 10; i++) {
      const d = b.onFailure(i * S).delayMs;
      expect(d).toBeGreaterThanOrEqual(Math.floor(base * 0.75));
      expect(d).toBeLessThanOrEqual(Math.min(Math.ceil(base * 1.25), 4000));
      base = Math.min(base * 2, 4000);
    }
  });
});

describe('settings the strategy in force does not use', () => {
  it('are named in one log line (before: silently ignored, --restart-attempts 2 with exponential-delay restarted without end)', async () => {
    expect(ignoredRestartSettings({ type: 'exponential-delay', attempts: 2, delay: '10 ms', maxBackoff: '1 s' })).toBe('weir: restart strategy exponential-delay does not use "attempts", "delay": ignored');
    expect(ignoredRestartSettings({ type: 'none', attempts: 5 })).toBe('weir: restart strategy none does not use "attempts": ignored');
    expect(ignoredRestartSettings({ type: 'fixed-delay', attempts: 2, delay: '1 s' })).toBeUndefined();
    expect(ignoredRestartSettings({ type: 'failure-rate', maxFailuresPerInterval: 2, failureRateInterval: '1 min', delay: '1 s' })).toBeUndefined();
    const lines: string[] = [];
    const r = await runJob(defineJob((env) => void env.fromCollection([1]).map(() => { throw new Error('always'); }).collect()), {
      workers: 1, parallelism: 1, stdout: () => {}, log: (l) => lines.push(l),
      restartStrategy: { type: 'none', attempts: 3 },
    });
    expect(r.status).toBe('FAILED');
    expect(lines).toContain('weir: restart strategy none does not use "attempts": ignored');
  });
});

describe('a job without checkpointing given backoff settings but no type', () => {
  it('is not restarted (it would start over and write its output again); the unused settings are named in the log', async () => {
    const logs: string[] = [];
    const out: string[] = [];
    const job = defineJob((env) => {
      env.fromCollection([1, 2, 3]).map((n) => {
        if (n === 2) throw new Error('boom at 2');
        return n;
      }).print();
    });
    const result = await runJob(job, { workers: 1, stdout: (l) => void out.push(l), log: (l) => void logs.push(l), restartStrategy: { initialBackoff: '10 ms', maxBackoff: '5 min' } });
    expect(result.status).toBe('FAILED');
    expect(result.attempts).toBe(1);
    expect(logs.some((l) => /restarting/.test(l)), logs.join('\n')).toBe(false);
    expect(logs).toContain('weir: restart strategy none does not use "initialBackoff", "maxBackoff": ignored');
  });
});
