/**
 * The manager's REST API, on 127.0.0.1 unless told otherwise:
 *   GET    /apps                       summaries
 *   POST   /apps                       {"spec": {...}} apply (validated; 400 names the field)
 *   GET    /apps/:name                 {desired, status} (spec, status, savepoints, recent events)
 *   GET    /apps/:name/events
 *   POST   /apps/:name/suspend | resume | savepoint | rollback
 *   DELETE /apps/:name[?savepoint=true]
 * Every answer is JSON; errors are {"errors": ["one line"]}. The job control API's guard
 * (src/observe/request-guard.ts) applies: the Host must name the bound address and port (DNS
 * rebinding), and every request but GET must say Content-Type: application/json (a web page
 * cannot send that cross-origin without a preflight), so a browser cannot apply a spec here.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { errorCode } from '../core/errors.ts';
import { boundRequests, hostAllowed, jsonContentType, readJson, tokenMatches, TOO_LARGE } from '../observe/request-guard.ts';
import { redactUrl } from '../checkpoint/s3/settings.ts';
import type { Manager } from './manager.ts';
import { isAppName, validateSpec } from './spec.ts';

const MAX_BODY_BYTES = 1 << 20;

export class ManagerApi {
  private server: Server | undefined;
  private boundAddress = '127.0.0.1';
  private boundPort = 0;

  constructor(private readonly manager: Manager, private readonly token: string) {}

  listen(port: number, address: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = createServer((req, res) => {
        this.route(req, res).catch((e) => send(res, statusOf(e), { errors: [e instanceof Error ? e.message : String(e)] }));
      });
      boundRequests(server);
      server.once('error', (e: NodeJS.ErrnoException) => reject(new Error(e.code === 'EADDRINUSE' ? `manager port ${address}:${port} is in use; choose another with --port (0 picks a free one)` : `cannot serve the manager API on ${address}:${port}: ${e.message}`)));
      server.listen(port, address, () => {
        this.server = server;
        const a = server.address();
        this.boundAddress = address;
        this.boundPort = typeof a === 'object' && a !== null ? a.port : port;
        resolve(this.boundPort);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.server === undefined) return resolve();
      this.server.closeAllConnections?.();
      this.server.close(() => resolve());
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let parts: string[];
    try {
      parts = url.pathname.split('/').filter((p) => p !== '').map(decodeURIComponent);
    } catch {
      return send(res, 400, { errors: [`the path ${url.pathname} is not valid percent-encoding`] });
    }
    const method = req.method ?? 'GET';
    const m = this.manager;
    if (!hostAllowed(req.headers.host, this.boundAddress, this.boundPort)) {
      return send(res, 421, { errors: [`the Host header must name this API's address (${this.boundAddress}:${this.boundPort}); refused (DNS rebinding protection)`] });
    }
    if (method !== 'GET' && method !== 'HEAD' && !jsonContentType(req.headers['content-type'])) {
      return send(res, 415, { errors: [`${method} requests must have Content-Type: application/json (cross-site request protection)`] });
    }
    if (method !== 'GET' && method !== 'HEAD' && !tokenMatches(req.headers.authorization, this.token)) {
      return send(res, 401, { errors: ['a token is required: send "Authorization: Bearer <token>" (weir apps sends the one in the manager directory\'s manager.json, readable by its user only)'] });
    }
    if (parts[0] !== 'apps') return send(res, 404, { errors: [`no such resource ${url.pathname}`] });
    if (parts.length === 1 && method === 'GET') return send(res, 200, { apps: m.list() });
    if (parts.length === 1 && method === 'POST') {
      const body = await readJson(req, MAX_BODY_BYTES);
      if (body === TOO_LARGE) return send(res, 413, { errors: [`the request body is larger than ${MAX_BODY_BYTES} bytes`] });
      if (body === undefined) return send(res, 400, { errors: ['the request body is not a JSON object (in UTF-8)'] });
      const spec = validateSpec(body['spec'], typeof body['where'] === 'string' ? body['where'] : 'spec', typeof body['baseDir'] === 'string' ? body['baseDir'] : process.cwd());
      const d = m.apply(spec);
      return send(res, 200, { name: spec.name, generation: d.generation });
    }
    const app = parts[1]!;
    // A name is a path segment of the store: "..%2F.." decoded to "../.." read and rewrote files outside it.
    if (!isAppName(app)) return send(res, 400, { errors: [`${JSON.stringify(app)} is not an application name (lower-case letters, digits and "-")`] });
    const verb = parts[2];
    if (parts.length === 2 && method === 'GET') return send(res, 200, m.describe(app));
    if (parts.length === 2 && method === 'DELETE') {
      const d = m.delete(app, url.searchParams.get('savepoint') === 'true');
      return send(res, 202, { name: app, generation: d.generation });
    }
    if (parts.length === 3 && verb === 'events' && method === 'GET') return send(res, 200, { events: m.status(app).events });
    if (parts.length === 3 && method === 'POST') {
      const d = verb === 'suspend' ? m.suspend(app) : verb === 'resume' ? m.resume(app) : verb === 'savepoint' ? m.savepoint(app) : verb === 'rollback' ? m.rollback(app) : undefined;
      if (d !== undefined) return send(res, 202, { name: app, generation: d.generation });
    }
    return send(res, 404, { errors: [`no route ${method} ${url.pathname}`] });
  }
}

/**
 * A reply with the user:password of every URL in it blanked: reads need no token, and a spec's
 * job arguments often are connection URLs (postgres://app:secret@db/...).
 */
function withoutCredentials<T>(reply: T): T {
  return JSON.parse(JSON.stringify(reply), (_k, v: unknown) => (typeof v === 'string' ? redactUrl(v) : v)) as T;
}

function statusOf(e: unknown): number {
  const code = errorCode(e);
  if (code === 'CONFIG') return 400;
  if (code === 'CONTROL') return /^no application /.test((e as Error).message) ? 404 : 409;
  return 500;
}

/** Every reply, errors and events included, goes out without credentials in URLs (withoutCredentials). */
function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(withoutCredentials(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

