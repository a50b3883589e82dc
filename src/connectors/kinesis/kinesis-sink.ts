/**
 * Kinesis Data Streams sink: AT-LEAST-ONCE, like Flink's KinesisStreamsSink. Kinesis has no
 * transactions and no idempotent writes, so a record written before a failure and replayed after
 * the restore is written twice; and records of one partition key may be reordered: up to
 * maxInFlightRequests requests are in flight at once, and a failed entry is retried later. What it does guarantee: a completed checkpoint implies every record the sink
 * received before that checkpoint's barrier was acknowledged by Kinesis (the checkpoint waits
 * for it), so nothing is lost.
 *
 * - Records are queued and sent with PutRecords in batches of at most 500 records and 5 MiB
 *   (data plus partition key); a record over 1 MiB fails the job, naming its size.
 * - A batch is sent when full, when its oldest record has waited maxTimeInBufferMs, and at a
 *   barrier (everything queued before it).
 * - Partial failures: only the entries with an ErrorCode go back to the front of the queue,
 *   after a jittered backoff; a whole request that fails transiently (throttling, 5xx, timeout)
 *   is retried the same way. An entry failing for longer than retryDeadlineMs fails the job.
 * - At most maxInFlightRequests requests at once, and at most maxBufferedRecords records
 *   unacknowledged (queued, in flight or waiting to be retried): beyond that the task stops
 *   taking input until acknowledgements make room (backpressure).
 */
import type { KinesisClient, PutRecordsCommandOutput } from '@aws-sdk/client-kinesis';
import { WeirError } from '../../core/errors.ts';
import type { SinkCommitter, SinkContext, SinkWriter, TwoPhaseCommitSink } from '../../core/sink.ts';
import { nextRetryDelay, type RetryPolicy } from '../common/retry.ts';
import { call, createKinesisClient, isTransientKinesis, kinesisError, resolveConnection, type KinesisConnectionOptions, type ResolvedConnection } from './client.ts';
import { Barriers, batchSize, PUT_RECORDS_MAX_BYTES, PUT_RECORDS_MAX_RECORDS, RECORD_MAX_BYTES, shouldSend, splitAnswer, type SinkEntry } from './batching.ts';

export interface KinesisSinkOptions<T> extends KinesisConnectionOptions {
  readonly stream: string;
  /** The partition key of a record (1 to 256 characters): decides its shard. */
  readonly partitionKey: (value: T) => string;
  /** Data of a record (default: JSON text). */
  readonly payload?: (value: T) => string | Uint8Array;
  /** Optional explicit hash key (decimal, 0 to 2^128-1) instead of the partition key's hash. */
  readonly explicitHashKey?: (value: T) => string;
  /** Records per PutRecords (default and maximum 500). */
  readonly maxBatchRecords?: number;
  /** Bytes per PutRecords (default and maximum 5 MiB). */
  readonly maxBatchBytes?: number;
  /** Requests in flight at once per subtask (default 10). */
  readonly maxInFlightRequests?: number;
  /** Records not yet acknowledged per subtask before the task stops taking input (default 10,000). */
  readonly maxBufferedRecords?: number;
  /** A partial batch waits at most this long before it is sent (default 5,000 ms). */
  readonly maxTimeInBufferMs?: number;
  /** Timeout of every call (default 10,000 ms). */
  readonly timeoutMs?: number;
  /** A record still failing this long after its first failure fails the job (default 60,000 ms). */
  readonly retryDeadlineMs?: number;
}

/** The sink has nothing to commit: its guarantee comes from the flush at the barrier. */
export type KinesisCommittable = never;

const encoder = new TextEncoder();

/**
 * AWS's ExplicitHashKey: a decimal number from 0 to 2^128 - 1 without leading zeros. One outside
 * passed a looser check, and Kinesis refused the whole PutRecords with a non-retryable error:
 * the job failed, and the replay after each restart met the same record.
 */
function isExplicitHashKey(k: string): boolean {
  return /^(0|[1-9][0-9]{0,38})$/.test(k) && BigInt(k) < 1n << 128n;
}

export class KinesisSink<T> implements TwoPhaseCommitSink<T, KinesisCommittable> {
  readonly name: string;
  readonly conn: ResolvedConnection;
  readonly stream: string;
  readonly partitionKey: (value: T) => string;
  readonly payload: (value: T) => string | Uint8Array;
  readonly explicitHashKey: ((value: T) => string) | undefined;
  readonly maxBatchRecords: number;
  readonly maxBatchBytes: number;
  readonly maxInFlightRequests: number;
  readonly maxBufferedRecords: number;
  readonly maxTimeInBufferMs: number;
  readonly retry: RetryPolicy;

  constructor(o: KinesisSinkOptions<T>) {
    const where = 'KinesisSink';
    if (o === null || typeof o !== 'object') throw new WeirError('CONFIG', `${where}: expected options { stream, partitionKey }`);
    if (typeof o.stream !== 'string' || !/^[a-zA-Z0-9_.-]{1,128}$/.test(o.stream)) throw new WeirError('CONFIG', `${where}: stream must be a stream name (1 to 128 of a-z A-Z 0-9 _ . -), got ${JSON.stringify(o.stream)}`);
    this.stream = o.stream;
    if (typeof o.partitionKey !== 'function') throw new WeirError('CONFIG', `${where}: partitionKey must be a function (record) => string`);
    if (o.payload !== undefined && typeof o.payload !== 'function') throw new WeirError('CONFIG', `${where}: payload must be a function (record) => string | Uint8Array`);
    if (o.explicitHashKey !== undefined && typeof o.explicitHashKey !== 'function') throw new WeirError('CONFIG', `${where}: explicitHashKey must be a function (record) => string`);
    this.partitionKey = o.partitionKey;
    this.payload = o.payload ?? ((v: T) => JSON.stringify(v));
    this.explicitHashKey = o.explicitHashKey;
    this.maxBatchRecords = bounded(o.maxBatchRecords, PUT_RECORDS_MAX_RECORDS, PUT_RECORDS_MAX_RECORDS, `${where}: maxBatchRecords`);
    this.maxBatchBytes = bounded(o.maxBatchBytes, PUT_RECORDS_MAX_BYTES, PUT_RECORDS_MAX_BYTES, `${where}: maxBatchBytes`);
    this.maxInFlightRequests = bounded(o.maxInFlightRequests, 10, 1000, `${where}: maxInFlightRequests`);
    this.maxBufferedRecords = bounded(o.maxBufferedRecords, 10_000, 10_000_000, `${where}: maxBufferedRecords`);
    this.maxTimeInBufferMs = bounded(o.maxTimeInBufferMs, 5_000, 3_600_000, `${where}: maxTimeInBufferMs`);
    // Fewer than a batch: the writer is out of room before a batch is full, as Flink refuses it.
    if (this.maxBufferedRecords < this.maxBatchRecords) throw new WeirError('CONFIG', `${where}: maxBufferedRecords (${this.maxBufferedRecords}) must be at least maxBatchRecords (${this.maxBatchRecords})`);
    this.conn = resolveConnection({ ...o, timeoutMs: bounded(o.timeoutMs, 10_000, 600_000, `${where}: timeoutMs`) }, where);
    this.retry = { initialBackoffMs: 100, maxBackoffMs: 5_000, deadlineMs: bounded(o.retryDeadlineMs, 60_000, 86_400_000, `${where}: retryDeadlineMs`) };
    this.name = `kinesis ${this.conn.label}/${this.stream}`;
  }

  createWriter(ctx: SinkContext): KinesisWriter<T> {
    return new KinesisWriter<T>(this, ctx);
  }

  createCommitter(): SinkCommitter<KinesisCommittable> {
    return { commit: () => {} };
  }
}

export class KinesisWriter<T> implements SinkWriter<T, KinesisCommittable> {
  private queue: SinkEntry[] = [];
  /** Bytes of the queued entries (data and partition keys), for a batch full by size. */
  private queuedBytes = 0;
  private inFlight = 0;
  /** Entries written and not acknowledged: queued, in flight, or waiting out a backoff. */
  unacked = 0;
  private nextSeq = 0;
  /** Entries with seq below this are sent without waiting for a full batch (a barrier is waiting). */
  private flushUpTo = 0;
  private readonly barriers = new Barriers();
  private readonly prepared = new Map<number, Promise<void>>();
  private client: Promise<KinesisClient> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly backoffs = new Set<NodeJS.Timeout>();
  private error: Error | undefined;
  private closed = false;
  /** Requests sent, and entries re-queued after a partial failure (for tests and the log). */
  requests = 0;
  retriedEntries = 0;

  constructor(private readonly sink: KinesisSink<T>, private readonly ctx: SinkContext) {}

  write(values: readonly T[]): void {
    if (this.error) throw this.error;
    const s = this.sink;
    const now = this.ctx.now();
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      const pk = s.partitionKey(v);
      if (typeof pk !== 'string' || pk.length === 0 || pk.length > 256) throw new WeirError('USER_CODE', `${s.name}: partitionKey returned ${JSON.stringify(pk)}; it must be a string of 1 to 256 characters`);
      const p = s.payload(v);
      const data = typeof p === 'string' ? encoder.encode(p) : p;
      if (!(data instanceof Uint8Array)) throw new WeirError('USER_CODE', `${s.name}: payload must return a string or a Uint8Array`);
      const size = data.length + Buffer.byteLength(pk);
      if (size > Math.min(RECORD_MAX_BYTES, s.maxBatchBytes)) throw new WeirError('USER_CODE', `${s.name}: a record of ${size} bytes (data and partition key) is over the ${RECORD_MAX_BYTES} byte Kinesis limit`);
      const ehk = s.explicitHashKey?.(v);
      if (ehk !== undefined && !isExplicitHashKey(ehk)) throw new WeirError('USER_CODE', `${s.name}: explicitHashKey returned ${JSON.stringify(ehk)}; it must be a decimal number below 2^128`);
      this.queue.push({ data, partitionKey: pk, explicitHashKey: ehk, size, seq: this.nextSeq++, queuedAt: now, failures: 0 });
      this.queuedBytes += size;
    }
    this.unacked += values.length;
    this.pump();
  }

  isAvailable(): boolean {
    return this.unacked < this.sink.maxBufferedRecords || this.error !== undefined;
  }

  prepareCommit(checkpointId: number): KinesisCommittable[] {
    if (this.error) throw this.error;
    this.flushUpTo = this.nextSeq;
    // Every entry not acknowledged now was written before this barrier.
    const p = this.barriers.add(this.flushUpTo, this.unacked);
    p.catch(() => {});
    this.prepared.set(checkpointId, p);
    this.pump();
    return [];
  }

  /** The checkpoint is acknowledged only once every record written before its barrier is. */
  whenPrepared(checkpointId: number): Promise<void> {
    if (this.error) return Promise.reject(this.error);
    const p = this.prepared.get(checkpointId) ?? Promise.resolve();
    this.prepared.delete(checkpointId);
    return p;
  }

  drain(): Promise<void> {
    if (this.error) return Promise.reject(this.error);
    this.flushUpTo = this.nextSeq;
    const p = this.barriers.add(this.flushUpTo, this.unacked);
    this.pump();
    return p;
  }

  private pump(): void {
    if (this.closed || this.error) return;
    const s = this.sink;
    const now = this.ctx.now();
    while (this.inFlight < s.maxInFlightRequests) {
      const q = this.queue;
      const flushing = q.length > 0 && q[0]!.seq < this.flushUpTo;
      const urgent = flushing || this.unacked >= s.maxBufferedRecords;
      if (!shouldSend({ records: q.length, bytes: this.queuedBytes }, { maxRecords: s.maxBatchRecords, maxBytes: s.maxBatchBytes }, urgent, q[0]?.queuedAt, now, s.maxTimeInBufferMs)) break;
      const n = batchSize(q, s.maxBatchRecords, s.maxBatchBytes);
      const batch = q.splice(0, n);
      for (const e of batch) this.queuedBytes -= e.size;
      this.send(batch);
    }
    if (this.queue.length > 0 && this.timer === undefined && this.inFlight < s.maxInFlightRequests) {
      const wait = Math.max(1, (this.queue[0]?.queuedAt ?? now) + s.maxTimeInBufferMs - now);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, wait);
      this.timer.unref?.();
    }
  }

  private send(batch: SinkEntry[]): void {
    this.inFlight++;
    this.requests++;
    const s = this.sink;
    const what = `PutRecords of ${batch.length} records to stream "${s.stream}"`;
    (async () => {
      const { PutRecordsCommand } = await import('@aws-sdk/client-kinesis');
      this.client ??= createKinesisClient(s.conn);
      const client = await this.client;
      const Records = batch.map((e) => ({ Data: e.data, PartitionKey: e.partitionKey, ...(e.explicitHashKey !== undefined ? { ExplicitHashKey: e.explicitHashKey } : {}) }));
      return call(s.conn, what, (abortSignal) => client.send(new PutRecordsCommand({ StreamName: s.stream, Records }), { abortSignal }));
    })().then((res: PutRecordsCommandOutput) => {
      this.inFlight--;
      if (this.closed) return;
      const { acked, failed, firstError } = splitAnswer(batch, res.Records);
      this.acked(acked);
      if (failed.length > 0) this.retryLater(failed, new Error(firstError ?? 'partial failure'), true);
      this.pump();
    }, (e) => {
      this.inFlight--;
      if (this.closed) return;
      this.retryLater(batch, e, isTransientKinesis(e));
      this.pump();
    });
  }

  private acked(entries: readonly SinkEntry[]): void {
    if (entries.length === 0) return;
    const wasFull = !this.isAvailable();
    this.unacked -= entries.length;
    for (let i = 0; i < entries.length; i++) this.barriers.acked(entries[i]!.seq);
    if (wasFull && this.isAvailable()) this.ctx.wake?.();
  }

  /** Back to the front of the queue after a jittered backoff, or the job fails past the deadline. */
  private retryLater(entries: SinkEntry[], cause: unknown, transient: boolean): void {
    const now = this.ctx.now();
    let delay = 0;
    for (const e of entries) {
      e.failedSince ??= now;
      const d = nextRetryDelay(this.sink.retry, e.failures++, now - e.failedSince, transient, Math.random());
      if (d === undefined) {
        this.fail(kinesisError(this.sink.conn, `PutRecords to stream "${this.sink.stream}"${transient ? ` (a record still failing after ${Math.round((now - e.failedSince) / 1000)} s)` : ''}`, cause));
        return;
      }
      delay = Math.max(delay, d);
    }
    this.retriedEntries += entries.length;
    const t = setTimeout(() => {
      this.backoffs.delete(t);
      if (this.closed || this.error) return;
      // In write order: a barrier's flush takes the queue's front up to its sequence number, and
      // retries coming back in the order their backoffs ended ([3, 0]) hid a pre-barrier entry
      // behind a later one, the checkpoint waiting for maxTimeInBufferMs.
      this.queue = entries.concat(this.queue).sort((a, b) => a.seq - b.seq);
      for (const e of entries) this.queuedBytes += e.size;
      this.pump();
    }, delay);
    t.unref?.();
    this.backoffs.add(t);
  }

  private fail(e: Error): void {
    if (this.error) return;
    this.error = e;
    this.barriers.failAll(e);
    this.ctx.wake?.();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const t of this.backoffs) clearTimeout(t);
    this.backoffs.clear();
    this.barriers.failAll(new WeirError('CONNECTOR', `${this.sink.name}: closed with records not acknowledged`));
    const c = this.client;
    this.client = undefined;
    c?.then((x) => x.destroy(), () => {});
  }
}

function bounded(v: unknown, dflt: number, max: number, what: string): number {
  if (v === undefined) return dflt;
  if (!(typeof v === 'number' && Number.isSafeInteger(v) && v > 0 && v <= max)) throw new WeirError('CONFIG', `${what} must be an integer from 1 to ${max}, got ${JSON.stringify(v)}`);
  return v;
}
