/**
 * Both servers weir starts (the job's control API, the manager's API) bound how long a request
 * may take to arrive: a client that stalls mid-headers gets 408 and loses its socket instead of
 * holding it for Node's defaults. And a path that cannot be decoded is the client's error (400).
 */
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { JobControl } from '../../src/cluster/job-control.ts';
import type { Manager } from '../../src/lifecycle/manager.ts';
import { ManagerApi } from '../../src/lifecycle/rest.ts';
import { boundRequests, REQUEST_TIMEOUT_MS } from '../../src/observe/request-guard.ts';
import { RestServer } from '../../src/observe/rest-server.ts';

describe('request timeouts', () => {
  it('boundRequests: a client stalled in its headers is answered 408 and disconnected', async () => {
    // Node checks the timeouts every connectionsCheckingInterval (30 s by default); short here.
    const server = createServer({ connectionsCheckingInterval: 50 }, (_req, res) => res.end('ok'));
    boundRequests(server, 300);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const reply = await new Promise<string>((resolve, reject) => {
        const s = connect(port, '127.0.0.1');
        let got = '';
        const guard = setTimeout(() => {
          s.destroy();
          reject(new Error(`still connected after 10 s; got ${JSON.stringify(got)}`));
        }, 10_000);
        s.on('data', (d) => (got += d.toString()));
        s.on('close', () => {
          clearTimeout(guard);
          resolve(got);
        });
        s.on('error', () => undefined);
        s.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n'); // never finished
      });
      expect(reply).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('the manager API answers a path that is not valid percent-encoding with 400, not 500', async () => {
    const api = new ManagerApi({} as Manager, 'a-token');
    try {
      const port = await api.listen(0, '127.0.0.1');
      const res = await fetch(`http://127.0.0.1:${port}/apps/%E0`, { signal: AbortSignal.timeout(10_000) });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ errors: ['the path /apps/%E0 is not valid percent-encoding'] });
    } finally {
      await api.close();
    }
  });

  it('the control API and the manager API both apply it', async () => {
    const rest = new RestServer({ jobId: 'j' } as unknown as JobControl);
    const api = new ManagerApi({} as Manager, 'a-token');
    try {
      await rest.listen(0, '127.0.0.1');
      await api.listen(0, '127.0.0.1');
      for (const s of [(rest as unknown as { server: import('node:http').Server }).server, (api as unknown as { server: import('node:http').Server }).server]) {
        expect(s.requestTimeout).toBe(REQUEST_TIMEOUT_MS);
        expect(s.headersTimeout).toBe(REQUEST_TIMEOUT_MS);
      }
    } finally {
      await rest.close();
      await api.close();
    }
  });
});
