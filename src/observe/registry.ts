/**
 * Running `weir run` processes register here (one small JSON file per job with its REST
 * address and pid), so `weir list`, `weir savepoint` and friends find jobs by id without
 * being told a port. The directory is $WEIR_HOME/jobs (default: <tmpdir>/weir-<uid>/jobs).
 * Entries of processes that are gone are ignored and removed.
 */
import { lstatSync, readdirSync, readFileSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { privateHomeDir, weirHome } from '../core/weir-home.ts';
import { join } from 'node:path';

export interface JobEntry {
  readonly jobId: string;
  readonly name: string;
  readonly address: string;
  readonly port: number;
  readonly pid: number;
  readonly startedAt: number;
  /** The control API's token (the entry is readable by its user only): the control commands send it. */
  readonly token?: string;
}

export function registryDir(): string {
  return join(weirHome(), 'jobs');
}

/** The registry directory, checked private (see privateHomeDir). */
function privateRegistryDir(): string {
  return privateHomeDir('jobs');
}


function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Registers a running job for `weir list` and the control commands; throws (CONFIG) when the registry is not private. */
export function register(e: JobEntry): () => void {
  const dir = privateRegistryDir();
  const file = join(dir, `${e.jobId}.json`);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(e), { mode: 0o600 }); // the token: its user's only
  renameSync(tmp, file);
  return () => rmSync(file, { force: true });
}

/** Live registered jobs, newest first. */
export function listRegistered(): JobEntry[] {
  const dir = privateRegistryDir();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: JobEntry[] = [];
  for (const n of names) {
    if (!n.endsWith('.json')) continue;
    try {
      // Regular files only (lstat: no link followed): reading a FIFO here hung `weir list`.
      if (!lstatSync(join(dir, n)).isFile()) continue;
      const e = JSON.parse(readFileSync(join(dir, n), 'utf8')) as JobEntry;
      if (alive(e.pid)) out.push(e);
      else rmSync(join(dir, n), { force: true });
    } catch {
      // A half-written or foreign file: skip it.
    }
  }
  return out.sort((a, b) => b.startedAt - a.startedAt);
}
