/**
 * Connections to Redis for the streams connectors: one client library (ioredis), bounded
 * connect retries with backoff, a timeout on every command, no silent reconnects (a lost
 * connection fails the reader, and the job's restart strategy resumes it from its checkpoint,
 * which is what keeps the position exact), and a label (host:port) for messages that never
 * carries the password.
 */
import type { Redis } from 'ioredis';
import { WeirError } from '../../core/errors.ts';
import { connecting } from '../common/retry.ts';

export interface RedisConnectionOptions {
  /** redis://[user:password@]host:port[/db]; default redis://127.0.0.1:6379. */
  readonly url: string;
  /** Longest a command may take beyond its own blocking time, in ms. */
  readonly timeoutMs: number;
  /** Total time to keep trying to connect, in ms, before the job fails. */
  readonly connectBudgetMs: number;
  /** CLIENT SETNAME of the connections (shows in CLIENT LIST). */
  readonly clientName: string;
}

/** host:port of a Redis URL, for messages (no credentials). */
export function redisLabel(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || '127.0.0.1'}:${u.port || '6379'}`;
  } catch {
    return '(invalid URL)';
  }
}

export function validateRedisUrl(url: unknown, where: string): string {
  if (typeof url !== 'string') throw new TypeError(`${where}: url must be a string like redis://127.0.0.1:6379`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RangeError(`${where}: url is not a valid URL (expected redis://host:port)`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new RangeError(`${where}: url must start with redis:// or rediss://, got ${u.protocol}//`);
  return url;
}

/** Connects, retrying with backoff within the budget; then a CONNECTOR error naming host and port. */
export async function connectRedis(o: RedisConnectionOptions, commandTimeoutMs: number, log?: (line: string) => void): Promise<Redis> {
  const label = redisLabel(o.url);
  // Loaded on first use: jobs that read no Redis never load the client library.
  const { Redis: Client } = await import('ioredis');
  return connecting(`cannot connect to Redis at ${label}`, async () => {
    const r = new Client(o.url, {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      connectTimeout: o.timeoutMs,
      commandTimeout: commandTimeoutMs,
      connectionName: o.clientName,
    });
    // The socket's own error (ECONNREFUSED, auth) says more than connect()'s "Connection is closed".
    let cause: unknown;
    r.on('error', (e) => (cause ??= e));
    try {
      await r.connect();
    } catch (e) {
      r.disconnect();
      const c = cause ?? e;
      throw new Error(scrub(c instanceof Error ? c.message : String(c), o.url));
    }
    return r;
  }, { initialBackoffMs: 100, maxBackoffMs: 2000, deadlineMs: o.connectBudgetMs }, log, isAuthError);
}

/** The server refused the credentials (or the user may not run the command): not retried. */
export function isAuthError(e: unknown): boolean {
  return /WRONGPASS|NOAUTH|NOPERM|invalid username-password/i.test(e instanceof Error ? e.message : String(e));
}

/** Error text without the URL's password, should a library ever echo it. */
export function scrub(message: string, url: string): string {
  try {
    const pw = new URL(url).password;
    return pw ? message.split(pw).join('***') : message;
  } catch {
    return message;
  }
}

export function redisError(label: string, what: string, e: unknown, url: string): WeirError {
  const msg = e instanceof Error ? e.message : String(e);
  return new WeirError('CONNECTOR', `Redis at ${label}: ${what}: ${scrub(msg, url)}`, { cause: e });
}
