/**
 * Chaos (b): `weir run` killed with SIGKILL at random moments and resumed with --from
 * latest-or-empty, on a job with keyed state, event-time windows and the exactly-once file
 * sink, at parallelism > 1 on 2 workers. The committed output must equal the failure-free
 * run's exactly: nothing lost, nothing duplicated. Seeded; prints the seed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/api/random.ts';
import { chaosSeed, committedLines, hiddenFiles, killAndResume, runWeir } from './harness.ts';

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
  for (const [name, parallelism, mode] of [['p2', '2', 'exactly-once'], ['p3', '3', 'exactly-once']] as const) {
    it(`committed output equals the failure-free run after 10 kills (${name}, ${mode}, 2 workers)`, async () => {
      const seed = chaosSeed(name);
      const rng = new Rng(seed);
      const out = join(work, `out-${name}`);
      const chk = join(work, `chk-${name}`);
      const args = () => ['run', 'examples/exactly-once.ts', '-p', parallelism, '-w', '2', '--checkpoint-dir', chk, '--checkpoint-interval', '150ms',
        '--checkpoint-mode', mode, '--from', 'latest-or-empty', '--', input, out, RATE];
      const killed = await killAndResume(args, 10, rng, 500, 1600, (s) => console.log(`[chaos ${name}] ${s}`));
      console.log(`[chaos ${name}] ${killed} runs killed mid-way`);
      expect(killed).toBeGreaterThanOrEqual(8);
      const got = committedLines(out);
      expect(got.length).toBe(expected.length);
      expect(got).toEqual(expected);
      // Nothing half-done is left behind once the job has finished.
      expect(hiddenFiles(out), `hidden files left in ${out}`).toEqual([]);
    }, 300_000);
  }
});
