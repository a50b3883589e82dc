/**
 * Commands that talk to a running job through its REST API: weir list, savepoint, stop,
 * cancel. A job is found by id (or a unique prefix) in the local registry of running jobs,
 * or addressed directly with --rest-port / --rest-address. Every request has a timeout.
 */
import { schemeOf } from '../checkpoint/names.ts';
import { toMillis } from '../core/duration.ts';
import type { CommandName } from '../core/options/commands.ts';
import { defaultOf } from '../core/options/option.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { valueOf, type OptionValues } from '../core/options/values.ts';
import { listRegistered, type JobEntry } from '../observe/registry.ts';
import { errorOf, savepointOutcome } from '../observe/rest-replies.ts';
import { CliError } from './args.ts';
import { readTokenFile } from './token-file.ts';
import { WeirError } from '../core/errors.ts';
import { commandLine } from './command-line.ts';
import { escapeControls } from '../core/log.ts';

const REQUEST_TIMEOUT_MS = 10_000;
/**
 * Shortest id prefix that picks a job: `weir stop ""` matched every job, and a character or two
 * picks one by accident. Four hex characters (as README's "weir cancel 3f2a") rarely collide on
 * one machine, and a collision is refused anyway.
 */
export const MIN_ID_PREFIX = 4;
/** How often cancel asks whether the job has ended. */
const CANCEL_POLL_MS = 100;

interface Target {
  readonly base: string;
  readonly jobId: string;
  /** Sent as Authorization: Bearer (--rest-token-file). */
  readonly token: string | undefined;
}

/** The REST API did not answer; `refused`: nothing listens there (the job's process has ended). */
class UnreachableError extends CliError {
  constructor(message: string, readonly refused: boolean) {
    super(message);
  }
}

async function call(url: string, init: RequestInit = {}, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  let res: Response;
  try {
    // JSON on every request: the API refuses state-changing requests that are not (cross-site request protection).
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) };
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), headers });
  } catch (e) {
    const why = (e as Error).name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : (e as { cause?: Error }).cause?.message ?? (e as Error).message;
    throw new UnreachableError(`cannot reach the job's REST API at ${new URL(url).host}: ${why}`, (e as { cause?: { code?: unknown } }).cause?.code === 'ECONNREFUSED');
  }
  let body: Record<string, unknown> = {};
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    // an empty answer
  }
  return { status: res.status, body };
}

async function resolveTarget(jobArg: string | undefined, values: OptionValues, command: CommandName): Promise<Target> {
  if (jobArg === undefined) throw new CliError(`${command}: give the job id (see weir list)`);
  if (jobArg.length < MIN_ID_PREFIX) {
    throw new CliError(`${command}: "${jobArg}" is too short to pick a job: give the job id or at least ${MIN_ID_PREFIX} of its first characters (see weir list)`);
  }
  const tokenFile = valueOf(values, OPTIONS.targetRestTokenFile);
  const given = tokenFile !== undefined ? readTokenFile(tokenFile) : undefined;
  const port = valueOf(values, OPTIONS.targetRestPort);
  if (port !== undefined) {
    const address = valueOf(values, OPTIONS.targetRestAddress) ?? defaultOf(OPTIONS.targetRestAddress);
    // A job of this user's on that port: its registry entry has the token.
    const token = given ?? listRegistered().find((e) => e.port === port && e.address === address)?.token;
    const base = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
    const { status, body } = await call(`${base}/jobs`, {}, token);
    if (status === 401) throw new CliError(`${command}: the job at ${base} requires a token: give --rest-token-file`);
    // Another server on that port (or another version) may answer anything: only job ids count.
    const listed: unknown = body['jobs'];
    const jobs = Array.isArray(listed) ? listed.filter((j): j is { id: string } => typeof (j as { id?: unknown } | null)?.id === 'string') : [];
    const matches = jobs.filter((j) => j.id === jobArg || j.id.startsWith(jobArg));
    if (status !== 200 || matches.length === 0) throw new CliError(`${command}: no job ${jobArg} at ${base}`);
    if (matches.length > 1) throw new CliError(`${command}: "${jobArg}" matches several jobs (${matches.map((m) => m.id).join(', ')}); give more of the id`);
    return { base, jobId: matches[0]!.id, token };
  }
  const live = listRegistered();
  const matches = live.filter((e) => e.jobId === jobArg || e.jobId.startsWith(jobArg));
  if (matches.length === 0) throw new CliError(`${command}: no running job ${jobArg} on this machine (see weir list, or give --rest-port)`);
  if (matches.length > 1) throw new CliError(`${command}: "${jobArg}" matches several jobs (${matches.map((m) => m.jobId).join(', ')}); give more of the id`);
  const e = matches[0]!;
  return { base: baseOf(e), jobId: e.jobId, token: given ?? e.token };
}

function baseOf(e: JobEntry): string {
  return `http://${e.address.includes(':') ? `[${e.address}]` : e.address}:${e.port}`;
}

export async function listCommand(argv: string[]): Promise<number> {
  const line = commandLine(argv, 'list');
  if (line === undefined) return 0;
  const { values } = line;
  const rows: Record<string, unknown>[] = [];
  for (const e of listRegistered()) {
    try {
      const { status, body } = await call(`${baseOf(e)}/jobs/${e.jobId}`);
      if (status === 200) rows.push({ ...body, address: `${e.address}:${e.port}`, pid: e.pid });
    } catch {
      // Registered but not answering (exiting): leave it out.
    }
  }
  if (valueOf(values, OPTIONS.json) === true) {
    process.stdout.write(JSON.stringify({ jobs: rows }, null, 2) + '\n');
    return 0;
  }
  if (rows.length === 0) {
    process.stdout.write('no running jobs\n');
    return 0;
  }
  for (const r of rows) {
    const secs = Math.round(Number(r['duration']) / 1000);
    // Fields of a REST reply (the job's name, and with --rest-port any server's words): no terminal controls.
    process.stdout.write(escapeControls(`${r['jid']}  ${String(r['state']).padEnd(12)} ${secs}s  ${r['address']}  "${r['name']}"`) + '\n');
  }
  return 0;
}

async function waitForOperation(t: Target, requestId: string, timeoutMs: number, what: string): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, body } = await call(`${t.base}/jobs/${t.jobId}/savepoints/${requestId}`, {}, t.token);
    if (status !== 200) throw new CliError(`${what}: ${errorOf(body)}`);
    const outcome = savepointOutcome(body);
    if (outcome !== undefined) {
      if ('location' in outcome) return outcome.location;
      throw new CliError(`${what} failed: ${outcome.failure}`);
    }
    if (Date.now() > deadline) throw new CliError(`${what}: not completed within ${Math.round(timeoutMs / 1000)} s (${what.startsWith('stop') ? 'the stop is still in progress: the job may still stop, its savepoint then in the target directory; see weir list' : 'it may still complete'})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function savepointCommand(argv: string[]): Promise<number> {
  const line = commandLine(argv, 'savepoint');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  const t = await resolveTarget(positionals[0], values, 'savepoint');
  const timeout = timeoutOf(values);
  const dir = valueOf(values, OPTIONS.savepointTarget);
  const { status, body } = await call(`${t.base}/jobs/${t.jobId}/savepoints`, { method: 'POST', body: JSON.stringify(dir ? { 'target-directory': absolute(dir) } : {}) }, t.token);
  if (status !== 202) throw new CliError(`savepoint: ${errorOf(body)}`);
  const path = await waitForOperation(t, String(body['request-id']), timeout, 'savepoint');
  process.stdout.write(`${escapeControls(path)}\n`);
  return 0;
}

export async function stopCommand(argv: string[]): Promise<number> {
  const line = commandLine(argv, 'stop');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  if (valueOf(values, OPTIONS.withSavepoint) !== true) throw new CliError('stop: stopping takes a savepoint: pass --savepoint (use weir cancel to end a job without one)');
  const t = await resolveTarget(positionals[0], values, 'stop');
  const timeout = timeoutOf(values);
  const dir = valueOf(values, OPTIONS.savepointTarget);
  const req = { ...(dir ? { targetDirectory: absolute(dir) } : {}), drain: valueOf(values, OPTIONS.drain) === true };
  const { status, body } = await call(`${t.base}/jobs/${t.jobId}/stop`, { method: 'POST', body: JSON.stringify(req) }, t.token);
  if (status !== 202) throw new CliError(`stop: ${errorOf(body)}`);
  const path = await waitForOperation(t, String(body['request-id']), timeout, 'stop with savepoint');
  process.stdout.write(`${escapeControls(path)}\n`);
  return 0;
}

export async function cancelCommand(argv: string[]): Promise<number> {
  const line = commandLine(argv, 'cancel');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  const t = await resolveTarget(positionals[0], values, 'cancel');
  const timeoutMs = toMillis(valueOf(values, OPTIONS.cancelTimeout) ?? defaultOf(OPTIONS.cancelTimeout), '--timeout');
  const { status, body } = await call(`${t.base}/jobs/${t.jobId}?mode=cancel`, { method: 'PATCH', body: '{}' }, t.token);
  if (status !== 202) throw new CliError(`cancel: ${errorOf(body)}`);
  // The cancel is asynchronous: say it is done only once the job has ended.
  if (!(await endedWithin(t, timeoutMs))) {
    throw new WeirError('TIMEOUT', `cancel: job ${t.jobId} was asked to cancel but has not ended within ${Math.round(timeoutMs / 1000)} s (it may still end; see weir list)`);
  }
  process.stdout.write(`cancelled ${t.jobId}\n`);
  return 0;
}

/**
 * Whether the job ended within `timeoutMs`: its API stops answering (the process serves it
 * until the job has ended), or answers that the job is CANCELED or gone from that port.
 */
async function endedWithin(t: Target, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let state: string | undefined;
    try {
      const { status, body } = await call(`${t.base}/jobs/${t.jobId}`, {}, t.token);
      if (status === 404) return true;
      state = typeof body['state'] === 'string' ? body['state'] : undefined;
    } catch (e) {
      // Nothing listens any more: the job has ended. A request that timed out proves nothing
      // (a stopped or busy process): asked again until the deadline (before: "cancelled").
      if (e instanceof UnreachableError && e.refused) return true;
      if (!(e instanceof UnreachableError)) throw e;
    }
    if (state === 'CANCELED' || state === 'FINISHED' || state === 'FAILED') return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, CANCEL_POLL_MS));
  }
}

/** Already checked when the flag was read. */
function timeoutOf(values: OptionValues): number {
  return toMillis(valueOf(values, OPTIONS.savepointTimeout) ?? defaultOf(OPTIONS.savepointTimeout), '--timeout');
}

function absolute(p: string): string {
  // The job may run in another working directory: send absolute paths (URLs such as s3:// as they are).
  return p.startsWith('/') || schemeOf(p) !== undefined ? p : `${process.cwd()}/${p}`;
}
