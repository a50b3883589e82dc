/**
 * The manager's REST API and the weir apps / weir manager CLI on bad input: a spec with a bad
 * field is refused naming the file (or request) and the field, an unknown application is a 404,
 * a second manager on the same directory is refused, no manager means a one-line error, and a
 * web page cannot drive the API (a request that is not JSON, or names another Host, is refused).
 * These start no job.
 */
import { statSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { ManagerApi } from '../../src/lifecycle/rest.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { serveManager, type RunningManager } from '../../src/lifecycle/serve.ts';
import { oneLineError, tempDir, weir } from '../savepoint/helpers.ts';
import { rememberToken, rest } from './helpers.ts';
import { FileAppStore } from '../../src/lifecycle/store.ts';
import { initialStatus } from '../../src/lifecycle/status.ts';
import { validateSpec } from '../../src/lifecycle/spec.ts';

const tmp = tempDir('lifecycle-api');
let running: RunningManager | undefined;
afterAll(async () => {
  await running?.close();
  tmp.cleanup();
});

describe('manager API and CLI on bad input', () => {
  it('refuses bad specs naming the field, unknown applications and verbs, and a second manager on the directory', async () => {
    const dir = tmp.fresh('m');
    running = await serveManager({ dir, port: 0, address: '127.0.0.1', intervalMs: 200, log: () => {} });
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // Every change needs the token, which only the manager's user can read (before: any local
    // user could apply a spec, and the manager ran its module as this user).
    const spec1 = { spec: { name: 'evil', job: { module: '/j.ts', version: 'v1' } } };
    const anonymous = await fetch(`${running.url}/apps`, { method: 'POST', body: JSON.stringify(spec1), headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(10_000) });
    expect(anonymous.status).toBe(401);
    const wrong = await fetch(`${running.url}/apps`, { method: 'POST', body: JSON.stringify(spec1), headers: { 'content-type': 'application/json', authorization: 'Bearer not-it' }, signal: AbortSignal.timeout(10_000) });
    expect(wrong.status).toBe(401);
    expect(statSync(join(dir, 'manager.json')).mode & 0o077).toBe(0);
    rememberToken(running.url, running.token);

    const bad = await rest(`${running.url}/apps`, 'POST', { spec: { name: 'orders', job: { module: '/j.ts', version: 'v1', parallelism: -1 } } });
    expect(bad).toEqual({ status: 400, body: { errors: ['spec: field "job.parallelism": expected an integer >= 1, got -1'] } });
    expect(await rest(`${running.url}/apps/nope`)).toEqual({ status: 404, body: { errors: ['no application nope (see weir apps list)'] } });
    expect((await rest(`${running.url}/apps/nope/suspend`, 'POST')).status).toBe(404);
    expect((await rest(`${running.url}/things`)).status).toBe(404);
    // A name that is no application name never reaches the store (before: ..%2F.. read and rewrote files outside it).
    for (const name of ['..%2F..%2Fvictim', 'Orders', 'a%2Fb']) {
      const r = await rest(`${running.url}/apps/${name}/suspend`, 'POST');
      expect(r.status, name).toBe(400);
      expect(r.body.errors[0]).toMatch(/is not an application name/);
    }
    expect(await rest(`${running.url}/apps`)).toEqual({ status: 200, body: { apps: [] } });

    // A web page cannot drive it: a simple (text/plain) POST, a bodiless POST without JSON, and a foreign Host are refused.
    const spec0 = { spec: { name: 'evil', job: { module: '/j.ts', version: 'v1' } } };
    const plain = await fetch(`${running.url}/apps`, { method: 'POST', body: JSON.stringify(spec0), headers: { 'content-type': 'text/plain' }, signal: AbortSignal.timeout(10_000) });
    expect(plain.status).toBe(415);
    expect(((await plain.json()) as { errors: string[] }).errors[0]).toMatch(/Content-Type: application\/json/);
    expect((await fetch(`${running.url}/apps/evil/suspend`, { method: 'POST', signal: AbortSignal.timeout(10_000) })).status).toBe(415);
    const port = new URL(running.url).port;
    const rebound = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/apps', headers: { host: `evil.example:${port}` }, timeout: 10_000 }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject).on('timeout', () => req.destroy(new Error('no answer')));
      req.end();
    });
    expect(rebound).toBe(421);
    expect(await rest(`${running.url}/apps`), 'nothing was applied').toEqual({ status: 200, body: { apps: [] } });

    const home = tmp.fresh('home');
    const spec = join(dir, '..', 'bad.yaml');
    writeFileSync(spec, 'name: orders\njob: { module: j.ts, version: v1 }\nupgradeMode: sometimes\n');
    const r = await weir(home, 'apps', 'apply', spec, '--dir', dir);
    expect(r.code).toBe(2);
    expect(oneLineError(r)).toBe(`${spec}: field "upgradeMode": expected one of stateless, savepoint, last-state, got "sometimes"`);

    const none = await weir(home, 'apps', 'list', '--dir', tmp.fresh('empty'));
    expect(none.code).toBe(2);
    expect(oneLineError(none)).toMatch(/^apps: no manager is running for .*empty.*; start one with weir manager/);

    // Another program on the port: its replies are said not to be a manager's (before: TypeErrors, or "generation undefined" and exit 0).
    const stub = createServer((q, r) => {
      r.setHeader('content-type', 'application/json');
      r.end(q.url?.includes('events') ? '{"events":[{"at":"x"}]}' : '{"hello":1}');
    });
    await new Promise<void>((res) => stub.listen(0, '127.0.0.1', res));
    try {
      const url = `http://127.0.0.1:${(stub.address() as { port: number }).port}`;
      for (const [args, why] of [[['list'], 'no "apps" list'], [['suspend', 'x'], '"generation" is missing'], [['events', 'x'], 'Invalid time value']] as const) {
        const r = await weir(home, 'apps', ...args, '--manager', url);
        expect(r.code).toBe(2);
        expect(oneLineError(r)).toBe(`apps ${args[0]}: the manager at ${url} answered something that is not a weir manager's reply (${why})`);
      }
    } finally {
      stub.close();
    }

    // Credentials in --manager (which takes none) are refused and never echoed.
    const secret = await weir(home, 'apps', 'list', '--manager', 'http://user:s3cret@127.0.0.1:1');
    expect(secret.code).toBe(2);
    expect(oneLineError(secret)).toBe('apps: --manager must not carry credentials, got "http://***@127.0.0.1:1"');
    expect(secret.stderr + secret.stdout).not.toContain('s3cret');

    const verb = await weir(home, 'apps', 'frobnicate', '--dir', dir);
    expect(oneLineError(verb)).toBe('apps: unknown verb "frobnicate": one of apply, list, describe, events, suspend, resume, savepoint, rollback, delete');

    // A deleted application applied again starts afresh without reusing deployment ids or savepoint folders.
    const store = new FileAppStore(dir);
    store.saveStatus('gone', { ...initialStatus(), lifecycle: 'DELETED', nextDeployment: 5, nextSavepoint: 7, restorePath: '/old/sp', lastReconciledSpec: validateSpec({ name: 'gone', job: { module: '/j.ts', version: 'v1' } }, 't', '/') });
    const again = await rest(`${running.url}/apps`, 'POST', { spec: { name: 'gone', job: { module: '/j.ts', version: 'v1' }, state: 'suspended' } });
    expect(again).toEqual({ status: 200, body: { name: 'gone', generation: 1 } });
    // (The manager may have reconciled it meanwhile: suspended, it starts nothing.)
    const fresh = store.loadStatus('gone')!;
    expect(fresh).toMatchObject({ nextDeployment: 5, nextSavepoint: 7, savepoints: [] });
    expect(fresh.restorePath).toBeUndefined();
    expect(['CREATED', 'SUSPENDED']).toContain(fresh.lifecycle);

    const second = await weir(home, 'manager', '--dir', dir, '--port', '0');
    expect(second.code).toBe(1);
    expect(oneLineError(second)).toBe(`a manager already serves ${dir} at ${running.url}; stop it first, or give another --dir`);
  }, 120_000);

  it('two managers started at the same moment on one directory: one serves, the other is refused (before: both ran)', async () => {
    const dir = tmp.fresh('race');
    const opts = { dir, port: 0, address: '127.0.0.1', intervalMs: 200, log: () => {} };
    const both = await Promise.allSettled([serveManager(opts), serveManager(opts)]);
    const served = both.filter((r): r is PromiseFulfilledResult<RunningManager> => r.status === 'fulfilled').map((r) => r.value);
    const refused = both.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => (r.reason as Error).message);
    try {
      expect(served).toHaveLength(1);
      expect(refused).toHaveLength(1);
      expect(refused[0]).toMatch(/^manager directory .* is in use by weir process \d+ \(weir manager/);
    } finally {
      for (const m of served) await m.close();
    }
    // Closed, the directory is free again.
    const again = await serveManager(opts);
    await again.close();
  });

  it('a spec\'s credentials in URLs are blanked in replies; a character split between two writes of the body arrives whole; a body too large gets 413', async () => {
    const dir = tmp.fresh('creds');
    const m = await serveManager({ dir, port: 0, address: '127.0.0.1', intervalMs: 200, log: () => {} });
    try {
      rememberToken(m.url, m.token);
      const spec = { name: 'orders', state: 'suspended', job: { module: '/jobs/é.ts', version: 'v1', args: ['postgres://app:Hunter2Secret@db:5432/prod#t', 'plain'] } };
      // The body in two writes, the "é" cut between its two bytes (before: stored as two U+FFFD).
      const body = Buffer.from(JSON.stringify({ spec, where: 'test', baseDir: '/' }));
      const cut = body.indexOf(Buffer.from('é')) + 1;
      const port = Number(new URL(m.url).port);
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/apps', timeout: 10_000, headers: { 'content-type': 'application/json', 'content-length': body.length, authorization: `Bearer ${m.token}` } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.write(body.subarray(0, cut));
        setTimeout(() => req.end(body.subarray(cut)), 50);
      });
      expect(status).toBe(200);
      const described = await rest(`${m.url}/apps/orders`);
      expect(described.status).toBe(200);
      expect(JSON.stringify(described.body)).not.toContain('Hunter2Secret');
      expect(described.body.desired.spec.job.args).toEqual(['postgres://***@db:5432/prod#t', 'plain']);
      expect(described.body.desired.spec.job.module).toBe('/jobs/é.ts');
      const big = await rest(`${m.url}/apps`, 'POST', { spec, pad: 'x'.repeat(2 << 20) });
      expect(big.status).toBe(413);
    } finally {
      await m.close();
    }
  });

  it('every reply is without credentials, the events too (a failed deployment\'s last error line can hold its job arguments): before, GET /apps/:app/events returned them whole', async () => {
    const status = { lifecycle: 'FAILED', events: [{ type: 'Warning', reason: 'JobStatusChanged', message: 'deployment orders-1 failed: bad target postgres://app:s3cret@db:5432/orders#t', at: 1 }] };
    const stub = { list: () => [], describe: () => ({ desired: undefined, status }), status: () => status };
    const api = new ManagerApi(stub as never, 'tok');
    const port = await api.listen(0, '127.0.0.1');
    try {
      for (const path of ['/apps/orders', '/apps/orders/events']) {
        const r = await rest(`http://127.0.0.1:${port}${path}`);
        expect(r.status, path).toBe(200);
        expect(JSON.stringify(r.body), path).not.toContain('s3cret');
        expect(JSON.stringify(r.body), path).toContain('postgres://***@db:5432/orders#t');
      }
    } finally {
      await api.close();
    }
  });

  it('an application whose status cannot be read does not keep the manager from starting; it is reported', async () => {
    const dir = tmp.fresh('bad-app');
    const store = new FileAppStore(dir);
    store.saveDesired('broken', { spec: validateSpec({ name: 'broken', job: { module: '/j.ts', version: 'v1' } }, 'test', '/'), generation: 1 });
    writeFileSync(join(dir, 'apps', 'broken', 'status.json'), '{"lifecycle": "STA');
    const lines: string[] = [];
    const m = await serveManager({ dir, port: 0, address: '127.0.0.1', intervalMs: 200, log: (l) => void lines.push(l) });
    try {
      expect(lines.join('\n')).toMatch(/weir manager: broken: cannot carry on with its operation in flight: /);
    } finally {
      await m.close();
    }
  });
});
