/**
 * The control API remembers savepoint and stop requests for GET savepoints/<id>, a bounded
 * number of them: beyond the bound the oldest finished request is forgotten, and requests
 * still in progress are never dropped. The HTTP server is real; the job behind it is a
 * stand-in whose savepoints finish when the test says (the bookkeeping is what is tested).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JobControl } from '../../src/cluster/job-control.ts';
import { RestServer } from '../../src/observe/rest-server.ts';
import { request } from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const JOB = 'a'.repeat(32);

function standInJob(): { job: JobControl; finish: (i: number) => void } {
  const pending: ((location: string) => void)[] = [];
  const job = {
    jobId: JOB,
    jobName: 'stand-in',
    savepoint: (dir: string | undefined) => new Promise<string>((resolve) => pending.push((loc) => resolve(`${dir ?? '/sp'}/${loc}`))),
  } as unknown as JobControl;
  return { job, finish: (i) => pending[i]!(`savepoint-${i}`) };
}

let server: RestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function call(port: number, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    signal: AbortSignal.timeout(10_000),
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  return { status: res.status, json: await res.json() };
}

describe('the control API\'s savepoint requests', () => {
  it('keeps at most maxOperations: the oldest finished are forgotten, those in progress kept', async () => {
    const { job, finish } = standInJob();
    server = new RestServer(job, undefined, 3);
    const port = await server.listen(0, '127.0.0.1');
    const ids: string[] = [];
    const post = async (): Promise<void> => {
      const r = await call(port, 'POST', `/jobs/${JOB}/savepoints`, { 'target-directory': '/d' });
      expect(r.status).toBe(202);
      ids.push(r.json['request-id'] as string);
    };
    const state = async (id: string): Promise<string | number> => {
      const r = await call(port, 'GET', `/jobs/${JOB}/savepoints/${id}`);
      return r.status === 404 ? 404 : (r.json.operation?.location ?? r.json.status.id);
    };
    for (let i = 0; i < 3; i++) await post();
    finish(1);
    finish(2);
    await new Promise((r) => setImmediate(r));
    // Full: the next request forgets the oldest finished one (1), not 0, which is in progress.
    await post();
    expect(await state(ids[0]!)).toBe('IN_PROGRESS');
    expect(await state(ids[1]!)).toBe(404);
    expect(await state(ids[2]!)).toBe('/d/savepoint-2');
    expect(await state(ids[3]!)).toBe('IN_PROGRESS');
    finish(0);
    await new Promise((r) => setImmediate(r));
    await post();
    // Now 0 is the oldest finished one.
    expect(await state(ids[0]!)).toBe(404);
    expect(await state(ids[2]!)).toBe('/d/savepoint-2');
    expect(await state(ids[4]!)).toBe('IN_PROGRESS');
    // Many more requests, all finished at once: never more than 3 remembered.
    for (let i = 5; i < 40; i++) {
      await post();
      finish(i);
    }
    await new Promise((r) => setImmediate(r));
    const known = [];
    for (const id of ids) if ((await state(id)) !== 404) known.push(id);
    expect(known.length).toBeLessThanOrEqual(3);
    expect(known).toContain(ids[39]);
  });

  it('refuses a stop whose drain is not a boolean (the string "true" is not read as false)', async () => {
    const { job } = standInJob();
    server = new RestServer(job);
    const port = await server.listen(0, '127.0.0.1');
    const r = await call(port, 'POST', `/jobs/${JOB}/stop`, { drain: 'true' });
    expect(r.status).toBe(400);
    expect(r.json.errors).toEqual(['"drain" must be true or false, got "true"']);
  });

  it('refuses a bound that is not a positive integer', () => {
    const { job } = standInJob();
    expect(() => new RestServer(job, undefined, 0)).toThrow(/maxOperations must be a positive integer, got 0/);
  });
});

describe('the control API\'s checkpoint trigger (Flink\'s shape)', () => {
  it('POST /checkpoints answers at once with a request id; GET /checkpoints/<id> gives the status, then the checkpoint id or the failure', async () => {
    const pending: { resolve: (id: number) => void; reject: (e: Error) => void }[] = [];
    const job = {
      jobId: JOB, jobName: 'stand-in',
      triggerCheckpoint: () => new Promise<number>((resolve, reject) => pending.push({ resolve, reject })),
    } as unknown as JobControl;
    server = new RestServer(job);
    const port = await server.listen(0, '127.0.0.1');
    const first = await call(port, 'POST', `/jobs/${JOB}/checkpoints`, {});
    expect(first.status).toBe(202); // before: held open until the checkpoint ended
    const id = first.json['request-id'] as string;
    expect(await call(port, 'GET', `/jobs/${JOB}/checkpoints/${id}`)).toEqual({ status: 200, json: { status: { id: 'IN_PROGRESS' } } });
    pending[0]!.resolve(7);
    await new Promise((r) => setImmediate(r));
    expect(await call(port, 'GET', `/jobs/${JOB}/checkpoints/${id}`)).toEqual({ status: 200, json: { status: { id: 'COMPLETED' }, operation: { checkpointId: 7 } } });
    expect((await call(port, 'GET', `/jobs/${JOB}/savepoints/${id}`)).status).toBe(404); // a checkpoint request is not a savepoint's
    const second = (await call(port, 'POST', `/jobs/${JOB}/checkpoints`, {})).json['request-id'] as string;
    pending[1]!.reject(new Error('declined by a task'));
    await new Promise((r) => setImmediate(r));
    expect((await call(port, 'GET', `/jobs/${JOB}/checkpoints/${second}`)).json).toEqual({ status: { id: 'COMPLETED' }, operation: { 'failure-cause': { message: 'declined by a task' } } });
    expect((await call(port, 'GET', `/jobs/${JOB}/checkpoints/op-999`)).status).toBe(404);
  });
});

describe('request bodies', () => {
  it('a body over 1 MiB is refused with 413 naming the limit (before: 400 "not valid JSON"); a character split across chunks is read whole', async () => {
    const { job, finish } = standInJob();
    server = new RestServer(job, undefined, 3);
    const port = await server.listen(0, '127.0.0.1');
    const big = await call(port, 'POST', `/jobs/${JOB}/savepoints`, { 'target-directory': 'x'.repeat(2 << 20) });
    expect(big.status).toBe(413);
    expect(big.json).toEqual({ errors: ['the request body is larger than 1048576 bytes'] });
    // A directory name with multi-byte characters, sent as two chunks split inside one of them.
    const body = Buffer.from(JSON.stringify({ 'target-directory': '/sp/ñandú-日本' }));
    const cut = body.indexOf(Buffer.from('日')) + 1;
    const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: `/jobs/${JOB}/savepoints`, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (r) => {
        let text = '';
        r.on('data', (c) => (text += c));
        r.on('end', () => resolve({ status: r.statusCode!, text }));
      });
      req.on('error', reject);
      req.write(body.subarray(0, cut));
      setTimeout(() => req.end(body.subarray(cut)), 50);
    });
    expect(res.status).toBe(202);
    finish(0);
    const id = (JSON.parse(res.text) as { 'request-id': string })['request-id'];
    await expect.poll(async () => (await call(port, 'GET', `/jobs/${JOB}/savepoints/${id}`)).json.operation?.location).toBe('/sp/ñandú-日本/savepoint-0');
  });
});

describe('the control API\'s cancel', () => {
  it('answers 202 before the job cancels: with --workers 1 the cancel runs the job\'s close() code in the server\'s thread (before: a slow close held the answer; `weir cancel` said it could not reach the job, which did cancel)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-rest-cancel-'));
    const marker = join(dir, 'answered');
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../fixtures/rest-cancel-child.ts'), marker], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      let out = '';
      child.stdout.on('data', (b: Buffer) => void (out += b.toString()));
      const exited = new Promise<void>((res) => child.on('exit', () => res()));
      for (let i = 0; i < 600 && !/port \d+/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
      const port = Number(/port (\d+)/.exec(out)![1]);
      const r = await call(port, 'PATCH', `/jobs/${'a'.repeat(32)}?mode=cancel`, {});
      expect(r.status).toBe(202);
      writeFileSync(marker, '');
      await exited;
      // The cancel (and the close code it runs) waited for the marker, written only once the answer was in.
      expect(out).toContain('marker seen true');
    } finally {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
