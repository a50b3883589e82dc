/** A small HTTP proxy on loopback in front of a test server (s3rver): a rule per request may replace the answer, rewrite it, hang, reset or cut it (fault injection for storage tests). */
import http from 'node:http';

export interface ProxyReq { method: string; url: string; headers: http.IncomingHttpHeaders }
export type Rule = (r: ProxyReq) =>
  | undefined
  | { kind: 'reply'; status: number; body: string; headers?: Record<string, string> }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'rewrite'; fn: (status: number, headers: http.IncomingHttpHeaders, body: Buffer) => { status: number; headers: http.IncomingHttpHeaders; body: Buffer } }
  | { kind: 'truncate'; bytes: number }
  | { kind: 'stall'; bytes: number };

export async function startProxy(target: string): Promise<{ endpoint: string; log: string[]; rule: Rule; close(): Promise<void> }> {
  const t = new URL(target);
  const state = { rule: (() => undefined) as Rule, log: [] as string[] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const r: ProxyReq = { method: req.method!, url: req.url!, headers: req.headers };
      state.log.push(`${r.method} ${r.url}`);
      const act = state.rule(r);
      if (act?.kind === 'hang') return; // never answers
      if (act?.kind === 'reset') { req.socket.destroy(); return; }
      if (act?.kind === 'reply') {
        res.writeHead(act.status, { 'content-type': 'application/xml', ...(act.headers ?? {}) });
        res.end(act.body);
        return;
      }
      const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        const body: Buffer[] = [];
        ur.on('data', (c) => body.push(c));
        ur.on('end', () => {
          let status = ur.statusCode!;
          let headers = { ...ur.headers };
          let b: Buffer = Buffer.concat(body);
          if (act?.kind === 'rewrite') ({ status, headers, body: b } = act.fn(status, headers, b));
          if (act?.kind === 'stall') {
            delete headers['transfer-encoding'];
            res.writeHead(status, headers);
            res.write(b.subarray(0, act.bytes));
            return; // never ends
          }
          if (act?.kind === 'truncate') {
            res.writeHead(status, headers);
            res.write(b.subarray(0, act.bytes));
            setTimeout(() => res.socket?.destroy(), 20);
            return;
          }
          delete headers['transfer-encoding'];
          if (req.method !== 'HEAD') headers['content-length'] = String(b.byteLength);
          res.writeHead(status, headers);
          res.end(b);
        });
      });
      up.on('error', () => res.socket?.destroy());
      up.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    log: state.log,
    get rule() { return state.rule; },
    set rule(f: Rule) { state.rule = f; },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
