/**
 * Connections of the PostgreSQL sink (the `pg` client): every connect and query under a
 * timeout, transient failures told apart from the rest, errors worded with the server
 * (host:port/database, never the password) and, for schema errors, the table and column.
 */
import type pg from 'pg';
import { WeirError } from '../../core/errors.ts';
import { isSocketError, messageOf, retrying, withTimeout } from '../common/retry.ts';
import type { ResolvedPostgresOptions } from './options.ts';

export type PgClient = pg.Client;

export function serverName(o: ResolvedPostgresOptions): string {
  return `${o.connection.host}:${o.connection.port}/${o.connection.database}`;
}

/**
 * Transient: the connection broke or could not be made, the server is shutting down or not
 * yet accepting, a serialization failure or deadlock, a timeout on either side, or a prepared
 * transaction another session is finishing. Any of these leaves no half-done transaction
 * behind (the server rolls an interrupted one back).
 */
export function isTransient(e: unknown): boolean {
  if (isSocketError(e)) return true;
  if (e instanceof WeirError) return e.code === 'TIMEOUT';
  const code = (e as { code?: unknown } | null)?.code;
  // 25P03 and 57014: the server's own timeouts (set in connectOnce) ended a stalled transaction or statement.
  if (typeof code === 'string' && (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '40001' || code === '40P01' || code === '53300' || code === '25P03' || code === '57014')) return true;
  if (code === '55000' && isBusyPreparedTransaction(e)) return true;
  const msg = messageOf(e);
  return /Connection terminated|connection timeout|timeout expired|Query read timeout|Client has encountered a connection error|not queryable/i.test(msg);
}

/**
 * COMMIT or ROLLBACK PREPARED of a transaction another session is finishing (55000 from
 * LockGXact, the server function that reports it, in any message language): once that
 * session is done the transaction is gone, and a retry learns its outcome (42704). As when
 * the first try of a commit whose answer was lost is still under way on the server.
 */
function isBusyPreparedTransaction(e: unknown): boolean {
  const routine = (e as { routine?: unknown }).routine;
  return routine === 'LockGXact' || /prepared transaction with identifier .* is busy/.test(messageOf(e));
}

/** Connects once: a client with query timeouts, or an error naming the server. */
export async function connectOnce(o: ResolvedPostgresOptions): Promise<PgClient> {
  // Loaded on first use: every thread of every job imports the connectors, few use this one.
  const { default: driver } = await import('pg');
  const c = new driver.Client({
    host: o.connection.host,
    port: o.connection.port,
    user: o.connection.user,
    password: o.connection.password,
    database: o.connection.database,
    connectionTimeoutMillis: o.connectTimeoutMs,
    query_timeout: o.queryTimeoutMs,
    keepAlive: true,
    application_name: `weir sink ${o.jobId}`.slice(0, 63),
  });
  // A connection that breaks while idle emits 'error'; the next query fails and is retried.
  c.on('error', () => {});
  try {
    await withTimeout(c.connect(), o.connectTimeoutMs + 1_000, `connecting to PostgreSQL at ${serverName(o)}`);
    // The server gives up when this client does. Past query_timeout the client has, but its
    // backend, left idle in a transaction behind a half-open connection (or still running a
    // statement), held its row locks until TCP keepalive noticed, about 2 hours: every retry and
    // restart blocked on them. And a PREPARE held in the network, delivered after the next attempt
    // had cleaned up, left a prepared transaction behind. Set after connecting, not as startup
    // parameters, which a pooler in front of the server may refuse.
    await c.query("SELECT set_config('statement_timeout', $1, false), set_config('idle_in_transaction_session_timeout', $1, false)", [`${o.queryTimeoutMs}ms`]);
    return c;
  } catch (e) {
    void c.end().catch(() => {});
    throw e;
  }
}

/** Connects, retrying an unreachable server with backoff until the retry deadline; then a CONNECTOR error naming host and port. */
export async function connect(o: ResolvedPostgresOptions): Promise<PgClient> {
  try {
    return await retrying(o.retry, isTransient, () => connectOnce(o));
  } catch (e) {
    throw wrap(e, o, 'connecting');
  }
}

export function close(c: PgClient | undefined): void {
  if (c !== undefined) void c.end().catch(() => {});
}

/**
 * Cuts the connection at once: the query under way fails now, not when the server answers
 * (end() half-closes the socket, and a server waiting on a lock reads nothing until it is
 * granted). The server rolls back the open transaction when it sees the socket gone.
 */
export function destroy(c: PgClient | undefined): void {
  if (c === undefined) return;
  (c as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection?.stream?.destroy?.();
  close(c);
}

/** A pg error as a WeirError: schema errors (CONFIG) name the table and column; others name the server. */
export function wrap(e: unknown, o: ResolvedPostgresOptions, doing: string, table = o.tableText): WeirError {
  if (e instanceof WeirError && e.code !== 'TIMEOUT') return e;
  const code = (e as { code?: unknown } | null)?.code;
  const column = (e as { column?: unknown } | null)?.column;
  const msg = messageOf(e);
  const schemaCodes: Record<string, string> = {
    '42P01': 'table does not exist',
    '42703': 'column does not exist',
    '42804': 'a value has the wrong type for its column',
    '22P02': 'a value has the wrong type for its column',
    '23502': 'a NOT NULL column got no value',
    '42P10': 'the key columns have no unique index (needed for upsert)',
    '22001': 'a value is too long for its column',
    '22003': 'a number is out of range for its column',
  };
  if (typeof code === 'string' && code in schemaCodes) {
    const col = typeof column === 'string' ? ` column "${column}":` : '';
    return new WeirError('CONFIG', `postgres sink table "${table}":${col} ${schemaCodes[code]} (${msg})`, { cause: e });
  }
  const sqlstate = typeof code === 'string' ? ` [${code}]` : '';
  return new WeirError('CONNECTOR', `postgres sink ${doing} at ${serverName(o)} (table "${table}") failed: ${msg}${sqlstate}`, { cause: e });
}
