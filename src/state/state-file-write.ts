/**
 * The I/O half of a keyed snapshot's asynchronous phase, the same for every backend and kind
 * (heap full or delta, disk full, disk delta): open the state file's stream, add the blocks a
 * step produced, pause while too many bytes wait for the stream, close the file with its meta,
 * and settle exactly once: resolved with the handle, or rejected on the first failure or on
 * abort(), the stream then abandoned. The snapshot supplies the CPU half (what a step reads
 * and encodes) and what it holds that an abort must let go of (frozen groups, a read view).
 *
 * Full snapshots go to the checkpoint's own location as one file (`streams`); the files of an
 * incremental chain go to the job's shared directory and the handle names the whole chain.
 */
import { StateFileWriter } from '../checkpoint/state-file.ts';
import { timerBlockName } from '../checkpoint/names.ts';
import type { KeyGroupRange } from '../core/checkpoint-format.ts';
import type { ChainFile, KeyedStateHandle, KeyGroupBlockSource, SnapshotTarget } from './backend.ts';
import type { KeyedSnapshotMeta } from './heap/format.ts';
import { releaseBlock } from './block-pool.ts';
import { returnView } from './key-column-cache.ts';

/**
 * Encoded bytes allowed to wait for the stream (queued or being written) before a snapshot's
 * steps pause; they go on once half of it is written, so the disk stays busy meanwhile.
 */
export const MAX_PENDING_BYTES = 16 << 20;

/** How an incremental snapshot fits its chain. */
export interface IncrementalPart {
  readonly checkpointId: number;
  /** 'base': full, to the shared directory; 'delta': changes after `baseEpoch`. */
  readonly kind: 'base' | 'delta';
  readonly baseEpoch: number;
  /** The files this one follows (empty for a base). */
  readonly chainBefore: readonly ChainFile[];
  /** Deltas: states dropped since the base (a restore removes what earlier files hold of them first). */
  readonly droppedStates: readonly string[];
}

export class StateFileWrite {
  readonly result: Promise<KeyedStateHandle>;
  private resolve!: (h: KeyedStateHandle) => void;
  private reject!: (e: Error) => void;
  private readonly keyGroupRange: KeyGroupRange;
  private target: SnapshotTarget | undefined;
  private writer: StateFileWriter | undefined;
  private opening: Promise<void> | undefined;
  private waitingIo = false;
  private closed = false;
  private settled = false;
  private abortedFlag = false;
  private stateBytes = 0;
  private entries = 0;

  /**
   * `part`: undefined for a full file in the checkpoint's own location (canonical, as savepoints).
   * `onAbort`: lets go of what the snapshot holds; called once, on the first failure or abort.
   */
  constructor(keyGroupRange: KeyGroupRange, private readonly part: IncrementalPart | undefined, private readonly onAbort: () => void) {
    this.keyGroupRange = { start: keyGroupRange.start, end: keyGroupRange.end };
    this.result = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    // The caller may never ask (an aborted snapshot nobody wrote): not an unhandled rejection.
    this.result.catch(() => {});
  }

  get aborted(): boolean {
    return this.abortedFlag;
  }

  /** Opens the file's stream (once); the target is woken when steps can write. */
  open(target: SnapshotTarget): Promise<KeyedStateHandle> {
    if (this.target !== undefined) throw new Error('a snapshot is written once'); // a bug in the caller, not a condition to report
    this.target = target;
    if (this.abortedFlag) return this.result;
    const streams = this.part === undefined ? target.streams : target.shared?.streams;
    const name = this.streamName();
    if (streams === undefined || name === undefined) {
      this.fail(new Error('an incremental snapshot needs a shared directory to write to (savepoints are always full)'));
      return this.result;
    }
    this.opening = streams.createStateStream(name).then(StateFileWriter.create).then(
      (w) => {
        this.writer = w;
        if (this.abortedFlag) void w.abort();
        else target.wake();
      },
      (e) => this.fail(e),
    );
    return this.result;
  }

  /**
   * One bounded step. `body` adds blocks (add()) and says whether more remain; then the step
   * pauses while the stream drains (the target is woken after), or, when nothing remains,
   * `end` adds the last blocks and closes the file (close()). False when done or waiting.
   */
  step(body: () => boolean, end: () => void): boolean {
    const w = this.writer;
    if (this.closed || this.abortedFlag || w === undefined || this.waitingIo) return false;
    try {
      const more = body();
      if (w.pendingBytes() >= MAX_PENDING_BYTES) {
        void w.drain();
        this.waitIo(w.whenBelow(MAX_PENDING_BYTES / 2));
        return false;
      }
      if (more) return true;
      end();
      return false;
    } catch (e) {
      this.fail(e);
      return false;
    }
  }

  /** Whether a step may encode more now (bytes waiting for the stream below the bound). */
  hasRoom(): boolean {
    return this.writer !== undefined && this.writer.pendingBytes() < MAX_PENDING_BYTES;
  }

  /** Adds a block (or its pieces in order) of `entries` state entries (0 for timers and tombstones); pooled memory (block-pool.ts) goes back once written. */
  add(name: string, bytes: Uint8Array | readonly Uint8Array[], entries = 0): void {
    if (bytes instanceof Uint8Array) this.stateBytes += bytes.byteLength;
    else for (const part of bytes) this.stateBytes += part.byteLength;
    this.entries += entries;
    this.writer!.addBlock(name, bytes, releaseWritten);
  }

  /** Adds every key group's timer block. */
  addTimers(timers: KeyGroupBlockSource | undefined): void {
    if (timers === undefined) return;
    for (const { keyGroup, bytes } of timers.encode()) this.add(timerBlockName(keyGroup), bytes);
  }

  /** Closes the file with `meta`; the result resolves with its handle once it is durable. */
  close(meta: KeyedSnapshotMeta): void {
    this.closed = true;
    const name = this.streamName()!;
    const part = this.part;
    this.writer!.close(meta).then(
      (size) => {
        if (this.settled) return;
        this.settled = true;
        const base = { keyGroupRange: this.keyGroupRange, stateSize: this.stateBytes, entries: this.entries };
        if (part === undefined) this.resolve({ ...base, streams: [{ name, size }] });
        else this.resolve({ ...base, streams: [], chain: [...part.chainBefore, { name, size, checkpointId: part.checkpointId, kind: part.kind }] });
      },
      (e) => this.fail(e),
    );
  }

  fail(e: unknown): void {
    if (this.settled) return;
    this.abortWith(e instanceof Error ? e : new Error(String(e)));
  }

  abort(): void {
    if (this.settled) return;
    this.abortWith(new Error('snapshot aborted'));
  }

  private streamName(): string | undefined {
    return this.part === undefined ? this.target?.streamName : this.target?.shared?.streamName;
  }

  private waitIo(p: Promise<void>): void {
    this.waitingIo = true;
    p.then(
      () => {
        this.waitingIo = false;
        this.target!.wake();
      },
      (e) => this.fail(e),
    );
  }

  /** Rejects, lets the snapshot release what it holds, abandons the stream (once it has opened). */
  private abortWith(e: Error): void {
    this.abortedFlag = true;
    this.settled = true;
    this.reject(e);
    this.onAbort();
    void this.opening?.then(() => this.writer?.abort());
  }
}

/** A piece written: pooled block memory goes back to the pool, a key column cache's view to its cache. */
function releaseWritten(bytes: Uint8Array): void {
  releaseBlock(bytes);
  returnView(bytes);
}
