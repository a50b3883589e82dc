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
 * (state, key group) block to the state file writer. Writes made meanwhile go to the store
 * beside the view and are not seen by it. TTL: entries found expired are left out, and the
 * backend is told so it can remove those still expired from the store (cleanup on snapshot).
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateTtlConfig } from '../../core/state.ts';
import { keyedBlockName } from '../../checkpoint/names.ts';
import type { KeyedStateHandle, KeyedStateSnapshot, KeyGroupBlockSource, SnapshotTarget } from '../backend.ts';
import type { NormKey } from '../key-groups.ts';
import { encodeColumns } from '../columnar-block.ts';
import type { StateMeta } from '../state-codec.ts';
import type { KeyedSnapshotMeta } from '../heap/format.ts';
import { keyGroupOfStoreKey, normKeyOfStoreKey, stateIdOfStoreKey, storeKeyPrefix } from './keys.ts';
import { unpackStored, type DiskStore } from './store.ts';
import { ttlExpired } from './handles.ts';
import { StateFileWrite, type IncrementalPart } from '../state-file-write.ts';

/** Store entries read per step: keeps each step short so records keep flowing. */
const ENTRIES_PER_STEP = 4096;

/** One state as the snapshot records it. */
export interface SnapshotState {
  readonly stateId: number;
  readonly meta: StateMeta;
  /** The state's TTL (registered states only): expired entries are left out. */
  readonly ttl: StateTtlConfig | undefined;
}

/** A key the snapshot found expired in its view. */
export interface ExpiredKey {
  readonly stateId: number;
  readonly keyGroup: number;
  readonly key: NormKey;
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
  private readonly bySid = new Map<number, SnapshotState>();
  private it: Iterator<{ key: Buffer; value: Buffer }> | undefined;
  private block: { state: SnapshotState; keyGroup: number; keys: NormKey[]; values: unknown[] } | undefined;
  private readonly file: StateFileWrite;
  private released = false;

  constructor(private readonly src: DiskSnapshotSource) {
    for (const s of src.states) this.bySid.set(s.stateId, s);
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
    for (let n = 0; n < ENTRIES_PER_STEP; n++) {
      const next = this.it.next();
      if (next.done === true) {
        this.it = undefined;
        this.emit();
        this.reportExpired(expired);
        return false;
      }
      const { key, value } = next.value;
      const state = this.bySid.get(stateIdOfStoreKey(key));
      if (state === undefined) continue; // registered after the synchronous phase, or dropped
      const keyGroup = keyGroupOfStoreKey(key);
      if (this.block === undefined || this.block.state !== state || this.block.keyGroup !== keyGroup) {
        this.emit();
        this.block = { state, keyGroup, keys: [], values: [] };
      }
      let raw = unpackStored(value);
      if (state.ttl !== undefined) {
        raw = withoutExpired(raw, state.meta.kind, state.ttl, this.src.now);
        if (raw === undefined) {
          expired.push({ stateId: state.stateId, keyGroup, key: normKeyOfStoreKey(key) });
          continue;
        }
      }
      this.block.keys.push(normKeyOfStoreKey(key));
      this.block.values.push(raw);
    }
    this.reportExpired(expired);
    return true;
  }

  private reportExpired(expired: ExpiredKey[]): void {
    if (expired.length > 0) this.src.onExpired(expired);
  }

  /** Writes the block being built (if it holds anything). */
  private emit(): void {
    const b = this.block;
    this.block = undefined;
    if (b === undefined || b.keys.length === 0) return;
    this.file.add(keyedBlockName(b.state.meta.name, b.keyGroup), encodeColumns(b.keys, b.values), b.keys.length);
  }

  private finish(): void {
    this.file.addTimers(this.src.timers);
    this.release();
    const range = { start: this.src.keyGroupRange.start, end: this.src.keyGroupRange.end };
    this.file.close({ states: this.src.states.map((s) => s.meta), keyGroupRange: range, maxParallelism: this.src.maxParallelism });
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
 * A stored TTL value without its expired parts (the stored forms of state-codec.ts: {v, t};
 * lists of them; maps as [key, {v, t}] pairs); undefined when nothing is left.
 */
export function withoutExpired(raw: unknown, kind: string, ttl: StateTtlConfig, now: number): unknown {
  switch (kind) {
    case 'list': {
      const l = (raw as { t: number }[]).filter((s) => !ttlExpired(s.t, ttl, now));
      return l.length === 0 ? undefined : l;
    }
    case 'map': {
      const m = (raw as [unknown, { t: number }][]).filter(([, s]) => !ttlExpired(s.t, ttl, now));
      return m.length === 0 ? undefined : m;
    }
    default:
      return ttlExpired((raw as { t: number }).t, ttl, now) ? undefined : raw;
  }
}
