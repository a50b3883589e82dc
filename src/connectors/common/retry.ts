/**
 * Retries of connector calls: a pure decision (retry after how long, or give up) apart from
 * the loop that sleeps and calls. Every call runs under a timeout; retrying stops at a
 * deadline, so a server that stays away fails the job in bounded time with the last error.
 */
import { WeirError } from '../../core/errors.ts';

export interface RetryPolicy {
  /** First backoff; each next one doubles, up to maxBackoffMs, with full jitter. */
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  /** No retry starts this long after the first try began. */
  readonly deadlineMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { initialBackoffMs: 100, maxBackoffMs: 5_000, deadlineMs: 60_000 };

/**
 * After failed try number `attempt` (0-based), `elapsedMs` after the first began: the delay
 * before the next try, or undefined to give up. `random` in [0, 1) gives the jitter.
 */
export function nextRetryDelay(policy: RetryPolicy, attempt: number, elapsedMs: number, transient: boolean, random: number): number | undefined {
  if (!transient) return undefined;
  const cap = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** Math.min(attempt, 30));
  // Full jitter, never below a tenth of the cap (tries of many subtasks spread, none spins).
  const delay = Math.max(1, Math.round(cap * (0.1 + 0.9 * random)));
  if (elapsedMs + delay > policy.deadlineMs) return undefined;
  return delay;
}

/** Rejects with a TIMEOUT WeirError naming `what` if `p` has not settled within `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new WeirError('TIMEOUT', `${what} did not finish within ${ms} ms`)), ms);
    t.unref?.();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

export interface RetryHooks {
  /** Called before each retry with the error that caused it (e.g. to drop a broken connection). */
  onRetry?(e: unknown, attempt: number, delayMs: number): void | Promise<void>;
  now?(): number;
  random?(): number;
  /**
   * Stops the retrying (SinkContext.signal of a cancelled task): no attempt starts once it has
   * fired, a wait between attempts ends at once, and the last error is rethrown.
   */
  signal?: AbortSignal;
}

/**
 * Runs fn until it succeeds, a non-transient error, or the policy's deadline. The final error
 * is rethrown as is (its message names the server and the operation).
 */
export async function retrying<T>(policy: RetryPolicy, isTransient: (e: unknown) => boolean, fn: (attempt: number) => Promise<T>, hooks: RetryHooks = {}): Promise<T> {
  const now = hooks.now ?? Date.now;
  const random = hooks.random ?? Math.random;
  const start = now();
  // Bounded: the deadline ends the loop (every delay is at least 1 ms and counted against it).
  const signal = hooks.signal;
  const aborted = (): boolean => signal?.aborted === true;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      const delay = nextRetryDelay(policy, attempt, now() - start, isTransient(e), random());
      if (delay === undefined || aborted()) throw e;
      await hooks.onRetry?.(e, attempt, delay);
      await sleepUnlessAborted(delay, signal);
      if (aborted()) throw e;
    }
  }
}

/** Waits `ms`, or less when `signal` fires first. */
function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    t.unref?.();
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Node socket errors that mean "the connection broke or never came up": worth another try. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ECONNABORTED']);

export function isSocketError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && SOCKET_CODES.has(code)) return true;
  // AggregateError of a dual-stack connect (localhost resolved to ::1 and 127.0.0.1).
  const errors = (e as { errors?: unknown } | null)?.errors;
  return Array.isArray(errors) && errors.some(isSocketError);
}

export function messageOf(e: unknown): string {
  if (e instanceof AggregateError && e.errors.length > 0) return e.errors.map(messageOf).join('; ');
  return e instanceof Error ? e.message || e.name : String(e);
}

/**
 * Connects with `connect`, retrying every failure with backoff until the policy's deadline;
 * then fails with a CONNECTOR error naming `what` (host and port, never credentials), the
 * number of tries and the last cause. A server unreachable at start fails the job in bounded time.
 * An error `permanent` accepts (bad credentials: another try cannot help) fails at once.
 */
export async function connecting<T>(what: string, connect: () => Promise<T>, policy: RetryPolicy, log?: (line: string) => void, permanent: (e: unknown) => boolean = () => false): Promise<T> {
  let tries = 0;
  const started = Date.now();
  try {
    return await retrying(policy, (e) => !permanent(e), () => { tries++; return connect(); }, {
      onRetry: (e, _attempt, delayMs) => log?.(`${what}: ${messageOf(e)}; retrying in ${delayMs} ms`),
    });
  } catch (e) {
    const s = Math.round((Date.now() - started) / 100) / 10;
    throw new WeirError('CONNECTOR', `${what}: ${messageOf(e)} (gave up after ${tries} tries in ${s} s)`, { cause: e });
  }
}
