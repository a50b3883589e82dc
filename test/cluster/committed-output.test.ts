/** The decision that keeps a restore from re-emitting committed output, and the file sink's record it reads. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkCommittedOutput, decideCommittedOutput } from '../../src/cluster/committed-output.ts';
import type { JobGraph } from '../../src/graph/job-graph.ts';
import type { CommitScope, TwoPhaseCommitSink } from '../../src/core/sink.ts';
import { readCommitRecords, writeCommitRecord } from '../../src/connectors/file/commit-record.ts';
import { ExactlyOnceFileSink } from '../../src/connectors/file/exactly-once-file-sink.ts';

const work = mkdtempSync(join(tmpdir(), 'weir-commit-record-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('decideCommittedOutput', () => {
  it('nothing committed, or committed up to the restored checkpoint: go', () => {
    expect(decideCommittedOutput('s', undefined, undefined, false)).toEqual({ type: 'ok' });
    expect(decideCommittedOutput('s', undefined, 3, false)).toEqual({ type: 'ok' });
    expect(decideCommittedOutput('s', 7, 7, false)).toEqual({ type: 'ok' });
    expect(decideCommittedOutput('s', 6, 7, false)).toEqual({ type: 'ok' });
  });

  it('committed past the restored checkpoint: refused, naming both ids and the ways out', () => {
    const d = decideCommittedOutput('files /out', 9, 7, false);
    expect(d.type).toBe('refuse');
    expect(d.type !== 'ok' && d.message).toBe(
      'sink "files /out" already committed the output of checkpoint 9, but the job restores checkpoint 7: the output after it would be written twice. ' +
      'Ways out: restore checkpoint 9 or a later one if it still exists, write to a fresh output (an empty directory or a new table), or accept the duplicates with --allow-duplicate-output');
  });

  it('committed output and a fresh start (also output of a run without checkpoints): refused', () => {
    const d = decideCommittedOutput('s', 4, undefined, false);
    expect(d.type !== 'ok' && d.message).toMatch(/committed the output of checkpoint 4, but the job starts fresh \(no checkpoint restored\)/);
    const e = decideCommittedOutput('s', 0, undefined, false);
    expect(e.type !== 'ok' && e.message).toMatch(/committed the output of an earlier run \(committed at its end, without checkpoints\), but the job starts fresh/);
  });

  it('with duplicates accepted: a warning instead', () => {
    const d = decideCommittedOutput('s', 9, 7, true);
    expect(d.type).toBe('warn');
    expect(d.type !== 'ok' && d.message).toMatch(/^weir: warning: sink "s" already committed the output of checkpoint 9 and the job restores checkpoint 7/);
  });
});

describe('the exactly-once file sink records its last committed checkpoint beside its output', () => {
  it('the highest id over all subtasks; none in an empty or missing directory', () => {
    const dir = join(work, 'records');
    expect(readCommitRecords(dir)).toBeUndefined();
    const sink = new ExactlyOnceFileSink(dir);
    const committer = sink.createCommitter({ subtaskIndex: 1, parallelism: 2, attemptNumber: 0, now: () => 0, restoredCheckpointId: undefined, log: () => {} });
    expect(sink.lastCommittedCheckpoint()).toBeUndefined();
    mkdirSync(dir, { recursive: true });
    writeCommitRecord(dir, 0, 5);
    expect(sink.lastCommittedCheckpoint()).toBe(5);
    void committer.commit([], 9); // nothing to commit: nothing recorded
    expect(sink.lastCommittedCheckpoint()).toBe(5);
    writeFileSync(join(dir, '.part-1-aa-0.chk-8.pending'), 'x\n');
    void committer.commit([{ pending: '.part-1-aa-0.chk-8.pending', final: 'part-1-aa-0.jsonl' }], 8);
    expect(sink.lastCommittedCheckpoint()).toBe(8);
  });

  it('a damaged record is an error, not "nothing committed"', () => {
    const dir = join(work, 'damaged');
    mkdirSync(dir);
    writeFileSync(join(dir, '.weir-committed-0'), '{"checkpo');
    expect(() => readCommitRecords(dir)).toThrow(/cannot read the sink's commit record .*\.weir-committed-0/);
  });
});

describe('checkCommittedOutput after scaling down', () => {
  /** A graph of one sink operator at parallelism `p`, whose progress per subtask is `committed`. */
  function graphWith(p: number, committed: (number | undefined)[], asked: number[]): JobGraph {
    const sink = {
      name: 'progress keys',
      lastCommittedCheckpoint: async (scope: CommitScope) => {
        asked.push(scope.parallelism);
        let last: number | undefined;
        for (let i = 0; i < scope.parallelism; i++) if (committed[i] !== undefined && (last === undefined || committed[i]! > last)) last = committed[i];
        return last;
      },
    } as unknown as TwoPhaseCommitSink<unknown, unknown>;
    return { vertices: [{ operators: [{ node: { id: 'sink-op', parallelism: p, transformation: { kind: 'one-input', commitSink: sink } } }] }] } as unknown as JobGraph;
  }

  it('reads the progress of every subtask the snapshot had, not only of those the job has now', async () => {
    // Old subtask 3 committed checkpoint 9; the job restores checkpoint 7 at parallelism 2.
    const asked: number[] = [];
    const g = graphWith(2, [7, 7, 7, 9], asked);
    await expect(checkCommittedOutput(g, 7, false, () => {}, (id) => (id === 'sink-op' ? 4 : undefined))).rejects.toThrow(/already committed the output of checkpoint 9, but the job restores checkpoint 7/);
    expect(asked).toEqual([4]);
    // Scaled up, the job's own parallelism covers the snapshot's.
    const up: number[] = [];
    await checkCommittedOutput(graphWith(6, [7, 7], up), 7, false, () => {}, () => 2);
    expect(up).toEqual([6]);
  });
});
