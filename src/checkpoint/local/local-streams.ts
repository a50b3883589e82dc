/**
 * State streams over local files: an append-only output written with positional gathering
 * writes (one write in flight at a time, short writes finished), fsynced on close; and a
 * random-access input that reads exact ranges.
 */
import { open, rm, type FileHandle } from 'node:fs/promises';
import type { StateInputHandle, StateOutputStream } from '../../core/state-streams.ts';
import { StorageError } from '../storage-error.ts';

function toBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Writes all of `buf` at `position`, however short the single writes come out. */
async function writeFully(fh: FileHandle, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    if (bytesWritten <= 0) throw new StorageError(`write made no progress at byte ${position + done}`);
    done += bytesWritten;
  }
}

export class LocalStateOutputStream implements StateOutputStream {
  private size = 0;
  private busy = false;
  private state: 'open' | 'closed' | 'aborted' = 'open';

  private constructor(readonly path: string, private readonly fh: FileHandle) {}

  /** Creates the file; fails if it exists (a state file is written once). */
  static async create(path: string): Promise<LocalStateOutputStream> {
    return new LocalStateOutputStream(path, await open(path, 'wx'));
  }

  async write(chunks: readonly Uint8Array[]): Promise<void> {
    if (this.state !== 'open') throw new StorageError(`${this.path}: write after the stream was ${this.state}`);
    if (this.busy) throw new StorageError(`${this.path}: a write is already in flight (one at a time)`);
    this.busy = true;
    try {
      const bufs = chunks.map(toBuffer);
      const total = bufs.reduce((n, b) => n + b.length, 0);
      if (total === 0) return;
      // One gathering write (no copy into one buffer); a short write, which the OS may do,
      // is finished with plain writes of what is left.
      const { bytesWritten } = await this.fh.writev(bufs, this.size);
      if (bytesWritten < total) await writeFully(this.fh, Buffer.concat(bufs).subarray(bytesWritten), this.size + bytesWritten);
      this.size += total;
    } finally {
      this.busy = false;
    }
  }

  async close(): Promise<number> {
    if (this.state !== 'open') throw new StorageError(`${this.path}: close after the stream was ${this.state}`);
    this.state = 'closed';
    try {
      await this.fh.sync();
    } finally {
      await this.fh.close();
    }
    return this.size;
  }

  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    await this.fh.close().catch(() => {});
    await rm(this.path, { force: true }).catch(() => {});
  }
}

export class LocalStateInputHandle implements StateInputHandle {
  private constructor(readonly description: string, private readonly fh: FileHandle, readonly size: number) {}

  static async open(path: string): Promise<LocalStateInputHandle> {
    const fh = await open(path, 'r');
    try {
      return new LocalStateInputHandle(path, fh, (await fh.stat()).size);
    } catch (e) {
      await fh.close().catch(() => {});
      throw e;
    }
  }

  async read(position: number, length: number): Promise<Uint8Array> {
    if (position < 0 || length < 0 || position + length > this.size) {
      throw new StorageError(`${this.description}: cannot read ${length} bytes at ${position}, the file has ${this.size}`);
    }
    const buf = Buffer.alloc(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.fh.read(buf, done, length - done, position + done);
      if (bytesRead === 0) throw new StorageError(`${this.description}: ended at byte ${position + done} while reading ${length} bytes at ${position}`);
      done += bytesRead;
    }
    return buf;
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => {});
  }
}
