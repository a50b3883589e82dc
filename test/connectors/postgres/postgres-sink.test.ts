/**
 * PostgreSQL sink, idempotent mode, against the real server at 127.0.0.1:5432 (database test):
 * commit at completion with the progress row, re-commit writing nothing twice, upsert by key,
 * schema mismatch named, another run's progress refused, a connection killed mid-commit
 * retried, an unreachable server failing in bounded time with host and port named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../../../src/core/errors.ts';
import { PostgresSink, type PostgresCommittable } from '../../../src/connectors/postgres/index.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { freePort, SHARED_URL, sinkCtx, sql, uniqueName } from './helpers.ts';

interface Row { id: number; name: string; v: number }
/** The rejection of a commit, or undefined if it succeeded. */
const failure = (p: unknown): Promise<unknown> => Promise.resolve(p).then(() => undefined, (x: unknown) => x);
const ts = (n: number) => new Array<number>(n).fill(0);
const tables: string[] = [];
let progress: string;

async function table(keyed = false): Promise<string> {
  const t = uniqueName('weir_pg');
  tables.push(t);
  await sql(SHARED_URL, `CREATE TABLE ${t} (id integer ${keyed ? 'PRIMARY KEY' : 'NOT NULL'}, name text, v double precision)`);
  return t;
}

beforeAll(() => {
  progress = uniqueName('weir_progress');
  tables.push(progress);
});
afterAll(async () => {
  for (const t of tables) await sql(SHARED_URL, `DROP TABLE IF EXISTS ${t}`);
});

function sink(t: string, jobId: string, extra: Record<string, unknown> = {}) {
  return new PostgresSink<Row>({ connection: SHARED_URL, table: t, columns: ['id', 'name', 'v'], jobId, progressTable: progress, ...extra });
}

const rows = (from: number, n: number): Row[] => Array.from({ length: n }, (_, i) => ({ id: from + i, name: `r${from + i}`, v: (from + i) / 2 }));

describe('postgres sink (idempotent)', () => {
  it('writes rows only when the checkpoint completes, with the progress row; a re-commit after a restore writes nothing twice', async () => {
    const t = await table();
    const s = sink(t, uniqueName('job'));
    const w = s.createWriter(sinkCtx());
    const c = s.createCommitter(sinkCtx());
    w.write(rows(0, 2500), ts(2500));
    const first = w.prepareCommit(1);
    w.write(rows(2500, 10), ts(10));
    const second = w.prepareCommit(2);
    expect(await sql(SHARED_URL, `SELECT count(*)::int AS n FROM ${t}`)).toEqual([{ n: 0 }]);
    await c.commit(first);
    expect(await sql(SHARED_URL, `SELECT count(*)::int AS n FROM ${t}`)).toEqual([{ n: 2500 }]);
    expect(await s.lastCommittedCheckpointOf('sink', 0)).toBe(1);
    await c.commit(second);
    // A restored attempt commits both again (from the checkpoint's state): nothing changes.
    const c2 = s.createCommitter(sinkCtx({ restoredCheckpointId: 2, attemptNumber: 1 }));
    await c2.commit([...first, ...second]);
    const got = await sql<{ id: number; name: string; v: number }>(SHARED_URL, `SELECT id, name, v FROM ${t} ORDER BY id`);
    expect(got).toEqual(rows(0, 2510));
    expect(await s.lastCommittedCheckpointOf('sink', 0)).toBe(2);
    expect(await s.lastCommittedCheckpoint({ operatorId: 'sink', parallelism: 2 })).toBe(2);
    await c.close?.();
    await c2.close?.();
  });

  it('commits a subtask\'s older checkpoint after a newer one (a rescale spreads them over subtasks); each once', async () => {
    const t = await table();
    const s = sink(t, uniqueName('job'));
    const restored = sinkCtx({ restoredCheckpointId: 9, attemptNumber: 1 });
    const a = s.createCommitter(restored);
    const b = s.createCommitter({ ...restored, subtaskIndex: 1, parallelism: 2 });
    const at8: PostgresCommittable = { sub: 0, chk: 8, rows: [[8, 'eight', 8]] };
    const at9: PostgresCommittable = { sub: 0, chk: 9, rows: [[9, 'nine', 9]] };
    await a.commit([at9]);
    await Promise.all([b.commit([at8]), a.commit([at8])]);
    await b.commit([at9]);
    expect(await sql(SHARED_URL, `SELECT id FROM ${t} ORDER BY id`)).toEqual([{ id: 8 }, { id: 9 }]);
    expect(await s.lastCommittedCheckpointOf('sink', 0)).toBe(9);
    await a.close?.();
    await b.close?.();
  });

  it('upserts by key: the last value of a key in one checkpoint wins, later checkpoints update', async () => {
    await sql(SHARED_URL, 'SELECT 1');
    const t = await table(true);
    const s = sink(t, uniqueName('job'), { keyColumns: ['id'] });
    const w = s.createWriter(sinkCtx());
    const c = s.createCommitter(sinkCtx());
    w.write([{ id: 1, name: 'a', v: 1 }, { id: 2, name: 'b', v: 2 }, { id: 1, name: 'a2', v: 3 }], ts(3));
    await c.commit(w.prepareCommit(1));
    w.write([{ id: 2, name: 'b2', v: 4 }, { id: 3, name: 'c', v: 5 }], ts(2));
    await c.commit(w.prepareCommit(2));
    // A record without a configured property is refused when written, naming the property.
    expect(() => w.write([{ id: 9 } as Row], ts(1))).toThrow(/record has no property "name"/);
    expect(await sql(SHARED_URL, `SELECT id, name, v FROM ${t} ORDER BY id`)).toEqual([
      { id: 1, name: 'a2', v: 3 }, { id: 2, name: 'b2', v: 4 }, { id: 3, name: 'c', v: 5 },
    ]);
    await c.close?.();
  });

  it('commitTimeoutMs bounds a commit (default 120 s) and must be above retryDeadlineMs', () => {
    const base = { connection: SHARED_URL, table: 't', columns: ['id'], jobId: 'job' };
    expect(new PostgresSink(base).commitTimeoutMs).toBe(120_000);
    expect(new PostgresSink({ ...base, commitTimeoutMs: 600_000 }).commitTimeoutMs).toBe(600_000);
    expect(() => new PostgresSink({ ...base, commitTimeoutMs: 30_000 })).toThrow('postgres sink: commitTimeoutMs (30000) must be above retryDeadlineMs (60000), or a commit\'s retries are cut short');
    expect(() => new PostgresSink({ ...base, commitTimeoutMs: -1 })).toThrow('postgres sink: commitTimeoutMs must be a positive integer, got -1');
  });

  it('a schema mismatch fails naming the table and the column', async () => {
    const t = await table();
    const s = new PostgresSink<Record<string, unknown>>({ connection: SHARED_URL, table: t, columns: ['id', 'nope'], jobId: uniqueName('job'), progressTable: progress });
    const w = s.createWriter(sinkCtx());
    const c = s.createCommitter(sinkCtx());
    w.write([{ id: 1, nope: 2 }], ts(1));
    const e = await failure(c.commit(w.prepareCommit(1)));
    expect(errorCode(e)).toBe('CONFIG');
    expect(String((e as Error).message)).toContain(`table "public.${t}" has no column "nope"`);
    // A missing table is named too.
    const s2 = new PostgresSink<Record<string, unknown>>({ connection: SHARED_URL, table: `${t}_missing`, columns: ['id'], jobId: uniqueName('job'), progressTable: progress });
    const c2 = s2.createCommitter(sinkCtx());
    const e2 = await failure(c2.commit([{ sub: 0, chk: 1, rows: [[1]] }]));
    expect(String((e2 as Error).message)).toContain(`table "public.${t}_missing" does not exist`);
    // A NOT NULL column without a default that the sink does not write.
    const s3 = new PostgresSink<Record<string, unknown>>({ connection: SHARED_URL, table: t, columns: ['name'], jobId: uniqueName('job'), progressTable: progress });
    const e3 = await failure(s3.createCommitter(sinkCtx()).commit([{ sub: 0, chk: 1, rows: [['x']] }]));
    expect(String((e3 as Error).message)).toContain('column "id" is NOT NULL without a default');
    // The writer's start check found it too: the writer fails from then on, naming the column.
    await failure(s.start());
    expect(() => w.write([{ id: 1, nope: 3 }], ts(1))).toThrow(/has no column "nope"/);
    await c.close?.();
  });

  it('a run that starts from no checkpoint and meets another run\'s progress row fails instead of skipping its output', async () => {
    const t = await table();
    const job = uniqueName('job');
    const a = sink(t, job);
    const ca = a.createCommitter(sinkCtx());
    await ca.commit([{ sub: 0, chk: 5, rows: [[1, 'x', 1]] }]);
    const cb = sink(t, job).createCommitter(sinkCtx());
    const e = await failure(cb.commit([{ sub: 0, chk: 3, rows: [[2, 'y', 2]] }]));
    expect(errorCode(e)).toBe('CONFIG');
    expect(String((e as Error).message)).toMatch(/records checkpoint 5 of job .* as committed, but this run started from no checkpoint/);
    expect(await sql(SHARED_URL, `SELECT count(*)::int AS n FROM ${t}`)).toEqual([{ n: 1 }]);
    await ca.close?.();
    await cb.close?.();
  });

  it('a connection killed in the middle of a commit is retried on a new connection; every row lands once', async () => {
    const t = await table();
    const seq = `${t}_kills`;
    // The first insert into the table terminates its own backend: the commit's transaction dies half way.
    await sql(SHARED_URL, `CREATE SEQUENCE ${seq}`);
    await sql(SHARED_URL, `CREATE FUNCTION ${t}_kill() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF nextval('${seq}') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$`);
    await sql(SHARED_URL, `CREATE TRIGGER ${t}_kill BEFORE INSERT ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION ${t}_kill()`);
    try {
      const s = sink(t, uniqueName('job'), { rowsPerStatement: 100 });
      const w = s.createWriter(sinkCtx());
      const c = s.createCommitter(sinkCtx());
      w.write(rows(0, 1000), ts(1000));
      await c.commit(w.prepareCommit(1));
      expect(await sql(SHARED_URL, `SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM ${t}`)).toEqual([{ n: 1000, d: 1000 }]);
      expect(Number((await sql<{ v: string }>(SHARED_URL, `SELECT last_value AS v FROM ${seq}`))[0]!.v)).toBeGreaterThan(10); // the kill happened, then all 10 statements ran
      await c.close?.();
    } finally {
      await sql(SHARED_URL, `DROP TABLE ${t}`);
      await sql(SHARED_URL, `DROP FUNCTION ${t}_kill()`);
      await sql(SHARED_URL, `DROP SEQUENCE ${seq}`);
    }
  });

  it('a connection gone half-open in the middle of a commit (its statements never arrive) is retried, and the server ends the abandoned transaction (before: its locks blocked every retry and restart for hours)', async () => {
    const t = await table(true);
    const proxy = await startTcpProxy(5432);
    try {
      const jobId = uniqueName('halfopen');
      const o = { queryTimeoutMs: 1000, retryDeadlineMs: 20_000, commitTimeoutMs: 30_000 };
      const s = sink(t, jobId, { ...o, connection: `postgres://postgres@127.0.0.1:${proxy.port}/test` });
      const w = s.createWriter(sinkCtx());
      const c = s.createCommitter(sinkCtx());
      w.write(rows(0, 3), ts(3));
      const list = w.prepareCommit(1);
      // After BEGIN and the checkpoint's log row (its lock taken), the rows' INSERT never reaches the server.
      let holds = 0;
      proxy.holdWhen = (direction, chunk) => direction === 'up' && holds === 0 && chunk.includes(`INSERT INTO "public"."${t}"`) && ++holds === 1;
      await c.commit(list);
      expect(holds).toBe(1);
      expect(await sql(SHARED_URL, `SELECT id FROM ${t} ORDER BY id`)).toEqual([{ id: 0 }, { id: 1 }, { id: 2 }]);
      // Nothing of the sink is left idle in a transaction on the server.
      const stuck = await sql(SHARED_URL, "SELECT state FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'", [`weir sink ${jobId}`.slice(0, 63)]);
      expect(stuck).toEqual([]);
      await c.close?.();
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('a commit whose answer never comes is retried within the deadline, not waited out twice (before: the ROLLBACK queued behind it used the whole deadline)', async () => {
    const t = await table(true);
    const proxy = await startTcpProxy(5432);
    try {
      // The defaults' ratio (30 s query timeout, 60 s deadline), scaled down.
      const s = sink(t, uniqueName('stall'), { queryTimeoutMs: 1000, retryDeadlineMs: 2000, commitTimeoutMs: 8000, connection: `postgres://postgres@127.0.0.1:${proxy.port}/test` });
      const w = s.createWriter(sinkCtx());
      const c = s.createCommitter(sinkCtx());
      w.write(rows(0, 2), ts(2));
      const list = w.prepareCommit(1);
      // The answer to the COMMIT, and everything after it on that connection, never comes back.
      let stalled: number | undefined;
      proxy.holdWhen = (direction, chunk, connection) => {
        if (direction === 'up' && stalled === undefined && chunk.includes('COMMIT\0')) stalled = connection;
        return direction === 'down' && connection === stalled;
      };
      const accepted = proxy.accepted;
      await c.commit(list);
      expect(stalled).toBeDefined();
      expect(proxy.accepted).toBeGreaterThan(accepted); // retried on a new connection
      expect(await sql(SHARED_URL, `SELECT id FROM ${t} ORDER BY id`)).toEqual([{ id: 0 }, { id: 1 }]);
      await c.close?.();
    } finally {
      await proxy.close();
    }
  }, 30_000);

  it('an unreachable server fails the commit after bounded retries, naming host and port', async () => {
    const port = await freePort();
    const s = new PostgresSink<Row>({ connection: `postgres://postgres@127.0.0.1:${port}/test`, table: 'x', columns: ['id'], jobId: 'j', retryDeadlineMs: 1_500, connectTimeoutMs: 1_000 });
    const c = s.createCommitter(sinkCtx());
    const item: PostgresCommittable = { sub: 0, chk: 1, rows: [[1]] };
    const e = await failure(c.commit([item]));
    expect(errorCode(e)).toBe('CONNECTOR');
    expect(String((e as Error).message)).toContain(`127.0.0.1:${port}/test`);
    expect(String((e as Error).message)).toContain('ECONNREFUSED');
    // At start: the writers' check fails the same way, and a writer fails on its next call.
    const w = s.createWriter(sinkCtx());
    const e2 = await failure(s.start());
    expect(String((e2 as Error).message)).toContain(`connecting at 127.0.0.1:${port}/test`);
    expect(errorCode(e2)).toBe('CONNECTOR');
    expect(() => w.write([{ id: 1, name: 'a', v: 1 }], ts(1))).toThrow(/ECONNREFUSED/);
  });

  it('bad options are refused with the option named', () => {
    expect(() => new PostgresSink({ table: 'a b', columns: ['x'], jobId: 'j' })).toThrow(/table "a b" must be/);
    expect(() => new PostgresSink({ table: 't', columns: [], jobId: 'j' })).toThrow(/columns must be a non-empty list/);
    expect(() => new PostgresSink({ table: 't', columns: ['x'], keyColumns: ['y'], jobId: 'j' })).toThrow(/key column "y" is not in columns/);
    expect(() => new PostgresSink({ table: 't', columns: ['x'], jobId: 'no spaces' })).toThrow(/jobId must be/);
    expect(() => new PostgresSink({ table: 't', columns: ['x'], jobId: 'j', mode: 'xa' as 'two-phase' })).toThrow(/mode must be/);
    expect(() => new PostgresSink({ table: 't', columns: ['x'], jobId: 'j', connection: 'mysql://h/db' })).toThrow(/must start with postgres:/);
  });
});
