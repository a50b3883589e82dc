/**
 * A snapshot of the disk backend, in the canonical state-file format the heap backend writes
 * (heap/format.ts: a block per (state, key group) in state-codec's block format, a block of
 * timers per key group, KeyedSnapshotMeta in the index), so either backend restores the
 * other's checkpoints and savepoints, at any parallelism, and `weir state inspect` reads them.
 *
 * Synchronous phase (the backend, records blocked): the write-back cache is flushed and a
 * read view of the store opened; nothing is copied. Asynchronous phase (records flowing):
 * step() reads the view in key order, a bounded number of entries per step, which is key group
 * by key group and, within a group, state by state (keys.ts), and hands each finished
 * (state, key group) block (snapshot-blocks.ts) to the state file writer. This runs on the
 * task's thread; the backend takes it when the snapshot reader thread cannot do the reading
 * and encoding instead (threaded-snapshot.ts). Writes made meanwhile go to the store
 * beside the view and are not seen by it. TTL: entries found expired are left out, and the
 * backend is told so it can remove those still expired from the store (cleanup on snapshot).
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateTtlConfig } from '../../core/state.ts';
import type { KeyedStateHandle, KeyedStateSnapshot, KeyGroupBlockSource, SnapshotTarget } from '../backend.ts';
import type { StateMeta } from '../state-codec.ts';
import { storeKeyPrefix } from './keys.ts';
import type { DiskStore } from './store.ts';
import { BlockBuilder, type BlockState, type EncodedBlock, type ExpiredKey } from './snapshot-blocks.ts';
import { StateFileWrite, type IncrementalPart } from '../state-file-write.ts';

export { withoutExpired, type ExpiredKey } from './snapshot-blocks.ts';

/** Store entries read per step: keeps each step short so records keep flowing. */
export const ENTRIES_PER_STEP = 4096;

/** One state as the snapshot records it. */
export interface SnapshotState {
  readonly stateId: number;
  readonly meta: StateMeta;
  /** The state's TTL (registered states only): expired entries are left out. */
  readonly ttl: StateTtlConfig | undefined;
}

/** What the block encoder needs of a state (plain data). */
export function blockState(s: SnapshotState): BlockState {
  return { stateId: s.stateId, name: s.meta.name, kind: s.meta.kind, ttl: s.ttl };
}

export interface DiskSnapshotSource {
  readonly store: DiskStore;
  /** The store's read view, opened in the synchronous phase; this snapshot releases it. */
  readonly view: { done(): void };
  readonly states: readonly SnapshotState[];
  readonly timers: KeyGroupBlockSource | undefined;
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /** Processing time at the synchronous phase: entries expired then are left out. */
  readonly now: number;
  /** Keys found expired (the backend removes those still expired). */
  readonly onExpired: (keys: ExpiredKey[]) => void;
  /** Called once the read view is released. */
  readonly onReleased: (s: DiskSnapshot) => void;
  /** An incremental chain's base: the same file, in the job's shared directory. Absent: the checkpoint's own location. */
  readonly base?: IncrementalPart;
}

export class DiskSnapshot implements KeyedStateSnapshot {
  private it: Iterator<{ key: Buffer; value: Buffer }> | undefined;
  private readonly blocks: BlockBuilder;
  private readonly file: StateFileWrite;
  private released = false;

  constructor(private readonly src: DiskSnapshotSource) {
    this.blocks = new BlockBuilder(src.states.map(blockState), src.now);
    this.file = new StateFileWrite(src.keyGroupRange, src.base, () => this.release());
  }

  write(target: SnapshotTarget): Promise<KeyedStateHandle> {
    return this.file.open(target);
  }

  step(): boolean {
    return this.file.step(() => this.readSome(), () => this.finish());
  }

  /** Reads up to ENTRIES_PER_STEP entries of the view into blocks; false once the view is read. */
  private readSome(): boolean {
    const r = this.src.keyGroupRange;
    this.it ??= this.src.store.range(storeKeyPrefix(r.start), storeKeyPrefix(r.end + 1), this.src.view as never)[Symbol.iterator]();
    const expired: ExpiredKey[] = [];
    const out: EncodedBlock[] = [];
    let more = true;
    for (let n = 0; n < ENTRIES_PER_STEP; n++) {
      const next = this.it.next();
      if (next.done === true) {
        this.it = undefined;
        this.blocks.end(out);
        more = false;
        break;
      }
      this.blocks.add(next.value.key, next.value.value, out, expired);
    }
    for (const b of out) this.file.add(b.name, b.bytes, b.entries);
    if (expired.length > 0) this.src.onExpired(expired);
    return more;
  }

  private finish(): void {
    closeFullSnapshot(this.file, this.src, () => this.release());
  }

  abort(): void {
    this.file.abort();
  }

  /** Closes the read (if open) and releases the store's read view. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.it?.return?.();
    this.it = undefined;
    this.src.view.done();
    this.src.onReleased(this);
  }
}

/**
 * Ends a full snapshot's file, whichever thread read the store: the timers (read on the task's
 * thread), then the read released, then the index with every state's meta.
 */
export function closeFullSnapshot(
  file: StateFileWrite,
  src: { readonly timers: KeyGroupBlockSource | undefined; readonly keyGroupRange: KeyGroupRange; readonly states: readonly SnapshotState[]; readonly maxParallelism: number },
  release: () => void,
): void {
  file.addTimers(src.timers);
  release();
  const range = { start: src.keyGroupRange.start, end: src.keyGroupRange.end };
  file.close({ states: src.states.map((s) => s.meta), keyGroupRange: range, maxParallelism: src.maxParallelism });
}
