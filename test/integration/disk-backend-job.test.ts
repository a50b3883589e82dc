/**
 * The disk state backend in real jobs, through the CLI (`weir run --state-backend disk`): the
 * exactly-once windowed-totals example (keyed value state, window state and event-time
 * timers, exactly-once file sink) on 2 workers is killed with SIGKILL right after checkpoints
 * completed and resumed with --from latest at another parallelism each time (2 -> 3 -> 1),
 * the first run on the heap backend and the others on disk (so a heap checkpoint restores into
 * the disk backend, rescaled). The committed output must equal the failure-free heap run's
 * exactly. Each subtask's store directory is removed when the job ends. Seeded; prints the seed.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { chaosSeed, committedLines, hiddenFiles, killAfterCompletions, ROOT, runWeir } from '../chaos/harness.ts';

const EVENTS = 150_000;
/** Killed runs read at most this many records per second, so they outlast their checkpoints. */
const RATE = '30000';
let work: string;
let input: string;
let expected: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-disk-job-'));
  input = join(work, 'events.jsonl');
  const g = spawnSync(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', String(EVENTS), input, '3000', '5'], { cwd: ROOT, encoding: 'utf8' });
  expect(g.status, g.stderr).toBe(0);
  const r = await runWeir(['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--', input, join(work, 'expected')]);
  expect(r.code, r.stderr).toBe(0);
  expected = committedLines(join(work, 'expected'));
  expect(expected.length).toBeGreaterThan(1000);
}, 60_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('disk state backend: a real job killed, resumed and rescaled', () => {
  it('committed output equals the failure-free heap run (heap p2 -> disk p3 -> disk p1, SIGKILL after checkpoints)', async () => {
    const seed = chaosSeed('disk-backend');
    const rng = new Rng(seed);
    const out = join(work, 'out');
    const chk = join(work, 'chk');
    const stateDir = join(work, 'state');
    mkdirSync(stateDir);
    const parallelism = ['2', '3', '1'];
    const argsFor = (attempt: number): string[] => [
      'run', 'examples/exactly-once.ts', '-p', parallelism[Math.min(attempt, 2)]!, '-w', '2',
      ...(attempt === 0 ? [] : ['--state-backend', 'disk', '--state-dir', stateDir, '--state-cache-entries', '500']),
      '--checkpoint-dir', chk, '--checkpoint-interval', '100ms', '--from', 'latest-or-empty', '--', input, out, ...(attempt < 2 ? [RATE] : []),
    ];
    // What the state directory held while the runs went on: the disk backend really ran.
    const seen = new Set<string>();
    const look = setInterval(() => {
      for (const d of readdirSync(stateDir)) seen.add(d);
    }, 20);
    const { killed, stderr } = await killAfterCompletions(argsFor, 2, rng, chk, 20_000, (s) => console.log(`[disk-backend] ${s}`)).finally(() => clearInterval(look));
    expect(killed, stderr.join('\n---\n')).toBe(2);
    const got = committedLines(out);
    expect(got.length).toBe(expected.length);
    expect(got).toEqual(expected);
    expect(hiddenFiles(out)).toEqual([]);
    // The disk backend really ran (its stores' directories came and went), and nothing is left:
    // the killed runs' stores (no exit hook on SIGKILL) were removed by the run after them, the
    // last run's by itself.
    expect([...seen].some((d) => /^weir-stores-/.test(d)), [...seen].join(', ')).toBe(true);
    expect(readdirSync(stateDir)).toEqual([]);
  }, 120_000);
});
