/**
 * An exclusive lease on a local directory, held by one process: a file `.weir-lease` in it
 * naming the holder (pid, host, process start time, a random nonce). Two `weir run`s on one
 * checkpoint directory (a resume started next to an orphan that still runs) or on one output
 * directory corrupted each other; with the lease the second refuses to start and names the
 * holder.
 *
 * Released when the job ends (and on process exit). A holder that died without releasing (a
 * SIGKILL) is detected, not waited on: same host and its pid no longer alive, or alive but a
 * different process (its start time differs: the pid was reused). Taking over a stale lease
 * renames it away (atomic) and checks that what was moved is the stale lease it read; if a
 * rival took it over in between, its fresh lease is put back with link() (which never
 * overwrites) and this process refuses. A holder on another host cannot be checked: the
 * message says which file to delete once it is known to be gone.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, readlinkSync, renameSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { WeirError } from './errors.ts';

export const LEASE_FILE = '.weir-lease';

interface Holder {
  readonly pid: number;
  readonly host: string;
  /** Process start time from /proc (Linux), to tell a reused pid; undefined elsewhere. */
  readonly processStart: string | undefined;
  /**
   * The holder's pid namespace and the kernel's boot id (Linux; undefined elsewhere and in
   * leases of older weir). A holder in another pid namespace with the same host name (two
   * containers of one pod sharing a volume, a container on the host's network) is invisible to
   * kill(pid, 0): it is never taken for gone. A boot id that differs means the machine restarted.
   */
  readonly pidNs?: string | undefined;
  readonly bootId?: string | undefined;
  readonly nonce: string;
  readonly since: number;
  /** What holds it, for the message (a job id). */
  readonly owner: string;
}

export interface DirLease {
  readonly path: string;
  /** Idempotent; removes the lease only if it is still this one. */
  release(): void;
}

/** Attempts at creating the file or taking over a stale one before giving up (each ends in a decision; bounded). */
const MAX_TRIES = 5;

/** Start time of a process (field 22 of /proc/<pid>/stat), or undefined where there is no /proc. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A SIGKILLed holder whose parent died too stays a zombie until init reaps it (which some
  // inits do late): kill(pid, 0) still succeeds, but it holds nothing any more.
  return !isZombie(pid);
}

/** Whether /proc says the process has exited and waits to be reaped (state Z or X); false where there is no /proc. */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

/** This process's pid namespace and the kernel's boot id, from /proc (undefined where there is none). */
function ownNamespace(): { pidNs: string | undefined; bootId: string | undefined } {
  let pidNs: string | undefined;
  let bootId: string | undefined;
  try {
    pidNs = readlinkSync('/proc/self/ns/pid');
  } catch {
    pidNs = undefined;
  }
  try {
    bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    bootId = undefined;
  }
  return { pidNs, bootId };
}

/**
 * Pure: whether the holder is certainly gone. Same host only (another host cannot be checked);
 * a holder that recorded a pid namespace other than ours may be alive however kill(pid, 0)
 * answers, unless the machine restarted since (another boot id).
 */
export function holderGone(
  h: Holder, host: string, alive: (pid: number) => boolean, startOf: (pid: number) => string | undefined,
  own: { pidNs: string | undefined; bootId: string | undefined } = { pidNs: undefined, bootId: undefined },
): boolean {
  if (h.host !== host) return false;
  if (h.bootId !== undefined && own.bootId !== undefined && h.bootId !== own.bootId) return true;
  if (h.pidNs !== undefined && h.pidNs !== own.pidNs) return false;
  if (!alive(h.pid)) return true;
  const now = startOf(h.pid);
  return h.processStart !== undefined && now !== undefined && now !== h.processStart;
}

/**
 * Whether the lease on `dir` names a holder that is certainly gone (same host, process dead or
 * its pid reused); false when there is no readable lease (being made, or another kind of
 * directory) or the holder may be alive. For sweeping what dead processes left.
 */
export function leaseHolderGone(dir: string): boolean {
  const h = readHolder(join(dir, LEASE_FILE));
  return h !== undefined && holderGone(h, hostname(), pidAlive, processStart, ownNamespace());
}

function readHolder(file: string): Holder | undefined {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as Holder;
    return Number.isInteger(v.pid) && typeof v.nonce === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Creates the lease file complete or not at all: written aside, then linked into place (link never overwrites). */
function writeExclusive(file: string, h: Holder): boolean {
  const tmp = `${file}.${h.nonce}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, JSON.stringify(h) + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/**
 * Takes the lease on `dir` (created if missing) for `owner`, or throws a START error naming the
 * holder. `what` names the directory's role in messages ("checkpoint directory").
 */
export function acquireDirLease(dir: string, what: string, owner: string, log: (line: string) => void = () => {}): DirLease {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, LEASE_FILE);
  const host = hostname();
  const ns = ownNamespace();
  const me: Holder = { pid: process.pid, host, processStart: processStart(process.pid), ...ns, nonce: randomBytes(8).toString('hex'), since: Date.now(), owner };
  for (let i = 0; i < MAX_TRIES; i++) {
    if (writeExclusive(file, me)) return held(file, me);
    const h = readHolder(file);
    if (h === undefined) {
      // Lease files appear complete (linked into place), so this one was damaged or written by something else.
      throw new WeirError('START', `${what} ${dir} has an unreadable lease file ${file}; if no weir process uses the directory, delete the file`);
    }
    if (!holderGone(h, host, pidAlive, processStart, ns)) {
      const where = h.host === host ? `weir process ${h.pid}` : `weir process ${h.pid} on host ${h.host}`;
      const gone = h.host === host ? `stop it first (kill ${h.pid}) or use another directory` : `if that process is gone, delete ${file}; or use another directory`;
      throw new WeirError('START', `${what} ${dir} is in use by ${where} (${h.owner}, since ${new Date(h.since).toISOString()}): ${gone}`);
    }
    // Stale: move it away, then make sure it was the stale one that moved.
    const aside = `${file}.stale-${me.nonce}`;
    try {
      renameSync(file, aside);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // a rival moved it first
      throw e;
    }
    const moved = readHolder(aside);
    if (moved?.nonce !== h.nonce) {
      // A rival took over between our read and our rename: give its lease back, never overwriting.
      try {
        linkSync(aside, file);
      } catch {
        // the file exists again: someone holds it now either way
      }
      rmSync(aside, { force: true });
      throw new WeirError('START', `${what} ${dir}: another weir process is taking over its stale lease right now; try again once it has started or ended`);
    }
    rmSync(aside, { force: true });
    log(`weir: ${what} ${dir}: took over the lease of weir process ${h.pid} (${h.owner}), which is gone`);
  }
  throw new WeirError('START', `${what} ${dir}: could not take its lease after ${MAX_TRIES} tries (other processes keep taking it)`);
}

/** Leases this process holds, released on exit whatever the way out (process.exit after a second Ctrl-C). */
const heldLeases = new Set<DirLease>();
let exitHook = false;

function held(file: string, me: Holder): DirLease {
  let released = false;
  const lease: DirLease = {
    path: file,
    release(): void {
      if (released) return;
      released = true;
      heldLeases.delete(lease);
      if (readHolder(file)?.nonce === me.nonce) rmSync(file, { force: true });
    },
  };
  heldLeases.add(lease);
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const l of [...heldLeases]) l.release();
    });
  }
  return lease;
}
