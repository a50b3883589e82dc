/**
 * Exactly-once PostgreSQL sink, in two modes.
 *
 * idempotent (default): a subtask's rows of a checkpoint interval are its committable (they go
 * into the checkpoint); when the checkpoint completes they are written in one transaction with
 * the subtask's progress row (job, operator, subtask) -> checkpoint, advanced only if behind.
 * A re-commit after a restore finds the progress row advanced and writes nothing.
 *
 * two-phase: at the barrier a subtask writes its rows and progress row in a transaction and
 * PREPAREs it (the checkpoint is acknowledged only once that is done); the committable is the
 * transaction id; at completion COMMIT PREPARED. After a restore the restored ids are
 * committed again (an id already committed is told apart by the progress row), and this job's
 * own prepared transactions that no restored checkpoint refers to are rolled back: only ids
 * with this job's and this operator's prefix, never another job's. Needs the server's
 * max_prepared_transactions > 0. Prepared transactions hold their locks until committed.
 */
import { WeirError } from '../../core/errors.ts';
import type { CommitScope, PrepareCommitOptions, SinkCommitter, SinkContext, SinkWriter, TwoPhaseCommitSink } from '../../core/sink.ts';
import { newestCommitted, operatorKey, ownsSubtask, type ProgressKey } from '../common/progress.ts';
import { carriedBy, commitPrepared, commitRows, commitSavepointRows, isPrepared, isPreparedOnServer, listPrepared, prepareRows, rollbackPrepared, type PostgresCommittable, type PreparedCommittable, type RowsCommittable } from './commit.ts';
import { close, connect, wrap } from './connection.ts';
import { resolvePostgresOptions, type PostgresSinkOptions, type ResolvedPostgresOptions } from './options.ts';
import { checkSchema, ensureProgressTable } from './schema.ts';
import { PgSession } from './session.ts';
import { gidFor, newestLogged, parseGid, readProgress } from './sql.ts';
import { TriedCheckpoints } from '../common/tried-checkpoints.ts';

export type { PostgresCommittable } from './commit.ts';

export class PostgresSink<T> implements TwoPhaseCommitSink<T, PostgresCommittable> {
  readonly name: string;
  readonly options: ResolvedPostgresOptions;
  private readonly toRow: (value: T) => readonly unknown[];
  /** Two-phase: per subtask, the cleanup of stale prepared transactions its writer waits for. */
  private readonly cleanups = new Map<number, Promise<void>>();
  /** Two-phase: prepares in flight in this process, by gid (a commit in the same process waits for its prepare). */
  readonly preparing = new Map<string, Promise<void>>();
  /** The start check, once per sink in this process. */
  private started: Promise<void> | undefined;

  get commitTimeoutMs(): number {
    return this.options.commitTimeoutMs;
  }

  constructor(options: PostgresSinkOptions<T>) {
    this.options = resolvePostgresOptions(options);
    this.name = `postgres ${this.options.tableText}`;
    const cols = this.options.columns;
    const table = this.options.tableText;
    this.toRow =
      options.toRow ??
      ((v: T) => {
        if (typeof v !== 'object' || v === null) throw new TypeError(`postgres sink table "${table}": a record must be an object with properties ${cols.join(', ')}`);
        const row = new Array<unknown>(cols.length);
        for (let i = 0; i < cols.length; i++) {
          const x = (v as Record<string, unknown>)[cols[i]!];
          if (x === undefined) throw new TypeError(`postgres sink table "${table}": record has no property "${cols[i]}" (use null for NULL)`);
          row[i] = x;
        }
        return row;
      });
  }

  /**
   * At start, before anything is written: the server is reachable (retried with backoff to the
   * deadline, then a CONNECTOR error naming host and port), the progress table exists, the
   * target table fits. Writers fail on their next call if it fails.
   */
  start(): Promise<void> {
    this.started ??= (async () => {
      const o = this.options;
      const c = await connect(o);
      try {
        await ensureProgressTable(c, o);
        await checkSchema(c, o);
      } catch (e) {
        throw wrap(e, o, 'start check');
      } finally {
        close(c);
      }
    })();
    return this.started;
  }

  key(ctx: SinkContext, sub = ctx.subtaskIndex): ProgressKey {
    return { job: this.options.jobId, operator: operatorKey(this.name, ctx), subtask: sub };
  }

  createWriter(ctx: SinkContext): SinkWriter<T, PostgresCommittable> {
    if (this.options.mode === 'idempotent') return new BufferingWriter<T>(this, ctx, this.toRow);
    let ready = this.cleanups.get(ctx.subtaskIndex);
    this.cleanups.delete(ctx.subtaskIndex);
    // A start from no checkpoint: every prepared transaction of this subtask is stale (none belongs to a completed checkpoint).
    if (ready === undefined && ctx.restoredCheckpointId === undefined) ready = this.rollBackStale(ctx, () => true);
    return new TwoPhaseWriter<T>(this, ctx, this.toRow, ready ?? Promise.resolve());
  }

  createCommitter(ctx: SinkContext): SinkCommitter<PostgresCommittable> {
    return new PostgresCommitter(this as PostgresSink<never>, ctx);
  }

  /** Two-phase: roll back this subtask's prepared transactions of checkpoints after the restored one, and any no checkpoint refers to. */
  recover(ctx: SinkContext, restoredId: number, _mine: readonly PostgresCommittable[], referenced: readonly PostgresCommittable[]): Promise<void> | undefined {
    const known = new Set(referenced.filter(isPrepared).map((c) => c.gid));
    if (this.options.mode !== 'two-phase' && known.size === 0) return undefined;
    const p = this.rollBackStale(ctx, (gid, chk) => chk > restoredId || !known.has(gid));
    this.cleanups.set(ctx.subtaskIndex, p);
    return p;
  }

  private async rollBackStale(ctx: SinkContext, stale: (gid: string, checkpointId: number) => boolean): Promise<void> {
    const o = this.options;
    const op = operatorKey(this.name, ctx);
    const c = await connect(o);
    try {
      const gids = await listPrepared(c, `weir:${o.jobId}:${op}:`);
      const gone: string[] = [];
      for (const gid of gids) {
        const g = parseGid(gid, o.jobId, op);
        if (g === undefined || !ownsSubtask(ctx, g.subtask) || !stale(gid, g.checkpointId)) continue;
        await rollbackPrepared(c, gid);
        gone.push(gid);
      }
      if (gone.length > 0) ctx.log(`weir: postgres sink ${o.tableText}: rolled back ${gone.length} stale prepared transaction(s) of job "${o.jobId}": ${gone.slice(0, 3).join(', ')}${gone.length > 3 ? ', ...' : ''}`);
    } catch (e) {
      throw wrap(e, o, 'rolling back stale prepared transactions');
    } finally {
      close(c);
    }
  }

  /** The jobId names this sink's progress records and prepared work (checked against every restored checkpoint). */
  identity(): string {
    return `jobId ${this.options.jobId}`;
  }

  /** The newest checkpoint any subtask of the operator committed (the start-up check against duplicate output). */
  lastCommittedCheckpoint(scope: CommitScope): Promise<number | undefined> {
    return newestCommitted(scope.parallelism, (subtask) => this.lastCommittedCheckpointOf(scope.operatorId, subtask));
  }

  /** The last checkpoint whose output `subtask` of this sink committed (from the progress table), or undefined. */
  async lastCommittedCheckpointOf(operatorId: string, subtask: number): Promise<number | undefined> {
    const o = this.options;
    const key = this.key({ operatorId } as SinkContext, subtask);
    const c = await connect(o);
    try {
      const r = await c.query<{ checkpoint: string }>(readProgress(o.progressTable), [key.job, key.operator, key.subtask]);
      const progress = r.rows[0] === undefined ? undefined : Number(r.rows[0].checkpoint);
      if (o.mode !== 'two-phase') return progress;
      // A COMMIT PREPARED makes its checkpoint's log row visible with its rows; the progress row
      // follows in a transaction of its own. A crash in between left progress one behind what
      // is visible, and a restore from there passed the check and wrote those rows again.
      const logged = await c.query<{ checkpoint: string | null }>(newestLogged(o.progressTable), [key.job, key.operator, key.subtask]).catch((e: unknown) => {
        if ((e as { code?: unknown }).code === '42P01') return { rows: [] }; // no log table: nothing prepared yet
        throw e;
      });
      const newest = logged.rows[0]?.checkpoint;
      return newest === undefined || newest === null ? progress : Math.max(progress ?? 0, Number(newest));
    } catch (e) {
      if ((e as { code?: unknown }).code === '42P01') return undefined; // no progress table: nothing committed yet
      throw wrap(e, o, 'reading progress');
    } finally {
      close(c);
    }
  }
}

/** Idempotent mode: rows wait in memory until the barrier, then travel in the checkpoint. */
class BufferingWriter<T> implements SinkWriter<T, PostgresCommittable> {
  private rows: unknown[][] = [];
  private failed: unknown;

  constructor(private readonly sink: PostgresSink<T>, private readonly ctx: SinkContext, private readonly toRow: (v: T) => readonly unknown[]) {
    sink.start().catch((e) => (this.failed ??= e));
  }

  write(values: readonly T[]): void {
    if (this.failed !== undefined) throw this.failed;
    const max = this.sink.options.maxBufferedRows;
    if (this.rows.length + values.length > max) throw tooMany(this.sink.options);
    for (let i = 0; i < values.length; i++) this.rows.push(this.toRow(values[i]!) as unknown[]);
  }

  prepareCommit(checkpointId: number): PostgresCommittable[] {
    if (this.failed !== undefined) throw this.failed;
    const rows = this.rows;
    this.rows = [];
    // Even with no rows: the progress row then says which checkpoint the subtask has committed.
    return [{ sub: this.ctx.subtaskIndex, chk: checkpointId, rows }];
  }
}

function tooMany(o: ResolvedPostgresOptions): WeirError {
  return new WeirError('CONFIG', `postgres sink table "${o.tableText}": more than maxBufferedRows (${o.maxBufferedRows}) rows between two checkpoints; checkpoint more often or raise maxBufferedRows`);
}

/** Two-phase mode: at the barrier the interval's rows are written and prepared on this writer's own connection. */
class TwoPhaseWriter<T> implements SinkWriter<T, PostgresCommittable> {
  private rows: unknown[][] = [];
  private readonly session: PgSession;
  /** Prepares run one after another on the one connection, after the stale cleanup. */
  private chain: Promise<void>;
  private readonly inFlight = new Map<number, Promise<void>>();
  private failed: unknown;
  /** Set by close(): a prepare still queued then is not started (see close). */
  private closed = false;

  constructor(private readonly sink: PostgresSink<T>, private readonly ctx: SinkContext, private readonly toRow: (v: T) => readonly unknown[], ready: Promise<void>) {
    this.session = new PgSession(sink.options, true, ctx.signal);
    this.chain = ready.then(() => sink.start());
    this.chain.catch((e) => (this.failed ??= e));
  }

  private rethrow(): void {
    if (this.failed !== undefined) throw this.failed;
  }

  write(values: readonly T[]): void {
    this.rethrow();
    if (this.rows.length + values.length > this.sink.options.maxBufferedRows) throw tooMany(this.sink.options);
    for (let i = 0; i < values.length; i++) this.rows.push(this.toRow(values[i]!) as unknown[]);
  }

  prepareCommit(checkpointId: number, options?: PrepareCommitOptions): PostgresCommittable[] {
    this.rethrow();
    if (options?.savepoint === true) return [this.savepointRows(checkpointId)];
    const rows = this.rows;
    const carries = this.savepoints;
    this.rows = [];
    this.savedUpTo = 0;
    this.savepoints = [];
    const key = this.sink.key(this.ctx);
    const gid = gidFor(key.job, key.operator, key.subtask, checkpointId);
    const o = this.sink.options;
    const p = this.chain.then(() => {
      if (this.closed) throw new WeirError('CONNECTOR', `postgres sink table "${o.tableText}": the prepare of checkpoint ${checkpointId} was not started, the writer is closed`);
      return this.session.run('preparing a transaction', async (c, attempt) => {
        // A retry after a lost connection: the PREPARE may have gone through with its answer lost.
        if (attempt > 0 && (await isPreparedOnServer(c, gid))) return;
        await prepareRows(c, o, key, checkpointId, gid, rows);
      });
    });
    // A failed prepare loses the rows it held: the writer fails the task at its next call.
    p.catch((e) => (this.failed ??= e));
    this.chain = p.catch(() => {});
    this.inFlight.set(checkpointId, p);
    this.sink.preparing.set(gid, p);
    void p.catch(() => {}).finally(() => this.sink.preparing.delete(gid));
    const out: PreparedCommittable = carries.length > 0 ? { sub: key.subtask, chk: checkpointId, gid, carries } : { sub: key.subtask, chk: checkpointId, gid };
    return [out];
  }

  /** Rows of `rows` before this index went into a savepoint's committable already (they are carried, not handed over twice). */
  private savedUpTo = 0;
  /** The savepoints since the last prepare whose rows `rows` holds: the next prepared transaction carries them. */
  private savepoints: number[] = [];

  /**
   * At a savepoint that does not stop the job: nothing is prepared. A savepoint is committed only
   * with the next checkpoint, so its prepared transaction held its row locks until then, and that
   * checkpoint's prepare of the same rows (an upsert by keyColumns) waited for them: no checkpoint
   * completed after a savepoint until the prepare failed (about 60 s) and the job restarted from
   * the checkpoint before it, rolling the savepoint's transaction back. Instead its rows since the
   * last savepoint go into the savepoint as data, for a restore from it to write
   * (commitSavepointRows), and stay in the writer: the next prepare carries them, and the commit
   * that has both leaves the savepoint's out (carriedBy).
   */
  private savepointRows(checkpointId: number): RowsCommittable {
    const rows = this.rows.slice(this.savedUpTo);
    this.savedUpTo = this.rows.length;
    this.savepoints.push(checkpointId);
    return { sub: this.ctx.subtaskIndex, chk: checkpointId, rows, savepoint: true };
  }

  whenPrepared(checkpointId: number): Promise<void> | undefined {
    const p = this.inFlight.get(checkpointId);
    this.inFlight.delete(checkpointId);
    return p;
  }

  /**
   * A cancelled or failed task's writer: the prepares still queued are not started (their
   * checkpoints were never acknowledged, an acknowledgement waits for its prepare; the restore
   * writes their rows again), and the promise resolves once the prepare under way has ended.
   * Before, they went on after the job was reported stopped, and a prepared transaction could
   * appear after the restore's cleanup of stale ones, holding its rows' locks.
   */
  close(): Promise<void> {
    this.closed = true;
    return this.chain.finally(() => this.session.close());
  }
}

class PostgresCommitter implements SinkCommitter<PostgresCommittable> {
  private readonly session: PgSession;
  private readonly tried = new TriedCheckpoints();
  private readonly freshRun: boolean;

  constructor(private readonly sink: PostgresSink<never>, private readonly ctx: SinkContext) {
    this.session = new PgSession(sink.options, sink.options.mode === 'idempotent', ctx.signal);
    this.freshRun = ctx.restoredCheckpointId === undefined;
  }

  async commit(list: readonly PostgresCommittable[]): Promise<void> {
    const o = this.sink.options;
    for (const item of list) {
      const key = this.sink.key(this.ctx, item.sub);
      if (isPrepared(item)) {
        await this.sink.preparing.get(item.gid);
        await this.session.run('committing a prepared transaction', (c) => commitPrepared(c, o, key, item));
        continue;
      }
      if (item.savepoint === true) {
        // A later prepared transaction of the same writer in this commit holds these rows too.
        if (carriedBy(item, list)) continue;
        const tried = this.tried.tryOnce(item.sub, item.chk);
        await this.session.run('committing a savepoint\'s rows', (c, attempt) => commitSavepointRows(c, o, key, item, this.freshRun, tried || attempt > 0));
        continue;
      }
      const triedBefore = this.tried.tryOnce(item.sub, item.chk);
      // A retry (attempt > 0) may follow a COMMIT that went through with its answer lost.
      await this.session.run('committing', (c, attempt) => commitRows(c, o, key, item, this.freshRun, triedBefore || attempt > 0));
    }
  }

  close(): void {
    this.session.close();
  }
}
