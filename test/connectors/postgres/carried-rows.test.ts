/**
 * Which of an intermediate savepoint's rows a commit leaves out (carriedBy): only those a
 * prepared transaction in the same commit names as carried. The writer keeps a savepoint's rows
 * and prepares them with its next checkpoint's, naming the savepoint; a job restored from the
 * savepoint has a new writer whose transactions hold none of them, though of the same subtask
 * index and a later id (a checkpoint taken while the restore's commit of the savepoint's rows
 * was still running holds both; inferred from index and id, a restore from that checkpoint
 * skipped the rows and lost them).
 */
import { describe, expect, it } from 'vitest';
import { carriedBy, type PostgresCommittable, type RowsCommittable } from '../../../src/connectors/postgres/commit.ts';

const sp = (sub: number, chk: number): RowsCommittable => ({ sub, chk, rows: [[1]], savepoint: true });
const prepared = (sub: number, chk: number, carries?: number[]): PostgresCommittable => ({ sub, chk, gid: `g-${sub}-${chk}`, ...(carries ? { carries } : {}) });

describe('carriedBy', () => {
  it('a prepared transaction that names the savepoint carries its rows', () => {
    const item = sp(0, 2);
    expect(carriedBy(item, [item, prepared(0, 3, [2])])).toBe(true);
    expect(carriedBy(item, [item, prepared(0, 4, [2, 3])])).toBe(true);
  });

  it('one of the same subtask index and a later id that does not name it carries nothing (a new writer, after a restore from the savepoint)', () => {
    const item = sp(0, 2);
    expect(carriedBy(item, [item, prepared(0, 3)])).toBe(false);
    expect(carriedBy(item, [item, prepared(0, 3, [5])])).toBe(false);
  });

  it('one of another subtask carries nothing', () => {
    expect(carriedBy(sp(1, 2), [sp(1, 2), prepared(0, 3, [2])])).toBe(false);
  });

  it('savepoint rows alone are not carried', () => {
    expect(carriedBy(sp(0, 2), [sp(0, 2), sp(0, 3)])).toBe(false);
  });
});
