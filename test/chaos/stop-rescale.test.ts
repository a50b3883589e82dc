/**
 * Chaos for savepoints and rescaling: the exactly-once windowed-totals job is stopped with a
 * savepoint, killed with SIGKILL while stopping or at random moments, and resumed from the
 * newest snapshot (checkpoint or savepoint) at a random new parallelism, round after round.
 * The committed output must equal the failure-free run's exactly. Seeded; prints the seed.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { verifyCheckpoint } from '../../src/checkpoint/storage.ts';
import { chaosSeed, committedLines, controlHeaders, hiddenFiles, ROOT, runWeir, startWeir } from './harness.ts';

const EVENTS = 1_200_000;
/** Rounds read at most this many records per second, so the job outlasts its ten rounds on any machine. */
const RATE = '80000';
let work: string;
let input: string;
let expected: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-chaos-stop-'));
  input = join(work, 'events.jsonl');
  const g = spawnSync(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', String(EVENTS), input, '400', '11'], { cwd: ROOT, encoding: 'utf8' });
  expect(g.status, g.stderr).toBe(0);
  const r = await runWeir(['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--rest-port', '0', '--', input, join(work, 'expected')]);
  expect(r.code, r.stderr).toBe(0);
  expected = committedLines(join(work, 'expected'));
  expect(expected.length).toBeGreaterThan(1000);
}, 120_000);

afterAll(() => { if (!process.env.KEEP_CHAOS) rmSync(work, { recursive: true, force: true }); else console.log('kept', work); });

/** The newest snapshot that verifies, among checkpoints and savepoints. */
async function newestSnapshot(chk: string, sp: string): Promise<{ path: string; completedAt: number; type: string } | undefined> {
  const candidates: string[] = [];
  for (const job of safeList(chk)) for (const c of safeList(join(chk, job))) if (c.startsWith('chk-')) candidates.push(join(chk, job, c));
  for (const s of safeList(sp)) candidates.push(join(sp, s));
  let best: { path: string; completedAt: number; type: string } | undefined;
  for (const c of candidates) {
    const v = await verifyCheckpoint(c);
    if (v.ok && (best === undefined || v.metadata.completedAt > best.completedAt)) best = { path: c, completedAt: v.metadata.completedAt, type: v.metadata.type };
  }
  return best;
}

function safeList(d: string): string[] {
  try {
    return readdirSync(d);
  } catch {
    return [];
  }
}

async function waitForRest(stderr: () => string, ms: number): Promise<{ id: string; port: number } | undefined> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const m = /job ([0-9a-f]{32}) running; control API on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr());
    if (m) return { id: m[1]!, port: Number(m[2]) };
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

describe('chaos: stop with savepoint, kills, and restores at new parallelism', () => {
  it('committed output equals the failure-free run through 10 rounds of stop/kill/rescale', async () => {
    const seed = chaosSeed('stop-rescale');
    const rng = new Rng(seed);
    const out = join(work, `out-${seed}`);
    const chk = join(work, `chk-${seed}`);
    const sp = join(work, `sp-${seed}`);
    mkdirSync(sp, { recursive: true });
    const home = join(work, `home-${seed}`);
    process.env.WEIR_HOME = home;
    let from: string | undefined;
    let finished = false;
    let stopsCompleted = 0;
    let killsDuringStop = 0;
    let rescales = 0;
    let lastP = 2;
    for (let round = 0; round < 10 && !finished; round++) {
      // Every round runs at a different parallelism than the one before.
      const p = 1 + ((lastP - 1 + 1 + rng.int(2)) % 3);
      if (from !== undefined && p !== lastP) rescales++;
      lastP = p;
      const args = ['run', 'examples/exactly-once.ts', '-p', String(p), '-w', '2', '--rest-port', '0', '--checkpoint-dir', chk,
        '--checkpoint-interval', '150ms', ...(from ? ['--from', from] : []), '--', input, out, RATE];
      const { child, done } = startWeir(args);
      let err = '';
      child.stderr!.on('data', (d) => (err += d));
      const rest = await waitForRest(() => err, 15_000);
      // Act only once every task runs (a stop while the job is still starting is refused).
      for (let i = 0; rest && i < 300; i++) {
        const st = await fetch(`http://127.0.0.1:${rest.port}/jobs/${rest.id}`).then((r) => r.json() as Promise<{ state?: string }>).catch(() => ({ state: 'GONE' }));
        if (st.state !== 'INITIALIZING' && st.state !== 'RESTARTING') break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const action = round % 3; // 0: kill; 1: stop and kill while stopping; 2: stop and let it complete
      await new Promise((r) => setTimeout(r, 500 + rng.int(1500)));
      let what = '';
      if (action === 0 || rest === undefined) {
        child.kill('SIGKILL');
        what = 'killed';
      } else {
        const res = await fetch(`http://127.0.0.1:${rest.port}/jobs/${rest.id}/stop`, { method: 'POST', headers: controlHeaders(rest.id), body: JSON.stringify({ targetDirectory: sp, drain: false }) }).catch(() => undefined);
        if (action === 1) {
          await new Promise((r) => setTimeout(r, rng.int(400)));
          child.kill('SIGKILL');
          killsDuringStop++;
          what = `stop requested (${res?.status ?? 'no answer'}), killed while stopping`;
        } else {
          what = `stop requested (${res?.status ?? 'no answer'})`;
        }
      }
      const r = await done;
      if (r.signal !== 'SIGKILL' && r.code !== 0) throw new Error(`round ${round} failed (code ${r.code}):\n${err}`);
      if (r.code === 0) {
        if (/savepoint \d+ completed/.test(err)) stopsCompleted++;
        else finished = true; // ran to the end of its input
      }
      const next = await newestSnapshot(chk, sp);
      from = next?.path;
      console.log(`[chaos stop-rescale] round ${round}: p=${p}, ${what}; exit ${r.signal ?? r.code}; next from ${next ? `${next.type} ${next.path.slice(work.length)}` : 'scratch'}`);
    }
    if (!finished) {
      const args = ['run', 'examples/exactly-once.ts', '-p', '3', '-w', '2', '--rest-port', '0', '--checkpoint-dir', chk, '--checkpoint-interval', '150ms',
        ...(from ? ['--from', from] : []), '--', input, out];
      const last = await runWeir(args);
      expect(last.code, last.stderr).toBe(0);
    }
    console.log(`[chaos stop-rescale] ${stopsCompleted} stops completed, ${killsDuringStop} kills while stopping, ${rescales} restores at a new parallelism`);
    // The scenario really happened (the job is big enough not to end before the round's action).
    expect(stopsCompleted).toBeGreaterThanOrEqual(2);
    expect(killsDuringStop).toBeGreaterThanOrEqual(2);
    expect(rescales).toBeGreaterThanOrEqual(5);
    const got = committedLines(out);
    expect(got.length).toBe(expected.length);
    expect(got).toEqual(expected);
    expect(hiddenFiles(out)).toEqual([]);
    // Savepoints are never deleted by weir, whatever happened.
    for (const s of safeList(sp)) if ((await verifyCheckpoint(join(sp, s))).ok) expect(readdirSync(join(sp, s))).toContain('_metadata');
  }, 400_000);
});
