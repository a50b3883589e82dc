/**
 * PutRecords batching as pure decisions: how many queued entries go into the next request
 * (AWS: at most 500 records and 5 MiB, counting data and partition key), which entries of an
 * answer failed (an ErrorCode: ProvisionedThroughputExceeded or InternalFailure) and go back
 * to the queue, and when a checkpoint's barrier has every entry written before it acknowledged.
 */

import { isSequenceNumber } from './shards.ts';

export const PUT_RECORDS_MAX_RECORDS = 500;
export const PUT_RECORDS_MAX_BYTES = 5 * 1024 * 1024;
export const RECORD_MAX_BYTES = 1024 * 1024;

export interface SinkEntry {
  readonly data: Uint8Array;
  readonly partitionKey: string;
  readonly explicitHashKey: string | undefined;
  /** Data plus partition key bytes: what counts against the limits. */
  readonly size: number;
  /** Write order, for barriers: everything with seq below a barrier's mark must be acknowledged. */
  readonly seq: number;
  /** When it was written (ms), for maxTimeInBufferMs: the queue's front is its oldest. */
  readonly queuedAt: number;
  /** When the entry first failed (for the retry deadline), and how often. */
  failedSince?: number;
  failures: number;
}

/** Entries from the front of `queue` for one PutRecords: at least one, within both limits. */
export function batchSize(queue: readonly SinkEntry[], maxRecords: number, maxBytes: number): number {
  let n = 0;
  let bytes = 0;
  while (n < queue.length && n < maxRecords) {
    const s = queue[n]!.size;
    if (n > 0 && bytes + s > maxBytes) break;
    bytes += s;
    n++;
  }
  return n;
}

/**
 * Whether to send a batch now: a full one (by records or by bytes: 25 records of 200 KiB fill a
 * request, and counting records only sent one every maxTimeInBufferMs), anything when `urgent`
 * (a barrier's flush, or the writer out of room, its task back-pressured until something is
 * acknowledged), or when the oldest entry waited long enough.
 */
export function shouldSend(queued: { readonly records: number; readonly bytes: number }, limits: { readonly maxRecords: number; readonly maxBytes: number }, urgent: boolean, oldestQueuedAt: number | undefined, now: number, maxTimeInBufferMs: number): boolean {
  if (queued.records === 0) return false;
  if (queued.records >= limits.maxRecords || queued.bytes >= limits.maxBytes || urgent) return true;
  return oldestQueuedAt !== undefined && now - oldestQueuedAt >= maxTimeInBufferMs;
}

export interface PutResultEntry {
  readonly ErrorCode?: string | undefined;
  readonly ErrorMessage?: string | undefined;
  readonly SequenceNumber?: string | undefined;
}

/**
 * Splits a PutRecords answer into acknowledged entries (a sequence number) and failed ones (to
 * re-queue: an ErrorCode, or neither). An answer whose length does not match the request is a
 * protocol error: everything is retried.
 */
export function splitAnswer<E>(batch: readonly E[], results: readonly PutResultEntry[] | undefined): { acked: E[]; failed: E[]; firstError: string | undefined } {
  if (results === undefined || results.length !== batch.length) return { acked: [], failed: [...batch], firstError: `PutRecords answered ${results?.length ?? 0} results for ${batch.length} records` };
  const acked: E[] = [];
  const failed: E[] = [];
  let firstError: string | undefined;
  for (let i = 0; i < batch.length; i++) {
    const r = results[i]!;
    if (r.ErrorCode !== undefined && r.ErrorCode !== null && r.ErrorCode !== '') {
      failed.push(batch[i]!);
      firstError ??= `${r.ErrorCode}: ${r.ErrorMessage ?? ''}`;
    } else if (isSequenceNumber(r.SequenceNumber)) {
      acked.push(batch[i]!);
    } else {
      // Neither an error nor a sequence number: nothing says the record was written, so it is
      // written again (a duplicate at worst, which the stream's readers see anyway on retries).
      failed.push(batch[i]!);
      firstError ??= `PutRecords result ${i} has neither SequenceNumber nor ErrorCode (${JSON.stringify(r).slice(0, 100)})`;
    }
  }
  return { acked, failed, firstError };
}

/** Outstanding barriers: each waits for the entries written before it. */
export class Barriers {
  private readonly list: { readonly mark: number; remaining: number; readonly done: () => void; readonly failed: (e: unknown) => void }[] = [];

  /** A barrier after entries with seq < mark, of which `unacked` are not acknowledged yet. */
  add(mark: number, unacked: number): Promise<void> {
    if (unacked === 0) return Promise.resolve();
    return new Promise((done, failed) => this.list.push({ mark, remaining: unacked, done, failed }));
  }

  acked(seq: number): void {
    for (let i = 0; i < this.list.length; i++) {
      const b = this.list[i]!;
      if (seq < b.mark && --b.remaining === 0) {
        this.list.splice(i--, 1);
        b.done();
      }
    }
  }

  failAll(e: unknown): void {
    for (const b of this.list.splice(0)) b.failed(e);
  }

  get size(): number {
    return this.list.length;
  }
}
