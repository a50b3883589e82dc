/**
 * Issue 15, points 7 and 8, against a real `weir run`: ids too short to pick a job (an empty
 * one matched every job) are refused; `weir cancel` returns once the job has ended; the
 * control API refuses a Host that is not its own (DNS rebinding) and state-changing requests
 * that are not JSON (CSRF), and with --rest-token-file requires the token, which it never logs.
 * Before the fix `weir cancel ""`, a PATCH with a foreign Host and a text/plain POST to /stop
 * each ended the job.
 */
import { request } from 'node:http';
import { chmodSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixture, oneLineError, tempDir, waitRunningAt, weir, weirRun, type RunningCli } from '../savepoint/helpers.ts';

const tmp = tempDir('control-safety');
const started: RunningCli[] = [];
afterAll(() => {
  // Only the processes these tests started, by their own handle.
  for (const r of started) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
  tmp.cleanup();
});

async function run(home: string, ...args: string[]): Promise<RunningCli> {
  const r = await weirRun(home, ...args);
  started.push(r);
  return r;
}

/** A raw HTTP request (fetch cannot set Host). */
function raw(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d)).on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject).on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.end(body);
  });
}

describe('control safety (issue 15.7, 15.8)', () => {
  it('short or empty ids are refused; foreign Host and non-JSON requests are refused; the job runs on; cancel returns once it has ended', async () => {
    const home = tmp.fresh('home');
    const job = await run(home, fixture('savepoint-app.ts'), '-w', '1', '--rest-port', '0', '--', 'v1', '1000000', '500');
    await waitRunningAt(job.port, job.jobId);
    const [empty, emptyStop, short] = await Promise.all([
      weir(home, 'cancel', ''),
      weir(home, 'stop', '', '--savepoint', '--dir', tmp.fresh('sp')),
      weir(home, 'cancel', job.jobId.slice(0, 3)),
    ]);
    expect(empty.code).toBe(2);
    expect(oneLineError(empty)).toBe('cancel: "" is too short to pick a job: give the job id or at least 4 of its first characters (see weir list)');
    expect(emptyStop.code).toBe(2);
    expect(oneLineError(emptyStop)).toMatch(/^stop: "" is too short to pick a job/);
    expect(short.code).toBe(2);
    expect(oneLineError(short)).toBe(`cancel: "${job.jobId.slice(0, 3)}" is too short to pick a job: give the job id or at least 4 of its first characters (see weir list)`);

    const here = { host: `127.0.0.1:${job.port}` };
    const rebound = await raw(job.port, 'PATCH', `/jobs/${job.jobId}?mode=cancel`, { host: `evil.example:${job.port}`, 'content-type': 'application/json' }, '{}');
    expect(rebound.status).toBe(421);
    expect(JSON.parse(rebound.text).errors[0]).toMatch(/Host header must name this API's address/);
    const rebindRead = await raw(job.port, 'GET', `/jobs/${job.jobId}`, { host: `evil.example:${job.port}` });
    expect(rebindRead.status, 'nothing is read through a foreign Host either').toBe(421);
    // Without --rest-token-file the job has a token of its own: a JSON request without it changes nothing (before: any local user could cancel the job or save its state anywhere).
    const anonymous = await raw(job.port, 'POST', `/jobs/${job.jobId}/savepoints`, { ...here, 'content-type': 'application/json' }, JSON.stringify({ 'target-directory': tmp.fresh('loot') }));
    expect(anonymous.status).toBe(401);
    const entry = join(home, 'jobs', `${job.jobId}.json`);
    expect(statSync(entry).mode & 0o077, 'the registry entry holding it is its user\'s only').toBe(0);
    const formStop = await raw(job.port, 'POST', `/jobs/${job.jobId}/stop`, { ...here, 'content-type': 'text/plain;charset=UTF-8' }, JSON.stringify({ targetDirectory: tmp.fresh('sp2') }));
    expect(formStop.status, 'a form cannot carry the token').toBe(401);
    const bareCancel = await raw(job.port, 'PATCH', `/jobs/${job.jobId}?mode=cancel`, here);
    expect(bareCancel.status).toBe(401);
    const ok = await raw(job.port, 'GET', `/jobs/${job.jobId}`, { host: `localhost:${job.port}` });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.text).state).toBe('RUNNING');
    expect(job.child.exitCode, 'still running').toBe(null);

    const c = await weir(home, 'cancel', job.jobId.slice(0, 8));
    expect([c.code, c.stdout, c.stderr]).toEqual([0, `cancelled ${job.jobId}\n`, '']);
    const after = await fetch(`http://127.0.0.1:${job.port}/jobs/${job.jobId}`).then((r) => r.json() as Promise<{ state?: string }>, () => ({ state: 'GONE' }));
    expect(['GONE', 'CANCELED'], 'cancel returned once the job had ended').toContain(after.state);
    expect((await job.done).code).toBe(130);
  }, 120_000);

  it('--rest-token-file: state-changing requests without the token get 401; the CLI sends it; the token is never printed', async () => {
    const home = tmp.fresh('home');
    const token = 'tok-4f9c2b7e1d';
    const file = join(tmp.fresh('token'), '..', `token-${Date.now()}`);
    writeFileSync(file, `${token}\n`, { mode: 0o644 });
    const open = await weir(home, 'run', fixture('savepoint-app.ts'), '--rest-port', '0', '--rest-token-file', file, '--', 'v1', '10', '500');
    expect(open.code).toBe(2);
    expect(oneLineError(open)).toBe(`--rest-token-file ${file}: other users can read or write it (mode 644); make it private: chmod 600 ${file}`);
    chmodSync(file, 0o600);
    const job = await run(home, fixture('savepoint-app.ts'), '-w', '1', '--rest-port', '0', '--rest-token-file', file, '--', 'v1', '1000000', '500');
    const host = { host: `127.0.0.1:${job.port}` };
    // The token guards what changes the job; reads (dashboard, metrics) stay open to whoever reaches the port.
    expect((await raw(job.port, 'GET', `/jobs/${job.jobId}`, host)).status).toBe(200);
    const json = { ...host, 'content-type': 'application/json' };
    expect((await raw(job.port, 'PATCH', `/jobs/${job.jobId}?mode=cancel`, json, '{}')).status).toBe(401);
    expect((await raw(job.port, 'PATCH', `/jobs/${job.jobId}?mode=cancel`, { ...json, authorization: 'Bearer wrong' }, '{}')).status).toBe(401);
    expect((await raw(job.port, 'POST', `/jobs/${job.jobId}/checkpoints`, { ...json, authorization: `Bearer ${token}` }, '{}')).status).not.toBe(401);
    // Addressed by port, from another WEIR_HOME (no registry entry of this job): the token is needed.
    const without = await weir(tmp.fresh('other-home'), 'cancel', job.jobId, '--rest-port', String(job.port));
    expect(without.code).toBe(2);
    expect(oneLineError(without)).toMatch(/^cancel: a token is required/);
    expect(job.child.exitCode, 'still running').toBe(null);
    const withToken = await weir(tmp.fresh('other-home'), 'cancel', job.jobId, '--rest-port', String(job.port), '--rest-token-file', file);
    expect([withToken.code, withToken.stdout]).toEqual([0, `cancelled ${job.jobId}\n`]);
    const done = await job.done;
    expect(done.code).toBe(130);
    for (const text of [done.stderr, done.stdout, without.stderr, withToken.stderr]) expect(text).not.toContain(token);
  }, 120_000);
});
