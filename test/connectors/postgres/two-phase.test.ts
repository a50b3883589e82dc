/**
 * PostgreSQL sink, two-phase mode, on a private cluster with max_prepared_transactions = 16
 * (started on a free port, stopped after): PREPARE at the barrier (rows invisible, the ack
 * waits for it), COMMIT PREPARED at completion, re-commit after a restore, and on restore
 * only this job's own stale prepared transactions are rolled back, never another job's.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../../../src/core/errors.ts';
import { PostgresSink, type PostgresCommittable } from '../../../src/connectors/postgres/index.ts';
import { sinkCtx, sql, startCluster, type Cluster } from './helpers.ts';
import { decideCommittedOutput } from '../../../src/cluster/committed-output.ts';

interface Row { id: number; name: string }
const ts = (n: number) => new Array<number>(n).fill(0);
let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster();
  await sql(cluster.url, 'CREATE TABLE out2pc (id integer PRIMARY KEY, name text)');
}, 180_000);
afterAll(() => cluster?.stop(), 60_000);

const rows = (from: number, n: number): Row[] => Array.from({ length: n }, (_, i) => ({ id: from + i, name: `r${from + i}` }));
const count = async () => (await sql<{ n: number }>(cluster.url, 'SELECT count(*)::int AS n FROM out2pc'))[0]!.n;
const prepared = async () => (await sql<{ gid: string }>(cluster.url, 'SELECT gid FROM pg_prepared_xacts ORDER BY gid')).map((r) => r.gid);
const failure = (p: unknown): Promise<unknown> => Promise.resolve(p).then(() => undefined, (x: unknown) => x);

/** Whether `query` (on pg_stat_activity) returns a row within 5 s: the premise of a test that another session waits. */
async function seenWithin5s(query: string, values: unknown[] = []): Promise<boolean> {
  for (let k = 0; k < 100; k++) {
    if ((await sql(cluster.url, query, values)).length > 0) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/**
 * Another session holding row 0's lock (the table emptied, row 0 inserted, then locked in an open
 * transaction): a prepare that upserts row 0 waits for it. The caller ends the session.
 */
async function holdRow0(): Promise<pg.Client> {
  await sql(cluster.url, 'TRUNCATE out2pc');
  await sql(cluster.url, "INSERT INTO out2pc VALUES (0, 'held')");
  const holder = new pg.Client({ connectionString: cluster.url });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT * FROM out2pc WHERE id = 0 FOR UPDATE');
  return holder;
}

function sink(jobId: string) {
  return new PostgresSink<Row>({ connection: cluster.url, table: 'out2pc', columns: ['id', 'name'], keyColumns: ['id'], jobId, mode: 'two-phase' });
}

describe('postgres sink (two-phase)', () => {
  it('prepares at the barrier (the ack waits for it), commits prepared at completion, and a re-commit after a restore is a no-op', async () => {
    await sql(cluster.url, 'TRUNCATE out2pc');
    const s = sink('tp1');
    const w = s.createWriter(sinkCtx());
    const c = s.createCommitter(sinkCtx());
    w.write(rows(0, 500), ts(500));
    const first = w.prepareCommit(1);
    expect(first).toEqual([{ sub: 0, chk: 1, gid: 'weir:tp1:sink:0:1' }]);
    await w.whenPrepared!(1);
    expect(await prepared()).toEqual(['weir:tp1:sink:0:1']);
    expect(await count()).toBe(0);
    await c.commit(first);
    expect(await prepared()).toEqual([]);
    expect(await count()).toBe(500);
    expect(await s.lastCommittedCheckpointOf('sink', 0)).toBe(1);
    // A restore from checkpoint 1 commits its committable again: gone on the server, the progress row says committed.
    const c2 = s.createCommitter(sinkCtx({ restoredCheckpointId: 1, attemptNumber: 1 }));
    await c2.commit(first);
    expect(await count()).toBe(500);
    w.close?.();
    await c.close?.();
    await c2.close?.();
  });

  it('the last committed checkpoint counts a COMMIT PREPARED whose progress row did not follow (a crash between them): a restore from before it is refused, not written twice', async () => {
    await sql(cluster.url, 'TRUNCATE out2pc');
    const s = sink('tp-lag');
    const w = s.createWriter(sinkCtx());
    const c = s.createCommitter(sinkCtx());
    w.write(rows(0, 10), ts(10));
    const first = w.prepareCommit(1);
    await w.whenPrepared!(1);
    await c.commit(first);
    w.write(rows(10, 10), ts(10));
    const second = w.prepareCommit(2);
    await w.whenPrepared!(2);
    // The committer's first statement, then the crash: rows visible, progress still at 1.
    await sql(cluster.url, `COMMIT PREPARED '${(second[0] as { gid: string }).gid}'`);
    expect(await count()).toBe(20);
    expect(await s.lastCommittedCheckpointOf('sink', 0)).toBe(2); // before: 1, and a restore from 1 passed the check
    expect(decideCommittedOutput('pg', await s.lastCommittedCheckpoint({ operatorId: 'sink', parallelism: 1 }), 1, false).type).toBe('refuse');
    w.close?.();
    await c.close?.();
  });

  it('on restore: commits the restored prepared transaction, rolls back its own later ones, leaves other jobs\' alone', async () => {
    await sql(cluster.url, 'TRUNCATE out2pc');
    const s = sink('tp2');
    const w = s.createWriter(sinkCtx());
    w.write(rows(1000, 10), ts(10));
    const at3 = w.prepareCommit(3);
    await w.whenPrepared!(3);
    w.write(rows(2000, 10), ts(10));
    w.prepareCommit(4); // checkpoint 4 never completes: the process "dies" here
    await w.whenPrepared!(4);
    w.close?.();
    // Another job's prepared transaction, and one of some other application, on the same server.
    const other = sink('tp2other');
    const ow = other.createWriter(sinkCtx());
    ow.write(rows(3000, 5), ts(5));
    ow.prepareCommit(9);
    await ow.whenPrepared!(9);
    ow.close?.();
    await sql(cluster.url, "BEGIN; INSERT INTO out2pc VALUES (4000, 'foreign'); PREPARE TRANSACTION 'someone-else'");
    expect(await prepared()).toEqual(['someone-else', 'weir:tp2:sink:0:3', 'weir:tp2:sink:0:4', 'weir:tp2other:sink:0:9']);

    // Restore from checkpoint 3: the operator re-commits 3, then calls recover.
    const logged: string[] = [];
    const ctx = sinkCtx({ restoredCheckpointId: 3, attemptNumber: 1 }, logged);
    const s2 = sink('tp2');
    const c = s2.createCommitter(ctx);
    await c.commit(at3);
    await s2.recover(ctx, 3, at3, at3);
    expect(await prepared()).toEqual(['someone-else', 'weir:tp2other:sink:0:9']);
    expect(logged.join('\n')).toContain('rolled back 1 stale prepared transaction(s) of job "tp2": weir:tp2:sink:0:4');
    expect((await sql<{ id: number }>(cluster.url, 'SELECT id FROM out2pc ORDER BY id')).map((r) => r.id)).toEqual(rows(1000, 10).map((r) => r.id));
    // The new attempt's writer prepares checkpoint 4 again after the cleanup, under the same id.
    const w2 = s2.createWriter(ctx);
    w2.write(rows(5000, 3), ts(3));
    const again = w2.prepareCommit(4);
    await w2.whenPrepared!(4);
    await c.commit(again);
    expect(await count()).toBe(13);
    w2.close?.();
    await c.close?.();
    await sql(cluster.url, "ROLLBACK PREPARED 'someone-else'");
    await sql(cluster.url, "ROLLBACK PREPARED 'weir:tp2other:sink:0:9'");
  });

  it('a start from no checkpoint rolls back the subtask\'s own leftovers; a completed checkpoint whose prepared transaction vanished fails loudly', async () => {
    await sql(cluster.url, 'TRUNCATE out2pc');
    const s = sink('tp3');
    const w = s.createWriter(sinkCtx());
    w.write(rows(0, 4), ts(4));
    w.prepareCommit(1);
    await w.whenPrepared!(1);
    w.close?.();
    expect(await prepared()).toEqual(['weir:tp3:sink:0:1']);
    const fresh = sink('tp3').createWriter(sinkCtx({ attemptNumber: 1 }));
    fresh.write(rows(10, 2), ts(2));
    const c1 = fresh.prepareCommit(1);
    await fresh.whenPrepared!(1);
    expect(await prepared()).toEqual(['weir:tp3:sink:0:1']); // the new one, same id
    const c = s.createCommitter(sinkCtx());
    await c.commit(c1);
    expect((await sql<{ id: number }>(cluster.url, 'SELECT id FROM out2pc ORDER BY id')).map((r) => r.id)).toEqual([10, 11]);
    // A committable whose transaction is not there and whose checkpoint the progress row never reached.
    const lost: PostgresCommittable = { sub: 0, chk: 7, gid: 'weir:tp3:sink:0:7' };
    const e = await failure(c.commit([lost]));
    expect(errorCode(e)).toBe('CONNECTOR');
    expect(String((e as Error).message)).toContain('prepared transaction weir:tp3:sink:0:7 of a completed checkpoint is gone and was never committed');
    fresh.close?.();
    await c.close?.();
  });
});

describe('postgres sink (two-phase): COMMIT PREPARED finds its transaction busy', () => {
  it('is retried until the other session is done with it (before: 55000 "is busy" was not transient, and the commit of a completed checkpoint failed the job)', async () => {
    // Another session's COMMIT PREPARED of the same gid holds the prepared transaction locked
    // while it waits for a synchronous standby that never comes (as the first try of a commit
    // whose answer was lost can still be under way on a slow server). Every other session
    // commits with synchronous_commit = local, so nothing else waits.
    await sql(cluster.url, 'TRUNCATE out2pc');
    await sql(cluster.url, 'ALTER DATABASE postgres SET synchronous_commit = local');
    const holder = new pg.Client({ connectionString: cluster.url });
    await holder.connect();
    const s = sink('tp-busy');
    const w = s.createWriter(sinkCtx());
    const c = s.createCommitter(sinkCtx());
    try {
      w.write(rows(0, 100), ts(100));
      const first = w.prepareCommit(1);
      await w.whenPrepared!(1);
      await sql(cluster.url, "ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
      await sql(cluster.url, 'SELECT pg_reload_conf()');
      await holder.query('SET synchronous_commit = on');
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const held = holder.query("COMMIT PREPARED 'weir:tp-busy:sink:0:1'");
      expect(await seenWithin5s("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep'", [holderPid]), 'the premise: the other session holds the transaction').toBe(true);
      let settled: string | undefined;
      const committing = Promise.resolve(c.commit(first)).then(() => { settled = 'committed'; }, (e: Error) => { settled = e.message; });
      await new Promise((r) => setTimeout(r, 800));
      expect(settled, 'still retrying while the transaction is busy').toBeUndefined();
      await sql(cluster.url, 'SELECT pg_cancel_backend($1)', [holderPid]); // its commit is done locally; the wait ends
      await held;
      await committing;
      expect(settled).toBe('committed');
      expect(await count()).toBe(100);
      expect(await prepared()).toEqual([]);
      expect(await s.lastCommittedCheckpointOf('sink', 0)).toBe(1);
    } finally {
      await sql(cluster.url, 'ALTER SYSTEM RESET synchronous_standby_names');
      await sql(cluster.url, 'SELECT pg_reload_conf()');
      await sql(cluster.url, 'ALTER DATABASE postgres RESET synchronous_commit');
      await holder.end();
      w.close?.();
      await c.close?.();
    }
  });
});

describe('postgres sink (two-phase): a closed writer', () => {
  it('starts no queued prepare, and close resolves once the prepare under way has ended (before: the queued prepare ran after the cancel, a prepared transaction appearing after the job was reported stopped)', async () => {
    // Another session holds row 0's lock: the prepare of checkpoint 1 (an upsert of row 0) waits for it.
    const holder = await holdRow0();
    const s = sink('tp-close');
    const w = s.createWriter(sinkCtx());
    try {
      w.write(rows(0, 10), ts(10));
      w.prepareCommit(1);
      const first = w.whenPrepared!(1)!.then(() => 'prepared', (e: Error) => e.message);
      w.write(rows(100, 10), ts(10));
      w.prepareCommit(2); // queued behind checkpoint 1's
      const second = w.whenPrepared!(2)!.then(() => 'prepared', (e: Error) => e.message);
      expect(await seenWithin5s("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%'"), 'the premise: the prepare of checkpoint 1 waits for the row lock').toBe(true);
      let closed = false;
      const closing = Promise.resolve(w.close?.()).then(() => { closed = true; });
      await new Promise((r) => setTimeout(r, 300));
      expect(closed, 'close waits for the prepare under way').toBe(false);
      await holder.query('ROLLBACK');
      await closing;
      expect(await first).toBe('prepared');
      expect(await second).toMatch(/prepare of checkpoint 2 was not started, the writer is closed/);
      await new Promise((r) => setTimeout(r, 300));
      expect(await prepared()).toEqual(['weir:tp-close:sink:0:1']);
    } finally {
      await holder.end();
      await sql(cluster.url, "ROLLBACK PREPARED 'weir:tp-close:sink:0:1'").catch(() => undefined);
    }
  });

  it('the task\'s signal stops a prepare stuck on a lock: close resolves, and no prepared transaction appears once the lock is released (before: the prepare went on after the cancel gave up waiting, and was prepared then)', async () => {
    const holder = await holdRow0();
    const ac = new AbortController();
    const s = sink('tp-abort');
    const w = s.createWriter(sinkCtx({ signal: ac.signal }));
    try {
      w.write(rows(0, 10), ts(10));
      w.prepareCommit(1);
      const first = w.whenPrepared!(1)!.then(() => 'prepared', (e: Error) => e.message);
      expect(await seenWithin5s("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%'"), 'the premise: the prepare of checkpoint 1 waits for the row lock').toBe(true);
      let closed = false;
      const closing = Promise.resolve(w.close?.()).then(() => { closed = true; });
      ac.abort(); // what the commit sink does SINK_IO_ABORT_MS after a cancel
      for (let k = 0; k < 100 && !closed; k++) await new Promise((r) => setTimeout(r, 20));
      expect(closed, 'close resolved while the lock is still held').toBe(true);
      await closing;
      expect(await first).toMatch(/stopped: its task was cancelled or failed/);
      await holder.query('ROLLBACK');
      // The stopped session's backend (if it outlived its socket) finishes or rolls back now.
      expect(await seenWithin5s("SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE query LIKE 'INSERT INTO%' AND state <> 'idle')"), 'the stopped insert is gone').toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      expect(await prepared()).toEqual([]);
      expect(await count()).toBe(1);
    } finally {
      await holder.end();
      await sql(cluster.url, "ROLLBACK PREPARED 'weir:tp-abort:sink:0:1'").catch(() => undefined);
    }
  });
});
