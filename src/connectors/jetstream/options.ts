/** Options of the NATS JetStream sink, validated when the sink is built. */
import { WeirError } from '../../core/errors.ts';
import { checkJobId } from '../common/progress.ts';
import { DEFAULT_RETRY, type RetryPolicy } from '../common/retry.ts';
import { validateServers } from '../nats/connection.ts';

export interface JetStreamSinkOptions<T> {
  /** Server(s), `host:port` (default `127.0.0.1:4222`). */
  readonly servers?: string | readonly string[];
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** The stream that captures the subjects written (checked at start; each publish expects it). */
  readonly stream: string;
  /** Subject, or a function of the record giving it. */
  readonly subject: string | ((value: T) => string);
  /** Message body of a record (default JSON text). */
  readonly payload?: (value: T) => string | Uint8Array;
  /** Names this job's message ids and progress keys; two jobs writing one stream need different ids. */
  readonly jobId: string;
  /**
   * The stream's duplicate window must be at least this long (default 2 min, JetStream's own
   * default), checked at start: a checkpoint whose commit a crash interrupted is published again
   * after the restart, and the server drops the repeats only within its window.
   */
  readonly minDuplicateWindowMs?: number;
  /** Key-value bucket of the progress keys (default `weir_progress`, created if missing). */
  readonly progressBucket?: string;
  /** Publishes awaiting their acknowledgement at once (default 1000). */
  readonly maxInFlight?: number;
  /** Records one subtask may hold between two checkpoints (default 1,000,000). */
  readonly maxBufferedRecords?: number;
  /** Connecting (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Each publish's acknowledgement, and each management request (default 10 s). */
  readonly requestTimeoutMs?: number;
  /** Retrying gives up this long after the first try (default 60 s). */
  readonly retryDeadlineMs?: number;
}

export interface ResolvedJetStreamOptions {
  readonly servers: string[];
  readonly user: string | undefined;
  readonly pass: string | undefined;
  readonly token: string | undefined;
  readonly stream: string;
  readonly jobId: string;
  readonly minDuplicateWindowMs: number;
  readonly progressBucket: string;
  readonly maxInFlight: number;
  readonly maxBufferedRecords: number;
  readonly connectTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly retry: RetryPolicy;
}

function positiveInt(what: string, v: unknown, dflt: number): number {
  if (v === undefined) return dflt;
  if (!(typeof v === 'number' && Number.isSafeInteger(v) && v > 0)) throw new WeirError('CONFIG', `jetstream sink: ${what} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

const NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

export function resolveJetStreamOptions<T>(o: JetStreamSinkOptions<T>): ResolvedJetStreamOptions {
  if (typeof o !== 'object' || o === null) throw new WeirError('CONFIG', 'jetstream sink: options {stream, subject, jobId, ...} are required');
  if (typeof o.stream !== 'string' || !NAME_RE.test(o.stream)) throw new WeirError('CONFIG', `jetstream sink: stream must be a stream name (A-Z a-z 0-9 _ -), got ${JSON.stringify(o.stream)}`);
  if (!((typeof o.subject === 'string' && o.subject !== '' && !/[\s*>]/.test(o.subject)) || typeof o.subject === 'function')) {
    throw new WeirError('CONFIG', 'jetstream sink: subject must be a subject without wildcards or spaces, or a function (record) => subject');
  }
  if (o.payload !== undefined && typeof o.payload !== 'function') throw new WeirError('CONFIG', 'jetstream sink: payload must be a function (record) => string | Uint8Array');
  const bucket = o.progressBucket ?? 'weir_progress';
  if (typeof bucket !== 'string' || !NAME_RE.test(bucket)) throw new WeirError('CONFIG', `jetstream sink: progressBucket must be a bucket name (A-Z a-z 0-9 _ -), got ${JSON.stringify(bucket)}`);
  // The source's check (host:port, never user:pass@host): a server given with credentials would
  // be named in every error of this sink (they name the servers), and so in logs and the REST API.
  let servers: string[];
  try {
    servers = [...validateServers(o.servers ?? '127.0.0.1:4222', 'jetstream sink')];
  } catch (e) {
    throw new WeirError('CONFIG', (e as Error).message);
  }
  return {
    servers,
    user: o.user,
    pass: o.pass,
    token: o.token,
    stream: o.stream,
    jobId: checkJobId('jetstream sink', o.jobId),
    minDuplicateWindowMs: positiveInt('minDuplicateWindowMs', o.minDuplicateWindowMs, 120_000),
    progressBucket: bucket,
    maxInFlight: positiveInt('maxInFlight', o.maxInFlight, 1000),
    maxBufferedRecords: positiveInt('maxBufferedRecords', o.maxBufferedRecords, 1_000_000),
    connectTimeoutMs: positiveInt('connectTimeoutMs', o.connectTimeoutMs, 10_000),
    requestTimeoutMs: positiveInt('requestTimeoutMs', o.requestTimeoutMs, 10_000),
    retry: { ...DEFAULT_RETRY, deadlineMs: positiveInt('retryDeadlineMs', o.retryDeadlineMs, DEFAULT_RETRY.deadlineMs) },
  };
}
