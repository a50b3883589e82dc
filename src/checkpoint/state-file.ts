/**
 * The state file of one operator subtask in a checkpoint: named blocks (one per state and
 * key group, one per key group of timers), each with a CRC, followed by an index and a
 * trailer. Readers can fetch only the key groups they own (rescaling) and detect truncation
 * or corruption of any block. Layout:
 *
 *   "WEIRST01" | block... | index (msgpack) | u32 indexLength | u32 indexCrc | "WEIREND1"
 *
 * Written front to back through a StateOutputStream and read by range through a
 * StateInputHandle (core/state-streams.ts), so it is the same on a local disk, in memory or
 * in an object store. Both come from checkpoint storage only: a task's
 * CheckpointStorageWorkerView resolves a location to its streams, and opens a state file by
 * reference (openStateFile below); storage's local/, memory/ folders implement them.
 */
import { crc32 } from 'node:zlib';
import { decodeValue, encodeValue } from '../core/codec.ts';
import { WeirError } from '../core/errors.ts';
import type { StateInputHandle, StateOutputStream } from '../core/state-streams.ts';
import type { CheckpointStorageWorkerView } from './storage.ts';
import { MissingFileError, StorageError } from './storage-error.ts';

const HEAD = Buffer.from('WEIRST01');
const TAIL = Buffer.from('WEIREND1');
const TRAILER = 8 + TAIL.length;
/** Queued block bytes from which addBlock starts a write on its own. */
const DRAIN_AT_BYTES = 1 << 20;

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

/**
 * Appends blocks through the stream, one write in flight at a time (the stream's contract);
 * close() writes the index and trailer and closes the stream, which makes the file durable.
 */
export class StateFileWriter {
  private offset = HEAD.length;
  private readonly blocks: BlockEntry[] = [];
  private queue: Buffer[] = [];
  /** Called with a queued block once the write that carries it resolved (the caller may reuse its memory). */
  private written: { readonly data: Uint8Array; readonly done: (data: Uint8Array) => void }[] = [];
  private queuedBytes = 0;
  /** Bytes added and not yet taken by the stream: the queue's and those of the writes under way. */
  private unwrittenBytes = 0;
  /** whenBelow() callers, settled as writes end. */
  private belowWaiters: { readonly limit: number; readonly resolve: () => void; readonly reject: (e: Error) => void }[] = [];
  private writing: Promise<void> = Promise.resolve();
  private failed: Error | undefined;

  private constructor(private readonly out: StateOutputStream) {}

  /** Writes the header; on failure the stream is aborted. */
  static async create(out: StateOutputStream): Promise<StateFileWriter> {
    try {
      await out.write([HEAD]);
    } catch (e) {
      await out.abort();
      throw e;
    }
    return new StateFileWriter(out);
  }

  /**
   * Bytes accepted and not yet taken by the stream, queued or in a write under way: callers
   * pause producing blocks above a bound (whenBelow). Counting only the queue, as before, let
   * a snapshot encode far ahead of a slower disk (each 1 MiB drained was no longer counted):
   * a 10 M-key checkpoint held most of its ~100 MB in memory at once.
   */
  pendingBytes(): number {
    return this.unwrittenBytes;
  }

  /** Resolves once fewer than `limit` bytes are unwritten (pendingBytes), as the writes under way end; rejects if the file fails. */
  whenBelow(limit: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.unwrittenBytes < limit) return Promise.resolve();
    return new Promise((resolve, reject) => this.belowWaiters.push({ limit, resolve, reject }));
  }

  /**
   * `data`: the block, or its pieces in order (each must keep its bytes until written).
   * `onWritten`: called with each piece once the stream has taken it (never when the file fails
   * or is abandoned first).
   */
  addBlock(name: string, data: Uint8Array | readonly Uint8Array[], onWritten?: (data: Uint8Array) => void): void {
    if (this.failed) throw this.failed;
    // A block in pieces (its parts in order) is written as they are, one checksum over them all.
    const parts = data instanceof Uint8Array ? [data] : data;
    let length = 0;
    let crc = 0;
    for (const part of parts) {
      const buf = Buffer.from(part.buffer, part.byteOffset, part.byteLength);
      crc = crc32(buf, crc);
      length += buf.length;
      this.queue.push(buf);
      if (onWritten !== undefined) this.written.push({ data: part, done: onWritten });
    }
    this.blocks.push({ name, offset: this.offset, length, crc });
    this.offset += length;
    this.queuedBytes += length;
    this.unwrittenBytes += length;
    if (this.queuedBytes >= DRAIN_AT_BYTES) void this.drain();
  }

  /** Writes what is queued as one (gathering) write; resolves when the stream took it. */
  drain(): Promise<void> {
    if (this.queue.length === 0) return this.writing;
    const chunks = this.queue;
    const written = this.written;
    const bytes = this.queuedBytes;
    this.queue = [];
    this.written = [];
    this.queuedBytes = 0;
    this.writing = this.writing.then(() => this.out.write(chunks));
    this.writing.then(() => {
      this.unwrittenBytes -= bytes;
      for (const w of written) w.done(w.data);
      this.settleWaiters();
    }, (e) => {
      this.failed = e instanceof Error ? e : new Error(String(e));
      this.settleWaiters();
    });
    return this.writing;
  }

  private settleWaiters(): void {
    const waiting = this.belowWaiters;
    this.belowWaiters = [];
    for (const w of waiting) {
      if (this.failed) w.reject(this.failed);
      else if (this.unwrittenBytes < w.limit) w.resolve();
      else this.belowWaiters.push(w);
    }
  }

  /** Writes the index and trailer and closes the stream; returns the file size. */
  async close(meta: unknown): Promise<number> {
    await this.drain();
    if (this.failed) throw this.failed;
    const index = Buffer.from(encodeValue({ blocks: this.blocks, meta } satisfies StateFileIndex));
    const trailer = Buffer.alloc(TRAILER);
    trailer.writeUInt32LE(index.length, 0);
    trailer.writeUInt32LE(crc32(index), 4);
    TAIL.copy(trailer, 8);
    this.writing = this.out.write([index, trailer]);
    await this.writing;
    const size = await this.out.close();
    const expected = this.offset + index.length + TRAILER;
    if (size !== expected) throw new Error(`state stream reports ${size} bytes written, the state file has ${expected}`);
    return size;
  }

  /** Abandons the file: waits for the write in flight, then aborts the stream (which removes what was written). */
  async abort(): Promise<void> {
    await this.writing.catch(() => {});
    await this.out.abort();
  }
}

/** Reads the index, then blocks on demand, verifying every CRC. Does not own the input: the caller closes it. */
export class StateFileReader {
  private constructor(private readonly input: StateInputHandle, readonly index: StateFileIndex) {}

  /** Where the file is, for messages. */
  get description(): string {
    return this.input.description;
  }

  get size(): number {
    return this.input.size;
  }

  static async open(input: StateInputHandle): Promise<StateFileReader> {
    const where = input.description;
    const size = input.size;
    try {
      if (size < HEAD.length + TRAILER) throw new CorruptStateError(where, `too short (${size} bytes)`);
      const head = Buffer.from(await input.read(0, HEAD.length));
      if (!head.equals(HEAD)) throw new CorruptStateError(where, 'not a weir state file (bad header)');
      const trailer = Buffer.from(await input.read(size - TRAILER, TRAILER));
      if (!trailer.subarray(8).equals(TAIL)) throw new CorruptStateError(where, 'missing trailer (truncated)');
      const len = trailer.readUInt32LE(0);
      const crc = trailer.readUInt32LE(4);
      if (len > size - TRAILER - HEAD.length) throw new CorruptStateError(where, 'index length out of range');
      const idx = await input.read(size - TRAILER - len, len);
      if (crc32(idx) !== crc) throw new CorruptStateError(where, 'index checksum mismatch');
      return new StateFileReader(input, decodeValue<StateFileIndex>(idx));
    } catch (e) {
      if (e instanceof CorruptStateError) throw e;
      if (storageFailed(e)) throw new StorageError(`${where}: cannot be read: ${(e as Error).message}`, { cause: e });
      throw new CorruptStateError(where, (e as Error).message);
    }
  }

  async readBlock(b: BlockEntry): Promise<Uint8Array> {
    let buf: Uint8Array;
    try {
      buf = await this.input.read(b.offset, b.length);
    } catch (e) {
      if (storageFailed(e)) throw new StorageError(`${this.description}: block ${b.name} cannot be read: ${(e as Error).message}`, { cause: e });
      throw new CorruptStateError(this.description, `block ${b.name} cannot be read: ${(e as Error).message}`);
    }
    if (crc32(buf) !== b.crc) throw new CorruptStateError(this.description, `block ${b.name} checksum mismatch`);
    return buf;
  }
}

/**
 * Whether reading failed because the storage did not answer (I/O error, a timeout or 5xx
 * after the retries, no permission), not because of what the snapshot holds. Such a failure
 * fails the attempt like any other, and the restart reads the same snapshot again; taken for
 * corruption, it made recovery skip a good checkpoint for an older one for good (output
 * committed past that one then refused the start, or other sinks wrote it twice). A file that
 * does not exist is the snapshot's fault.
 */
function storageFailed(e: unknown): boolean {
  if (e instanceof MissingFileError) return false;
  if (e instanceof StorageError) return true;
  if (e instanceof WeirError) return false; // its code is weir's, not the system's
  // A system call's error (EIO, EMFILE, EACCES, ...); a missing file is the snapshot's fault.
  const code = (e as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) && code !== 'ENOENT' && code !== 'ENOTDIR';
}

/**
 * Opens a state file named in a snapshot (a reference: the snapshot's reference and the file's
 * relative name, names.ts) through checkpoint storage. With `expectedSize` (what the snapshot
 * recorded), a file of another size is refused at once: truncated, or replaced. A file that
 * cannot be opened is a CorruptStateError naming it.
 */
export async function openStateFile(storage: CheckpointStorageWorkerView, reference: string, expectedSize?: number): Promise<StateInputHandle> {
  let input: StateInputHandle;
  try {
    input = await storage.openState(reference);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    if (storageFailed(e)) throw new StorageError(`${reference}: cannot open: ${why}`, { cause: e });
    throw new CorruptStateError(reference, `cannot open: ${why}`);
  }
  if (expectedSize !== undefined && input.size !== expectedSize) {
    await input.close().catch(() => {});
    throw new CorruptStateError(reference, `size ${input.size} bytes, expected ${expectedSize} (truncated or replaced)`);
  }
  return input;
}
