/**
 * `npx weir run` (and `npm run` scripts) start weir through `sh -c`: npm -> sh -> weir. A SIGTERM
 * to npm is forwarded to sh, which dies and leaves weir running; a SIGKILL to npm reaches
 * nobody. Either way the job outlived what the user killed, and a resume next to it shared its
 * checkpoint directory (issue 15.2). So when npm started weir, weir watches the processes
 * between itself and npm and cancels the job (as on SIGTERM: checkpoints kept) once one is gone.
 * Not under a plain shell: a job started with nohup or & is meant to outlive its shell.
 */
import { readFileSync } from 'node:fs';

/** How often the ancestors are looked at (a cheap signal-0 per ancestor). */
const WATCH_INTERVAL_MS = 500;

/** npm 7+ sets npm_command (exec, run-script, ...) in the environment of what it starts. */
export function startedByNpm(env: NodeJS.ProcessEnv = process.env): boolean {
  return typeof env['npm_command'] === 'string' && env['npm_command'] !== '';
}

interface Proc {
  readonly pid: number;
  /** Start time (Linux /proc), to tell a reused pid; undefined elsewhere. */
  readonly start: string | undefined;
}

function stat(pid: number): { ppid: number; start: string } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), start: fields[19]! };
  } catch {
    return undefined;
  }
}

/** The parent and grandparent (npm and the shell between); only the parent where there is no /proc. */
export function ancestors(): Proc[] {
  const out: Proc[] = [];
  let pid = process.ppid;
  for (let depth = 0; depth < 2 && pid > 1; depth++) {
    const st = stat(pid);
    out.push({ pid, start: st?.start });
    if (st === undefined) break;
    pid = st.ppid;
  }
  return out;
}

function gone(p: Proc): boolean {
  try {
    process.kill(p.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return true;
  }
  return p.start !== undefined && stat(p.pid)?.start !== p.start;
}

/** Calls `onGone` once, when one of `watched` has exited; returns what stops watching. */
export function watchAncestors(watched: readonly Proc[], onGone: (pid: number) => void): () => void {
  if (watched.length === 0) return () => {};
  const timer = setInterval(() => {
    const dead = watched.find(gone);
    if (dead === undefined) return;
    clearInterval(timer);
    onGone(dead.pid);
  }, WATCH_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
