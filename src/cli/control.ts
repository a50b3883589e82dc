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
import { CliError } from './args.ts';
import { commandLine } from './command-line.ts';

const REQUEST_TIMEOUT_MS = 10_000;

interface Target {
  readonly base: string;
  readonly jobId: string;
}

async function call(url: string, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), headers: { 'content-type': 'application/json' } });
  } catch (e) {
    const why = (e as Error).name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : (e as { cause?: Error }).cause?.message ?? (e as Error).message;
    throw new CliError(`cannot reach the job's REST API at ${new URL(url).host}: ${why}`);
  }
  let body: Record<string, unknown> = {};
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    // an empty answer
  }
  return { status: res.status, body };
}

function errorOf(body: Record<string, unknown>): string {
  const errs = body['errors'];
  return Array.isArray(errs) ? errs.join('; ') : JSON.stringify(body);
}

async function resolveTarget(jobArg: string | undefined, values: OptionValues, command: CommandName): Promise<Target> {
  if (jobArg === undefined) throw new CliError(`${command}: give the job id (see weir list)`);
  const port = valueOf(values, OPTIONS.targetRestPort);
  if (port !== undefined) {
    const address = valueOf(values, OPTIONS.targetRestAddress) ?? defaultOf(OPTIONS.targetRestAddress);
    const base = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
    const { status, body } = await call(`${base}/jobs`);
    const jobs = (body['jobs'] as { id: string }[] | undefined) ?? [];
    const match = jobs.find((j) => j.id === jobArg || j.id.startsWith(jobArg));
    if (status !== 200 || match === undefined) throw new CliError(`${command}: no job ${jobArg} at ${base}`);
    return { base, jobId: match.id };
  }
  const live = listRegistered();
  const matches = live.filter((e) => e.jobId === jobArg || e.jobId.startsWith(jobArg));
  if (matches.length === 0) throw new CliError(`${command}: no running job ${jobArg} on this machine (see weir list, or give --rest-port)`);
  if (matches.length > 1) throw new CliError(`${command}: "${jobArg}" matches several jobs (${matches.map((m) => m.jobId).join(', ')}); give more of the id`);
  const e = matches[0]!;
  return { base: baseOf(e), jobId: e.jobId };
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
    process.stdout.write(`${r['jid']}  ${String(r['state']).padEnd(12)} ${secs}s  ${r['address']}  "${r['name']}"\n`);
  }
  return 0;
}

async function waitForOperation(t: Target, requestId: string, timeoutMs: number, what: string): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, body } = await call(`${t.base}/jobs/${t.jobId}/savepoints/${requestId}`);
    if (status !== 200) throw new CliError(`${what}: ${errorOf(body)}`);
    const st = (body['status'] as { id?: string } | undefined)?.id;
    if (st === 'COMPLETED') {
      const op = body['operation'] as { location?: string; 'failure-cause'?: { message?: string } };
      if (op.location !== undefined) return op.location;
      throw new CliError(`${what} failed: ${op['failure-cause']?.message ?? 'unknown reason'}`);
    }
    if (Date.now() > deadline) throw new CliError(`${what}: not completed within ${Math.round(timeoutMs / 1000)} s (it may still complete; the job keeps running)`);
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
  const { status, body } = await call(`${t.base}/jobs/${t.jobId}/savepoints`, { method: 'POST', body: JSON.stringify(dir ? { 'target-directory': absolute(dir) } : {}) });
  if (status !== 202) throw new CliError(`savepoint: ${errorOf(body)}`);
  const path = await waitForOperation(t, String(body['request-id']), timeout, 'savepoint');
  process.stdout.write(`${path}\n`);
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
  const { status, body } = await call(`${t.base}/jobs/${t.jobId}/stop`, { method: 'POST', body: JSON.stringify(req) });
  if (status !== 202) throw new CliError(`stop: ${errorOf(body)}`);
  const path = await waitForOperation(t, String(body['request-id']), timeout, 'stop with savepoint');
  process.stdout.write(`${path}\n`);
  return 0;
}

export async function cancelCommand(argv: string[]): Promise<number> {
  const line = commandLine(argv, 'cancel');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  const t = await resolveTarget(positionals[0], values, 'cancel');
  const { status, body } = await call(`${t.base}/jobs/${t.jobId}?mode=cancel`, { method: 'PATCH' });
  if (status !== 202) throw new CliError(`cancel: ${errorOf(body)}`);
  process.stdout.write(`cancelling ${t.jobId}\n`);
  return 0;
}

/** Already checked when the flag was read. */
function timeoutOf(values: OptionValues): number {
  return toMillis(valueOf(values, OPTIONS.savepointTimeout) ?? defaultOf(OPTIONS.savepointTimeout), '--timeout');
}

function absolute(p: string): string {
  // The job may run in another working directory: send absolute paths (URLs such as s3:// as they are).
  return p.startsWith('/') || schemeOf(p) !== undefined ? p : `${process.cwd()}/${p}`;
}
