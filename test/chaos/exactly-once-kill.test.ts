/**
 * Chaos (b): `weir run` killed with SIGKILL at random moments and resumed with --from
 * latest-or-empty, on a job with keyed state, event-time windows and the exactly-once file
 * sink, at parallelism > 1 on 2 workers (heap backend aligned and unaligned, and the disk
 * backend with incremental checkpoints). The committed output must equal the failure-free
 * run's exactly: nothing lost, nothing duplicated. Seeded; prints the seed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { chaosSeed, committedLines, hiddenFiles, killAfterCompletions, killAndResume, runWeir } from './harness.ts';

const EVENTS = 1_200_000;
/**
 * The killed runs read at most this many records per second, so that ten kills at random
 * moments all land before the job could finish, however fast the machine (the failure-free
 * run reads at full speed: the output is the same).
 */
const RATE = '200000';
let work: string;
let input: string;
let expected: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-chaos-'));
  input = join(work, 'events.jsonl');
  const gen = await runNode(['--import', 'tsx', 'examples/generate-events.ts', String(EVENTS), input, '500', '7']);
  expect(gen).toBe(0);
  const r = await runWeir(['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--', input, join(work, 'expected')]);
  expect(r.code, r.stderr).toBe(0);
  expected = committedLines(join(work, 'expected'));
  expect(expected.length).toBeGreaterThan(1000);
}, 120_000);

afterAll(() => { if (!process.env.KEEP_CHAOS) rmSync(work, { recursive: true, force: true }); });

async function runNode(args: string[]): Promise<number | null> {
  const { spawn } = await import('node:child_process');
  return new Promise((res) => spawn(process.execPath, args, { cwd: join(import.meta.dirname, '../..'), stdio: 'inherit' }).on('exit', (c) => res(c)));
}

describe('chaos: SIGKILL and resume from the latest checkpoint', () => {
  // The unaligned variant: barriers overtake in-flight data, which every restore replays (with
  // the windows' watermarks in it); fewer kills to keep the suite's time (also the disk variant).
  const variants = [
    ['p2', '2', 'exactly-once', [], 10],
    ['p3', '3', 'exactly-once', [], 10],
    ['p2-unaligned', '2', 'exactly-once', ['--unaligned-checkpoints', 'on'], 6],
    // The disk backend with a cache far smaller than the state, so that its write thread is
    // always busy when a kill lands, and incremental checkpoints (a delta chain over LMDB).
    ['p2-disk', '2', 'exactly-once', ['--state-backend', 'disk', '--state-cache-entries', '500', '--incremental-checkpoints', 'on'], 6],
  ] as const;
  for (const [name, parallelism, mode, extra, kills] of variants) {
    it(`committed output equals the failure-free run after ${kills} kills (${name}, ${mode}, 2 workers)`, async () => {
      const seed = chaosSeed(name);
      const rng = new Rng(seed);
      const out = join(work, `out-${name}`);
      const chk = join(work, `chk-${name}`);
      const args = () => ['run', 'examples/exactly-once.ts', '-p', parallelism, '-w', '2', '--checkpoint-dir', chk, '--checkpoint-interval', '150ms',
        '--checkpoint-mode', mode, ...extra, '--from', 'latest-or-empty', '--', input, out, RATE];
      const killed = await killAndResume(args, kills, rng, 500, 1600, (s) => console.log(`[chaos ${name}] ${s}`));
      console.log(`[chaos ${name}] ${killed} runs killed mid-way`);
      expect(killed).toBeGreaterThanOrEqual(kills - 2);
      const got = committedLines(out);
      expect(got.length).toBe(expected.length);
      expect(got).toEqual(expected);
      // Nothing half-done is left behind once the job has finished.
      expect(hiddenFiles(out), `hidden files left in ${out}`).toEqual([]);
    }, 300_000);
  }
});

describe('chaos: SIGKILL between checkpoint completion and commit, commits behind long compactions (issue 7)', () => {
  // Every commit compacts everything of its subtask below 8 MiB (lines padded by 1,000 spaces),
  // so the next checkpoint's commit waits behind megabytes of async I/O; the source reads at full
  // speed, so the compaction's I/O callbacks wait for the busy task loop between steps;
  // checkpoints every 50 ms; each kill lands within 30 ms of a checkpoint completing. Before the
  // fix, a snapshot taken while a commit waited dropped its committables and such a kill lost a
  // completed checkpoint's output (this test lost 6,000 to 9,000 of 100,489 lines in 2 of 2 runs
  // at 3b73994).
  // The killed runs read at most 50,000 records/s (the task loop stays busy): at full speed, with
  // the file read in parallel ranges, the job finished after 3 kills, at 200,000/s after 7, and
  // at 100,000/s after 5 or 6 on a loaded machine (load 6: checkpoints complete later, so each
  // run reads further before its kill; seed 5782, at this and the previous revision alike).
  const job = (flags: string[], out: string, rate = '0') => ['run', 'test/fixtures/jobs/compacting-totals.ts', '-p', '3', '-w', '2', ...flags, '--', input, out, rate, '1000', '8'];
  it('committed output equals the failure-free run after 12 kills right after completions (p3, 2 workers)', async () => {
    const seed = chaosSeed('completion');
    const rng = new Rng(seed);
    const out = join(work, 'out-completion');
    const chk = join(work, 'chk-completion');
    const reference = await runWeir(job([], join(work, 'expected-completion')));
    expect(reference.code, reference.stderr).toBe(0);
    const want = committedLines(join(work, 'expected-completion')).map((l) => l.trimEnd());
    expect(want).toEqual(expected); // the padding is the only difference from the example's output
    const args = () => job(['--checkpoint-dir', chk, '--checkpoint-interval', '50ms', '--from', 'latest-or-empty'], out, '50000');
    const { killed, stderr } = await killAfterCompletions(args, 12, rng, chk, 20_000, (s) => console.log(`[chaos completion] ${s}`));
    console.log(`[chaos completion] ${killed} runs killed right after a completion`);
    // The output first: it must be exact however many kills landed.
    const got = committedLines(out).map((l) => l.trimEnd()).sort();
    expect(got.length).toBe(want.length);
    expect(got).toEqual(want);
    expect(hiddenFiles(out), `hidden files left in ${out}`).toEqual([]);
    // No restore found output of a completed checkpoint that nobody would commit.
    expect(stderr.filter((e) => e.includes('will never be committed'))).toEqual([]);
    expect(killed).toBeGreaterThanOrEqual(8);
  }, 600_000); // 260 s seen at load 17 (the machine shared by other jobs); a limit, not a timing assertion
});
