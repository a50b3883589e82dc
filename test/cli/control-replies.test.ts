/**
 * `weir savepoint` against a server that is not a weir job (another program on the port, or a
 * reply of another shape): one error line naming what came back, never a TypeError. The
 * server is a real HTTP server answering fixed replies.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { oneLineError, tempDir, weir } from '../savepoint/helpers.ts';

const tmp = tempDir('control-replies');
const JOB = 'b'.repeat(32);
const servers: Server[] = [];
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  tmp.cleanup();
});

/** Answers GET /jobs with `jobs`, POST savepoints with a request id, and its status with `status`. */
async function serve(jobs: unknown, status: unknown): Promise<number> {
  const s = createServer((req, res) => {
    const reply = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url === '/jobs') return reply(200, { jobs });
    if (req.method === 'POST' && req.url === `/jobs/${JOB}/savepoints`) return reply(202, { 'request-id': 'op-1' });
    if (req.method === 'GET' && req.url === `/jobs/${JOB}/savepoints/op-1`) return reply(200, status);
    reply(404, { errors: ['no route'] });
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as { port: number }).port;
}

describe('control commands and replies that are not a weir job\'s', () => {
  it('a job list of other shapes matches no job', async () => {
    for (const jobs of [[{}], [null, 7], 'x']) {
      const port = await serve(jobs, {});
      const r = await weir(tmp.dir, 'savepoint', 'bbbbbbbb', '--rest-port', String(port), tmp.dir);
      expect(r.code, JSON.stringify(jobs)).not.toBe(0);
      expect(oneLineError(r)).toBe(`savepoint: no job bbbbbbbb at http://127.0.0.1:${port}`);
    }
  });

  it('a completed savepoint without a location or a failure cause is named as such', async () => {
    const port = await serve([{ id: JOB }], { status: { id: 'COMPLETED' } });
    const r = await weir(tmp.dir, 'savepoint', JOB, '--rest-port', String(port), tmp.dir);
    expect(r.code).not.toBe(0);
    expect(oneLineError(r)).toMatch(/failed: no location or failure cause in the reply \{"status":\{"id":"COMPLETED"\}\}$/);
  });
});
