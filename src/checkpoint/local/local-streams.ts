/**
 * State streams over local files: an append-only output written with positional gathering
 * writes (one write in flight at a time, short writes finished), fsynced on close; and a
 * random-access input that reads exact ranges. The only local-file streams: tasks get them
 * from the storage's worker view (storage-on-fs.ts over local-file-system.ts), never by path.
 *
 * The file handle an output writes to is injectable (OpenWritableFile), so tests can cut
 * writes short the way the OS may; everything else about faults is injected above the stream.
 */
import { constants } from 'node:fs';
import { open, rm, type FileHandle } from 'node:fs/promises';
import type { StateInputHandle, StateOutputStream } from '../../core/state-streams.ts';
import { MissingFileError, StorageError } from '../storage-error.ts';

/** Whether a file system call failed because the path (or a directory on it) does not exist. */
export function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** The part of a file handle an output stream needs (a FileHandle has it). */
export interface WritableFile {
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  writev(buffers: Buffer[], position: number): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

export type OpenWritableFile = (path: string) => Promise<WritableFile>;

/** New files only: a state file is written once (a name used twice is a bug). */
const openForWrite: OpenWritableFile = (path) => open(path, 'wx');

function toBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Writes all of `buf` at `position`, however short the single writes come out. */
async function writeFully(fh: WritableFile, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    if (bytesWritten <= 0) throw new StorageError(`write made no progress at byte ${position + done}`);
    done += bytesWritten;
  }
}

export class LocalStateOutputStream implements StateOutputStream {
  private size = 0;
  /** The write in flight, if any (one at a time). */
  private writing: Promise<void> | undefined;
  /** The operation in flight (a write or the close): abort waits for it before it removes the file. */
  private busy: Promise<unknown> = Promise.resolve();
  private state: 'open' | 'closing' | 'closed' | 'aborted' = 'open';

  private constructor(readonly path: string, private readonly fh: WritableFile) {}

  /** Creates the file; fails if it exists (a state file is written once). */
  static async create(path: string, openFile: OpenWritableFile = openForWrite): Promise<LocalStateOutputStream> {
    return new LocalStateOutputStream(path, await openFile(path));
  }

  write(chunks: readonly Uint8Array[]): Promise<void> {
    if (this.state !== 'open') return Promise.reject(new StorageError(`${this.path}: write after the stream was ${this.state}`));
    if (this.writing !== undefined) return Promise.reject(new StorageError(`${this.path}: a write is already in flight (one at a time)`));
    const p = this.writeAll(chunks.map(toBuffer)).finally(() => (this.writing = undefined));
    this.writing = p;
    this.busy = p.catch(() => {});
    return p;
  }

  /** One gathering write (no copy into one buffer); what the OS cuts short is finished with plain writes. */
  private async writeAll(bufs: Buffer[]): Promise<void> {
    const total = bufs.reduce((n, b) => n + b.length, 0);
    if (total === 0) return;
    const at = this.size;
    const { bytesWritten } = await this.fh.writev(bufs, at);
    if (bytesWritten < total) await writeFully(this.fh, Buffer.concat(bufs).subarray(bytesWritten), at + bytesWritten);
    this.size += total;
  }

  async close(): Promise<number> {
    if (this.state !== 'open') throw new StorageError(`${this.path}: close after the stream was ${this.state}`);
    if (this.writing !== undefined) throw new StorageError(`${this.path}: closed while a write is in flight`);
    this.state = 'closing';
    const p = (async () => {
      try {
        await this.fh.sync();
      } finally {
        await this.fh.close();
      }
    })();
    this.busy = p.catch(() => {});
    await p;
    if (this.state === 'closing') this.state = 'closed';
    return this.size;
  }

  /**
   * Abandons the file: waits for the write or close in flight, then closes the handle and
   * removes the file. A stream already closed is complete and stays (its checkpoint's
   * location discards it).
   */
  async abort(): Promise<void> {
    if (this.state === 'closed' || this.state === 'aborted') return;
    const wasClosing = this.state === 'closing';
    this.state = 'aborted';
    await this.busy;
    if (!wasClosing) await this.fh.close().catch(() => {});
    await rm(this.path, { force: true }).catch(() => {});
  }
}

export class LocalStateInputHandle implements StateInputHandle {
  private constructor(readonly description: string, private readonly fh: FileHandle, readonly size: number) {}

  static async open(path: string): Promise<LocalStateInputHandle> {
    let fh: FileHandle;
    try {
      // Non-blocking: a FIFO in a state file's place blocked the open for good (a restore or
      // `state inspect` that only SIGKILL ended). No symbolic link: weir writes none, and one
      // read a file outside the snapshot as its state.
      fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    } catch (e) {
      if (isMissing(e)) throw new MissingFileError(`${path} does not exist`, { cause: e });
      if ((e as NodeJS.ErrnoException).code === 'ELOOP') throw new StorageError(`${path} is a symbolic link, not a state file weir wrote`, { cause: e });
      throw e;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new StorageError(`${path} is not a regular file`);
      return new LocalStateInputHandle(path, fh, st.size);
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
      if (bytesRead === 0) throw new StorageError(`${this.description}: ended at byte ${position + done} while reading ${length} bytes at ${position} (truncated)`);
      done += bytesRead;
    }
    return buf;
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => {});
  }
}
