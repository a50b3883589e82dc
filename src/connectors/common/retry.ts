/**
 * Bounded retries for connectors: full-jitter exponential backoff (AWS's recommendation, what
 * Flink's Kinesis consumer uses), within a total time budget, so a server unreachable at start
 * fails the job with a clear error after a bounded time instead of hanging.
 */
import { WeirError } from '../../core/errors.ts';

export interface RetryPolicy {
  /** Give up once this much time has passed since the first attempt. */
  readonly budgetMs: number;
  readonly baseMs: number;
  readonly maxDelayMs: number;
}

/** Delay before retry number `retry` (0-based): uniform in [0, min(max, base * 2^retry)]. */
export function backoffMs(retry: number, p: RetryPolicy, random: () => number): number {
  const cap = Math.min(p.maxDelayMs, p.baseMs * 2 ** Math.min(retry, 30));
  return Math.floor(random() * cap);
}

/**
 * Runs `attempt` until it resolves; on failure waits the backoff and tries again while the
 * budget lasts; then fails with a CONNECTOR error naming `what` (never credentials) and the last cause.
 */
export async function retrying<T>(
  what: string, attempt: () => Promise<T>, p: RetryPolicy,
  env: { now(): number; random(): number; sleep(ms: number): Promise<void>; log?(line: string): void } = defaultEnv,
): Promise<T> {
  const started = env.now();
  for (let retry = 0; ; retry++) {
    try {
      return await attempt();
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      const waited = env.now() - started;
      const delay = backoffMs(retry, p, env.random);
      if (waited + delay >= p.budgetMs) {
        throw new WeirError('CONNECTOR', `${what}: ${msg} (gave up after ${retry + 1} attempts in ${Math.round(waited / 100) / 10} s)`, { cause: e });
      }
      env.log?.(`${what}: ${msg}; retrying in ${delay} ms`);
      await env.sleep(delay);
    }
  }
}

const defaultEnv = {
  now: () => Date.now(),
  random: () => Math.random(),
  sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
};

/** Rejects with a TIMEOUT error if `p` does not settle within `ms` (the timer never keeps the process alive). */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new WeirError('TIMEOUT', `${what}: no answer within ${ms} ms`)), ms);
    t.unref?.();
    p.then((v) => { clearTimeout(t); resolve(v); }, (e) => { clearTimeout(t); reject(e); });
  });
}
