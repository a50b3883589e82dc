/**
 * The Kinesis client for the source and sink: the AWS SDK v3 client (loaded on first use, so
 * jobs without Kinesis never load it) over the HTTP/1.1 handler (kinesalite, and proxies, speak
 * only HTTP/1.1; the SDK's Kinesis default is HTTP/2), with the SDK's own retries off (weir
 * retries with its own jittered backoff and deadline) and a timeout on every call.
 * Error classification is a pure function: throttling, 5xx, timeouts and broken sockets are
 * transient; everything else (a missing stream, bad credentials, bad arguments) is not.
 */
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { WeirError } from '../../core/errors.ts';
import { quietAwsSdkNodeWarning } from '../../core/aws-sdk-warning.ts';
import { isSocketError, messageOf, withTimeout } from '../common/retry.ts';

export interface KinesisConnectionOptions {
  /** e.g. http://127.0.0.1:4567 for kinesalite; default: the region's AWS endpoint. */
  readonly endpoint?: string;
  /** Default: AWS_REGION, else us-east-1. */
  readonly region?: string;
  /** Static credentials; default: the SDK's default chain (environment, profile, role). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string };
}

export interface ResolvedConnection {
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly credentials: KinesisConnectionOptions['credentials'];
  /** Timeout of every call (default 10,000 ms). */
  readonly timeoutMs: number;
  /** host:port or region, for messages (never credentials). */
  readonly label: string;
}

export function resolveConnection(o: KinesisConnectionOptions & { timeoutMs?: number }, where: string): ResolvedConnection {
  if (o.endpoint !== undefined) {
    let u: URL;
    try {
      u = new URL(o.endpoint);
    } catch {
      throw new WeirError('CONFIG', `${where}: endpoint is not a valid URL (expected http://host:port), got ${JSON.stringify(o.endpoint)}`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new WeirError('CONFIG', `${where}: endpoint must start with http:// or https://, got ${u.protocol}//`);
  }
  const region = o.region ?? process.env.AWS_REGION ?? 'us-east-1';
  if (typeof region !== 'string' || !/^[a-z0-9-]+$/.test(region)) throw new WeirError('CONFIG', `${where}: region must be like us-east-1, got ${JSON.stringify(region)}`);
  const c = o.credentials;
  if (c !== undefined && (typeof c !== 'object' || c === null || typeof c.accessKeyId !== 'string' || typeof c.secretAccessKey !== 'string')) {
    throw new WeirError('CONFIG', `${where}: credentials must be { accessKeyId, secretAccessKey, sessionToken? } strings`);
  }
  const timeoutMs = o.timeoutMs ?? 10_000;
  if (!(Number.isSafeInteger(timeoutMs) && timeoutMs > 0)) throw new WeirError('CONFIG', `${where}: timeoutMs must be a positive integer, got ${JSON.stringify(o.timeoutMs)}`);
  let label = `region ${region}`;
  if (o.endpoint !== undefined) {
    const u = new URL(o.endpoint);
    label = u.host;
  }
  return { endpoint: o.endpoint, region, credentials: c, timeoutMs, label };
}

/** One client per reader, enumerator or writer (a socket pool each, closed with destroy()). */
export async function createKinesisClient(c: ResolvedConnection): Promise<KinesisClient> {
  quietAwsSdkNodeWarning();
  const [{ KinesisClient: Client }, { NodeHttpHandler }] = await Promise.all([import('@aws-sdk/client-kinesis'), import('@smithy/node-http-handler')]);
  return new Client({
    region: c.region,
    ...(c.endpoint !== undefined ? { endpoint: c.endpoint } : {}),
    ...(c.credentials !== undefined ? { credentials: c.credentials } : {}),
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ connectionTimeout: c.timeoutMs, requestTimeout: c.timeoutMs, throwOnRequestTimeout: true }),
  });
}

/** Runs one SDK call under the connection's timeout (the SDK call is aborted when it passes). */
export async function call<T>(c: ResolvedConnection, what: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  try {
    return await withTimeout(fn(ac.signal), c.timeoutMs, `Kinesis at ${c.label}: ${what}`);
  } finally {
    ac.abort();
  }
}

const THROTTLING = new Set([
  'ProvisionedThroughputExceededException', 'LimitExceededException', 'ThrottlingException', 'KMSThrottlingException',
  'InternalFailure', 'InternalFailureException', 'ServiceUnavailable', 'ServiceUnavailableException', 'RequestTimeout', 'RequestTimeoutException',
  'TimeoutError', 'AbortError',
]);

/** Worth another try: throttling (ProvisionedThroughputExceeded, LimitExceeded), 5xx, timeouts, broken sockets. */
export function isTransientKinesis(e: unknown): boolean {
  if (isSocketError(e)) return true;
  if (e instanceof WeirError) return e.code === 'TIMEOUT';
  const o = e as { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: number } } | null;
  if (o === null || typeof o !== 'object') return false;
  if (typeof o.name === 'string' && THROTTLING.has(o.name)) return true;
  if (typeof o.code === 'string' && THROTTLING.has(o.code)) return true;
  const status = o.$metadata?.httpStatusCode;
  return typeof status === 'number' && status >= 500;
}

export function isThrottling(name: unknown): boolean {
  return name === 'ProvisionedThroughputExceededException' || name === 'LimitExceededException' || name === 'ThrottlingException' || name === 'KMSThrottlingException';
}

export function errorName(e: unknown): string | undefined {
  const n = (e as { name?: unknown } | null)?.name;
  return typeof n === 'string' ? n : undefined;
}

/** A CONNECTOR error naming the server, the stream and what was being done. */
export function kinesisError(c: ResolvedConnection, what: string, e: unknown): WeirError {
  if (e instanceof WeirError && e.code !== 'TIMEOUT') return e;
  const name = errorName(e);
  const prefix = name !== undefined && name !== 'Error' && !messageOf(e).includes(name) ? `${name}: ` : '';
  return new WeirError('CONNECTOR', `Kinesis at ${c.label}: ${what}: ${prefix}${messageOf(e)}`, { cause: e });
}
