/**
 * A delta of the disk backend's incremental chain, in the heap backend's delta format
 * (heap/format.ts: meta.delta, "k/" blocks of changed entries, "d/" tombstone blocks, all
 * timers): the keys changed since the base (collected in the synchronous phase, changes.ts)
 * are looked up one by one in the store's read view opened at the barrier; a key absent there,
 * or whose TTL value had expired, is a tombstone (a full snapshot leaves it out).
 */
import { keyedBlockName, tombstoneBlockName } from '../../checkpoint/names.ts';
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { KeyedStateHandle, KeyedStateSnapshot, KeyGroupBlockSource, SnapshotTarget } from '../backend.ts';
import { encodeColumns } from '../columnar-block.ts';
import type { NormKey } from '../key-groups.ts';
import type { KeyedSnapshotMeta } from '../heap/format.ts';
import { StateFileWrite, type IncrementalPart } from '../state-file-write.ts';
import type { ChangedGroup } from './changes.ts';
import { encodeStoreKey } from './keys.ts';
import type { DiskStore } from './store.ts';
import { unpackStored } from './stored-value.ts';
import { type SnapshotState } from './snapshot.ts';
import { withoutExpired } from './snapshot-blocks.ts';

/** Keys looked up per step. */
const KEYS_PER_STEP = 2048;

export interface DiskDeltaSource {
  readonly store: DiskStore;
  readonly view: { done(): void };
  /** Registered states by id (a changed key of any other id is skipped: dropped since). */
  readonly states: ReadonlyMap<number, SnapshotState>;
  readonly changed: readonly ChangedGroup[];
  readonly timers: KeyGroupBlockSource | undefined;
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  readonly now: number;
  readonly part: IncrementalPart;
  readonly onReleased: (s: DiskDeltaSnapshot) => void;
}

export class DiskDeltaSnapshot implements KeyedStateSnapshot {
  private group = 0;
  private index = 0;
  private present: { keys: NormKey[]; values: unknown[] } = { keys: [], values: [] };
  private removed: NormKey[] = [];
  private readonly file: StateFileWrite;
  private released = false;

  constructor(private readonly src: DiskDeltaSource) {
    this.file = new StateFileWrite(src.keyGroupRange, src.part, () => this.release());
  }

  write(target: SnapshotTarget): Promise<KeyedStateHandle> {
    return this.file.open(target);
  }

  step(): boolean {
    return this.file.step(() => this.readSome(), () => this.finish());
  }

  /** Looks up to KEYS_PER_STEP changed keys in the view; false once every group is written. */
  private readSome(): boolean {
    const groups = this.src.changed;
    for (let n = 0; n < KEYS_PER_STEP; n++) {
      const g = groups[this.group];
      if (g === undefined) return false;
      const state = this.src.states.get(g.stateId);
      if (state === undefined || this.index >= g.keys.length) {
        if (state !== undefined) this.emit(state, g.keyGroup);
        this.group++;
        this.index = 0;
        continue;
      }
      const key = g.keys[this.index++]!;
      const raw = this.lookup(encodeStoreKey(g.keyGroup, g.stateId, key));
      const live = raw === undefined || state.ttl === undefined ? raw : withoutExpired(raw, state.meta.kind, state.ttl, this.src.now);
      if (live === undefined) this.removed.push(key);
      else {
        this.present.keys.push(key);
        this.present.values.push(live);
      }
    }
    return true;
  }

  /** The stored value of one key in the view (a range of exactly that key). */
  private lookup(k: Buffer): unknown {
    const end = Buffer.concat([k, Buffer.from([0])]);
    for (const e of this.src.store.range(k, end, this.src.view as never)) return unpackStored(e.value);
    return undefined;
  }

  private emit(state: SnapshotState, keyGroup: number): void {
    const name = state.meta.name;
    if (this.present.keys.length > 0) this.file.add(keyedBlockName(name, keyGroup), encodeColumns(this.present.keys, this.present.values), this.present.keys.length);
    if (this.removed.length > 0) this.file.add(tombstoneBlockName(name, keyGroup), encodeColumns(this.removed, new Array<number>(this.removed.length).fill(0)));
    this.present = { keys: [], values: [] };
    this.removed = [];
  }

  private finish(): void {
    this.file.addTimers(this.src.timers);
    this.release();
    const part = this.src.part;
    const meta: KeyedSnapshotMeta = {
      states: [...this.src.states.values()].map((s) => s.meta),
      keyGroupRange: { start: this.src.keyGroupRange.start, end: this.src.keyGroupRange.end },
      maxParallelism: this.src.maxParallelism,
      delta: true,
      ...(part.droppedStates.length > 0 ? { droppedStates: part.droppedStates } : {}),
    };
    this.file.close(meta);
  }

  abort(): void {
    this.file.abort();
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.src.view.done();
    this.src.onReleased(this);
  }
}
