/**
 * Before the first commit: the target table must exist and have every configured column, and
 * every NOT NULL column without a default must be written. A mismatch fails the job with the
 * table and the column named (rather than a commit failing later on some row). The progress
 * table is created if missing.
 */
import { WeirError } from '../../core/errors.ts';
import type { PgClient } from './connection.ts';
import type { ResolvedPostgresOptions } from './options.ts';
import { committedLogDdl, preparedLogDdl, progressTableDdl } from './sql.ts';

export interface ColumnInfo {
  readonly name: string;
  readonly notNull: boolean;
  readonly hasDefault: boolean;
}

/** The decision, pure: undefined when the table fits the sink, else the one-line problem. */
export function schemaProblem(table: string, columns: readonly string[], actual: readonly ColumnInfo[] | undefined): string | undefined {
  if (actual === undefined || actual.length === 0) return `postgres sink table "${table}" does not exist (or has no columns visible to this user)`;
  const have = new Map(actual.map((c) => [c.name, c]));
  for (const c of columns) {
    if (!have.has(c)) return `postgres sink table "${table}" has no column "${c}" (it has ${actual.map((a) => a.name).join(', ')})`;
  }
  for (const a of actual) {
    if (a.notNull && !a.hasDefault && !columns.includes(a.name)) return `postgres sink table "${table}": column "${a.name}" is NOT NULL without a default but is not in the sink's columns`;
  }
  return undefined;
}

export async function checkSchema(c: PgClient, o: ResolvedPostgresOptions): Promise<void> {
  const r = await c.query<{ column_name: string; is_nullable: string; column_default: string | null; is_identity: string; is_generated: string }>(
    'SELECT column_name, is_nullable, column_default, is_identity, is_generated FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2',
    [o.table.schema, o.table.name],
  );
  const actual = r.rows.map((row) => ({
    name: row.column_name,
    notNull: row.is_nullable === 'NO',
    hasDefault: row.column_default !== null || row.is_identity === 'YES' || row.is_generated !== 'NEVER',
  }));
  const problem = schemaProblem(o.tableText, o.columns, actual);
  if (problem !== undefined) throw new WeirError('CONFIG', problem);
}

/**
 * CREATE TABLE IF NOT EXISTS races between subtasks and concurrent jobs: the loser gets a unique
 * violation on pg_type (23505), a duplicate table (42P07) or a duplicate type (42710, seen in a
 * clean-clone test run), and finds the table made (test/connectors/postgres/progress-table-race.test.ts).
 */
export async function ensureProgressTable(c: PgClient, o: ResolvedPostgresOptions): Promise<void> {
  for (const ddl of [progressTableDdl(o.progressTable), o.mode === 'two-phase' ? preparedLogDdl(o.progressTable) : committedLogDdl(o.progressTable)]) {
    try {
      await c.query(ddl);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (code !== '23505' && code !== '42P07' && code !== '42710') throw e;
    }
  }
}
