/**
 * The control API of a running `weir run`, served on 127.0.0.1 (never another interface
 * unless asked). Routes follow Flink's REST API where it has one:
 *   GET   /jobs                              jobs of this process
 *   GET   /jobs/:id                          status and vertices
 *   GET   /jobs/:id/checkpoints              counts, latest, history
 *   POST  /jobs/:id/checkpoints              trigger a checkpoint -> {"request-id"} (at once, as Flink)
 *   GET   /jobs/:id/checkpoints/:request-id  {"status": {"id"}, "operation": {"checkpointId"|"failure-cause"}}
 *   POST  /jobs/:id/savepoints               {"target-directory"?} -> {"request-id"}
 *   GET   /jobs/:id/savepoints/:request-id   {"status": {"id": IN_PROGRESS|COMPLETED}, "operation": {"location"|"failure-cause"}}
 *   POST  /jobs/:id/stop                     {"targetDirectory"?, "drain"?} -> {"request-id"}
 *   PATCH /jobs/:id?mode=cancel              cancel
 *   GET   /metrics                           Prometheus text exposition (prometheus.ts)
 *   GET   /, /web/*                          the web dashboard (dashboard.ts)
 * and the read-only views of rest-views.ts (checkpoints, vertices, metrics, exceptions).
 * Requests must name the bound address and port in their Host header (DNS rebinding), and
 * state-changing ones (POST, PATCH) must be application/json (CSRF); with a token (meant for
 * an address other than loopback) state-changing requests must carry it; the Host check is
 * left out only for requests carrying it, or when the API is on the network. See request-guard.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { JobControl } from '../cluster/job-control.ts';
import { errorCode } from '../core/errors.ts';
import { serveDashboard } from './dashboard.ts';
import { PROMETHEUS_CONTENT_TYPE, prometheusText } from './prometheus.ts';
import { getView, jobSummary, vertexJson } from './rest-views.ts';
import { boundRequests, hostAllowed, isLoopback, jsonContentType, readJson, tokenMatches, TOO_LARGE } from './request-guard.ts';
import { jsonText } from './json-reply.ts';

/** A savepoint or stop (result: the location) or a checkpoint (result: its id) asked for over REST. */
type OperationKind = 'savepoint' | 'checkpoint';
type Operation = { kind: OperationKind } & ({ status: 'IN_PROGRESS' } | { status: 'COMPLETED'; result: string | number } | { status: 'FAILED'; cause: string });

export class RestServer {
  private server: Server | undefined;
  private readonly operations = new Map<string, Operation>();
  private nextOp = 1;
  private boundAddress = '127.0.0.1';
  private boundPort = 0;

  /**
   * `token`: when given, every control request (anything but GET and HEAD) must carry
   * `Authorization: Bearer <token>`; reads stay open (the dashboard), behind the Host check.
   * `maxOperations`: savepoint and stop requests remembered for their status (see track).
   */
  constructor(private readonly job: JobControl, private readonly token?: string, private readonly maxOperations = MAX_OPERATIONS) {
    if (!(Number.isSafeInteger(maxOperations) && maxOperations >= 1)) throw new RangeError(`maxOperations must be a positive integer, got ${maxOperations}`);
  }

  /** Listens; resolves with the port (0 picks a free one). */
  listen(port: number, address: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = createServer((req, res) => {
        this.route(req, res).catch((e) => send(res, statusOf(e), { errors: [e instanceof Error ? e.message : String(e)] }));
      });
      boundRequests(server);
      server.once('error', (e: NodeJS.ErrnoException) => {
        reject(new Error(e.code === 'EADDRINUSE' ? `REST port ${address}:${port} is in use; choose another with --rest-port (0 picks a free one)` : `cannot serve the REST API on ${address}:${port}: ${e.message}`));
      });
      server.listen(port, address, () => {
        this.server = server;
        const a = server.address();
        this.boundAddress = address;
        this.boundPort = typeof a === 'object' && a !== null ? a.port : port;
        resolve(this.boundPort);
      });
    });
  }

  /**
   * Waits (at most `timeoutMs`) until every finished operation has been read once: a client
   * that asked to stop the job must learn the savepoint's path before the server goes away.
   */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && [...this.operations.keys()].some((id) => !this.fetched.has(id))) {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  private readonly fetched = new Set<string>();

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server) return resolve();
      this.server.closeAllConnections?.();
      this.server.close(() => resolve());
    });
  }

  /**
   * Remembers a savepoint or stop request for GET savepoints/<id>. Bounded: beyond
   * maxOperations the oldest finished request is forgotten (a job taking periodic savepoints,
   * or a client posting in a loop, would otherwise grow the map for the job's life). Requests in
   * progress are kept; the job bounds how many it accepts (maxPendingRequests), so they are few.
   */
  private track(kind: OperationKind, p: Promise<string | number>): string {
    if (this.operations.size >= this.maxOperations) this.forgetOldestFinished();
    const id = `op-${this.nextOp++}`;
    this.operations.set(id, { kind, status: 'IN_PROGRESS' });
    p.then(
      (result) => this.operations.set(id, { kind, status: 'COMPLETED', result }),
      (e) => this.operations.set(id, { kind, status: 'FAILED', cause: e instanceof Error ? e.message : String(e) }),
    );
    return id;
  }

  /** Flink's AsynchronousOperationResult for request `id` of `kind`; undefined when unknown. */
  private operationReply(kind: OperationKind, id: string): unknown {
    const op = this.operations.get(id);
    if (op === undefined || op.kind !== kind) return undefined;
    if (op.status === 'IN_PROGRESS') return { status: { id: 'IN_PROGRESS' } };
    this.fetched.add(id);
    if (op.status === 'FAILED') return { status: { id: 'COMPLETED' }, operation: { 'failure-cause': { message: op.cause } } };
    return { status: { id: 'COMPLETED' }, operation: kind === 'checkpoint' ? { checkpointId: op.result } : { location: op.result } };
  }

  private forgetOldestFinished(): void {
    // A Map iterates in insertion order: the first finished entry is the oldest.
    for (const [id, op] of this.operations) {
      if (op.status === 'IN_PROGRESS') continue;
      this.operations.delete(id);
      this.fetched.delete(id);
      return;
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = url.pathname.split('/').filter((p) => p !== '');
    const method = req.method ?? 'GET';
    const job = this.job;
    // The Host check (DNS rebinding) stays on with a token: reads need none, so a page rebound to
    // a loopback API could read exceptions, paths and metrics. Skipped only for a request that
    // carries the token, or when the API is deliberately on the network with one (reads there
    // are open to whoever reaches it, whatever Host they send).
    const authorized = this.token !== undefined && tokenMatches(req.headers.authorization, this.token);
    const networked = this.token !== undefined && !isLoopback(this.boundAddress);
    if (!authorized && !networked && !hostAllowed(req.headers.host, this.boundAddress, this.boundPort)) {
      return send(res, 421, { errors: [`the Host header must name this API's address (${this.boundAddress}:${this.boundPort}); refused (DNS rebinding protection)`] });
    }
    if (method !== 'GET' && method !== 'HEAD') {
      if (this.token !== undefined && !authorized) {
        return send(res, 401, { errors: ['a token is required: send "Authorization: Bearer <token>" (the weir CLI sends the one in --rest-token-file)'] });
      }
      if (!jsonContentType(req.headers['content-type'])) {
        return send(res, 415, { errors: [`${method} requests must have Content-Type: application/json (cross-site request protection)`] });
      }
    }
    if (method === 'GET') {
      if (parts.length === 0 || parts[0] === 'web') return serveDashboard(parts, res);
      if (parts.length === 1 && parts[0] === 'metrics') {
        const text = prometheusText([{ jobId: job.jobId, jobName: job.jobName, metrics: job.metrics() }]);
        res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      const view = getView(job, parts, url.searchParams);
      if (view !== undefined) return send(res, view.status, view.body);
    }
    if (parts[0] !== 'jobs') return send(res, 404, { errors: [`no such resource ${url.pathname}`] });
    if (parts.length === 1 && method === 'GET') {
      return send(res, 200, { jobs: [{ id: job.jobId, name: job.jobName, status: job.overview().state }] });
    }
    if (parts[1] !== job.jobId) return send(res, 404, { errors: [`job ${parts[1]} is not running here (this process runs ${job.jobId})`] });
    const rest = parts.slice(2).join('/');
    const body = method === 'POST' || method === 'PATCH' ? await readJson(req, MAX_BODY_BYTES) : {};
    if (body === TOO_LARGE) return send(res, 413, { errors: [`the request body is larger than ${MAX_BODY_BYTES} bytes`] });
    if (body === undefined) return send(res, 400, { errors: ['the request body is not valid JSON'] });
    try {
      if (rest === '' && method === 'GET') {
        // weir's overview fields (weir list reads them) with Flink's JobDetailsInfo fields.
        return send(res, 200, { ...job.overview(), ...jobSummary(job), vertices: job.vertices().map((v) => vertexJson(job, v)), now: Date.now() });
      }
      if (rest === '' && method === 'PATCH') {
        if (url.searchParams.get('mode') !== 'cancel' && url.searchParams.get('mode') !== null) return send(res, 400, { errors: ['mode must be cancel'] });
        // Answered first: with --workers 1 the cancel runs the job's close() code in this thread,
        // and a slow one held the answer until the client gave up, though the job did cancel.
        send(res, 202, {});
        setImmediate(() => job.cancel());
        return;
      }
      if (rest === 'checkpoints' && method === 'GET') return send(res, 200, job.checkpoints());
      if (rest === 'checkpoints' && method === 'POST') {
        // Answered at once with a request id, as Flink does (before: held open until the
        // checkpoint ended, up to its timeout, and answered {"checkpoint-id"}).
        return send(res, 202, { 'request-id': this.track('checkpoint', job.triggerCheckpoint()) });
      }
      if (rest === 'savepoints' && method === 'POST') {
        const dir = stringField(body, 'target-directory');
        return send(res, 202, { 'request-id': this.track('savepoint', job.savepoint(dir)) });
      }
      if (rest === 'stop' && method === 'POST') {
        const dir = stringField(body, 'targetDirectory');
        const drain = booleanField(body, 'drain') ?? false;
        return send(res, 202, { 'request-id': this.track('savepoint', job.stop(dir, drain)) });
      }
      const m = /^(savepoints|checkpoints)\/([^/]+)$/.exec(rest);
      if (m && method === 'GET') {
        const kind: OperationKind = m[1] === 'savepoints' ? 'savepoint' : 'checkpoint';
        const reply = this.operationReply(kind, m[2]!);
        if (reply === undefined) return send(res, 404, { errors: [`no ${kind} request ${m[2]}`] });
        return send(res, 200, reply);
      }
    } catch (e) {
      return send(res, statusOf(e), { errors: [e instanceof Error ? e.message : String(e)] });
    }
    return send(res, 404, { errors: [`no route ${method} ${url.pathname}`] });
  }
}

/** Savepoint and stop requests whose status the API keeps by default (RestServer.track). */
const MAX_OPERATIONS = 1000;

/** Bad parameters (USAGE) are the client's fault; an explicit status wins. */
function statusOf(e: unknown): number {
  const explicit = (e as { status?: number }).status;
  if (typeof explicit === 'number') return explicit;
  return errorCode(e) === 'USAGE' ? 400 : 500;
}

function stringField(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '') throw Object.assign(new Error(`"${key}" must be a non-empty string`), { status: 400 });
  return v;
}

/** A JSON boolean, or undefined when absent; "true" (a string) is refused rather than read as false. */
function booleanField(body: Record<string, unknown>, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw Object.assign(new Error(`"${key}" must be true or false, got ${JSON.stringify(v)}`), { status: 400 });
  return v;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = jsonText(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A request body larger than this is refused (413): the API's bodies are a few settings. */
const MAX_BODY_BYTES = 1 << 20;
