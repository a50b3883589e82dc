/**
 * State streams on S3. Output buffers up to one part (s3.upload.part-size): a state file that
 * fits is one PUT when it closes; a larger one becomes a multipart upload whose parts go out
 * as the buffer fills (the write waits for the part: backpressure, and memory bounded by about
 * one part) and which is completed on close. Nothing is visible under the file's key before
 * close, so an aborted or crashed writer leaves no partial object.
 *
 * Input: the size from one HEAD; a small object is read whole on its first read (one GET for
 * every block a restoring subtask reads), a large one by ranged GETs.
 */
import type { StateInputHandle, StateOutputStream } from '../../core/state-streams.ts';
import { MissingFileError, StorageError } from '../storage-error.ts';
import type { CompletedPart, S3ObjectStore } from './object-store.ts';

/** Objects up to this size are read whole once instead of range by range. */
const WHOLE_READ_MAX_BYTES = 16 * 1024 * 1024;
/** S3 allows at most 10,000 parts in one upload. */
const MAX_PARTS = 10_000;

export class S3OutputStream implements StateOutputStream {
  private buffered: Uint8Array[] = [];
  private bufferedBytes = 0;
  private total = 0;
  private uploadId: string | undefined;
  private readonly parts: CompletedPart[] = [];
  private busy = false;
  private state: 'open' | 'closed' | 'aborted' = 'open';

  constructor(
    private readonly store: S3ObjectStore,
    private readonly bucket: string,
    private readonly key: string,
    private readonly description: string,
  ) {}

  async write(chunks: readonly Uint8Array[]): Promise<void> {
    if (this.state !== 'open') throw new StorageError(`${this.description}: write after the stream was ${this.state}`);
    if (this.busy) throw new StorageError(`${this.description}: a write is already in flight (one at a time)`);
    this.busy = true;
    try {
      // A turn before touching the buffer: a second write started meanwhile is refused, as
      // on every storage (one write in flight at a time), not silently interleaved.
      await Promise.resolve();
      // Copies: the caller may reuse its buffers once the write resolves.
      for (const c of chunks) {
        if (c.byteLength === 0) continue;
        this.buffered.push(c.slice());
        this.bufferedBytes += c.byteLength;
        this.total += c.byteLength;
      }
      if (this.bufferedBytes >= this.store.config.uploadPartSizeBytes) await this.uploadBuffered();
    } finally {
      this.busy = false;
    }
  }

  async close(): Promise<number> {
    if (this.state !== 'open') throw new StorageError(`${this.description}: close after the stream was ${this.state}`);
    if (this.busy) throw new StorageError(`${this.description}: closed while a write is in flight`);
    this.busy = true;
    try {
      if (this.uploadId === undefined) {
        await this.store.putObject(this.bucket, this.key, this.takeBuffered());
      } else {
        if (this.bufferedBytes > 0) await this.uploadBuffered();
        if (!(await this.store.tryCompleteMultipartUpload(this.bucket, this.key, this.uploadId, this.parts))) {
          // No such upload: completed by an earlier attempt of this request whose answer was lost
          // (the client retried it), when the object is there with every byte; else lost.
          const size = await this.store.headObject(this.bucket, this.key);
          if (size !== this.total) throw new StorageError(`${this.description}: the upload vanished before it was completed${size === undefined ? '' : ` (an object of ${size} bytes, not ${this.total}, is there)`}`);
        }
      }
      this.state = 'closed';
      return this.total;
    } catch (e) {
      await this.abort();
      throw e;
    } finally {
      this.busy = false;
    }
  }

  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    this.buffered = [];
    this.bufferedBytes = 0;
    const id = this.uploadId;
    this.uploadId = undefined;
    // Best effort: some S3-compatible stores refuse aborts; the parts are then left to the
    // bucket's lifecycle rule for incomplete uploads (they never become a visible object).
    if (id !== undefined) await this.store.abortMultipartUpload(this.bucket, this.key, id).catch(() => {});
  }

  private async uploadBuffered(): Promise<void> {
    if (this.parts.length >= MAX_PARTS) throw new StorageError(`${this.description}: more than ${MAX_PARTS} parts; raise s3.upload.part-size`);
    this.uploadId ??= await this.store.createMultipartUpload(this.bucket, this.key);
    const body = this.takeBuffered();
    this.parts.push(await this.store.uploadPart(this.bucket, this.key, this.uploadId, this.parts.length + 1, body));
  }

  private takeBuffered(): Uint8Array {
    const body = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered, this.bufferedBytes);
    this.buffered = [];
    this.bufferedBytes = 0;
    return body;
  }
}

export async function openS3Input(store: S3ObjectStore, bucket: string, key: string, description: string): Promise<StateInputHandle> {
  const size = await store.headObject(bucket, key);
  if (size === undefined) throw new MissingFileError(`${description} does not exist`);
  let whole: Promise<Uint8Array> | undefined;
  const check = (position: number, length: number) => {
    if (position < 0 || length < 0 || position + length > size) throw new StorageError(`${description}: cannot read ${length} bytes at ${position}, the file has ${size}`);
  };
  return {
    description,
    size,
    async read(position: number, length: number): Promise<Uint8Array> {
      check(position, length);
      if (length === 0) return new Uint8Array(0);
      if (size <= WHOLE_READ_MAX_BYTES) {
        whole ??= store.getObject(bucket, key).then((b) => {
          if (b === undefined || b.byteLength !== size) throw new StorageError(`${description} changed or vanished while being read`);
          return b;
        });
        return (await whole).slice(position, position + length);
      }
      const b = await store.getObject(bucket, key, { position, length });
      if (b === undefined || b.byteLength !== length) throw new StorageError(`${description}: a read of ${length} bytes at ${position} returned ${b?.byteLength ?? 'nothing'}`);
      return b;
    },
    async close(): Promise<void> {
      whole = undefined;
    },
  };
}
