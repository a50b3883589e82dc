/** Options of the Redis Streams sink, validated when the sink is built. */
import { WeirError } from '../../core/errors.ts';
import { checkJobId } from '../common/progress.ts';
import { DEFAULT_RETRY, type RetryPolicy } from '../common/retry.ts';

export interface RedisConnection {
  readonly host?: string;
  readonly port?: number;
  readonly username?: string;
  readonly password?: string;
  readonly db?: number;
}

export type RedisFieldValue = string | number | Buffer;

export interface RedisStreamsSinkOptions<T> {
  /** Server: a `redis://` URL or its parts (default 127.0.0.1:6379, db 0). */
  readonly connection?: string | RedisConnection;
  /** Stream key, or a function of the record giving it. */
  readonly stream: string | ((value: T) => string);
  /** Entry fields of a record (default `{ data: JSON.stringify(record) }`). */
  readonly fields?: (value: T) => Record<string, RedisFieldValue>;
  /** Names this job's progress keys; two jobs writing one server need different ids. */
  readonly jobId: string;
  /** Trim each stream to about this many entries at each XADD (MAXLEN ~); omit to keep all. */
  readonly maxLen?: number;
  /** Prefix of the progress keys (default `weir:progress`); the key is `<prefix>:<jobId>:<operator>:<subtask>`. */
  readonly progressKeyPrefix?: string;
  /** Entries one subtask may hold between two checkpoints (default 1,000,000). */
  readonly maxBufferedRecords?: number;
  /** Connecting, per try (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Each command or transaction (default 30 s). */
  readonly commandTimeoutMs?: number;
  /** Retrying a lost connection gives up this long after the first try (default 60 s). */
  readonly retryDeadlineMs?: number;
  /**
   * Replicas that must hold each commit before it counts (Redis WAIT; default 0). With replicas
   * and failover, a commit the primary acknowledged but no replica received is lost with the
   * primary, after the checkpoint dropped its entries: set this to the replicas a failover may
   * promote. A commit short of them is retried until retryDeadlineMs, then fails the job (its
   * entries stay in the checkpoint; the re-commit after the restart writes nothing twice).
   */
  readonly replicas?: number;
}

export interface ResolvedRedisOptions {
  readonly connection: { host: string; port: number; username: string | undefined; password: string | undefined; db: number };
  readonly jobId: string;
  readonly maxLen: number | undefined;
  readonly progressKeyPrefix: string;
  readonly maxBufferedRecords: number;
  readonly connectTimeoutMs: number;
  readonly commandTimeoutMs: number;
  readonly retry: RetryPolicy;
  readonly replicas: number;
}

function positiveInt(what: string, v: unknown, dflt: number): number {
  if (v === undefined) return dflt;
  if (!(typeof v === 'number' && Number.isSafeInteger(v) && v > 0)) throw new WeirError('CONFIG', `redis streams sink: ${what} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

function connectionOf(c: unknown): ResolvedRedisOptions['connection'] {
  const dflt = { host: '127.0.0.1', port: 6379, username: undefined as string | undefined, password: undefined as string | undefined, db: 0 };
  if (c === undefined) return dflt;
  if (typeof c === 'string') {
    let u: URL;
    try {
      u = new URL(c);
    } catch {
      throw new WeirError('CONFIG', 'redis streams sink: connection is not a valid URL (expected redis://host:port/db)');
    }
    if (u.protocol !== 'redis:') throw new WeirError('CONFIG', `redis streams sink: connection URL must start with redis://, got ${u.protocol}//`);
    const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
    if (!Number.isInteger(db) || db < 0) throw new WeirError('CONFIG', 'redis streams sink: the database in the connection URL must be a non-negative integer');
    return {
      host: u.hostname || dflt.host,
      port: u.port === '' ? dflt.port : Number(u.port),
      username: u.username ? decodeURIComponent(u.username) : undefined,
      password: u.password ? decodeURIComponent(u.password) : undefined,
      db,
    };
  }
  if (typeof c !== 'object' || c === null) throw new WeirError('CONFIG', 'redis streams sink: connection must be a URL or {host, port, username, password, db}');
  const o = c as RedisConnection;
  const port = o.port ?? dflt.port;
  if (!(Number.isInteger(port) && port > 0 && port < 65536)) throw new WeirError('CONFIG', `redis streams sink: connection port must be 1 to 65535, got ${JSON.stringify(o.port)}`);
  return { host: o.host ?? dflt.host, port, username: o.username, password: o.password, db: o.db ?? 0 };
}

export function resolveRedisOptions<T>(o: RedisStreamsSinkOptions<T>): ResolvedRedisOptions {
  if (typeof o !== 'object' || o === null) throw new WeirError('CONFIG', 'redis streams sink: options {stream, jobId, ...} are required');
  if (!((typeof o.stream === 'string' && o.stream !== '') || typeof o.stream === 'function')) throw new WeirError('CONFIG', 'redis streams sink: stream must be a non-empty key or a function (record) => key');
  if (o.fields !== undefined && typeof o.fields !== 'function') throw new WeirError('CONFIG', 'redis streams sink: fields must be a function (record) => {field: value}');
  const prefix = o.progressKeyPrefix ?? 'weir:progress';
  if (typeof prefix !== 'string' || prefix === '') throw new WeirError('CONFIG', 'redis streams sink: progressKeyPrefix must be a non-empty string');
  return {
    connection: connectionOf(o.connection),
    jobId: checkJobId('redis streams sink', o.jobId),
    maxLen: o.maxLen === undefined ? undefined : positiveInt('maxLen', o.maxLen, 0),
    progressKeyPrefix: prefix,
    maxBufferedRecords: positiveInt('maxBufferedRecords', o.maxBufferedRecords, 1_000_000),
    connectTimeoutMs: positiveInt('connectTimeoutMs', o.connectTimeoutMs, 10_000),
    commandTimeoutMs: positiveInt('commandTimeoutMs', o.commandTimeoutMs, 30_000),
    retry: { ...DEFAULT_RETRY, deadlineMs: positiveInt('retryDeadlineMs', o.retryDeadlineMs, DEFAULT_RETRY.deadlineMs) },
    replicas: o.replicas === undefined || o.replicas === 0 ? 0 : positiveInt('replicas', o.replicas, 0),
  };
}
