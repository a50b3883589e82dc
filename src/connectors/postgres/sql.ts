/**
 * SQL text of the PostgreSQL sink, as pure functions (no I/O): identifiers, the insert or
 * upsert statements for a batch of rows, the progress table, and prepared-transaction ids.
 */
import { WeirError } from '../../core/errors.ts';

const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** A table name as given: `name` or `schema.name`, each a plain identifier (used exactly, quoted). */
export interface TableName {
  readonly schema: string;
  readonly name: string;
}

export function parseTableName(what: string, text: unknown): TableName {
  if (typeof text !== 'string') throw new WeirError('CONFIG', `postgres sink: ${what} must be a string, got ${JSON.stringify(text)}`);
  const parts = text.split('.');
  const bad = parts.length > 2 || parts.some((p) => !IDENT_RE.test(p));
  if (bad) throw new WeirError('CONFIG', `postgres sink: ${what} "${text}" must be "name" or "schema.name" of letters, digits, _ and $ (not starting with a digit)`);
  return parts.length === 2 ? { schema: parts[0]!, name: parts[1]! } : { schema: 'public', name: parts[0]! };
}

export function checkColumnName(table: string, column: unknown): string {
  if (typeof column !== 'string' || !IDENT_RE.test(column)) {
    throw new WeirError('CONFIG', `postgres sink table "${table}": column name ${JSON.stringify(column)} must be letters, digits, _ and $ (not starting with a digit)`);
  }
  return column;
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function qualified(t: TableName): string {
  return `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;
}

export function displayName(t: TableName): string {
  return `${t.schema}.${t.name}`;
}

/** PostgreSQL allows at most 65,535 bind parameters per statement. */
export const MAX_PARAMS = 65_535;

export interface Statement {
  readonly text: string;
  readonly values: unknown[];
}

export interface WriteShape {
  readonly table: TableName;
  readonly columns: readonly string[];
  /** Upsert by these columns (ON CONFLICT ... DO UPDATE); empty: plain insert. */
  readonly keyColumns: readonly string[];
  /** Rows per statement at most (further bounded by MAX_PARAMS). */
  readonly rowsPerStatement: number;
}

/**
 * Rows for an upsert: of rows with equal keys only the last one stays (one statement may not
 * update a row twice; the last write wins, as it would row by row), in first-seen key order.
 */
export function lastPerKey(rows: readonly (readonly unknown[])[], keyIndexes: readonly number[]): (readonly unknown[])[] {
  const byKey = new Map<string, number>();
  const out: (readonly unknown[])[] = [];
  for (const row of rows) {
    const key = JSON.stringify(keyIndexes.map((i) => keyPart(row[i])));
    const at = byKey.get(key);
    if (at === undefined) {
      byKey.set(key, out.length);
      out.push(row);
    } else {
      out[at] = row;
    }
  }
  return out;
}

function keyPart(v: unknown): unknown {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Date) return v.toISOString();
  return v;
}

/** The statements writing `rows` (values in `columns` order), each within the parameter limit. */
export function writeStatements(shape: WriteShape, rows: readonly (readonly unknown[])[]): Statement[] {
  const ncol = shape.columns.length;
  const keyIdx = shape.keyColumns.map((k) => shape.columns.indexOf(k));
  const list = shape.keyColumns.length > 0 ? lastPerKey(rows, keyIdx) : rows;
  const per = Math.max(1, Math.min(shape.rowsPerStatement, Math.floor(MAX_PARAMS / ncol)));
  const cols = shape.columns.map(quoteIdent).join(', ');
  let tail = '';
  if (shape.keyColumns.length > 0) {
    const rest = shape.columns.filter((c) => !shape.keyColumns.includes(c));
    tail =
      ` ON CONFLICT (${shape.keyColumns.map(quoteIdent).join(', ')}) ` +
      (rest.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${rest.map((c) => `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`).join(', ')}`);
  }
  const out: Statement[] = [];
  for (let start = 0; start < list.length; start += per) {
    const chunk = list.slice(start, start + per);
    const values: unknown[] = [];
    const tuples: string[] = [];
    let n = 1;
    for (const row of chunk) {
      const ph: string[] = [];
      for (let c = 0; c < ncol; c++) {
        ph.push(`$${n++}`);
        values.push(row[c]);
      }
      tuples.push(`(${ph.join(', ')})`);
    }
    out.push({ text: `INSERT INTO ${qualified(shape.table)} (${cols}) VALUES ${tuples.join(', ')}${tail}`, values });
  }
  return out;
}

/** The progress table: one row per (job, operator, subtask), the last committed checkpoint. */
export function progressTableDdl(t: TableName): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${qualified(t)} (job text NOT NULL, operator text NOT NULL, subtask integer NOT NULL, ` +
    'checkpoint bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (job, operator, subtask))'
  );
}

/**
 * Advances the progress row to $4 only if it is behind ($1 job, $2 operator, $3 subtask): a
 * row comes back when it advanced, none when that checkpoint (or a later one) was committed.
 * The row lock it takes makes concurrent commits of the same subtask wait for each other.
 */
export function advanceProgress(t: TableName): string {
  const q = qualified(t);
  return (
    `INSERT INTO ${q} AS p (job, operator, subtask, checkpoint) VALUES ($1, $2, $3, $4) ` +
    'ON CONFLICT (job, operator, subtask) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, committed_at = now() ' +
    'WHERE p.checkpoint < EXCLUDED.checkpoint RETURNING p.checkpoint'
  );
}

/**
 * Two-phase mode: each prepared transaction inserts its own row (job, operator, subtask,
 * checkpoint) here instead of updating the progress row, so prepared transactions of one
 * subtask never wait for each other's row lock. After COMMIT PREPARED the committer advances
 * the progress row and deletes the subtask's log rows up to that checkpoint.
 */
export function preparedLogTable(t: TableName): TableName {
  return { schema: t.schema, name: `${t.name}_prepared`.slice(0, 63) };
}

export function preparedLogDdl(t: TableName): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${qualified(preparedLogTable(t))} (job text NOT NULL, operator text NOT NULL, subtask integer NOT NULL, ` +
    'checkpoint bigint NOT NULL, PRIMARY KEY (job, operator, subtask, checkpoint))'
  );
}

export function logPrepared(t: TableName): string {
  return `INSERT INTO ${qualified(preparedLogTable(t))} (job, operator, subtask, checkpoint) VALUES ($1, $2, $3, $4)`;
}

export function readLogged(t: TableName): string {
  return `SELECT 1 FROM ${qualified(preparedLogTable(t))} WHERE job = $1 AND operator = $2 AND subtask = $3 AND checkpoint = $4`;
}

/** The newest checkpoint in the log of committed prepared transactions (its row commits with them). */
export function newestLogged(t: TableName): string {
  return `SELECT max(checkpoint) AS checkpoint FROM ${qualified(preparedLogTable(t))} WHERE job = $1 AND operator = $2 AND subtask = $3`;
}

export function pruneLog(t: TableName): string {
  return `DELETE FROM ${qualified(preparedLogTable(t))} WHERE job = $1 AND operator = $2 AND subtask = $3 AND checkpoint <= $4`;
}

/**
 * Idempotent mode: one row per committed (job, operator, subtask, checkpoint). A subtask's
 * committables need not be committed in checkpoint order: after a rescale the committables of
 * one old subtask are spread over new subtasks that commit concurrently, so "checkpoint >
 * last committed" alone would skip (lose) an older one committed after a newer one. Rows more
 * than COMMITTED_LOG_KEEP checkpoints behind the subtask's newest are pruned.
 */
export function committedLogTable(t: TableName): TableName {
  return { schema: t.schema, name: `${t.name}_committed`.slice(0, 63) };
}

export function committedLogDdl(t: TableName): string {
  return (
    `CREATE TABLE IF NOT EXISTS ${qualified(committedLogTable(t))} (job text NOT NULL, operator text NOT NULL, subtask integer NOT NULL, ` +
    'checkpoint bigint NOT NULL, PRIMARY KEY (job, operator, subtask, checkpoint))'
  );
}

/** Inserts the checkpoint's log row; a row comes back unless it was there (committed before). */
export function logCommitted(t: TableName): string {
  return `INSERT INTO ${qualified(committedLogTable(t))} (job, operator, subtask, checkpoint) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1`;
}

export function pruneCommitted(t: TableName): string {
  return `DELETE FROM ${qualified(committedLogTable(t))} WHERE job = $1 AND operator = $2 AND subtask = $3 AND checkpoint < $4`;
}

/** Checkpoints of a subtask's log kept (more than the commit ledger's outstanding limit). */
export const COMMITTED_LOG_KEEP = 10_000;

/** Raises the progress row to $4 if it is behind; never lowers it. */
export function raiseProgress(t: TableName): string {
  return (
    `INSERT INTO ${qualified(t)} AS p (job, operator, subtask, checkpoint) VALUES ($1, $2, $3, $4) ` +
    'ON CONFLICT (job, operator, subtask) DO UPDATE SET checkpoint = GREATEST(p.checkpoint, EXCLUDED.checkpoint), committed_at = now()'
  );
}

export function readProgress(t: TableName): string {
  return `SELECT checkpoint FROM ${qualified(t)} WHERE job = $1 AND operator = $2 AND subtask = $3`;
}

/** Prepared transaction ids: `weir:<job>:<operator>:<subtask>:<checkpoint>` (job and operator are [A-Za-z0-9_.-]). */
export function gidFor(job: string, operator: string, subtask: number, checkpointId: number): string {
  return `weir:${job}:${operator}:${subtask}:${checkpointId}`;
}

/** The gids of this job's sink operator, or undefined for anyone else's (never touched). */
export function parseGid(gid: string, job: string, operator: string): { subtask: number; checkpointId: number } | undefined {
  const prefix = `weir:${job}:${operator}:`;
  if (!gid.startsWith(prefix)) return undefined;
  const m = /^(\d+):(\d+)$/.exec(gid.slice(prefix.length));
  if (!m) return undefined;
  return { subtask: Number(m[1]), checkpointId: Number(m[2]) };
}

/** A gid as an SQL string literal (PREPARE TRANSACTION takes no bind parameter). */
export function gidLiteral(gid: string): string {
  return `'${gid.replace(/'/g, "''")}'`;
}
