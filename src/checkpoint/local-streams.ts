/**
 * State streams on the local file system: the CheckpointStreamFactory of one checkpoint
 * directory, and state files opened for reading. Until checkpoint storage hands these out
 * itself, the runtime constructs them from the paths the job manager sends (trigger
 * location, restore file paths).
 */
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { CheckpointStreamFactory, StateInputHandle, StateOutputStream } from '../core/state-streams.ts';
import { CorruptStateError } from './state-file.ts';

/** The part of a file handle an output stream needs; injectable so tests can cut writes short, slow or fail them. */
export interface WritableFile {
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  writev(buffers: Buffer[], position: number): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

export type OpenWritableFile = (path: string) => Promise<WritableFile>;

/** New files only: a state file is never overwritten (a name used twice is a bug). */
const openForWrite: OpenWritableFile = (path) => open(path, 'wx');

/** A CheckpointStreamFactory on a directory, which can also remove a stream it completed. */
export interface LocalStreamFactory extends CheckpointStreamFactory {
  readonly dir: string;
  /** Removes a completed stream (its checkpoint was aborted after this subtask wrote it); never throws. */
  discard(name: string): Promise<void>;
}

/** Streams are files `dir/<name>`; `dir` is created with the first stream. */
export function localStreamFactory(dir: string, openFile: OpenWritableFile = openForWrite): LocalStreamFactory {
  let made: Promise<unknown> | undefined;
  return {
    dir,
    async createStateStream(name: string): Promise<StateOutputStream> {
      checkName(name);
      made ??= mkdir(dir, { recursive: true });
      await made;
      const path = join(dir, name);
      return new LocalStateOutputStream(path, await openFile(path));
    },
    async discard(name: string): Promise<void> {
      checkName(name);
      await rm(join(dir, name), { force: true }).catch(() => {});
    },
  };
}

/** A stream name is a file name in the checkpoint directory, never a path out of it. */
function checkName(name: string): void {
  if (name === '' || name === '.' || name === '..' || basename(name) !== name || name.includes('\\')) {
    throw new Error(`state stream name ${JSON.stringify(name)} is not a plain file name`);
  }
}

/** Writes all of `buf` at `position`, however short the single writes come out. */
async function writeFully(fh: WritableFile, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    if (bytesWritten <= 0) throw new Error(`write made no progress at byte ${position + done}`);
    done += bytesWritten;
  }
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

class LocalStateOutputStream implements StateOutputStream {
  private position = 0;
  private fh: WritableFile | undefined;
  /** The operation in flight (a write or the close); abort waits for it. */
  private busy: Promise<unknown> = Promise.resolve();
  private writing = false;
  private aborted = false;

  constructor(private readonly path: string, fh: WritableFile) {
    this.fh = fh;
  }

  write(chunks: readonly Uint8Array[]): Promise<void> {
    const fh = this.fh;
    if (fh === undefined || this.aborted) return Promise.reject(new Error(`state stream ${this.path} is closed`));
    if (this.writing) return Promise.reject(new Error(`state stream ${this.path}: a write is already in flight`));
    this.writing = true;
    const p = this.writeAll(fh, chunks.map(asBuffer)).finally(() => (this.writing = false));
    this.busy = p.catch(() => {});
    return p;
  }

  /** One gathering write (no copy into one buffer); what the OS cuts short finishes with plain writes. */
  private async writeAll(fh: WritableFile, buffers: Buffer[]): Promise<void> {
    let total = 0;
    for (const b of buffers) total += b.length;
    const at = this.position;
    this.position += total;
    const { bytesWritten } = await fh.writev(buffers, at);
    if (bytesWritten < total) await writeFully(fh, Buffer.concat(buffers).subarray(bytesWritten), at + bytesWritten);
  }

  async close(): Promise<number> {
    const fh = this.fh;
    if (fh === undefined || this.aborted) throw new Error(`state stream ${this.path} is closed`);
    if (this.writing) throw new Error(`state stream ${this.path}: closed while a write is in flight`);
    this.fh = undefined;
    const p = fh.sync().then(() => fh.close());
    this.busy = p.catch(() => {});
    await p;
    return this.position;
  }

  async abort(): Promise<void> {
    this.aborted = true;
    await this.busy;
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close().catch(() => {});
    await rm(this.path, { force: true }).catch(() => {});
  }
}

/**
 * Opens a state file for reading. With `expectedSize` (what the checkpoint recorded), a file
 * of another size is refused at once: truncated, or replaced.
 */
export async function openLocalStateFile(path: string, expectedSize?: number): Promise<StateInputHandle> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw new CorruptStateError(path, `cannot open: ${(e as Error).message}`);
  }
  let size: number;
  try {
    size = (await fh.stat()).size;
  } catch (e) {
    await fh.close().catch(() => {});
    throw new CorruptStateError(path, (e as Error).message);
  }
  if (expectedSize !== undefined && size !== expectedSize) {
    await fh.close().catch(() => {});
    throw new CorruptStateError(path, `size ${size} bytes, expected ${expectedSize} (truncated or replaced)`);
  }
  return {
    description: path,
    size,
    async read(position: number, length: number): Promise<Uint8Array> {
      const buf = Buffer.alloc(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await fh.read(buf, done, length - done, position + done);
        if (bytesRead === 0) throw new Error(`the file ends before byte ${position + done} (truncated)`);
        done += bytesRead;
      }
      return buf;
    },
    async close(): Promise<void> {
      await fh.close().catch(() => {});
    },
  };
}
