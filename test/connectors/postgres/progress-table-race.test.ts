/**
 * Several subtasks (or jobs) create the sink's progress tables at once: CREATE TABLE IF NOT EXISTS
 * races in PostgreSQL and the losers get 23505, 42P07 or 42710 (a clean-clone run met 42710 and
 * failed a job); every one of them must find the tables made and go on. Against the real server.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { resolvePostgresOptions } from '../../../src/connectors/postgres/options.ts';
import { ensureProgressTable } from '../../../src/connectors/postgres/schema.ts';
import type { PgClient } from '../../../src/connectors/postgres/connection.ts';

const SCHEMA = `weir_race_${process.pid}`;
const CLIENTS = 8;
const ROUNDS = 10;

const admin = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' });

afterAll(async () => {
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.end();
});

describe('the progress tables created by many subtasks at once', () => {
  it.each(['idempotent', 'two-phase'] as const)('all of them go on (%s)', async (mode) => {
    await admin.connect().catch(() => undefined); // once for both cases
    const clients = Array.from({ length: CLIENTS }, () => new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' }));
    await Promise.all(clients.map((c) => c.connect()));
    try {
      for (let round = 0; round < ROUNDS; round++) {
        await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE; CREATE SCHEMA ${SCHEMA}`);
        const o = resolvePostgresOptions({ table: `${SCHEMA}.out`, columns: ['a'], jobId: 'race', mode, progressTable: `${SCHEMA}.progress_${round}` });
        const results = await Promise.allSettled(clients.map((c) => ensureProgressTable(c as unknown as PgClient, o)));
        const failed = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
        expect(failed, `round ${round}`).toEqual([]);
        const t = await admin.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1`, [SCHEMA]);
        expect(t.rows[0].n).toBe(2); // the progress table and its log
      }
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });
});
