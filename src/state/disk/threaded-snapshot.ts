/**
 * A full disk snapshot whose reading and encoding run on the snapshot reader thread
 * (reader-thread.ts, reader-main.ts): the same canonical state file as snapshot.ts, byte for
 * byte (the same blocks, made by snapshot-blocks.ts, in the same key order), but the task's
 * thread only takes the finished blocks into the state file, adds the timers (which only the
 * task can read) and closes it. Its steps never wait: one with nothing arrived returns false,
 * and the next message from the thread wakes the snapshot again.
 *
 * The thread sends at most MAX_IN_FLIGHT_BYTES of blocks the task has not taken: the task
 * credits what it took, so blocks do not pile up while the state file's stream is slow.
 */
import { WeirError } from '../../core/errors.ts';
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { KeyedStateHandle, KeyedStateSnapshot, KeyGroupBlockSource, SnapshotTarget } from '../backend.ts';
import { StateFileWrite, type IncrementalPart } from '../state-file-write.ts';
import type { FromReader, ReadJob } from './reader-thread.ts';
import type { ExpiredKey } from './snapshot-blocks.ts';
import { closeFullSnapshot, type SnapshotState } from './snapshot.ts';

export interface ThreadedSnapshotSource {
  /** The thread's read of the view opened in the synchronous phase; this snapshot ends it. */
  readonly job: ReadJob;
  readonly states: readonly SnapshotState[];
  readonly timers: KeyGroupBlockSource | undefined;
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /** Keys found expired (the backend removes those still expired). */
  readonly onExpired: (keys: ExpiredKey[]) => void;
  /** Called once the read has ended (done, failed or aborted). */
  readonly onReleased: (s: ThreadedDiskSnapshot) => void;
  readonly where: string;
  /** An incremental chain's base: the same file, in the job's shared directory. */
  readonly base?: IncrementalPart;
}

export class ThreadedDiskSnapshot implements KeyedStateSnapshot {
  private readonly file: StateFileWrite;
  /** Messages from the thread not yet taken; `head`: the next one. */
  private queue: FromReader[] = [];
  private head = 0;
  private readDone = false;
  private lost = false;
  private target: SnapshotTarget | undefined;
  private released = false;

  constructor(private readonly src: ThreadedSnapshotSource) {
    this.file = new StateFileWrite(src.keyGroupRange, src.base, () => this.release());
    src.job.onMessage = (m) => {
      this.queue.push(m);
      this.target?.wake();
    };
    src.job.onLost = () => {
      this.lost = true;
      this.target?.wake();
    };
  }

  write(target: SnapshotTarget): Promise<KeyedStateHandle> {
    this.target = target;
    this.src.job.holdProcess();
    // Blocks that arrive before the stream is open wait (bounded by the thread's credit); it wakes the target once open.
    return this.file.open(target);
  }

  step(): boolean {
    this.src.job.pull(this.queue);
    if (this.head === this.queue.length && !this.readDone) {
      if (this.lost) this.file.fail(new WeirError('STATE_BACKEND', `${this.src.where}: the disk snapshot's reader thread went away before it read the whole store`));
      return false; // the thread's next message wakes this snapshot
    }
    return this.file.step(() => this.take(), () => this.finish());
  }

  /**
   * Adds the blocks of the next message arrived (one read chunk of the thread's, as much as a
   * step reads on the task's thread) to the file; false once the thread has sent them all.
   */
  private take(): boolean {
    const m = this.queue[this.head];
    if (m === undefined) return !this.readDone;
    this.queue[this.head++] = undefined as unknown as FromReader;
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
    if (m.t === 'blocks') {
      let bytes = 0;
      for (const b of m.blocks) {
        this.file.add(b.name, b.bytes, b.entries);
        bytes += b.bytes.byteLength;
      }
      if (m.expired.length > 0) this.src.onExpired(m.expired as ExpiredKey[]);
      if (bytes > 0) this.src.job.credit(bytes);
    } else if (m.t === 'done') {
      this.readDone = true;
    } else {
      throw new WeirError('STATE_BACKEND', `${this.src.where}: the disk snapshot's reader thread failed: ${m.message}`);
    }
    return !this.readDone;
  }

  private finish(): void {
    closeFullSnapshot(this.file, this.src, () => this.release());
  }

  abort(): void {
    this.file.abort();
  }

  /** Ends the thread's read (it releases its transaction if it still holds it). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.src.job.end();
    this.src.onReleased(this);
  }
}
