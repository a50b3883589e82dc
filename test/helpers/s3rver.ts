/**
 * An S3 server for tests: s3rver (a public S3 API implementation) in this process, on a free
 * loopback port, its objects in a temp directory, with one bucket. In front of its routes a
 * test can count requests and inject faults (fail with 503, delay); stop() and start() take it
 * away and bring it back on the same port with the same objects (an outage).
 *
 * Its known gaps are handled here, not in weir: it has no AbortMultipartUpload, ListParts nor
 * ListMultipartUploads, and completing an upload that is gone answers 500 instead of S3's 404
 * NoSuchUpload; multipartGaps() answers those four from s3rver's own upload folders (S3's
 * documented behaviour, test setup only), it stores aws-chunked framing of stream bodies (weir only sends
 * whole buffers, so no client option is needed), and a listing with a delimiter misses common
 * prefixes whose objects are two or more levels down (`a/b/c` listed under `a/` with '/':
 * s3rver does not walk below `a/b`), which listObjects is patched here to compute correctly. Credentials are s3rver's fixed test pair,
 * set in the environment, so the SDK's credential chain stops there (never reaching for
 * instance metadata on the network).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
// @ts-expect-error -- s3rver ships no types; its use here is small (constructor, run, close, middleware)
import S3rver from 's3rver';
import type { S3Settings } from '../../src/checkpoint/s3/settings.ts';

/** What a fault rule sees of a request. */
export interface S3Request {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  /** The request body's size (Content-Length), 0 when there is none. */
  readonly bytes: number;
  /** The response status, once answered. */
  status?: number;
  /** Set once s3rver is done with the request (answered, or failed). */
  done?: boolean;
}

/**
 * 'lose-answer': the request is carried out, then its answer replaced by a 503 (a response lost on
 * the way back). 'apply-late': the request's body is received whole, and the request carried out
 * `ms` later, also when the client has given up on it meanwhile (a store still working on a request
 * whose client timed out: its outcome unknown to the client until it lands).
 */
export type S3Fault = { readonly kind: 'fail' | 'lose-answer'; readonly status?: number } | { readonly kind: 'delay' | 'apply-late'; readonly ms: number } | undefined;

interface KoaContext {
  req: IncomingMessage;
  request: { req: IncomingMessage };
  method: string;
  path: string;
  querystring: string;
  get(header: string): string;
  status: number;
  type: string;
  body: unknown;
}

type Middleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;

export interface S3TestServer {
  readonly bucket: string;
  /** Where s3rver keeps the objects (bucket/key paths, `<name>._S3rver_object` files). */
  readonly directory: string;
  readonly endpoint: string;
  /** weir's settings for this server (path-style, its endpoint, short timeouts). */
  readonly settings: S3Settings;
  /** Every request, in order, as "METHOD /path?query". */
  readonly requests: S3Request[];
  /** Decides a fault per request; undefined lets it through. */
  fault: (r: S3Request) => S3Fault;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

export function useS3Credentials(): void {
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
}

export async function startS3Server(options: { bucket?: string; extraBuckets?: readonly string[]; settings?: S3Settings } = {}): Promise<S3TestServer> {
  useS3Credentials();
  const bucket = options.bucket ?? 'weir-test';
  const directory = mkdtempSync(join(tmpdir(), 'weir-s3rver-'));
  let port = 0;
  let server: { run(): Promise<{ port: number }>; close(): Promise<void>; middleware: Middleware[]; httpServer?: Server } | undefined;
  const requests: S3Request[] = [];
  const t: S3TestServer = {
    bucket,
    directory,
    endpoint: '',
    settings: {},
    requests,
    fault: () => undefined,
    async start() {
      if (server !== undefined) return;
      const s = new S3rver({ port, address: '127.0.0.1', silent: true, directory, configureBuckets: [bucket, ...(options.extraBuckets ?? [])].map((name) => ({ name })) });
      patchDelimiterListing(s.store);
      // After the fault rule below (unshifted later, so it runs first): the multipart calls s3rver lacks.
      s.middleware.unshift(multipartGaps(s.store, bucket));
      // First in the chain: counted and faulted before s3rver sees the request.
      s.middleware.unshift(async (ctx: KoaContext, next: () => Promise<void>) => {
        const r: S3Request = { method: ctx.method, path: ctx.path, query: ctx.querystring, bytes: Number(ctx.get('content-length') || 0) };
        requests.push(r);
        const f = t.fault(r);
        if (f?.kind === 'delay') await new Promise((res) => setTimeout(res, f.ms));
        if (f?.kind === 'apply-late') {
          // The whole body first (the request reached the store), then the wait, then s3rver reads
          // the body from memory: a client that gave up meanwhile no longer cuts it short.
          const req = ctx.req;
          const chunks: Buffer[] = [];
          for await (const c of req) chunks.push(c as Buffer);
          await new Promise((res) => setTimeout(res, f.ms));
          const replay = Object.assign(Readable.from([Buffer.concat(chunks)]), { headers: req.headers, method: req.method, url: req.url, httpVersion: req.httpVersion, socket: req.socket });
          ctx.req = replay as unknown as IncomingMessage;
          ctx.request.req = replay as unknown as IncomingMessage;
        }
        if (f?.kind === 'fail') {
          ctx.status = f.status ?? 503;
          ctx.type = 'application/xml';
          ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>injected by the test</Message></Error>';
          return;
        }
        try {
          await next();
        } finally {
          r.done = true;
        }
        r.status = ctx.status;
        if (f?.kind === 'lose-answer') {
          ctx.status = f.status ?? 503;
          ctx.type = 'application/xml';
          ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>answer lost, injected by the test</Message></Error>';
        }
      });
      const addr = await s.run();
      port = addr.port;
      server = s;
    },
    async stop() {
      const s = server;
      server = undefined;
      if (s !== undefined) {
        // Open keep-alive connections would hold the port: cut them.
        (s.httpServer as (Server & { closeAllConnections?: () => void }) | undefined)?.closeAllConnections?.();
        await s.close();
      }
    },
    async close() {
      await t.stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
  await t.start();
  const endpoint = `http://127.0.0.1:${port}`;
  Object.assign(t, { endpoint, settings: { endpoint, pathStyleAccess: true, requestTimeout: '5 s', retryMaxAttempts: 2, ...options.settings } });
  return t;
}

interface ListResult { objects: { key: string }[]; commonPrefixes: string[]; isTruncated: boolean }
interface Store { listObjects(bucket: string, o: { delimiter?: string; prefix?: string; startAfter?: string; maxKeys?: number }): Promise<ListResult> }

/** Lists without the delimiter (every key below the prefix) and groups by it here. */
function patchDelimiterListing(store: Store): void {
  const original = store.listObjects.bind(store);
  store.listObjects = async (bucket, o) => {
    const delimiter = o.delimiter ?? '';
    if (delimiter === '') return original(bucket, o);
    const prefix = o.prefix ?? '';
    const all = await original(bucket, { ...o, delimiter: '', maxKeys: Infinity });
    const objects: ListResult['objects'] = [];
    const prefixes = new Set<string>();
    for (const obj of all.objects) {
      const i = obj.key.slice(prefix.length).indexOf(delimiter);
      if (i === -1) objects.push(obj);
      else prefixes.add(obj.key.slice(0, prefix.length + i + delimiter.length));
    }
    const max = o.maxKeys ?? Infinity;
    // Tests list small folders; a listing that would need pages is not supported by this patch.
    if (objects.length + prefixes.size > max) throw new Error(`test S3 server: a delimiter listing of more than ${max} entries under ${prefix}`);
    return { objects, commonPrefixes: [...prefixes].sort(), isTruncated: false };
  };
}

interface UploadsStore { getResourcePath(bucket: string, key: string | undefined, resource: string): string }

function xml(ctx: KoaContext, status: number, body: string): void {
  ctx.status = status;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * AbortMultipartUpload, ListParts, ListMultipartUploads (one page, with Prefix), and
 * NoSuchUpload on completing a gone upload, as S3 documents them, over s3rver's upload folders
 * (`<uploads>/<uploadId>/{key, <n>, <n>.md5}`). Test setup only: weir's code calls S3's API.
 */
function multipartGaps(store: UploadsStore, bucket: string): Middleware {
  const uploadsDir = () => store.getResourcePath(bucket, undefined, 'uploads');
  const noSuchUpload = (ctx: KoaContext) => xml(ctx, 404, '<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>');
  return async (ctx, next) => {
    const q = new URLSearchParams(ctx.querystring);
    const prefix = `/${bucket}/`;
    const uploadId = q.get('uploadId');
    if (ctx.method === 'GET' && (ctx.path === `/${bucket}` || ctx.path === prefix) && q.has('uploads')) {
      const want = q.get('prefix') ?? '';
      const dir = uploadsDir();
      const rows: string[] = [];
      for (const id of existsSync(dir) ? readdirSync(dir).sort() : []) {
        let key: string;
        try {
          key = readFileSync(join(dir, id, 'key'), 'utf8');
        } catch {
          continue; // being created or removed
        }
        if (!key.startsWith(want)) continue;
        const initiated = new Date(statSync(join(dir, id)).birthtimeMs || Date.now()).toISOString();
        rows.push(`<Upload><Key>${esc(key)}</Key><UploadId>${id}</UploadId><Initiated>${initiated}</Initiated></Upload>`);
      }
      xml(ctx, 200, `<ListMultipartUploadsResult><Bucket>${bucket}</Bucket><Prefix>${esc(want)}</Prefix><IsTruncated>false</IsTruncated>${rows.join('')}</ListMultipartUploadsResult>`);
      return;
    }
    if (uploadId !== null && ctx.path.startsWith(prefix)) {
      const dir = join(uploadsDir(), uploadId);
      const exists = /^[0-9a-f]+$/.test(uploadId) && existsSync(join(dir, 'key'));
      if (ctx.method === 'DELETE') {
        if (!exists) return noSuchUpload(ctx);
        rmSync(dir, { recursive: true, force: true });
        ctx.status = 204;
        ctx.body = '';
        return;
      }
      if (ctx.method === 'GET') {
        if (!exists) return noSuchUpload(ctx);
        const parts = readdirSync(dir).filter((f) => /^\d+$/.test(f)).map(Number).sort((a, b) => a - b);
        const rows = parts.map((n) => {
          const md5 = readFileSync(join(dir, `${n}.md5`), 'utf8');
          return `<Part><PartNumber>${n}</PartNumber><ETag>"${md5}"</ETag><Size>${statSync(join(dir, String(n))).size}</Size></Part>`;
        });
        // As S3's ListPartsResult: Bucket, Key and UploadId name what was listed.
        xml(ctx, 200, `<ListPartsResult><Bucket>${bucket}</Bucket><Key>${esc(readFileSync(join(dir, 'key'), 'utf8'))}</Key><UploadId>${uploadId}</UploadId><IsTruncated>false</IsTruncated>${rows.join('')}</ListPartsResult>`);
        return;
      }
      if ((ctx.method === 'POST' || ctx.method === 'PUT') && !exists) return noSuchUpload(ctx);
    }
    await next();
  };
}
