/**
 * Chaos harness: runs `weir run` as a real process (node bin/weir.js), kills it with SIGKILL
 * at seeded random moments, resumes with --from latest-or-empty, and reads back the committed
 * output of the exactly-once file sink (visible files only).
 */
import { listRegistered } from '../../src/observe/registry.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../src/core/random.ts';
export { committedLines } from '../helpers/output.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin/weir.js');

export function chaosSeed(name: string): number {
  const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 1_000_000));
  console.log(`[chaos ${name}] seed=${seed} (replay with CHAOS_SEED=${seed})`);
  return seed;
}

export interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

/** Headers for a state-changing request to a `weir run` job of this user: its token from the job registry (as weir stop reads it). */
export function controlHeaders(jobId: string): Record<string, string> {
  const token = listRegistered().find((e) => e.jobId === jobId)?.token;
  return { 'content-type': 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) };
}

export function startWeir(args: readonly string[]): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<Run>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })));
  return { child, done };
}

export async function runWeir(args: readonly string[], timeoutMs = 120_000): Promise<Run> {
  const { child, done } = startWeir(args);
  const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const r = await done;
  clearTimeout(t);
  return r;
}

/**
 * Starts the job, kills it after a random delay, and repeats `kills` times; then lets it run
 * to the end. Returns how many runs were really killed mid-way (a run may finish first).
 */
export async function killAndResume(argsFor: (attempt: number) => string[], kills: number, rng: Rng, minMs: number, maxMs: number, log: (s: string) => void): Promise<number> {
  let killed = 0;
  for (let k = 0; k < kills; k++) {
    const delay = minMs + rng.int(maxMs - minMs);
    const { child, done } = startWeir(argsFor(k));
    const t = setTimeout(() => child.kill('SIGKILL'), delay);
    const r = await done;
    clearTimeout(t);
    if (r.signal === 'SIGKILL') killed++;
    else if (r.code !== 0) throw new Error(`run ${k} failed (code ${r.code}):\n${r.stderr}`);
    log(`run ${k}: ${r.signal === 'SIGKILL' ? `killed after ${delay} ms` : 'finished before the kill'}`);
    if (r.code === 0) return killed; // the job completed: nothing left to resume
  }
  const last = await runWeir(argsFor(kills));
  if (last.code !== 0) throw new Error(`final run failed (code ${last.code}, signal ${last.signal}):\n${last.stderr}`);
  return killed;
}

/**
 * Hidden files that would matter: pending parts (data a checkpoint covers) and compaction
 * leftovers (not the sink's own .weir-* records: its commit record and lease). In-progress parts of an attempt killed before its first checkpoint are left
 * alone when the next attempt starts from scratch (nothing says whose they are); they are
 * hidden and never committed, so they are not listed here.
 */
export function hiddenFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('.') && !f.endsWith('.inprogress') && !f.startsWith('.weir-')) : [];
}

/** Completed checkpoints under a checkpoint root ("<job>/chk-<n>" whose metadata exists). */
export function completedCheckpoints(root: string): Set<string> {
  const out = new Set<string>();
  if (!existsSync(root)) return out;
  for (const job of readdirSync(root)) {
    const jobDir = join(root, job);
    let names: string[];
    try {
      names = readdirSync(jobDir);
    } catch {
      continue; // a file, or deleted while we looked
    }
    for (const name of names) if (/^chk-\d+$/.test(name) && existsSync(join(jobDir, name, '_metadata'))) out.add(`${job}/${name}`);
  }
  return out;
}

/**
 * Like killAndResume, but each kill lands right after a checkpoint completed (the 1st to 3rd new
 * one of the run, seeded), within 0 to 30 ms: between completion and the sinks' commits, while a
 * commit may still wait behind a compaction. A run that sees no completion within maxMs (a slow,
 * loaded machine) is killed then and does not count; runs go on until `kills` were killed after a
 * completion, at most 2 x kills runs. Then a last run to the end. Returns how many runs were
 * killed after a completion, and every run's stderr.
 */
export async function killAfterCompletions(
  argsFor: (attempt: number) => string[], kills: number, rng: Rng, chkRoot: string, maxMs: number, log: (s: string) => void,
): Promise<{ killed: number; stderr: string[] }> {
  let killed = 0;
  const stderr: string[] = [];
  for (let k = 0; k < 2 * kills && killed < kills; k++) {
    const target = 1 + rng.int(3);
    const extraMs = rng.int(2) === 0 ? 0 : rng.int(30);
    const before = completedCheckpoints(chkRoot);
    const { child, done } = startWeir(argsFor(k));
    let seen = 0;
    let fired = false;
    const poll = setInterval(() => {
      if (fired) return;
      for (const c of completedCheckpoints(chkRoot)) if (!before.has(c)) { before.add(c); seen++; }
      if (seen >= target) {
        fired = true;
        setTimeout(() => child.kill('SIGKILL'), extraMs);
      }
    }, 2);
    const fallback = setTimeout(() => child.kill('SIGKILL'), maxMs);
    const r = await done;
    clearInterval(poll);
    clearTimeout(fallback);
    stderr.push(r.stderr);
    if (r.signal === 'SIGKILL' && fired) killed++;
    else if (r.signal !== 'SIGKILL' && r.code !== 0) throw new Error(`run ${k} failed (code ${r.code}):\n${r.stderr}`);
    log(`run ${k}: ${r.signal === 'SIGKILL' ? (fired ? `killed ${extraMs} ms after completion ${target}` : `killed at ${maxMs} ms with no completion`) : 'finished before the kill'}`);
    if (r.code === 0) return { killed, stderr };
  }
  const last = await runWeir(argsFor(2 * kills));
  stderr.push(last.stderr);
  if (last.code !== 0) throw new Error(`final run failed (code ${last.code}, signal ${last.signal}):\n${last.stderr}`);
  return { killed, stderr };
}
