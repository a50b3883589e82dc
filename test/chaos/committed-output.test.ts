/**
 * Issue 15, point 1: a restore must never silently write output a sink already committed.
 * Real `weir run` processes, killed with SIGKILL. Before the fix, `--from latest` with the
 * newest checkpoints' metadata damaged restored an older one and the exactly-once file sink
 * ended with thousands of duplicated lines; `--from latest-or-empty` after a finished run
 * (its checkpoints deleted) wrote everything a second time. Both are now refused, naming the
 * ids and the ways out; --allow-duplicate-output accepts the duplicates on purpose.
 */
import { mkdtempSync, readdirSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCommitRecords } from '../../src/connectors/file/commit-record.ts';
import { committedLines, completedCheckpoints, runWeir, startWeir } from './harness.ts';

let work: string;
let input: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-committed-'));
  input = join(work, 'events.jsonl');
  const { spawn } = await import('node:child_process');
  const code = await new Promise<number | null>((res) =>
    spawn(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', '200000', input, '500', '7'], { cwd: join(import.meta.dirname, '../..'), stdio: 'inherit' }).on('exit', (c) => res(c)));
  expect(code).toBe(0);
}, 120_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Checkpoints kept, and committed before the kill: at 200 ms apart, the oldest is ~1 s behind the committed one. */
const RETAINED = 6;

function checkpointIds(chk: string): number[] {
  return [...completedCheckpoints(chk)].map((c) => Number(/chk-(\d+)$/.exec(c)![1])).sort((a, b) => a - b);
}

describe('a restore never re-emits committed output (issue 15.1)', () => {
  it('--from latest that falls back past a committed checkpoint is refused, naming both ids; --allow-duplicate-output accepts it', async () => {
    const out = join(work, 'out-fallback');
    const chk = join(work, 'chk-fallback');
    const job = (extra: string[]) => ['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--checkpoint-dir', chk, '--checkpoint-interval', '200ms',
      '--checkpoints-retained', String(RETAINED), ...extra, '--', input, out, '20000'];
    const { child, done } = startWeir(job([]));
    // Kill once several checkpoints are committed and retained (the 20,000 records/s source keeps it running for 10 s).
    for (let i = 0; i < 1200 && ((readCommitRecords(out) ?? 0) < RETAINED || checkpointIds(chk).length < RETAINED); i++) await sleep(50);
    child.kill('SIGKILL');
    const killed = await done;
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const committedId = readCommitRecords(out)!;
    expect(committedId).toBeGreaterThanOrEqual(4);
    // Damage the metadata of every checkpoint but the oldest retained one below the committed one:
    // --from latest falls back to it. The oldest, not the newest below: a window fires for all keys
    // at once, and 200 ms between two checkpoints can pass without one (seen: 0 lines to duplicate
    // from checkpoint 5 after 6 was committed), while between the oldest and the committed one some
    // fire (2 in the runs measured: 1,000 of 18,000 lines duplicated; at 10,000 records/s a subtask
    // covers more than one 60 s window of event time in that second).
    const jobDir = join(chk, readdirSync(chk).find((d) => !d.startsWith('.'))!);
    const older = checkpointIds(chk).filter((id) => id < committedId);
    expect(older.length, `at least 2 checkpoints older than ${committedId} are retained: ${older.join(', ')}`).toBeGreaterThan(1);
    const restored = older[0]!;
    const damaged = checkpointIds(chk).filter((id) => id !== restored);
    for (const id of damaged) truncateSync(join(jobDir, `chk-${id}`, '_metadata'), 10);
    const before = committedLines(out);
    expect(before.length).toBeGreaterThan(0);

    const refused = await runWeir(job(['--from', 'latest']));
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain(`already committed the output of checkpoint ${committedId}, but the job restores checkpoint ${restored}`);
    expect(refused.stderr).toContain('write to a fresh output');
    expect(refused.stderr).toContain('--allow-duplicate-output');
    expect(committedLines(out), 'the refused run wrote nothing').toEqual(before);

    const accepted = await runWeir(job(['--from', 'latest', '--allow-duplicate-output']), 180_000);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stderr).toContain(`already committed the output of checkpoint ${committedId} and the job restores checkpoint ${restored}`);
    const after = committedLines(out);
    console.log(`[committed-output] checkpoint ${committedId} committed, restored ${restored}: ${after.length - new Set(after).size} of ${after.length} lines duplicated with --allow-duplicate-output (what --from latest silently did before)`);
    expect(new Set(after).size, 'the accepted run did write some lines twice').toBeLessThan(after.length);
  }, 300_000);

  it('--from latest-or-empty after a finished run (its checkpoints deleted) is refused instead of writing everything again', async () => {
    const out = join(work, 'out-finished');
    const chk = join(work, 'chk-finished');
    const job = ['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--checkpoint-dir', chk, '--checkpoint-interval', '200ms', '--from', 'latest-or-empty', '--', input, out];
    const first = await runWeir(job);
    expect(first.code, first.stderr).toBe(0);
    expect(checkpointIds(chk), 'a finished job discards its checkpoints').toEqual([]);
    const lines = committedLines(out);
    expect(lines.length).toBeGreaterThan(0);
    const committedId = readCommitRecords(out)!;
    const again = await runWeir(job);
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toContain(`already committed the output of checkpoint ${committedId}, but the job starts fresh (no checkpoint restored)`);
    expect(committedLines(out)).toEqual(lines);
  }, 300_000);
});
