/**
 * The state file of one operator subtask in a checkpoint: named blocks (one per state and
 * key group, one per key group of timers), each with a CRC, followed by an index and a
 * trailer. Readers can fetch only the key groups they own (rescaling) and detect truncation
 * or corruption of any block. Layout:
 *
 *   "WEIRST01" | block... | index (msgpack) | u32 indexLength | u32 indexCrc | "WEIREND1"
 */
import { open, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { decodeValue, encodeValue } from '../core/codec.ts';
import { WeirError } from '../core/errors.ts';

const HEAD = Buffer.from('WEIRST01');
const TAIL = Buffer.from('WEIREND1');
const TRAILER = 8 + TAIL.length;

export interface BlockEntry {
  readonly name: string;
  readonly offset: number;
  readonly length: number;
  readonly crc: number;
}

export interface StateFileIndex {
  readonly blocks: readonly BlockEntry[];
  /** Whatever the writer wants to describe its blocks (state names, serializers, ...). */
  readonly meta: unknown;
}

export class CorruptStateError extends WeirError {
  constructor(readonly path: string, message: string) {
    super('CORRUPT_STATE', `corrupt state file ${path}: ${message}`);
  }
}

/** The part of a file handle the writer needs; injectable so tests can slow or fail writes. */
export interface WritableFile {
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  writev(buffers: Buffer[], position: number): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

export type OpenWritableFile = (path: string) => Promise<WritableFile>;

const openForWrite: OpenWritableFile = (path) => open(path, 'wx');

/** Writes all of `buf` at `position`, however short the single writes come out. */
async function writeFully(fh: WritableFile, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    if (bytesWritten <= 0) throw new Error(`write made no progress at byte ${position + done}`);
    done += bytesWritten;
  }
}

/** Appends blocks with async writes, one in flight at a time; close() writes the index and syncs. */
export class StateFileWriter {
  private fh: WritableFile | undefined;
  private offset = HEAD.length;
  private readonly blocks: BlockEntry[] = [];
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private writing: Promise<void> = Promise.resolve();
  private failed: Error | undefined;

  private constructor(readonly path: string) {}

  static async create(path: string, openFile: OpenWritableFile = openForWrite): Promise<StateFileWriter> {
    const w = new StateFileWriter(path);
    w.fh = await openFile(path);
    await writeFully(w.fh, HEAD, 0);
    return w;
  }

  /** Bytes accepted but not yet written: callers pause producing blocks above a bound. */
  pendingBytes(): number {
    return this.queuedBytes;
  }

  addBlock(name: string, data: Uint8Array): void {
    if (this.failed) throw this.failed;
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.blocks.push({ name, offset: this.offset, length: buf.length, crc: crc32(buf) });
    this.offset += buf.length;
    this.queue.push(buf);
    this.queuedBytes += buf.length;
    if (this.queuedBytes >= 1 << 20) this.drain();
  }

  /** Writes what is queued as one write; resolves when it is on its way to the file. */
  drain(): Promise<void> {
    if (this.queue.length === 0) return this.writing;
    const chunks = this.queue;
    const total = this.queuedBytes;
    const at = this.offset - total;
    this.queue = [];
    this.queuedBytes = 0;
    const fh = this.fh!;
    this.writing = this.writing.then(async () => {
      // One gathering write for the blocks (no copy into one buffer); a short write, which
      // the OS may do, finishes with plain writes of what is left.
      const { bytesWritten } = await fh.writev(chunks, at);
      if (bytesWritten < total) await writeFully(fh, Buffer.concat(chunks).subarray(bytesWritten), at + bytesWritten);
    });
    this.writing.catch((e) => (this.failed = e instanceof Error ? e : new Error(String(e))));
    return this.writing;
  }

  /** Writes the index and trailer, fsyncs, closes; returns the file size. */
  async close(meta: unknown): Promise<number> {
    await this.drain();
    if (this.failed) throw this.failed;
    const index = Buffer.from(encodeValue({ blocks: this.blocks, meta } satisfies StateFileIndex));
    const trailer = Buffer.alloc(TRAILER);
    trailer.writeUInt32LE(index.length, 0);
    trailer.writeUInt32LE(crc32(index), 4);
    TAIL.copy(trailer, 8);
    const fh = this.fh!;
    await writeFully(fh, Buffer.concat([index, trailer]), this.offset);
    await fh.sync();
    await fh.close();
    this.fh = undefined;
    return this.offset + index.length + TRAILER;
  }

  async abort(): Promise<void> {
    await this.writing.catch(() => {});
    await this.fh?.close().catch(() => {});
    this.fh = undefined;
  }
}

/** Reads the index, then blocks on demand, verifying every CRC. */
export class StateFileReader {
  private constructor(readonly path: string, private readonly fh: FileHandle, readonly index: StateFileIndex, readonly size: number) {}

  static async open(path: string, expectedSize?: number): Promise<StateFileReader> {
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (e) {
      throw new CorruptStateError(path, `cannot open: ${(e as Error).message}`);
    }
    try {
      const { size } = await fh.stat();
      if (expectedSize !== undefined && size !== expectedSize) throw new CorruptStateError(path, `size ${size} bytes, expected ${expectedSize} (truncated or replaced)`);
      if (size < HEAD.length + TRAILER) throw new CorruptStateError(path, `too short (${size} bytes)`);
      const head = Buffer.alloc(HEAD.length);
      await fh.read(head, 0, head.length, 0);
      if (!head.equals(HEAD)) throw new CorruptStateError(path, 'not a weir state file (bad header)');
      const trailer = Buffer.alloc(TRAILER);
      await fh.read(trailer, 0, TRAILER, size - TRAILER);
      if (!trailer.subarray(8).equals(TAIL)) throw new CorruptStateError(path, 'missing trailer (truncated)');
      const len = trailer.readUInt32LE(0);
      const crc = trailer.readUInt32LE(4);
      if (len > size - TRAILER - HEAD.length) throw new CorruptStateError(path, 'index length out of range');
      const idx = Buffer.alloc(len);
      await fh.read(idx, 0, len, size - TRAILER - len);
      if (crc32(idx) !== crc) throw new CorruptStateError(path, 'index checksum mismatch');
      const index = decodeValue<StateFileIndex>(idx);
      return new StateFileReader(path, fh, index, size);
    } catch (e) {
      await fh.close().catch(() => {});
      if (e instanceof CorruptStateError) throw e;
      throw new CorruptStateError(path, (e as Error).message);
    }
  }

  async readBlock(b: BlockEntry): Promise<Uint8Array> {
    const buf = Buffer.alloc(b.length);
    let done = 0;
    while (done < b.length) {
      const { bytesRead } = await this.fh.read(buf, done, b.length - done, b.offset + done);
      if (bytesRead === 0) throw new CorruptStateError(this.path, `block ${b.name} is truncated`);
      done += bytesRead;
    }
    if (crc32(buf) !== b.crc) throw new CorruptStateError(this.path, `block ${b.name} checksum mismatch`);
    return buf;
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => {});
  }
}
