/**
 * Starting `weir manager`: the file store, the local-process target, the reconciliation loop and
 * the REST API, and the discovery file (<dir>/manager.json: address, port, pid) through which
 * `weir apps` finds it. Jobs keep running when the manager stops; a new manager adopts them.
 */
import { isLoopback, newToken } from '../observe/request-guard.ts';
import { acquireDirLease } from '../core/dir-lease.ts';
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { privateHomeDir } from '../core/weir-home.ts';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WeirError } from '../core/errors.ts';
import { alive } from './local/processes.ts';
import { LocalProcessTarget } from './local/target.ts';
import { Manager } from './manager.ts';
import { ManagerApi } from './rest.ts';
import { FileAppStore } from './store.ts';
import { checkDirectoryPath } from '../core/directory.ts';

export interface ServeOptions {
  readonly dir: string;
  readonly port: number;
  readonly address: string;
  readonly intervalMs: number;
  readonly log: (line: string) => void;
}

export interface RunningManager {
  readonly url: string;
  readonly manager: Manager;
  /** The API's token (Authorization: Bearer), required by every request but GET. */
  readonly token: string;
  close(): Promise<void>;
}

/** $WEIR_HOME/manager (default <tmpdir>/weir-<uid>/manager). */
export function defaultManagerDir(): string {
  return privateHomeDir('manager');
}

export function discoveryFile(dir: string): string {
  return join(resolve(dir), 'manager.json');
}

/** The URL of the manager serving `dir`, from its discovery file. */
export function managerUrlOf(dir: string): string | undefined {
  return managerOf(dir)?.url;
}

/** The manager serving `dir` (its URL and API token), from its discovery file (readable by its user only). */
export function managerOf(dir: string): { url: string; token: string | undefined } | undefined {
  try {
    const m = JSON.parse(readFileSync(discoveryFile(dir), 'utf8')) as { url?: unknown; pid?: number; token?: unknown };
    if (m.pid === undefined || !alive(m.pid)) return undefined; // left by a manager that was killed
    if (typeof m.url !== 'string') return undefined;
    return { url: m.url, token: typeof m.token === 'string' ? m.token : undefined };
  } catch {
    return undefined;
  }
}

const WEIR_BIN = fileURLToPath(new URL('../../bin/weir.js', import.meta.url));

export async function serveManager(o: ServeOptions): Promise<RunningManager> {
  checkDirectoryPath(o.dir, "the manager's directory (--dir)");
  mkdirSync(resolve(o.dir), { recursive: true });
  // One spelling of the directory for every path the manager builds and matches processes by,
  // whatever symlink it was given through (see startedWith in local/processes.ts).
  const dir = realpathSync(resolve(o.dir));
  // Two managers on one directory would both start the same deployments.
  const other = managerUrlOf(dir);
  if (other !== undefined) throw new WeirError('START', `a manager already serves ${dir} at ${other}; stop it first, or give another --dir`);
  // The discovery file is written only once the API listens: two managers started at the same
  // moment both passed the check above. The lease is taken atomically; the second is refused.
  const lease = acquireDirLease(dir, 'manager directory', `weir manager (pid ${process.pid})`);
  const store = new FileAppStore(dir);
  const target = new LocalProcessTarget({ root: dir, weirBin: WEIR_BIN, log: o.log });
  const manager = new Manager({ store, target, intervalMs: o.intervalMs, log: o.log });
  // Every request that changes something carries it: any local user reaching the port could
  // otherwise apply a spec, and the manager runs the module it names as this user.
  const token = newToken();
  const api = new ManagerApi(manager, token);
  let port: number;
  try {
    port = await api.listen(o.port, o.address);
  } catch (e) {
    lease.release();
    throw e;
  }
  const url = `http://${o.address.includes(':') ? `[${o.address}]` : o.address}:${port}`;
  if (!isLoopback(o.address)) {
    o.log(`weir manager: warning: its API on ${url} is reachable from the network, guarded by a token only (in ${discoveryFile(dir)}) and without TLS; keep it on loopback, or behind a proxy that encrypts`);
  }
  const file = discoveryFile(dir);
  // Owner-only: the token in it lets its reader run job modules as this user.
  rmSync(`${file}.tmp`, { force: true });
  writeFileSync(`${file}.tmp`, JSON.stringify({ url, pid: process.pid, token }), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
  try {
    await manager.start();
  } catch (e) {
    await api.close();
    rmSync(file, { force: true });
    lease.release();
    throw e;
  }
  return {
    url,
    token,
    manager,
    async close() {
      await manager.stop();
      await api.close();
      rmSync(file, { force: true });
      lease.release();
    },
  };
}
