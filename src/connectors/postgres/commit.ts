/**
 * The transactions of the PostgreSQL sink, one function each, on a connected client. The
 * decisions (skip, commit, fail) are pure functions of what the server answered.
 */
import { WeirError } from '../../core/errors.ts';
import { foreignProgressError, type ProgressKey } from '../common/progress.ts';
import { isTransient, type PgClient } from './connection.ts';
import type { ResolvedPostgresOptions } from './options.ts';
import { advanceProgress, COMMITTED_LOG_KEEP, gidLiteral, logCommitted, logPrepared, pruneCommitted, pruneLog, raiseProgress, readLogged, readProgress, writeStatements, type WriteShape } from './sql.ts';

/**
 * Rows of one subtask's checkpoint, written at completion (idempotent mode); in two-phase mode,
 * the rows of an intermediate savepoint (`savepoint`), which the writer also carries into its
 * next prepared transaction (see carriedBy).
 */
export interface RowsCommittable {
  /** Subtask that wrote them (the progress row's key, also after a rescale). */
  readonly sub: number;
  readonly chk: number;
  readonly rows: unknown[][];
  readonly savepoint?: true;
}

/** A prepared transaction of one subtask's checkpoint (two-phase mode). */
export interface PreparedCommittable {
  readonly sub: number;
  readonly chk: number;
  readonly gid: string;
  /**
   * The intermediate savepoints whose rows this transaction holds too (the writer kept them and
   * prepared them here: carriedBy). Absent in committables of older checkpoints: none.
   */
  readonly carries?: readonly number[];
}

export type PostgresCommittable = RowsCommittable | PreparedCommittable;

export function isPrepared(c: PostgresCommittable): c is PreparedCommittable {
  return typeof (c as PreparedCommittable).gid === 'string';
}

export function shapeOf(o: ResolvedPostgresOptions): WriteShape {
  return { table: o.table, columns: o.columns, keyColumns: o.keyColumns, rowsPerStatement: o.rowsPerStatement };
}

/**
 * Before writing a checkpoint's rows: `committed` is the subtask's progress row, `logged`
 * whether the checkpoint's log row was there already (undefined: not looked up). Skip what
 * was committed: logged, or too far behind the progress row for the log to keep. A run that
 * started from no checkpoint and never tried this one, meeting a progress row at or past it,
 * met another run's progress: refused.
 */
export function decideRowsCommit(committed: number | undefined, chk: number, freshRun: boolean, triedBefore: boolean, logged: boolean | undefined): RowsDecision {
  if (freshRun && !triedBefore && committed !== undefined && committed >= chk) return 'foreign';
  if (committed !== undefined && chk <= committed - COMMITTED_LOG_KEEP) return 'skip';
  if (logged === true) return 'skip';
  return 'write';
}

/**
 * Idempotent mode: the checkpoint's log row, its rows and the raised progress row in one
 * transaction; nothing if the log row was there. The log row's key lock makes a concurrent
 * commit of the same checkpoint wait, then find it.
 */
/**
 * Ends a transaction after `e`. After a timeout or a broken connection the session drops the
 * client (the server rolls back what it had): a ROLLBACK then queued behind the stalled
 * statement and waited a whole query timeout more, using up the retry deadline on one try.
 */
async function rollBack(c: PgClient, e: unknown): Promise<void> {
  if (isTransient(e)) return;
  await c.query('ROLLBACK').catch(() => {});
}

type RowsDecision = 'write' | 'skip' | 'foreign';
type ProgressArgs = readonly unknown[];

/**
 * One transaction that writes a committable's rows at most once: `claim` decides from the
 * progress read (and records the claim in its log, whose key makes a concurrent commit of the
 * same checkpoint wait, then find it); `settle` advances the progress after the rows. Skipped
 * or refused, the transaction is rolled back.
 */
async function writeRowsOnce(
  c: PgClient, o: ResolvedPostgresOptions, key: ProgressKey, item: RowsCommittable,
  claim: (committed: number | undefined, args: ProgressArgs) => Promise<RowsDecision>, settle: (args: ProgressArgs) => Promise<void>,
): Promise<'written' | 'skipped'> {
  const args = [key.job, key.operator, key.subtask];
  await c.query('BEGIN');
  try {
    const committed = await readCommitted(c, o, key);
    const d = await claim(committed, args);
    if (d !== 'write') {
      await c.query('ROLLBACK');
      if (d === 'foreign') throw foreignProgressError('postgres sink', `progress table "${o.progressTable.schema}.${o.progressTable.name}"`, key, committed ?? -1, item.chk);
      return 'skipped';
    }
    for (const s of writeStatements(shapeOf(o), item.rows)) await c.query(s.text, s.values);
    await settle(args);
    await c.query('COMMIT');
    return 'written';
  } catch (e) {
    await rollBack(c, e);
    throw e;
  }
}

export function commitRows(c: PgClient, o: ResolvedPostgresOptions, key: ProgressKey, item: RowsCommittable, freshRun: boolean, triedBefore: boolean): Promise<'written' | 'skipped'> {
  return writeRowsOnce(c, o, key, item, async (committed, args) => {
    const d = decideRowsCommit(committed, item.chk, freshRun, triedBefore, undefined);
    if (d !== 'write') return d;
    const r = await c.query(logCommitted(o.progressTable), [...args, item.chk]);
    return decideRowsCommit(committed, item.chk, freshRun, triedBefore, (r.rowCount ?? 0) === 0);
  }, async (args) => {
    await c.query(raiseProgress(o.progressTable), [...args, item.chk]);
    await c.query(pruneCommitted(o.progressTable), [...args, item.chk - COMMITTED_LOG_KEEP]);
  });
}

/**
 * Two-phase mode: whether a savepoint's rows are carried by a prepared transaction in the same
 * commit (`list`): the writer keeps a savepoint's rows and prepares them with its next
 * checkpoint's, and that transaction names the savepoint (`carries`). Named, not inferred from
 * the subtask and a later id: a job restored from the savepoint commits its rows at the start,
 * and a checkpoint taken before that commit finished holds them beside the new writer's own
 * prepared transaction, of the same subtask index, which does not hold them (skipped there, a
 * restore from that checkpoint lost them). Both are in one commit: the ledger hands a
 * checkpoint's committables out with every earlier one not yet handed out, and a restore's
 * re-commit has all the restored ones. A savepoint's rows not carried (a restore from the
 * savepoint, or its own commit at the end) are written by commitSavepointRows.
 */
export function carriedBy(item: RowsCommittable, list: readonly PostgresCommittable[]): boolean {
  return list.some((c) => isPrepared(c) && c.sub === item.sub && c.carries?.includes(item.chk) === true);
}

/**
 * Two-phase mode, a savepoint's rows not carried by a prepared transaction: written in one
 * transaction with the checkpoint's row in the prepared log (its key lock makes a concurrent
 * commit of the same savepoint wait, then find it) and the progress row advanced, as a COMMIT
 * PREPARED and its progress update would leave them. Nothing when the log row is there or the
 * progress row has reached the savepoint (committed before); a run that started from no
 * checkpoint and never tried it, meeting such progress, met another run's: refused.
 */
export function commitSavepointRows(c: PgClient, o: ResolvedPostgresOptions, key: ProgressKey, item: RowsCommittable, freshRun: boolean, triedBefore: boolean): Promise<'written' | 'skipped'> {
  return writeRowsOnce(c, o, key, item, async (committed, args) => {
    const d = decideRowsCommit(committed, item.chk, freshRun, triedBefore, committed !== undefined && committed >= item.chk);
    if (d !== 'write') return d;
    const r = await c.query(`${logPrepared(o.progressTable)} ON CONFLICT DO NOTHING RETURNING 1`, [...args, item.chk]);
    return (r.rowCount ?? 0) === 0 ? 'skip' : 'write';
  }, async (args) => {
    await c.query(advanceProgress(o.progressTable), [...args, item.chk]);
    await c.query(pruneLog(o.progressTable), [...args, item.chk]);
  });
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
    await rollBack(c, e);
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
    await rollBack(c, e);
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
