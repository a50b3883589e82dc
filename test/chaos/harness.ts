/**
 * Chaos harness: runs `weir run` as a real process (node bin/weir.js), kills it with SIGKILL
 * at seeded random moments, resumes with --from latest-or-empty, and reads back the committed
 * output of the exactly-once file sink (visible files only).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../src/api/random.ts';
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
 * leftovers. In-progress parts of an attempt killed before its first checkpoint are left
 * alone when the next attempt starts from scratch (nothing says whose they are); they are
 * hidden and never committed, so they are not listed here.
 */
export function hiddenFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('.') && !f.endsWith('.inprogress')) : [];
}
