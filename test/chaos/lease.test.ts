/**
 * Issue 15, point 2: two runs on one checkpoint directory (a resume next to a job that still
 * runs) corrupted each other. Real `weir run` processes and a real SIGKILL: a second run on the
 * running job's checkpoint directory, or on its output directory, refuses to start and names
 * the holder, touching nothing; after the holder is SIGKILLed its stale lease is taken over at
 * once and the resume finishes with the failure-free output. And `weir run` started through
 * npm (`npx weir run`: npm -> sh -> weir) ends when npm is SIGKILLed, instead of living on as an
 * orphan holding the directories.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_FILE } from '../../src/core/dir-lease.ts';
import { committedLines, completedCheckpoints, ROOT, runWeir, startWeir } from './harness.ts';

let work: string;
let input: string;
let expected: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-lease-'));
  input = join(work, 'events.jsonl');
  const code = await new Promise<number | null>((res) =>
    spawn(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', '100000', input, '300', '5'], { cwd: ROOT, stdio: 'inherit' }).on('exit', (c) => res(c)));
  expect(code).toBe(0);
  const r = await runWeir(['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--rest-port', '0', '--', input, join(work, 'expected')]);
  expect(r.code, r.stderr).toBe(0);
  expected = committedLines(join(work, 'expected'));
  expect(expected.length).toBeGreaterThan(100);
}, 180_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name), `${rel}${e.name}/`);
      else out.push(`${rel}${e.name}`);
    }
  };
  walk(dir, '');
  return out.sort();
}

describe('one job per checkpoint and output directory (issue 15.2)', () => {
  it('a second run on a running job\'s directories is refused, naming it; once it is SIGKILLed its lease is taken over and the resume finishes exactly', async () => {
    const out = join(work, 'out');
    const chk = join(work, 'chk');
    const job = (extra: string[], rate: string[] = []) => ['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--rest-port', '0', '--checkpoint-dir', chk,
      '--checkpoint-interval', '200ms', ...extra, '--', input, out, ...rate];
    // 5,000 records/s: 20 s of input, far longer than the test needs it to run.
    const first = startWeir(job([], ['5000']));
    for (let i = 0; i < 1200 && completedCheckpoints(chk).size === 0; i++) await sleep(50);
    expect(completedCheckpoints(chk).size, 'the first run completed a checkpoint').toBeGreaterThan(0);
    const jobId = readdirSync(chk).find((d) => !d.startsWith('.'))!;
    expect(existsSync(join(chk, jobId, LEASE_FILE))).toBe(true);

    // A resume next to it: same job id, same directory. Before the fix it started, collected the
    // running job's in-flight checkpoints as garbage and failed or duplicated.
    const resume = await runWeir(job(['--from', 'latest']));
    expect(resume.code, resume.stderr).toBe(1);
    expect(resume.stderr).toContain(`weir: error: checkpoint directory ${join(chk, jobId)} is in use by weir process ${first.child.pid} (job ${jobId}, since `);
    expect(resume.stderr).toContain(`stop it first (kill ${first.child.pid}) or use another directory`);
    // Another job on the same output, with its own checkpoints: refused too.
    const other = await runWeir(['run', 'examples/exactly-once.ts', '-w', '1', '--rest-port', '0', '--', input, out]);
    expect(other.code, other.stderr).toBe(1);
    expect(other.stderr).toContain(`output directory ${out} is in use by weir process ${first.child.pid} (job ${jobId}`);
    expect(first.child.exitCode, 'the first run is untouched and still running').toBe(null);

    first.child.kill('SIGKILL');
    await first.done;
    expect(existsSync(join(chk, jobId, LEASE_FILE)), 'a SIGKILL leaves the lease behind').toBe(true);
    const resumed = await runWeir(job(['--from', 'latest']), 180_000);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`took over the lease of weir process ${first.child.pid} (job ${jobId}), which is gone`);
    expect(committedLines(out)).toEqual(expected);
    expect(existsSync(join(chk, jobId, LEASE_FILE)), 'released at the end').toBe(false);
    expect(existsSync(join(out, LEASE_FILE))).toBe(false);
  }, 300_000);

  it('weir run started through npm (npm -> sh -> weir) ends when npm is SIGKILLed, keeping its checkpoints and releasing its leases', async () => {
    const out = join(work, 'out-npm');
    const chk = join(work, 'chk-npm');
    const home = join(work, 'home-npm');
    const command = ['node', 'bin/weir.js', 'run', 'examples/exactly-once.ts', '-w', '1', '--rest-port', '0', '--checkpoint-dir', chk, '--checkpoint-interval', '200ms', '--', input, out, '5000'].join(' ');
    const npm = spawn('npm', ['exec', '--offline', '-c', command], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, WEIR_HOME: home } });
    let stderr = '';
    // The pipe closes once every process holding it (npm, sh, weir) has exited.
    const closed = new Promise<void>((res) => npm.stderr!.on('data', (d) => (stderr += d)).on('close', () => res()));
    for (let i = 0; i < 1200 && completedCheckpoints(chk).size === 0; i++) await sleep(50);
    expect(completedCheckpoints(chk).size, stderr).toBeGreaterThan(0);
    const jobId = readdirSync(chk).find((d) => !d.startsWith('.'))!;
    const holder = JSON.parse(readFileSync(join(chk, jobId, LEASE_FILE), 'utf8')) as { pid: number };
    expect(holder.pid).not.toBe(npm.pid); // weir runs in its own process below npm and sh
    npm.kill('SIGKILL');
    const ended = await Promise.race([closed.then(() => true), sleep(120_000).then(() => false)]);
    expect(ended, `weir (pid ${holder.pid}) still runs after npm was killed:\n${stderr}`).toBe(true);
    expect(stderr).toMatch(/weir: process \d+ that started weir \(npm\) is gone: cancelling the job/);
    expect(stderr).toContain(`cancelled; job id ${jobId}`);
    expect(completedCheckpoints(chk).size, 'the cancel kept the checkpoints').toBeGreaterThan(0);
    expect(listing(chk).filter((f) => f.endsWith(LEASE_FILE))).toEqual([]);
    expect(existsSync(join(out, LEASE_FILE))).toBe(false);
  }, 300_000);
});
