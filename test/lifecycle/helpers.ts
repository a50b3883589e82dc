/** Helpers of the lifecycle end-to-end tests: a real `weir manager` process and its REST API. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppStatus, Desired } from '../../src/lifecycle/status.ts';
import { committedLines } from '../helpers/output.ts';
import { ROOT } from '../savepoint/helpers.ts';

export interface ManagerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** Its API token, from the discovery file (as weir apps reads it). */
  readonly token: string;
  readonly log: () => string;
}

/** Tokens of the managers started, by URL: rest() sends the one of the manager it calls. */
const tokens = new Map<string, string>();

/** A manager served in this process: rest() sends its token. */
export function rememberToken(url: string, token: string): void {
  tokens.set(url, token);
}

/**
 * Starts `weir manager --dir <dir> --port 0` and resolves once it serves. Always as `npx weir
 * manager` would (npm_command set, whoever runs the tests): jobs must still outlive a killed manager.
 */
export function startManager(dir: string, home: string): Promise<ManagerProcess> {
  const child = spawn(process.execPath, ['bin/weir.js', 'manager', '--dir', dir, '--port', '0', '--interval', '200ms'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, npm_command: 'exec', WEIR_HOME: home } });
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`weir manager did not start within 60 s:\n${stderr}`)), 60_000);
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      const m = /weir manager: serving on (http:\/\/\S+);/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        const token = (JSON.parse(readFileSync(join(dir, 'manager.json'), 'utf8')) as { token: string }).token;
        tokens.set(m[1]!, token);
        resolve({ child, url: m[1]!, token, log: () => stderr });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`weir manager exited (${code}) before serving:\n${stderr}`));
    });
  });
}

export async function rest(url: string, method = 'GET', body?: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const token = [...tokens].find(([base]) => url.startsWith(base))?.[1];
  const headers = { 'content-type': 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) };
  const res = await fetch(url, { method, signal: AbortSignal.timeout(15_000), headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

export async function describeApp(m: ManagerProcess, app: string): Promise<{ desired: Desired; status: AppStatus }> {
  const r = await rest(`${m.url}/apps/${app}`);
  if (r.status !== 200) throw new Error(`describe ${app}: ${JSON.stringify(r.body)}`);
  return r.body as { desired: Desired; status: AppStatus };
}

/** Polls `check` until it returns a value (not undefined); fails with `what` and the app's events after timeoutMs. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 120_000, explain: () => Promise<string> = async () => '', pollMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${await explain().catch((e) => String(e))}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export function eventsText(s: AppStatus): string {
  return s.events.map((e) => `  ${e.reason}: ${e.message}`).join('\n');
}

/** Pids of deployments of the manager directory whose processes are alive (to end them after a test). */
export function livePids(dir: string): number[] {
  const out: number[] = [];
  const apps = join(dir, 'apps');
  if (!existsSync(apps)) return out;
  for (const app of readdirSync(apps)) {
    const deps = join(apps, app, 'deployments');
    if (!existsSync(deps)) continue;
    for (const d of readdirSync(deps)) {
      try {
        const pid = Number(readFileSync(join(deps, d, 'pid'), 'utf8'));
        process.kill(pid, 0);
        out.push(pid);
      } catch {
        // not alive, or never spawned
      }
    }
  }
  return out;
}

export interface Out { i: number; key: string; n: number; v: string }

/**
 * The committed output of the savepoint-app fixture, checked: every record once (per generator
 * lane, the indices lane, lane+2, ... without gap or duplicate), and per key the running count
 * n = floor(i/4) + 1, which holds only if keyed state was carried across every version.
 */
export function checkedOutput(outDir: string): { records: Out[]; versions: Set<string> } {
  const records = committedLines(outDir).map((l) => JSON.parse(l) as Out).sort((a, b) => a.i - b.i);
  for (const lane of [0, 1]) {
    const is = records.filter((r) => r.i % 2 === lane).map((r) => r.i);
    const want = is.map((_, k) => lane + 2 * k);
    if (JSON.stringify(is) !== JSON.stringify(want)) {
      const bad = is.findIndex((x, k) => x !== want[k]);
      throw new Error(`lane ${lane}: output is not every record once: at position ${bad} got ${is[bad]}, expected ${want[bad]}`);
    }
  }
  for (const r of records) {
    if (r.n !== Math.floor(r.i / 4) + 1) throw new Error(`record ${r.i} (key ${r.key}, version ${r.v}) has count ${r.n}, expected ${Math.floor(r.i / 4) + 1}: keyed state was not carried over`);
  }
  return { records, versions: new Set(records.map((r) => r.v)) };
}
