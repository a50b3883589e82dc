/**
 * A record that fails user code is quoted in the error, and the error goes to the log, the
 * exception history and from there to the REST API and dashboard, which answer reads without a
 * token (as Flink's). A record carrying a connection string must not take its password there.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { defineJob, type StreamExecutionEnvironment } from '../../src/index.ts';
import { api, start, tempDir, waitRunning } from '../savepoint/helpers.ts';

const tmp = tempDir('credentials-in-errors');
afterAll(() => tmp.cleanup());

const SECRET = 's3cr3t-Pa55';

describe('credentials in records that fail user code', () => {
  it('are blanked in the exception history the REST API serves and in the log', async () => {
    let failed = false;
    const job = defineJob((env: StreamExecutionEnvironment) => {
      env.fromGenerator((i) => ({ i, dsn: `postgres://app:${SECRET}@db.internal:5432/prod` }), { ratePerSecond: 200 }).uid('src')
        .map((r) => {
          if (r.i === 20 && !failed) {
            failed = true;
            throw new Error(`cannot reach redis://:${SECRET}@cache:6379`);
          }
          return r.i;
        })
        .collect('out');
    });
    const h = await start(job, { workers: 1, restartStrategy: { type: 'fixed-delay', attempts: 3, delay: '50ms' } });
    try {
      await waitRunning(h);
      let entries: { message: string; stacktrace: string }[] = [];
      for (let i = 0; i < 500 && entries.length === 0; i++) {
        entries = (await api(`${h.base}/exceptions`)).body['exceptionHistory']?.entries ?? [];
        if (entries.length === 0) await new Promise((r) => setTimeout(r, 20));
      }
      expect(entries.length).toBe(1);
      const text = JSON.stringify(entries);
      expect(text).toContain('postgres://***@db.internal:5432/prod'); // the record is still named
      expect(text).toContain('redis://***@cache:6379');
      expect(text).not.toContain(SECRET);
      expect(h.logs.join('\n')).toContain('***@');
      expect(h.logs.join('\n')).not.toContain(SECRET);
    } finally {
      await api(`${h.base}?mode=cancel`, 'PATCH');
      await h.result;
    }
  }, 60_000);
});
