/**
 * The transactions of the PostgreSQL sink, one function each, on a connected client. The
 * decisions (skip, commit, fail) are pure functions of what the server answered.
 */
import { WeirError } from '../../core/errors.ts';
import { foreignProgressError, type ProgressKey } from '../common/progress.ts';
import type { PgClient } from './connection.ts';
import type { ResolvedPostgresOptions } from './options.ts';
import { advanceProgress, gidLiteral, logPrepared, pruneLog, readLogged, readProgress, writeStatements, type WriteShape } from './sql.ts';

/** Rows of one subtask's checkpoint, written at completion (idempotent mode). */
export interface RowsCommittable {
  /** Subtask that wrote them (the progress row's key, also after a rescale). */
  readonly sub: number;
  readonly chk: number;
  readonly rows: unknown[][];
}

/** A prepared transaction of one subtask's checkpoint (two-phase mode). */
export interface PreparedCommittable {
  readonly sub: number;
  readonly chk: number;
  readonly gid: string;
}

export type PostgresCommittable = RowsCommittable | PreparedCommittable;

export function isPrepared(c: PostgresCommittable): c is PreparedCommittable {
  return typeof (c as PreparedCommittable).gid === 'string';
}

export function shapeOf(o: ResolvedPostgresOptions): WriteShape {
  return { table: o.table, columns: o.columns, keyColumns: o.keyColumns, rowsPerStatement: o.rowsPerStatement };
}

/**
 * The guard did not advance the progress row: `committed` is what it holds. Skipping is right
 * when this subtask committed that checkpoint itself (a retry or a re-commit after a restore);
 * a run that started from no checkpoint and never tried it met another run's progress.
 */
export function onGuardRefused(committed: number | undefined, chk: number, freshRun: boolean, triedBefore: boolean): 'skip' | 'foreign' {
  if (committed !== undefined && committed >= chk && (!freshRun || triedBefore)) return 'skip';
  return 'foreign';
}

async function advance(c: PgClient, o: ResolvedPostgresOptions, key: ProgressKey, chk: number): Promise<{ advanced: boolean; committed: number | undefined }> {
  const r = await c.query(advanceProgress(o.progressTable), [key.job, key.operator, key.subtask, chk]);
  if ((r.rowCount ?? 0) > 0) return { advanced: true, committed: chk };
  const p = await c.query<{ checkpoint: string }>(readProgress(o.progressTable), [key.job, key.operator, key.subtask]);
  return { advanced: false, committed: p.rows[0] === undefined ? undefined : Number(p.rows[0].checkpoint) };
}

/** Idempotent mode: rows and the progress row in one transaction, unless the progress row says it is done. */
export async function commitRows(c: PgClient, o: ResolvedPostgresOptions, key: ProgressKey, item: RowsCommittable, freshRun: boolean, triedBefore: boolean): Promise<'written' | 'skipped'> {
  await c.query('BEGIN');
  try {
    const g = await advance(c, o, key, item.chk);
    if (!g.advanced) {
      await c.query('ROLLBACK');
      if (onGuardRefused(g.committed, item.chk, freshRun, triedBefore) === 'foreign') throw foreignProgressError('postgres sink', `progress table "${o.progressTable.schema}.${o.progressTable.name}"`, key, g.committed ?? -1, item.chk);
      return 'skipped';
    }
    for (const s of writeStatements(shapeOf(o), item.rows)) await c.query(s.text, s.values);
    await c.query('COMMIT');
    return 'written';
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

/**
 * Two-phase mode, at the barrier: rows and a log row of this checkpoint in a transaction,
 * prepared under `gid`. A progress row already at or past the checkpoint means another run
 * (with this jobId) committed there: refused.
 */
export async function prepareRows(c: PgClient, o: ResolvedPostgresOptions, key: ProgressKey, chk: number, gid: string, rows: readonly unknown[][]): Promise<void> {
  const committed = await readCommitted(c, o, key);
  if (committed !== undefined && committed >= chk) throw foreignProgressError('postgres sink', `progress table "${o.progressTable.schema}.${o.progressTable.name}"`, key, committed, chk);
  await c.query('BEGIN');
  try {
    await c.query(logPrepared(o.progressTable), [key.job, key.operator, key.subtask, chk]);
    for (const s of writeStatements(shapeOf(o), rows)) await c.query(s.text, s.values);
    await c.query(`PREPARE TRANSACTION ${gidLiteral(gid)}`);
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

async function readCommitted(c: PgClient, o: ResolvedPostgresOptions, key: ProgressKey): Promise<number | undefined> {
  const p = await c.query<{ checkpoint: string }>(readProgress(o.progressTable), [key.job, key.operator, key.subtask]);
  return p.rows[0] === undefined ? undefined : Number(p.rows[0].checkpoint);
}

export async function isPreparedOnServer(c: PgClient, gid: string): Promise<boolean> {
  const r = await c.query('SELECT 1 FROM pg_prepared_xacts WHERE gid = $1 AND database = current_database()', [gid]);
  return (r.rowCount ?? 0) > 0;
}

/**
 * Two-phase mode, at completion: COMMIT PREPARED, then the progress row advanced and the log
 * rows it covers deleted. A gid that is gone (42704) was committed before if its log row (part
 * of the prepared transaction) exists or the progress row has reached its checkpoint; if
 * neither, its output is lost, and the job fails saying so.
 */
export async function commitPrepared(c: PgClient, o: ResolvedPostgresOptions, key: ProgressKey, item: PreparedCommittable): Promise<'committed' | 'already'> {
  let outcome: 'committed' | 'already' = 'committed';
  try {
    await c.query(`COMMIT PREPARED ${gidLiteral(item.gid)}`);
  } catch (e) {
    if ((e as { code?: unknown }).code !== '42704') throw e;
    outcome = 'already';
    const logged = await c.query(readLogged(o.progressTable), [key.job, key.operator, key.subtask, item.chk]);
    if ((logged.rowCount ?? 0) === 0) {
      const committed = await readCommitted(c, o, key);
      if (committed === undefined || committed < item.chk) {
        throw new WeirError('CONNECTOR', `postgres sink table "${o.tableText}": prepared transaction ${item.gid} of a completed checkpoint is gone and was never committed (progress: ${committed ?? 'none'}); its rows are lost`);
      }
      return outcome;
    }
  }
  await c.query('BEGIN');
  try {
    await c.query(advanceProgress(o.progressTable), [key.job, key.operator, key.subtask, item.chk]);
    await c.query(pruneLog(o.progressTable), [key.job, key.operator, key.subtask, item.chk]);
    await c.query('COMMIT');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
  return outcome;
}

export async function rollbackPrepared(c: PgClient, gid: string): Promise<void> {
  try {
    await c.query(`ROLLBACK PREPARED ${gidLiteral(gid)}`);
  } catch (e) {
    if ((e as { code?: unknown }).code !== '42704') throw e; // gone already: someone finished it
  }
}

export async function listPrepared(c: PgClient, prefix: string): Promise<string[]> {
  const r = await c.query<{ gid: string }>('SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1) ORDER BY gid', [prefix]);
  return r.rows.map((x) => x.gid);
}
