/**
 * weir manager (the lifecycle manager, src/lifecycle) and weir apps (its client over REST):
 *   weir apps apply <spec.yaml|json>   list   describe <app>   events <app>
 *   weir apps suspend|resume|savepoint|rollback <app>   delete <app> [--savepoint]
 * A spec is validated here first, so its errors name the file and the field; the manager
 * validates it again. Every request has a timeout.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { toMillis } from '../core/duration.ts';
import { errorCode } from '../core/errors.ts';
import { defaultOf } from '../core/options/option.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { valueOf, type OptionValues } from '../core/options/values.ts';
import { logger } from '../core/log.ts';
import { defaultManagerDir, managerOf, serveManager } from '../lifecycle/serve.ts';
import { readSpecText, validateSpec } from '../lifecycle/spec.ts';
import type { AppStatus, Desired } from '../lifecycle/status.ts';
import { CliError } from './args.ts';
import { commandLine } from './command-line.ts';
import { redactUrl } from '../checkpoint/s3/settings.ts';

const REQUEST_TIMEOUT_MS = 10_000;
const VERBS = ['apply', 'list', 'describe', 'events', 'suspend', 'resume', 'savepoint', 'rollback', 'delete'];

export async function managerCommand(argv: string[]): Promise<number> {
  const line = commandLine(argv, 'manager');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  if (positionals.length > 0) throw new CliError(`manager: unexpected argument "${positionals[0]}"`);
  const dir = valueOf(values, OPTIONS.managerDir) ?? defaultManagerDir();
  // The one logger (--log-level, --log-format); text lines stay `weir manager: …`.
  const log = logger().component('manager');
  const m = await serveManager({
    dir, port: valueOf(values, OPTIONS.managerPort) ?? defaultOf(OPTIONS.managerPort), address: valueOf(values, OPTIONS.managerAddress) ?? defaultOf(OPTIONS.managerAddress),
    intervalMs: toMillis(valueOf(values, OPTIONS.managerInterval) ?? defaultOf(OPTIONS.managerInterval), '--interval'),
    log: (l) => log.line(l),
  });
  log.info(`serving on ${m.url}; directory ${resolve(dir)}`, { url: m.url });
  const signal = await new Promise<NodeJS.Signals>((res) => {
    process.once('SIGINT', () => res('SIGINT'));
    process.once('SIGTERM', () => res('SIGTERM'));
  });
  log.info(`${signal}: stopping (the jobs keep running; a new manager adopts them)`);
  await m.close();
  return 0;
}

export async function appsCommand(argv: string[]): Promise<number> {
  const line = commandLine(argv, 'apps');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  const [verb, arg, extra] = positionals;
  if (verb === undefined || !VERBS.includes(verb)) throw new CliError(`apps: ${verb === undefined ? 'give a verb' : `unknown verb "${verb}"`}: one of ${VERBS.join(', ')}`);
  if (extra !== undefined) throw new CliError(`apps ${verb}: unexpected argument "${extra}"`);
  if (verb !== 'list' && arg === undefined) throw new CliError(`apps ${verb}: give the ${verb === 'apply' ? 'spec file' : 'application name'}`);
  if (verb === 'list' && arg !== undefined) throw new CliError(`apps list: unexpected argument "${arg}"`);
  const dir = valueOf(values, OPTIONS.managerDir) ?? defaultManagerDir();
  const found = managerOf(dir);
  const base = valueOf(values, OPTIONS.managerUrl) ?? found?.url;
  if (base === undefined) throw new CliError(`apps: no manager is running for ${resolve(dir)}; start one with weir manager (or give --manager URL)`);
  checkManagerUrl(base);
  // The manager's token, from its discovery file (owner-only): for the manager serving --dir.
  managerToken = found !== undefined && found.url === base ? found.token : undefined;
  const json = valueOf(values, OPTIONS.appsJson) === true;
  const app = encodeURIComponent(arg ?? '');
  const out = (s: string) => void process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
  try {
    return await runVerb(verb, arg, app, base, json, values, out);
  } catch (e) {
    // A reply of another shape (another program on the port, a proxy's page): said so, not a TypeError.
    if (e instanceof TypeError || e instanceof RangeError || e instanceof NotAManagerReply) {
      throw new CliError(`apps ${verb}: the manager at ${redactUrl(base)} answered something that is not a weir manager's reply (${e.message})`);
    }
    throw e;
  }
}

class NotAManagerReply extends Error {}

/** `r[field]` as a number (a generation), or a NotAManagerReply. */
function numberIn(r: Record<string, unknown>, field: string): number {
  const v = r[field];
  if (typeof v !== 'number') throw new NotAManagerReply(`"${field}" is ${JSON.stringify(v) ?? 'missing'}`);
  return v;
}

async function runVerb(verb: string, arg: string | undefined, app: string, base: string, json: boolean, values: OptionValues, out: (s: string) => void): Promise<number> {
  switch (verb) {
    case 'apply': {
      const file = resolve(arg!);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (e) {
        throw new CliError(`apps apply: cannot read ${arg}: ${(e as Error).message}`);
      }
      let raw;
      try {
        raw = readSpecText(text, arg!);
        validateSpec(raw, arg!, dirname(file));
      } catch (e) {
        if (errorCode(e) === 'CONFIG') throw new CliError((e as Error).message);
        throw e;
      }
      const r = await call(base, 'POST', '/apps', { spec: raw, where: arg, baseDir: dirname(file) });
      out(`applied ${String(r['name'])} (generation ${numberIn(r, 'generation')})`);
      return 0;
    }
    case 'list': {
      const r = await call(base, 'GET', '/apps');
      const apps = r['apps'] as { name: string; lifecycle: string; version: string; state: string; deployment?: string; runningVersion?: string }[];
      if (!Array.isArray(apps)) throw new NotAManagerReply('no "apps" list');
      if (json) return out(JSON.stringify(r, null, 2)), 0;
      if (apps.length === 0) return out('no applications'), 0;
      for (const a of apps) out(`${a.name.padEnd(20)} ${a.lifecycle.padEnd(12)} ${a.state.padEnd(9)} version ${a.version}${a.deployment !== undefined ? `  running ${a.runningVersion} as ${a.deployment}` : ''}`);
      return 0;
    }
    case 'describe': {
      const r = (await call(base, 'GET', `/apps/${app}`)) as unknown as { desired: Desired; status: AppStatus };
      if (json) return out(JSON.stringify(r, null, 2)), 0;
      out(describe(r.desired, r.status));
      return 0;
    }
    case 'events': {
      const r = await call(base, 'GET', `/apps/${app}/events`);
      const events = r['events'] as AppStatus['events'];
      if (!Array.isArray(events)) throw new NotAManagerReply('no "events" list');
      if (json) return out(JSON.stringify(r, null, 2)), 0;
      for (const e of events) out(eventLine(e));
      return 0;
    }
    case 'delete': {
      const savepoint = valueOf(values, OPTIONS.appsSavepoint) === true;
      await call(base, 'DELETE', `/apps/${app}${savepoint ? '?savepoint=true' : ''}`);
      out(`deleting ${arg}${savepoint ? ' with a savepoint' : ''}`);
      return 0;
    }
    default: {
      const r = await call(base, 'POST', `/apps/${app}/${verb}`);
      out(`${verb}: ${arg} (generation ${numberIn(r, 'generation')})`);
      return 0;
    }
  }
}

function eventLine(e: AppStatus['events'][number]): string {
  return `${new Date(e.at).toISOString()}  ${e.type.padEnd(7)} ${e.reason.padEnd(20)} ${e.message}`;
}

function describe(d: Desired, s: AppStatus): string {
  const lines = [
    `name:        ${d.spec.name}`,
    `lifecycle:   ${s.lifecycle}${s.ended !== undefined ? ` (${s.ended.reason})` : ''}`,
    `spec:        version ${d.spec.job.version}, state ${d.spec.state}, upgradeMode ${d.spec.upgradeMode}, generation ${d.generation}`,
    `job:         ${d.spec.job.module}${d.spec.job.args.length > 0 ? ` -- ${d.spec.job.args.join(' ')}` : ''}`,
    `deployment:  ${s.deployment !== undefined ? `${s.deployment.id} (version ${s.deployment.spec.job.version}${s.deployment.stable ? ', stable' : ''}${s.deployment.from !== undefined ? `, from ${s.deployment.from}` : ''})` : 'none'}`,
    `last stable: ${s.lastStableSpec?.job.version ?? 'none'}`,
    ...(s.operation !== undefined ? [`in flight:   ${s.operation.kind}${'purpose' in s.operation ? ` (${s.operation.purpose})` : ''}`] : []),
    'savepoints:',
    ...(s.savepoints.length === 0 ? ['  none'] : s.savepoints.map((r) => `  ${r.id.padEnd(6)} ${r.trigger.padEnd(8)} ${r.state.padEnd(11)} ${r.path ?? r.error ?? ''}`)),
    'recent events:',
    ...s.events.slice(-10).map((e) => `  ${eventLine(e)}`),
  ];
  return lines.join('\n');
}

/** --manager is an http(s) URL without credentials (the manager takes none; they would be echoed in messages). */
function checkManagerUrl(base: string): void {
  let url: URL | undefined;
  try {
    url = new URL(base);
  } catch {
    // below
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new CliError(`apps: --manager must be an http(s) URL, got ${JSON.stringify(redactUrl(base))}`);
  if (url.username !== '' || url.password !== '') throw new CliError(`apps: --manager must not carry credentials, got ${JSON.stringify(redactUrl(base))}`);
}

/** Sent as Authorization: Bearer with every request (the manager requires it but for GET). */
let managerToken: string | undefined;

async function call(base: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), headers: { 'content-type': 'application/json', ...(managerToken !== undefined ? { authorization: `Bearer ${managerToken}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (e) {
    const why = (e as Error).name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : (e as { cause?: Error }).cause?.message ?? (e as Error).message;
    throw new CliError(`apps: cannot reach the manager at ${base}: ${why}`);
  }
  let parsed: Record<string, unknown> = {};
  try {
    parsed = (await res.json()) as Record<string, unknown>;
  } catch {
    // empty
  }
  if (res.status >= 400) {
    const errs = parsed['errors'];
    const msg = Array.isArray(errs) ? errs.join('; ') : `HTTP ${res.status}`;
    throw res.status === 400 ? new CliError(msg) : new Error(msg);
  }
  return parsed;
}
