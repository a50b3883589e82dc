/**
 * Small keyed state inline in the checkpoint metadata (Flink's state.storage.fs.memory-threshold):
 * a state stream that stays at or below the threshold is never written as an object or file;
 * its bytes go with the acknowledgement into the metadata (base64), so a checkpoint of many
 * small subtasks costs one metadata PUT, not one PUT per subtask. A stream that grows past the
 * threshold opens the storage's stream then, writes what it buffered, and goes on as usual.
 *
 * On restore an inline state file is served from the metadata's bytes by the same reader
 * interface (StateInputHandle) a stored file has, so backends do not know the difference.
 */
import type { CheckpointStreamFactory, StateInputHandle, StateOutputStream } from '../core/state-streams.ts';
import { StorageError } from './storage-error.ts';

/** Streams of one checkpoint location; what stayed inline is taken by name once written. */
export class InliningStreamFactory implements CheckpointStreamFactory {
  private readonly inlined = new Map<string, Uint8Array>();

  constructor(private readonly inner: CheckpointStreamFactory, private readonly thresholdBytes: number) {}

  async createStateStream(name: string): Promise<StateOutputStream> {
    if (this.thresholdBytes <= 0) return this.inner.createStateStream(name);
    return new InliningStream(name, this.thresholdBytes, () => this.inner.createStateStream(name), (bytes) => this.inlined.set(name, bytes));
  }

  /** The bytes of `name` when it stayed inline (closed at or below the threshold); removes them. */
  take(name: string): Uint8Array | undefined {
    const b = this.inlined.get(name);
    this.inlined.delete(name);
    return b;
  }
}

class InliningStream implements StateOutputStream {
  private buffered: Uint8Array[] = [];
  private size = 0;
  private inner: StateOutputStream | undefined;
  private state: 'open' | 'closed' | 'aborted' = 'open';
  private busy = false;

  constructor(
    private readonly name: string,
    private readonly thresholdBytes: number,
    private readonly open: () => Promise<StateOutputStream>,
    private readonly keep: (bytes: Uint8Array) => void,
  ) {}

  async write(chunks: readonly Uint8Array[]): Promise<void> {
    if (this.state !== 'open') throw new StorageError(`${this.name}: write after the stream was ${this.state}`);
    if (this.busy) throw new StorageError(`${this.name}: a write is already in flight (one at a time)`);
    this.busy = true;
    try {
      await Promise.resolve();
      if (this.inner !== undefined) return await this.inner.write(chunks);
      for (const c of chunks) {
        if (c.byteLength === 0) continue;
        this.buffered.push(c.slice());
        this.size += c.byteLength;
      }
      if (this.size > this.thresholdBytes) {
        // Past the threshold: a stored file after all, starting with what was buffered.
        this.inner = await this.open();
        const pending = this.buffered;
        this.buffered = [];
        await this.inner.write(pending);
      }
    } finally {
      this.busy = false;
    }
  }

  async close(): Promise<number> {
    if (this.state !== 'open') throw new StorageError(`${this.name}: close after the stream was ${this.state}`);
    if (this.busy) throw new StorageError(`${this.name}: closed while a write is in flight`);
    this.state = 'closed';
    if (this.inner !== undefined) return this.inner.close();
    this.keep(Buffer.concat(this.buffered, this.size));
    this.buffered = [];
    return this.size;
  }

  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    this.buffered = [];
    await this.inner?.abort();
  }
}

/** A state file held in the metadata (base64), read like a stored one. */
export function inlineStateInput(description: string, base64: string): StateInputHandle {
  const bytes = Buffer.from(base64, 'base64');
  return {
    description: `${description} (inline in the metadata)`,
    size: bytes.byteLength,
    async read(position: number, length: number): Promise<Uint8Array> {
      if (position < 0 || length < 0 || position + length > bytes.byteLength) {
        throw new StorageError(`${description} (inline): cannot read ${length} bytes at ${position}, it has ${bytes.byteLength}`);
      }
      return bytes.subarray(position, position + length);
    },
    async close(): Promise<void> {},
  };
}
