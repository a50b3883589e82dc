/**
 * Options of the PostgreSQL sink, validated once when the sink is built (a bad option fails
 * the job definition, naming the option).
 */
import { WeirError } from '../../core/errors.ts';
import { checkJobId } from '../common/progress.ts';
import { DEFAULT_RETRY, type RetryPolicy } from '../common/retry.ts';
import { checkColumnName, displayName, parseTableName, type TableName } from './sql.ts';

export interface PostgresConnection {
  readonly host?: string;
  readonly port?: number;
  readonly user?: string;
  readonly password?: string;
  readonly database?: string;
}

export interface PostgresSinkOptions<T> {
  /** Server: a `postgres://` URL or its parts (default 127.0.0.1:5432, user `postgres`, database `postgres`). */
  readonly connection?: string | PostgresConnection;
  /** Target table, `name` or `schema.name`. */
  readonly table: string;
  /** Columns written, in order; each record gives them as its properties of the same names (or through `toRow`). */
  readonly columns: readonly string[];
  /** Upsert by these columns (they need a unique index); omit to insert. */
  readonly keyColumns?: readonly string[];
  /** Record to column values (in `columns` order); default: the record's properties named by `columns`. */
  readonly toRow?: (value: T) => readonly unknown[];
  /** Names this job's progress rows and prepared transactions; two jobs writing one table need different ids. */
  readonly jobId: string;
  /** `idempotent` (default): rows and progress row in one transaction at checkpoint completion. `two-phase`: PREPARE TRANSACTION at the barrier, COMMIT PREPARED at completion. */
  readonly mode?: 'idempotent' | 'two-phase';
  /** Progress table (created if missing; default `weir_sink_progress`). */
  readonly progressTable?: string;
  /** Rows per INSERT statement (default 1000; also bounded by PostgreSQL's 65,535 parameters). */
  readonly rowsPerStatement?: number;
  /** Rows one subtask may hold between two checkpoints (default 1,000,000); more fails the job: checkpoint more often. */
  readonly maxBufferedRows?: number;
  /** Connecting, per try (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Each query (default 30 s). */
  readonly queryTimeoutMs?: number;
  /** Retrying a lost connection or an unreachable server gives up this long after the first try (default 60 s). */
  readonly retryDeadlineMs?: number;
  /** One checkpoint's commit, all its statements and retries (default 120 s); past it the task fails. Raise it for checkpoints of many rows on a slow server. */
  readonly commitTimeoutMs?: number;
}

export interface ResolvedPostgresOptions {
  readonly connection: { host: string; port: number; user: string; password: string | undefined; database: string };
  readonly table: TableName;
  readonly tableText: string;
  readonly columns: readonly string[];
  readonly keyColumns: readonly string[];
  readonly jobId: string;
  readonly mode: 'idempotent' | 'two-phase';
  readonly progressTable: TableName;
  readonly rowsPerStatement: number;
  readonly maxBufferedRows: number;
  readonly connectTimeoutMs: number;
  readonly queryTimeoutMs: number;
  readonly commitTimeoutMs: number;
  readonly retry: RetryPolicy;
}

function positiveInt(what: string, v: unknown, dflt: number): number {
  if (v === undefined) return dflt;
  if (!(typeof v === 'number' && Number.isSafeInteger(v) && v > 0)) throw new WeirError('CONFIG', `postgres sink: ${what} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

function connectionOf(c: unknown): ResolvedPostgresOptions['connection'] {
  const dflt = { host: '127.0.0.1', port: 5432, user: 'postgres', password: undefined as string | undefined, database: 'postgres' };
  if (c === undefined) return dflt;
  if (typeof c === 'string') {
    let u: URL;
    try {
      u = new URL(c);
    } catch {
      throw new WeirError('CONFIG', 'postgres sink: connection is not a valid URL (expected postgres://user@host:port/database)');
    }
    if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new WeirError('CONFIG', `postgres sink: connection URL must start with postgres://, got ${u.protocol}//`);
    return {
      host: u.hostname || dflt.host,
      port: u.port === '' ? dflt.port : Number(u.port),
      user: u.username ? decodeURIComponent(u.username) : dflt.user,
      password: u.password ? decodeURIComponent(u.password) : undefined,
      database: u.pathname.length > 1 ? decodeURIComponent(u.pathname.slice(1)) : dflt.database,
    };
  }
  if (typeof c !== 'object' || c === null) throw new WeirError('CONFIG', 'postgres sink: connection must be a URL or {host, port, user, password, database}');
  const o = c as PostgresConnection;
  const port = o.port ?? dflt.port;
  if (!(Number.isInteger(port) && port > 0 && port < 65536)) throw new WeirError('CONFIG', `postgres sink: connection port must be 1 to 65535, got ${JSON.stringify(o.port)}`);
  return { host: o.host ?? dflt.host, port, user: o.user ?? dflt.user, password: o.password, database: o.database ?? dflt.database };
}

export function resolvePostgresOptions<T>(o: PostgresSinkOptions<T>): ResolvedPostgresOptions {
  if (typeof o !== 'object' || o === null) throw new WeirError('CONFIG', 'postgres sink: options {table, columns, jobId, ...} are required');
  const table = parseTableName('table', o.table);
  const tableText = displayName(table);
  if (!Array.isArray(o.columns) || o.columns.length === 0) throw new WeirError('CONFIG', `postgres sink table "${tableText}": columns must be a non-empty list of column names`);
  const columns = o.columns.map((c) => checkColumnName(tableText, c));
  if (new Set(columns).size !== columns.length) throw new WeirError('CONFIG', `postgres sink table "${tableText}": a column is listed twice in columns`);
  const keyColumns = (o.keyColumns ?? []).map((c) => checkColumnName(tableText, c));
  for (const k of keyColumns) if (!columns.includes(k)) throw new WeirError('CONFIG', `postgres sink table "${tableText}": key column "${k}" is not in columns`);
  const mode = o.mode ?? 'idempotent';
  if (mode !== 'idempotent' && mode !== 'two-phase') throw new WeirError('CONFIG', `postgres sink: mode must be "idempotent" or "two-phase", got ${JSON.stringify(o.mode)}`);
  if (o.toRow !== undefined && typeof o.toRow !== 'function') throw new WeirError('CONFIG', 'postgres sink: toRow must be a function (record) => column values');
  const retryDeadlineMs = positiveInt('retryDeadlineMs', o.retryDeadlineMs, DEFAULT_RETRY.deadlineMs);
  const commitTimeoutMs = positiveInt('commitTimeoutMs', o.commitTimeoutMs, 120_000);
  if (commitTimeoutMs <= retryDeadlineMs) {
    throw new WeirError('CONFIG', `postgres sink: commitTimeoutMs (${commitTimeoutMs}) must be above retryDeadlineMs (${retryDeadlineMs}), or a commit's retries are cut short`);
  }
  return {
    connection: connectionOf(o.connection),
    table,
    tableText,
    columns,
    keyColumns,
    jobId: checkJobId('postgres sink', o.jobId),
    mode,
    progressTable: parseTableName('progressTable', o.progressTable ?? 'weir_sink_progress'),
    rowsPerStatement: positiveInt('rowsPerStatement', o.rowsPerStatement, 1000),
    maxBufferedRows: positiveInt('maxBufferedRows', o.maxBufferedRows, 1_000_000),
    connectTimeoutMs: positiveInt('connectTimeoutMs', o.connectTimeoutMs, 10_000),
    queryTimeoutMs: positiveInt('queryTimeoutMs', o.queryTimeoutMs, 30_000),
    commitTimeoutMs,
    retry: { ...DEFAULT_RETRY, deadlineMs: retryDeadlineMs },
  };
}
