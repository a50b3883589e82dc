/**
 * The few S3 operations weir uses, over the AWS SDK v3 client. The SDK is loaded on first use
 * (a dynamic import), so jobs that never touch s3:// do not pay for it. Every request has a
 * timeout (connection, whole request, idle socket) and the SDK's standard retry strategy
 * (exponential backoff with jitter on throttling, 5xx and network errors) up to
 * s3.retry.max-attempts; an overall deadline bounds a request with all its retries.
 *
 * Errors become StorageError naming the operation and the s3:// reference, never the
 * endpoint's or the client's credentials. Bodies are always whole buffers (never streams), so
 * no aws-chunked framing is involved.
 */
import type {
  CreateMultipartUploadCommandOutput, DeleteObjectsCommandOutput, GetObjectCommandOutput, HeadObjectCommandOutput, ListMultipartUploadsCommandOutput,
  ListObjectsV2CommandOutput, ListPartsCommandOutput, S3Client, UploadPartCommandOutput,
} from '@aws-sdk/client-s3';
import { quietAwsSdkNodeWarning } from '../../core/aws-sdk-warning.ts';
import { StorageError } from '../storage-error.ts';
import { redactUrl, type S3Config } from './settings.ts';

type Sdk = typeof import('@aws-sdk/client-s3');

/** Longest wait between retries the SDK's standard strategy makes (its own cap is 20 s). */
const MAX_BACKOFF_MS = 20_000;
/** Pages of a listing read at most (1000 keys a page): a bound on one listing's loop. */
const MAX_LIST_PAGES = 10_000;
/** Keys per DeleteObjects request (S3's limit). */
const DELETE_BATCH = 1000;

export interface ListedObjects {
  readonly objects: readonly { readonly key: string; readonly size: number }[];
  /** Common prefixes (with the delimiter) when listed with one. */
  readonly prefixes: readonly string[];
}

export interface CompletedPart {
  readonly partNumber: number;
  readonly etag: string;
}

/** A multipart upload in progress (ListMultipartUploads). */
export interface UploadInProgress {
  readonly key: string;
  readonly uploadId: string;
  /** When S3 started it (ms since the epoch; 0 when the store does not say). */
  readonly initiated: number;
}

/** An uploaded part of a multipart upload in progress (ListParts). */
export interface UploadedPart extends CompletedPart {
  readonly size: number;
}

/** Requests sent by this process (for tests and benchmarks), by kind. */
export interface RequestCounts {
  put: number;
  putBytes: number;
  get: number;
  head: number;
  list: number;
  delete: number;
  multipart: number;
}

/** The client, made on first use and shared by a store and its views (withSignal). */
interface SharedClient {
  loaded: Promise<{ sdk: Sdk; client: S3Client }> | undefined;
}

export class S3ObjectStore {
  readonly counts: RequestCounts;
  private readonly shared: SharedClient;
  /** A view's signal (withSignal): aborts its requests, their retries included. */
  private readonly signal: AbortSignal | undefined;

  constructor(readonly config: S3Config, view?: { readonly of: S3ObjectStore; readonly signal: AbortSignal }) {
    this.counts = view?.of.counts ?? { put: 0, putBytes: 0, get: 0, head: 0, list: 0, delete: 0, multipart: 0 };
    this.shared = view?.of.shared ?? { loaded: undefined };
    this.signal = view?.signal;
  }

  /**
   * The same client and counts, each request also ended by `signal` (a cancelled task's, see
   * SinkContext.signal): no attempt or retry starts after it fired, and one under way is cut.
   * Without it a request stuck past the cancel went on retrying for up to its deadline (minutes
   * with the defaults) after the job was reported cancelled.
   */
  withSignal(signal: AbortSignal | undefined): S3ObjectStore {
    return signal === undefined ? this : new S3ObjectStore(this.config, { of: this, signal });
  }

  /** Whole-request deadline: every attempt's timeout and the backoff between attempts. */
  private get deadlineMs(): number {
    return this.config.retryMaxAttempts * (this.config.requestTimeoutMs + MAX_BACKOFF_MS);
  }

  async putObject(bucket: string, key: string, body: Uint8Array): Promise<void> {
    this.counts.put++;
    this.counts.putBytes += body.byteLength;
    await this.send('put', bucket, key, (s) => new s.PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.byteLength }));
  }

  /** The object's bytes (a range of them), or undefined when there is no such object. */
  async getObject(bucket: string, key: string, range?: { readonly position: number; readonly length: number }): Promise<Uint8Array | undefined> {
    // The body is read after the request returned, outside the SDK's retries: a body that stalls
    // or is cut short is retried here, and then a storage failure, never "corrupt state" (a
    // good checkpoint was taken for corrupt and given up for an older one).
    for (let attempt = 1; ; attempt++) {
      this.counts.get++;
      let out: GetObjectCommandOutput;
      try {
        out = await this.send<GetObjectCommandOutput>('get', bucket, key, (s) => new s.GetObjectCommand({
          Bucket: bucket, Key: key, Range: range === undefined ? undefined : `bytes=${range.position}-${range.position + range.length - 1}`,
        }));
      } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
      }
      if (out.Body === undefined) return new Uint8Array(0);
      try {
        return await out.Body.transformToByteArray();
      } catch (e) {
        if (attempt >= Math.max(1, this.config.retryMaxAttempts)) {
          throw new StorageError(`s3 get s3://${bucket}/${key} failed while reading the body: ${describeSdkError(e)} (after ${attempt} attempt(s))`, { cause: e });
        }
      }
    }
  }

  /** The object's size, or undefined when there is no such object. */
  async headObject(bucket: string, key: string): Promise<number | undefined> {
    this.counts.head++;
    try {
      const out = await this.send<HeadObjectCommandOutput>('head', bucket, key, (s) => new s.HeadObjectCommand({ Bucket: bucket, Key: key }));
      return out.ContentLength ?? 0;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  /** Every object (and, with a delimiter, every common prefix) under `prefix`, all pages. */
  async list(bucket: string, prefix: string, delimiter?: string): Promise<ListedObjects> {
    const objects: { key: string; size: number }[] = [];
    const prefixes: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      this.counts.list++;
      const out = await this.send<ListObjectsV2CommandOutput>('list', bucket, prefix, (s) => new s.ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token }));
      const contents = out.Contents ?? [];
      const common = out.CommonPrefixes ?? [];
      checkListing(`list s3://${bucket}/${prefix}`, out.Name === bucket, out.IsTruncated, out.NextContinuationToken);
      for (const o of contents) if (o.Key !== undefined) objects.push({ key: o.Key, size: o.Size ?? 0 });
      for (const p of common) if (p.Prefix !== undefined) prefixes.push(p.Prefix);
      if (out.IsTruncated !== true) return { objects, prefixes };
      token = out.NextContinuationToken;
    }
    throw new StorageError(`s3 list s3://${bucket}/${prefix}: more than ${MAX_LIST_PAGES} pages`);
  }

  async deleteObject(bucket: string, key: string): Promise<void> {
    this.counts.delete++;
    await this.send('delete', bucket, key, (s) => new s.DeleteObjectCommand({ Bucket: bucket, Key: key }));
  }

  async deleteObjects(bucket: string, keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      this.counts.delete++;
      const out = await this.send<DeleteObjectsCommandOutput>('delete', bucket, batch[0]!, (s) => new s.DeleteObjectsCommand({
        Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
      }));
      const failed = out.Errors ?? [];
      if (failed.length > 0) {
        const first = failed[0]!;
        throw new StorageError(`s3 delete s3://${bucket}/${first.Key ?? '?'} failed: ${first.Code ?? 'error'} ${first.Message ?? ''} (${failed.length} of ${batch.length} keys not deleted)`);
      }
    }
  }

  async createMultipartUpload(bucket: string, key: string): Promise<string> {
    this.counts.multipart++;
    const out = await this.send<CreateMultipartUploadCommandOutput>('start upload', bucket, key, (s) => new s.CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    if (out.UploadId === undefined) throw new StorageError(`s3 start upload s3://${bucket}/${key}: no upload id in the answer`);
    return out.UploadId;
  }

  async uploadPart(bucket: string, key: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<CompletedPart> {
    this.counts.put++;
    this.counts.putBytes += body.byteLength;
    const out = await this.send<UploadPartCommandOutput>('upload part', bucket, key, (s) => new s.UploadPartCommand({
      Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.byteLength,
    }));
    if (out.ETag === undefined) throw new StorageError(`s3 upload part ${partNumber} of s3://${bucket}/${key}: no ETag in the answer`);
    return { partNumber, etag: out.ETag };
  }

  async completeMultipartUpload(bucket: string, key: string, uploadId: string, parts: readonly CompletedPart[]): Promise<void> {
    this.counts.multipart++;
    await this.send('complete upload', bucket, key, (s) => new s.CompleteMultipartUploadCommand({
      Bucket: bucket, Key: key, UploadId: uploadId,
      MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })) },
    }));
  }

  /**
   * Completes the upload; false when there is no such upload (completed or aborted before: the
   * caller tells which by looking for the object).
   */
  async tryCompleteMultipartUpload(bucket: string, key: string, uploadId: string, parts: readonly CompletedPart[]): Promise<boolean> {
    try {
      await this.completeMultipartUpload(bucket, key, uploadId, parts);
      return true;
    } catch (e) {
      if (isNoSuchUpload(e)) return false;
      throw e;
    }
  }

  /** Every multipart upload in progress whose key starts with `prefix`, all pages. */
  async listMultipartUploads(bucket: string, prefix: string): Promise<UploadInProgress[]> {
    const out: UploadInProgress[] = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      this.counts.list++;
      const r = await this.send<ListMultipartUploadsCommandOutput>('list uploads', bucket, prefix, (s) => new s.ListMultipartUploadsCommand({
        Bucket: bucket, Prefix: prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker,
      }));
      checkListing(`list uploads s3://${bucket}/${prefix}`, r.Bucket === bucket, r.IsTruncated, r.NextKeyMarker);
      for (const u of r.Uploads ?? []) {
        if (u.Key !== undefined && u.UploadId !== undefined) out.push({ key: u.Key, uploadId: u.UploadId, initiated: u.Initiated?.getTime() ?? 0 });
      }
      if (r.IsTruncated !== true) return out;
      keyMarker = r.NextKeyMarker;
      uploadIdMarker = r.NextUploadIdMarker;
    }
    throw new StorageError(`s3 list uploads s3://${bucket}/${prefix}: more than ${MAX_LIST_PAGES} pages`);
  }

  /** The parts uploaded so far, by part number; undefined when there is no such upload. */
  async listParts(bucket: string, key: string, uploadId: string): Promise<UploadedPart[] | undefined> {
    const out: UploadedPart[] = [];
    let marker: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      this.counts.list++;
      let r: ListPartsCommandOutput;
      try {
        r = await this.send<ListPartsCommandOutput>('list parts', bucket, key, (s) => new s.ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker }));
      } catch (e) {
        if (isNoSuchUpload(e)) return undefined;
        throw e;
      }
      checkListing(`list parts of s3://${bucket}/${key}`, r.Bucket === bucket && r.Key === key && r.UploadId === uploadId, r.IsTruncated, r.NextPartNumberMarker);
      for (const p of r.Parts ?? []) {
        if (p.PartNumber !== undefined && p.ETag !== undefined) out.push({ partNumber: p.PartNumber, etag: p.ETag, size: p.Size ?? 0 });
      }
      if (r.IsTruncated !== true) return out.sort((a, b) => a.partNumber - b.partNumber);
      marker = r.NextPartNumberMarker;
    }
    throw new StorageError(`s3 list parts s3://${bucket}/${key}: more than ${MAX_LIST_PAGES} pages`);
  }

  /** Best effort: an upload left behind costs storage until the bucket's lifecycle rule removes it. */
  async abortMultipartUpload(bucket: string, key: string, uploadId: string): Promise<void> {
    this.counts.multipart++;
    await this.send('abort upload', bucket, key, (s) => new s.AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
  }

  /** Closes the client's connections (a test or a CLI command that is done). */
  async close(): Promise<void> {
    const l = this.shared.loaded;
    this.shared.loaded = undefined;
    if (l !== undefined) (await l.catch(() => undefined))?.client.destroy();
  }

  private async send<T = unknown>(op: string, bucket: string, key: string, command: (sdk: Sdk) => unknown): Promise<T> {
    const { sdk, client } = await this.client();
    // The deadline and the view's signal, on a controller of this request's own: not
    // AbortSignal.any, whose composites a long-lived source signal keeps (one per request, for
    // the task's life: nodejs/node#55351); the listener goes when the request ends.
    const ac = new AbortController();
    const deadline = setTimeout(() => ac.abort(new Error(`no answer within ${this.deadlineMs} ms`)), this.deadlineMs);
    deadline.unref();
    const cancel = (): void => ac.abort(this.signal?.reason);
    if (this.signal?.aborted === true) cancel();
    else this.signal?.addEventListener('abort', cancel, { once: true });
    try {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- every command of this client
      return (await client.send(command(sdk) as any, { abortSignal: ac.signal })) as T;
    } catch (e) {
      if (isNotFound(e)) throw e;
      if (this.signal?.aborted === true) throw new StorageError(`s3 ${op} s3://${bucket}/${key} stopped: its task was cancelled or failed (the outcome is unknown; the restore settles it)`, { cause: e });
      throw new StorageError(`s3 ${op} s3://${bucket}/${key} failed: ${describeSdkError(e)}`, { cause: e });
    } finally {
      clearTimeout(deadline);
      this.signal?.removeEventListener('abort', cancel);
    }
  }

  private client(): Promise<{ sdk: Sdk; client: S3Client }> {
    this.shared.loaded ??= (async () => {
      quietAwsSdkNodeWarning();
      const [sdk, { NodeHttpHandler }] = await Promise.all([import('@aws-sdk/client-s3'), import('@smithy/node-http-handler')]);
      const c = this.config;
      const client = new sdk.S3Client({
        ...(c.endpoint !== undefined ? { endpoint: c.endpoint } : {}),
        ...(resolveRegion(c) !== undefined ? { region: resolveRegion(c) } : {}),
        forcePathStyle: c.pathStyleAccess,
        maxAttempts: c.retryMaxAttempts,
        retryMode: 'standard',
        // Idle time is bounded (connect, then no data for requestTimeoutMs), and each request with
        // its retries by the overall deadline (send). Not the handler's requestTimeout: it runs
        // until the response headers, body upload included, so a part upload slower than part
        // size / timeout (~280 KB/s with the defaults) failed on every attempt while data flowed.
        requestHandler: new NodeHttpHandler({
          connectionTimeout: c.requestTimeoutMs,
          socketTimeout: c.requestTimeoutMs,
        }),
      });
      return { sdk, client };
    })();
    return this.shared.loaded;
  }
}

/**
 * Loads the SDK's modules now (a worker thread of a job checkpointing to S3, while it loads
 * the job), so the first checkpoint does not wait for them; failures show at first use.
 */
export function preloadS3Sdk(): void {
  quietAwsSdkNodeWarning();
  void Promise.all([import('@aws-sdk/client-s3'), import('@smithy/node-http-handler')]).catch(() => {});
}

/**
 * The region when set; otherwise the SDK finds it (AWS_REGION, the profile). A store behind a
 * custom endpoint (settings or AWS_ENDPOINT_URL[_S3]) often has none, so us-east-1 then.
 */
function resolveRegion(c: S3Config): string | undefined {
  if (c.region !== undefined) return c.region;
  const env = process.env;
  if (env.AWS_REGION !== undefined || env.AWS_DEFAULT_REGION !== undefined) return undefined;
  const customEndpoint = c.endpoint !== undefined || env.AWS_ENDPOINT_URL_S3 !== undefined || env.AWS_ENDPOINT_URL !== undefined;
  return customEndpoint ? 'us-east-1' : undefined;
}

/**
 * A listing's answer is S3's for what was asked, or the listing fails: the SDK reads a 200 whose
 * body is empty, an HTML page or other XML (a proxy, a gateway) as an answer with no fields, and
 * taken as "nothing there" it made the shared-file collector delete every file of live
 * incremental checkpoints, and a sink restore abort an upload it had to complete. A page said
 * to be truncated without the marker of the next one would end the listing early, as silently.
 */
function checkListing(what: string, answersRequest: boolean, truncated: boolean | undefined, next: unknown): void {
  if (!answersRequest || truncated === undefined) throw new StorageError(`s3 ${what}: the answer is not a listing of what was asked (an empty or foreign body from a proxy or gateway?)`);
  if (truncated && (next === undefined || next === '')) throw new StorageError(`s3 ${what}: the answer says there is more but gives no marker for it`);
}

/** The upload named is not (or no longer) in progress: completed or aborted. */
export function isNoSuchUpload(e: unknown): boolean {
  const err = e as { name?: string; Code?: string; cause?: unknown } | undefined;
  if (err?.name === 'NoSuchUpload' || err?.Code === 'NoSuchUpload') return true;
  return err?.cause !== undefined && err.cause !== e && isNoSuchUpload(err.cause);
}

function isNotFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  return err?.name === 'NoSuchKey' || err?.name === 'NotFound' || err?.$metadata?.httpStatusCode === 404 && err?.name !== 'NoSuchBucket';
}

/** The error's kind, status and message: no request headers, no signature, no credentials. */
function describeSdkError(e: unknown): string {
  const err = e as { name?: string; message?: string; code?: string; $metadata?: { httpStatusCode?: number; attempts?: number } } | undefined;
  const status = err?.$metadata?.httpStatusCode;
  const attempts = err?.$metadata?.attempts;
  const parts = [err?.name ?? 'Error'];
  if (status !== undefined) parts.push(`HTTP ${status}`);
  const message = redactUrl(err?.message ?? String(e)).replace(/(AKIA|ASIA)[A-Z0-9]{12,}/g, '***');
  const tail = attempts !== undefined && attempts > 1 ? ` (after ${attempts} attempts)` : '';
  return `${parts.join(', ')}: ${message}${tail}`;
}
