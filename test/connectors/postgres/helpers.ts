/**
 * Helpers for the PostgreSQL sink tests: a sink context, a plain client for checks, unique
 * table names, and a private PostgreSQL cluster with prepared transactions on (the shared
 * server at 5432 has max_prepared_transactions = 0).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { SinkContext } from '../../../src/core/sink.ts';

export const SHARED_URL = 'postgres://postgres@127.0.0.1:5432/test';

export function sinkCtx(over: Partial<SinkContext> = {}, logged: string[] = []): SinkContext {
  return { subtaskIndex: 0, parallelism: 1, attemptNumber: 0, now: () => Date.now(), restoredCheckpointId: undefined, operatorId: 'sink', log: (l) => logged.push(l), ...over };
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
}

export async function sql<R extends pg.QueryResultRow = Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000, query_timeout: 30_000 });
  await c.connect();
  try {
    return (await c.query<R>(text, values)).rows;
  } finally {
    await c.end();
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

const BIN = '/usr/lib/postgresql/15/bin';

export interface Cluster {
  readonly url: string;
  readonly port: number;
  stop(): void;
}

/** Attempts at starting the server, each on a port found free just before. */
const START_ATTEMPTS = 5;

/**
 * Starts the cluster in `data` on a free port and returns the port. A port found free can be
 * taken by another process before the server binds it (initdb runs between, and the suite's
 * files run in parallel): the server then fails with "Address already in use" (seen once in a
 * full run). That case is retried on another port; any other failure is thrown as it is.
 */
async function startOnFreePort(run: (args: string[]) => void, data: string, dir: string): Promise<number> {
  const log = join(dir, 'log');
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      run([`${BIN}/pg_ctl`, '-D', data, '-l', log, '-w', '-t', '120', '-o',
        `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c max_prepared_transactions=16 -c fsync=off`, 'start']);
      return port;
    } catch (e) {
      const taken = existsSync(log) && /Address already in use/.test(readFileSync(log, 'utf8'));
      if (!taken || attempt >= START_ATTEMPTS) throw e;
      writeFileSync(log, ''); // the next attempt's log alone decides
    }
  }
}

/**
 * Starts a throwaway PostgreSQL 15 cluster on a free port with max_prepared_transactions = 16,
 * as the `postgres` user when run as root (the server refuses root). Trust auth on 127.0.0.1,
 * except for `passwordUser`: a login role with that password, which must authenticate
 * (scram-sha-256 in pg_hba.conf, ahead of the trust lines).
 */
export async function startCluster(o: { passwordUser?: { readonly user: string; readonly password: string } } = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const asUser = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
  const run = (args: string[]) => {
    const [cmd, ...rest] = [...asUser, ...args];
    const r = spawnSync(cmd!, rest, { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  };
  run([`${BIN}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const pu = o.passwordUser;
  if (pu !== undefined) {
    if (!/^[a-z_][a-z0-9_]*$/.test(pu.user) || pu.password.includes("'")) throw new Error('startCluster: passwordUser must be a plain identifier and a password without quotes');
    // pg_hba.conf is read top down, first match wins: this user must give its password.
    const hba = join(data, 'pg_hba.conf');
    writeFileSync(hba, `host all ${pu.user} 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);
  }
  const port = await startOnFreePort(run, data, dir);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  if (pu !== undefined) await sql(url, `CREATE ROLE ${pu.user} LOGIN PASSWORD '${pu.password}'; GRANT ALL ON SCHEMA public TO ${pu.user}`);
  return {
    url,
    port,
    stop() {
      try {
        execFileSync(asUser[0] ?? `${BIN}/pg_ctl`, asUser.length > 0 ? [...asUser.slice(1), `${BIN}/pg_ctl`, '-D', data, '-m', 'immediate', '-w', 'stop'] : ['-D', data, '-m', 'immediate', '-w', 'stop'], { stdio: 'ignore', timeout: 60_000 });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
