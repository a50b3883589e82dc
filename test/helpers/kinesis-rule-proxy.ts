/**
 * An HTTP proxy in front of kinesalite whose rules can answer an operation themselves (an
 * injected AWS error) or rewrite kinesalite's answer (a shard left out of ListShards): faults
 * kinesalite cannot produce, such as a shard past the stream's retention. Counts calls per
 * operation (x-amz-target).
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Reply = { status: number; json: unknown };
export interface Rules {
  /** Answer the call here (undefined: forward). */
  before?(op: string, body: Record<string, unknown>): Reply | undefined | Promise<Reply | undefined>;
  /** Rewrite a forwarded 200 answer. */
  after?(op: string, body: Record<string, unknown>, answer: Record<string, unknown>): Record<string, unknown>;
}

export async function startRuleProxy(target: string, rules: Rules): Promise<{ endpoint: string; calls: Map<string, number>; close(): Promise<void> }> {
  const t = new URL(target);
  const calls = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks);
        const op = String(req.headers['x-amz-target'] ?? '').split('.').pop() ?? '';
        calls.set(op, (calls.get(op) ?? 0) + 1);
        const body = raw.length > 0 ? JSON.parse(raw.toString()) as Record<string, unknown> : {};
        const send = (status: number, json: unknown, headers: Record<string, string | string[] | undefined> = {}) => {
          const b = Buffer.from(JSON.stringify(json));
          const h = { ...headers };
          delete h['content-length'];
          delete h['x-amz-crc32'];
          delete h['transfer-encoding'];
          res.writeHead(status, { ...h, 'content-type': 'application/x-amz-json-1.1', 'content-length': String(b.length) });
          res.end(b);
        };
        try {
          const own = await rules.before?.(op, body);
          if (own !== undefined) return send(own.status, own.json);
          const r = await new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
            const q = request({ host: t.hostname, port: t.port, method: 'POST', path: req.url, headers: { ...req.headers, host: t.host, 'content-length': String(raw.length) } }, (rs) => {
              const cs: Buffer[] = [];
              rs.on('data', (d: Buffer) => cs.push(d));
              rs.on('end', () => resolve({ status: rs.statusCode ?? 500, headers: rs.headers, body: Buffer.concat(cs) }));
              rs.on('error', reject);
            });
            q.setTimeout(20_000, () => q.destroy(new Error('proxy upstream timeout')));
            q.on('error', reject);
            q.end(raw);
          });
          if (r.status === 200 && rules.after !== undefined && r.body.length > 0) {
            return send(200, rules.after(op, body, JSON.parse(r.body.toString())), r.headers);
          }
          res.writeHead(r.status, r.headers);
          res.end(r.body);
        } catch (e) {
          send(500, { __type: 'InternalFailure', message: (e as Error).message });
        }
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: async () => { server.closeAllConnections?.(); await new Promise<void>((r) => server.close(() => r())); },
  };
}
