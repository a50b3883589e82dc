/**
 * The processes of the local-process target: spawning `weir run` detached (it outlives a manager
 * that is killed), telling whether a pid is alive, finding a deployment's process by its command
 * line when the pid file was never written (a manager killed right after the spawn), and reading
 * how a process that is gone ended from its log.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { JobState } from '../status.ts';

export function alive(pid: number): boolean {
  // 0 and negative pids name process groups to kill(2): never one process.
  if (!(Number.isSafeInteger(pid) && pid > 0)) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie (exited, not yet reaped by its parent) is not running.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/** Pids of live processes whose command line contains `marker` (Linux /proc; elsewhere none are found). */
/**
 * Whether `pid` is alive and still the process that was started with `marker` (a deployment's
 * config path) on its command line. A pid file outlives a reboot or a container restart, after
 * which its number may name any process: trusting it showed a dead deployment as starting for
 * ever and sent SIGTERM to an unrelated process. Where /proc cannot be read (not Linux), alive.
 */
export function aliveAs(pid: number, marker: string): boolean {
  if (!alive(pid)) return false;
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return !existsSync('/proc/self/cmdline');
  }
  return startedWith(cmdline.split('\0'), marker);
}

/**
 * Whether a command line names `marker` (a deployment's config path, spelled from the manager's
 * real directory): as is, or another spelling of the same file (a job started by a manager given
 * the directory through a symlink). Matching the spelling alone, a manager restarted under the
 * other one took a live job for gone, and a resume started a second copy beside it.
 */
function startedWith(args: readonly string[], marker: string): boolean {
  if (args.includes(marker)) return true;
  const name = basename(marker);
  for (const a of args) {
    if (a === marker || !a.endsWith(name) || basename(a) !== name) continue;
    try {
      if (realpathSync(a) === realpathSync(marker)) return true;
    } catch {
      // gone, or never there: not this deployment
    }
  }
  return false;
}

export function processesWith(marker: string): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const n of names) {
    if (!/^\d+$/.test(n) || Number(n) === process.pid) continue;
    try {
      if (startedWith(readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0'), marker) && alive(Number(n))) out.push(Number(n));
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return out;
}

export interface SpawnRequest {
  readonly node: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: string;
  readonly stderr: string;
  readonly pidFile: string;
  readonly exitFile: string;
}

/** Starts a detached process with its output in files; records its pid, and its exit code if this manager is still there to see it. */
export function spawnDetached(r: SpawnRequest): number {
  const out = openSync(r.stdout, 'a');
  const err = openSync(r.stderr, 'a');
  try {
    const child = spawn(r.node, r.args, { cwd: r.cwd, env: r.env, detached: true, stdio: ['ignore', out, err] });
    if (child.pid === undefined) throw new Error(`cannot start ${r.node}`);
    // Whole or absent: a manager killed mid-write must not leave an empty pid file.
    writeFileSync(`${r.pidFile}.tmp`, String(child.pid));
    renameSync(`${r.pidFile}.tmp`, r.pidFile);
    child.on('exit', (code, signal) => {
      try {
        writeFileSync(r.exitFile, JSON.stringify({ code, signal }));
      } catch {
        // the deployment folder is gone (the app was forgotten)
      }
    });
    child.unref();
    return child.pid;
  } finally {
    closeSync(out);
    closeSync(err);
  }
}

/** How a `weir run` that is gone ended, from the last lines of its stderr (and its exit code when known). */
export function endOf(stderr: string, exitCode: number | undefined): { state: JobState; error?: string } {
  const lines = stderr.split('\n').filter((l) => l.startsWith('weir: '));
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i]!;
    if (/^weir: job ".*" finished in /.test(l)) return { state: 'FINISHED' };
    if (/^weir: job ".*" cancelled; /.test(l)) return { state: 'CANCELED' };
    if (l.startsWith('weir: error: ')) return { state: 'FAILED', error: l.slice('weir: error: '.length) };
  }
  if (exitCode === 0) return { state: 'FINISHED' };
  if (exitCode === 130 || exitCode === 143) return { state: 'CANCELED' };
  return { state: 'GONE', error: exitCode !== undefined ? `the process exited with code ${exitCode}` : 'the process is gone (killed?)' };
}
