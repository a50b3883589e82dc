/**
 * The control API with a token (--rest-token-file) on a loopback address keeps its DNS
 * rebinding check: reads need no token (the dashboard), so before, a page rebound to the API
 * (a foreign Host) could read exceptions, paths and metrics once a token was set. A request that
 * carries the token passes whatever its Host; a control request without it is refused.
 */
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobControl } from '../../src/cluster/job-control.ts';
import { RestServer } from '../../src/observe/rest-server.ts';

const JOB = 'b'.repeat(32);
const TOKEN = 's3cret-token';
let server: RestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function get(port: number, path: string, headers: Record<string, string>, method = 'GET'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, timeout: 10_000 }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject).on('timeout', () => req.destroy(new Error('no answer')));
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

describe('the control API with a token, on loopback', () => {
  it('refuses a foreign Host on reads unless the request carries the token; control requests need the token', async () => {
    server = new RestServer({ jobId: JOB, jobName: 'stand-in' } as unknown as JobControl, TOKEN);
    const port = await server.listen(0, '127.0.0.1');
    const path = `/jobs/${JOB}/savepoints/no-such-request`;
    expect(await get(port, path, { host: `evil.example:${port}` })).toBe(421); // before: answered
    expect(await get(port, path, { host: `evil.example:${port}`, authorization: `Bearer ${TOKEN}` })).toBe(404);
    expect(await get(port, path, { host: `127.0.0.1:${port}` })).toBe(404);
    expect(await get(port, `/jobs/${JOB}/savepoints`, { host: `127.0.0.1:${port}`, 'content-type': 'application/json' }, 'POST')).toBe(401);
  });
});
