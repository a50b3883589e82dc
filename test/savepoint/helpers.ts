/**
 * Helpers for the savepoint tests: jobs run with runJob and driven through their REST control
 * API (savepoints, stop with savepoint, cancel), the real CLI spawned with an isolated job
 * registry, snapshot contents decoded, and whole directory trees fingerprinted so a test can
 * assert that nothing was modified.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSnapshot } from '../../src/checkpoint/inspect.ts';
import type { CheckpointMetadata } from '../../src/checkpoint/metadata.ts';
import { runJob, type JobDefinition, type JobResult, type RunOptions } from '../../src/index.ts';
import { decodeValue } from '../../src/core/codec.ts';
import type { InlineOperatorState } from '../../src/core/checkpoint-format.ts';
import { controlApi } from '../../src/observe/control-api.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const fixture = (name: string): string => join(ROOT, 'test', 'fixtures', 'jobs', name);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A temporary directory under os.tmpdir(); remove with cleanup(). The first one of a test
 * process also holds WEIR_HOME: jobs started with a REST API register for `weir list`, and
 * they belong in a registry of their own, not the user's.
 */
export function tempDir(prefix: string): { dir: string; fresh(name: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `weir-${prefix}-`));
  if (process.env['WEIR_HOME'] === undefined) process.env['WEIR_HOME'] = join(dir, 'weir-home');
  let n = 0;
  return { dir, fresh: (name) => join(dir, `${name}-${n++}`), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

// ---- jobs under runJob with the REST control API

export interface Handle {
  readonly jobId: string;
  readonly base: string;
  readonly logs: string[];
  readonly result: Promise<JobResult>;
}

/** Starts a job with the REST API on a free port; resolves once the API listens. */
export async function start(job: string | JobDefinition, options: RunOptions): Promise<Handle> {
  if (process.env['WEIR_HOME'] === undefined) throw new Error('call tempDir() first: it isolates the job registry (WEIR_HOME)');
  const logs: string[] = [];
  let listening!: (v: [number, string]) => void;
  const ready = new Promise<[number, string]>((r) => (listening = r));
  const result = runJob(job, {
    stdout: () => {},
    log: (l) => logs.push(l),
    ...options,
    services: [controlApi({ port: 0, onListening: (port, jobId) => listening([port, jobId]) })],
  });
  // A job that fails to start never listens: surface its error instead of hanging.
  const [port, jobId] = await Promise.race([ready, result.then((r) => { throw new Error(`job ended (${r.status}) before its REST API listened: ${r.error?.message}`); })]);
  return { jobId, base: `http://127.0.0.1:${port}/jobs/${jobId}`, logs, result };
}

export async function api(url: string, method = 'GET', body?: unknown): Promise<{ status: number; body: Record<string, any> }> {
  // JSON on every state-changing request: the API refuses others (cross-site request protection).
  const res = await fetch(url, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), ...(method !== 'GET' ? { headers: { 'content-type': 'application/json' } } : {}) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, any>) };
}

/** Waits until every task of the job runs (the state a savepoint needs). */
export async function waitRunning(h: Handle): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const r = await api(h.base);
    if (r.body['state'] === 'RUNNING') return;
    if (['FINISHED', 'FAILED', 'CANCELED'].includes(r.body['state'])) throw new Error(`job is ${r.body['state']}, not running`);
    await sleep(10);
  }
  throw new Error('job did not reach RUNNING');
}

/** Waits until the job served at `port` runs every task (for jobs started as `weir run` processes). */
export async function waitRunningAt(port: number, jobId: string): Promise<void> {
  await waitRunning({ jobId, base: `http://127.0.0.1:${port}/jobs/${jobId}`, logs: [], result: new Promise(() => {}) });
}

export type OperationOutcome = { ok: true; location: string } | { ok: false; cause: string };

/** Polls a savepoint/stop operation until it completes. */
export async function outcome(h: Handle, requestId: string): Promise<OperationOutcome> {
  for (let i = 0; i < 3000; i++) {
    const r = await api(`${h.base}/savepoints/${requestId}`);
    if (r.status !== 200) throw new Error(`GET savepoint status: ${r.status} ${JSON.stringify(r.body)}`);
    if (r.body['status']?.id === 'COMPLETED') {
      const op = r.body['operation'];
      return op.location !== undefined ? { ok: true, location: op.location } : { ok: false, cause: op['failure-cause']?.message };
    }
    await sleep(10);
  }
  throw new Error('savepoint operation did not complete');
}

/** POST /jobs/:id/checkpoints (answered at once with a request id, as Flink) and wait for the checkpoint's id; throws when it fails. */
export async function checkpointNow(h: Handle): Promise<number> {
  const r = await api(`${h.base}/checkpoints`, 'POST');
  if (r.status !== 202) throw new Error(`checkpoint refused: ${r.status} ${JSON.stringify(r.body)}`);
  for (let i = 0; i < 3000; i++) {
    const s = await api(`${h.base}/checkpoints/${r.body['request-id']}`);
    if (s.status !== 200) throw new Error(`GET checkpoint status: ${s.status} ${JSON.stringify(s.body)}`);
    if (s.body['status']?.id === 'COMPLETED') {
      const op = s.body['operation'];
      if (typeof op.checkpointId !== 'number') throw new Error(`checkpoint failed: ${op['failure-cause']?.message}`);
      return op.checkpointId as number;
    }
    await sleep(10);
  }
  throw new Error('checkpoint request did not complete');
}

/** POST /jobs/:id/savepoints and wait; throws when it fails. */
export async function savepoint(h: Handle, dir: string | undefined): Promise<string> {
  const r = await api(`${h.base}/savepoints`, 'POST', dir === undefined ? {} : { 'target-directory': dir });
  if (r.status !== 202) throw new Error(`savepoint refused: ${r.status} ${JSON.stringify(r.body)}`);
  const o = await outcome(h, r.body['request-id']);
  if (!o.ok) throw new Error(`savepoint failed: ${o.cause}`);
  return o.location;
}

/** POST /jobs/:id/stop and wait for the savepoint; throws when it fails. */
export async function stopWithSavepoint(h: Handle, dir: string | undefined, drain = false): Promise<string> {
  const r = await api(`${h.base}/stop`, 'POST', { ...(dir !== undefined ? { targetDirectory: dir } : {}), drain });
  if (r.status !== 202) throw new Error(`stop refused: ${r.status} ${JSON.stringify(r.body)}`);
  const o = await outcome(h, r.body['request-id']);
  if (!o.ok) throw new Error(`stop failed: ${o.cause}`);
  return o.location;
}

/**
 * Starts a job, lets it run for `ms` once every task runs, then stops it with a savepoint in
 * `dir` (not drained: timers and in-flight state go into it). Throws when the stop fails,
 * naming how the job ended.
 */
export async function runThenStop(job: string | JobDefinition, options: RunOptions, ms: number, dir: string): Promise<{ sp: string; result: JobResult }> {
  const h = await start(job, options);
  await waitRunning(h);
  await sleep(ms);
  const r = await api(`${h.base}/stop`, 'POST', { targetDirectory: dir, drain: false });
  if (r.status !== 202) throw new Error(`stop refused: ${r.status} ${JSON.stringify(r.body)}`);
  const o = await outcome(h, r.body['request-id']);
  const result = await h.result;
  if (!o.ok) throw new Error(`stop failed: ${o.cause}; job ${result.status} ${result.error?.message}`);
  return { sp: o.location, result };
}

// ---- snapshot contents

export interface DecodedSnapshot {
  readonly metadata: CheckpointMetadata;
  /** Operator (by uid) -> per subtask, in subtask order, the decoded inline state. */
  inline(uid: string): InlineOperatorState[];
  operator(uid: string): CheckpointMetadata['operators'][number];
}

export async function decodeSnapshot(path: string): Promise<DecodedSnapshot> {
  const metadata = await openSnapshot(path);
  const operator = (uid: string) => {
    const op = metadata.operators.find((o) => o.uid === uid);
    if (op === undefined) throw new Error(`no operator with uid ${uid} in ${path}`);
    return op;
  };
  return {
    metadata,
    operator,
    inline: (uid) => [...operator(uid).subtasks]
      .sort((a, b) => a.subtask - b.subtask)
      .map((s) => (s.inline === undefined ? {} : decodeValue<InlineOperatorState>(Buffer.from(s.inline, 'base64')))),
  };
}

// ---- "nothing was modified"

/** Relative path -> size and SHA-256 of every file (and every directory) under root. */
export function fingerprint(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        out[relative(root, p) + '/'] = 'dir';
        walk(p);
      } else {
        out[relative(root, p)] = `${statSync(p).size}:${createHash('sha256').update(readFileSync(p)).digest('hex')}`;
      }
    }
  };
  walk(root);
  return out;
}

// ---- the real CLI

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/weir.js ...` to completion with WEIR_HOME set. */
export function weir(home: string, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/weir.js', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WEIR_HOME: home } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface RunningCli {
  readonly child: ChildProcess;
  readonly jobId: string;
  readonly port: number;
  /** Resolves when the process exits. */
  readonly done: Promise<CliRun>;
}

/**
 * Spawns `weir run ... --rest-port 0` and resolves once its stderr announces the control API
 * (`control API on http://127.0.0.1:<port>`).
 */
export function weirRun(home: string, ...args: string[]): Promise<RunningCli> {
  const child = spawn(process.execPath, ['bin/weir.js', 'run', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WEIR_HOME: home } });
  let stdout = '';
  let stderr = '';
  const done = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      const m = /job ([0-9a-f]{32}) running; control API on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr);
      if (m) resolve({ child, jobId: m[1]!, port: Number(m[2]), done });
    });
    void done.then((r) => reject(new Error(`weir run exited (${r.code}) before announcing its control API:\n${r.stderr}`)));
  });
}

/** stderr must be exactly one "weir: error: ..." line; returns the message after the prefix. */
export function oneLineError(r: CliRun): string {
  const lines = r.stderr.split('\n');
  if (lines.at(-1) !== '' || lines.length !== 2 || !lines[0]!.startsWith('weir: error: ') || /^\s+at /m.test(r.stderr)) {
    throw new Error(`expected one "weir: error:" line on stderr, got:\n${r.stderr}`);
  }
  return lines[0]!.slice('weir: error: '.length);
}

/** Record indices the generator source (uid "src") had produced at a snapshot, from its lane positions. */
export async function producedIn(path: string, uid = 'src', count?: number): Promise<Set<number>> {
  const splits = (await decodeSnapshot(path)).inline(uid).flatMap((s) => (s.splits ?? []) as { lane: number; lanes: number; next: number }[]);
  const out = new Set<number>();
  for (const s of splits) for (let i = s.lane; i < s.next; i += s.lanes) out.add(i);
  if (count !== undefined) {
    // A reader drops a lane once it has emitted all of it, so a snapshot lists no exhausted
    // lane (every lane is assigned at the first start): a lane it does not list was produced
    // whole. Without `count`, those ids are missing (seen on a loaded machine, where a lane
    // ran out before the savepoint).
    const lanes = splits[0]?.lanes;
    const listed = new Set(splits.map((s) => s.lane));
    if (lanes === undefined) for (let i = 0; i < count; i++) out.add(i);
    else for (let lane = 0; lane < lanes; lane++) if (!listed.has(lane)) for (let i = lane; i < count; i += lanes) out.add(i);
  }
  return out;
}
