/**
 * The sinks' pure decisions, without servers: retry delays, SQL statements (chunking, upsert
 * de-duplication, quoting), prepared-transaction ids (only this job's are recognised), the
 * schema check, the guard's skip-or-refuse, and the JetStream commit decision.
 */
import { describe, expect, it } from 'vitest';
import { errorCode } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/random.ts';
import { nextRetryDelay, retrying, type RetryPolicy } from '../../src/connectors/common/retry.ts';
import { ownsSubtask } from '../../src/connectors/common/progress.ts';
import { decideRowsCommit } from '../../src/connectors/postgres/commit.ts';
import { schemaProblem } from '../../src/connectors/postgres/schema.ts';
import { COMMITTED_LOG_KEEP, gidFor, lastPerKey, MAX_PARAMS, parseGid, parseTableName, writeStatements } from '../../src/connectors/postgres/sql.ts';
import { decideCommit, parseProgress } from '../../src/connectors/jetstream/progress-state.ts';

describe('retry delays', () => {
  const policy: RetryPolicy = { initialBackoffMs: 100, maxBackoffMs: 5_000, deadlineMs: 60_000 };
  it('grow to the cap with jitter, never retry a permanent error, stop at the deadline (seeded)', () => {
    const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 1e6));
    console.log(`[retry] seed=${seed}`);
    const rng = new Rng(seed);
    expect(nextRetryDelay(policy, 0, 0, false, 0.5)).toBeUndefined();
    let elapsed = 0;
    let attempt = 0;
    for (;;) {
      const d = nextRetryDelay(policy, attempt, elapsed, true, rng.next());
      if (d === undefined) break;
      const cap = Math.min(5_000, 100 * 2 ** attempt);
      expect(d).toBeGreaterThanOrEqual(Math.round(cap * 0.1));
      expect(d).toBeLessThanOrEqual(cap);
      elapsed += d;
      attempt++;
    }
    expect(elapsed).toBeLessThanOrEqual(60_000);
    expect(elapsed).toBeGreaterThan(60_000 - 5_000);
  });

  it('stop once the signal fires: no attempt after it, the wait cut short, the last error rethrown', async () => {
    const long: RetryPolicy = { initialBackoffMs: 60_000, maxBackoffMs: 60_000, deadlineMs: 600_000 };
    const ac = new AbortController();
    let attempts = 0;
    const run = retrying(long, () => true, async () => {
      attempts++;
      throw new Error(`transient ${attempts}`);
    }, { signal: ac.signal, random: () => 1 });
    await new Promise((r) => setTimeout(r, 50));
    expect(attempts, 'waiting a minute before the 2nd attempt').toBe(1);
    ac.abort();
    await expect(run).rejects.toThrow('transient 1');
    expect(attempts).toBe(1);
    // Fired before a failure: that failure is final.
    let n = 0;
    await expect(retrying(long, () => true, async () => {
      n++;
      throw new Error('down');
    }, { signal: ac.signal })).rejects.toThrow('down');
    expect(n).toBe(1);
  });
});

describe('postgres statements', () => {
  const table = parseTableName('table', 'out');
  it('chunk rows by rowsPerStatement and by the parameter limit, in order', () => {
    const rows = Array.from({ length: 2500 }, (_, i) => [i, `n${i}`]);
    const st = writeStatements({ table, columns: ['id', 'name'], keyColumns: [], rowsPerStatement: 1000 }, rows);
    expect(st.map((s) => s.values.length)).toEqual([2000, 2000, 1000]);
    expect(st[0]!.text.startsWith('INSERT INTO "public"."out" ("id", "name") VALUES ($1, $2), ($3, $4)')).toBe(true);
    expect(st.flatMap((s) => s.values)).toEqual(rows.flat());
    const wide = Array.from({ length: 100 }, (_, c) => `c${c}`);
    const many = writeStatements({ table, columns: wide, keyColumns: [], rowsPerStatement: 10_000 }, Array.from({ length: 1000 }, () => wide.map(() => 1)));
    for (const s of many) expect(s.values.length).toBeLessThanOrEqual(MAX_PARAMS);
  });

  it('upsert keeps the last row of each key (one statement may not touch a row twice) and updates the other columns', () => {
    expect(lastPerKey([[1, 'a'], [2, 'b'], [1, 'c']], [0])).toEqual([[1, 'c'], [2, 'b']]);
    const [s] = writeStatements({ table, columns: ['id', 'v'], keyColumns: ['id'], rowsPerStatement: 10 }, [[1, 'a'], [1, 'b']]);
    expect(s!.text).toBe('INSERT INTO "public"."out" ("id", "v") VALUES ($1, $2) ON CONFLICT ("id") DO UPDATE SET "v" = EXCLUDED."v"');
    expect(s!.values).toEqual([1, 'b']);
    const [only] = writeStatements({ table, columns: ['id'], keyColumns: ['id'], rowsPerStatement: 10 }, [[1]]);
    expect(only!.text.endsWith('ON CONFLICT ("id") DO NOTHING')).toBe(true);
  });

  it('recognise only this job\'s and operator\'s prepared transaction ids', () => {
    const gid = gidFor('job-1', 'sink', 3, 42);
    expect(parseGid(gid, 'job-1', 'sink')).toEqual({ subtask: 3, checkpointId: 42 });
    expect(parseGid(gid, 'job-1x', 'sink')).toBeUndefined();
    expect(parseGid(gidFor('job-1x', 'sink', 3, 42), 'job-1', 'sink')).toBeUndefined();
    expect(parseGid('weir:job-1:sink:3:42:extra', 'job-1', 'sink')).toBeUndefined();
    expect(parseGid('someone-else', 'job-1', 'sink')).toBeUndefined();
  });

  it('the schema check names the table and the column', () => {
    const cols = [{ name: 'id', notNull: true, hasDefault: false }, { name: 'v', notNull: false, hasDefault: false }, { name: 'at', notNull: true, hasDefault: true }];
    expect(schemaProblem('public.t', ['id', 'v'], cols)).toBeUndefined();
    expect(schemaProblem('public.t', ['id', 'w'], cols)).toBe('postgres sink table "public.t" has no column "w" (it has id, v, at)');
    expect(schemaProblem('public.t', ['v'], cols)).toContain('column "id" is NOT NULL without a default');
    expect(schemaProblem('public.t', ['v'], [])).toContain('does not exist');
  });

  it('idempotent commit: skip what was committed (in any order), refuse another run\'s progress', () => {
    expect(decideRowsCommit(5, 5, false, false, true)).toBe('skip'); // re-commit after a restore
    expect(decideRowsCommit(5, 5, true, true, true)).toBe('skip'); // retry after a lost COMMIT answer
    // After a rescale an older checkpoint of a subtask may come after a newer one: written, not skipped.
    expect(decideRowsCommit(9, 8, false, false, false)).toBe('write');
    expect(decideRowsCommit(9, 8, false, false, undefined)).toBe('write');
    expect(decideRowsCommit(20_000, 20_000 - COMMITTED_LOG_KEEP, false, false, undefined)).toBe('skip'); // older than the log keeps
    expect(decideRowsCommit(5, 3, true, false, undefined)).toBe('foreign');
    expect(decideRowsCommit(undefined, 3, true, false, false)).toBe('write');
  });

  it('subtask 0 also owns subtasks that no longer exist', () => {
    expect(ownsSubtask({ subtaskIndex: 0, parallelism: 2 }, 3)).toBe(true);
    expect(ownsSubtask({ subtaskIndex: 1, parallelism: 2 }, 3)).toBe(false);
    expect(ownsSubtask({ subtaskIndex: 1, parallelism: 2 }, 1)).toBe(true);
  });
});

describe('jetstream commit decision', () => {
  it('skips committed checkpoints, republishes an interrupted one keeping its start, flags one past the window', () => {
    expect(decideCommit({ committed: 4 }, 4, false, false, 1000, 120_000)).toEqual({ action: 'skip' });
    expect(decideCommit({ committed: 4 }, 2, true, false, 1000, 120_000)).toEqual({ action: 'foreign', committed: 4 });
    expect(decideCommit({ committed: 4 }, 5, false, false, 1000, 120_000)).toEqual({ action: 'publish', since: 1000, late: false, again: false });
    expect(decideCommit({ committed: 4, publishing: 5, since: 500 }, 5, false, false, 1000, 120_000)).toEqual({ action: 'publish', since: 500, late: false, again: true });
    expect(decideCommit({ committed: 4, publishing: 5, since: 500 }, 5, false, false, 200_000, 120_000)).toMatchObject({ late: true, again: true });
    expect(parseProgress('{"committed":3,"publishing":4,"since":9}', 'k')).toEqual({ committed: 3, publishing: 4, since: 9 });
    expect(parseProgress('{"committed":null,"publishing":1,"since":9}', 'k')).toEqual({ committed: undefined, publishing: 1, since: 9 });
    expect(parseProgress(undefined, 'k')).toEqual({ committed: undefined });
    expect(parseProgress('', 'k')).toEqual({ committed: undefined });
  });

  it('a progress value that cannot be read is an error naming the key, never "nothing committed"', () => {
    // Guessing "nothing committed" would pass the start's duplicate check and publish again.
    const where = 'progress key "p.x" in bucket weir_progress';
    for (const [text, why] of [['not json', 'not JSON'], ['null', 'not an object'], ['[3]', 'not an object'], ['{"committed":"7"}', 'committed is not a checkpoint id'],
      ['{"committed":-1}', 'committed is not a checkpoint id'], ['{"committed":3,"publishing":"4"}', 'publishing is not a checkpoint id'], ['{"committed":3,"publishing":4,"since":"x"}', 'since is not a time in ms']] as const) {
      let e: unknown;
      try {
        parseProgress(text, where);
      } catch (caught) {
        e = caught;
      }
      expect(errorCode(e), text).toBe('CONNECTOR');
      expect((e as Error).message, text).toContain(`${where} holds ${JSON.stringify(text)}`);
      expect((e as Error).message, text).toContain(why);
    }
  });
});
