/**
 * A delta of the disk backend's incremental chain, in the heap backend's delta format
 * (heap/format.ts: meta.delta, "k/" blocks of changed entries, "d/" tombstone blocks, all
 * timers): the keys changed since the base (collected in the synchronous phase, changes.ts)
 * are looked up one by one in the store's read view opened at the barrier; a key absent there,
 * or whose TTL value had expired, is a tombstone (a full snapshot leaves it out).
 */
import { StateFileWriter } from '../../checkpoint/state-file.ts';
import { keyedBlockName, timerBlockName, tombstoneBlockName } from '../../checkpoint/names.ts';
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { KeyedStateHandle, KeyedStateSnapshot, KeyGroupBlockSource, SnapshotTarget } from '../backend.ts';
import { encodeColumns } from '../columnar-block.ts';
import type { NormKey } from '../key-groups.ts';
import type { KeyedSnapshotMeta } from '../heap/format.ts';
import type { IncrementalPart } from '../heap/snapshot.ts';
import type { ChangedGroup } from './changes.ts';
import { encodeStoreKey } from './keys.ts';
import { unpackStored, type DiskStore } from './store.ts';
import { withoutExpired, type SnapshotState } from './snapshot.ts';

/** Keys looked up per step. */
const KEYS_PER_STEP = 2048;
const MAX_PENDING_BYTES = 16 << 20;

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
  private target: SnapshotTarget | undefined;
  private writer: StateFileWriter | undefined;
  private opening: Promise<void> | undefined;
  private waitingIo = false;
  private done = false;
  private aborted = false;
  private settled = false;
  private released = false;
  private stateBytes = 0;
  private entries = 0;
  private resolve!: (h: KeyedStateHandle) => void;
  private reject!: (e: Error) => void;
  private readonly result: Promise<KeyedStateHandle>;

  constructor(private readonly src: DiskDeltaSource) {
    this.result = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    this.result.catch(() => {});
  }

  write(target: SnapshotTarget): Promise<KeyedStateHandle> {
    if (this.target !== undefined) throw new Error('a snapshot is written once');
    this.target = target;
    if (this.aborted) return this.result;
    const shared = target.shared;
    if (shared === undefined) {
      this.fail(new Error('an incremental snapshot needs a shared directory to write to (savepoints are always full)'));
      return this.result;
    }
    this.opening = shared.streams.createStateStream(shared.streamName).then(StateFileWriter.create).then(
      (w) => {
        this.writer = w;
        if (this.aborted) void w.abort();
        else target.wake();
      },
      (e) => this.fail(e),
    );
    return this.result;
  }

  step(): boolean {
    if (this.done || this.aborted || this.writer === undefined || this.waitingIo) return false;
    try {
      const w = this.writer;
      const more = this.readSome(w);
      if (w.pendingBytes() >= MAX_PENDING_BYTES) {
        this.waitIo(w.drain());
        return false;
      }
      if (more) return true;
      this.writeTimers(w);
      this.done = true;
      this.release();
      this.finish(w);
      return false;
    } catch (e) {
      this.fail(e);
      return false;
    }
  }

  /** Looks up to KEYS_PER_STEP changed keys in the view; false once every group is written. */
  private readSome(w: StateFileWriter): boolean {
    const groups = this.src.changed;
    for (let n = 0; n < KEYS_PER_STEP; n++) {
      const g = groups[this.group];
      if (g === undefined) return false;
      const state = this.src.states.get(g.stateId);
      if (state === undefined || this.index >= g.keys.length) {
        if (state !== undefined) this.emit(w, state, g.keyGroup);
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

  private emit(w: StateFileWriter, state: SnapshotState, keyGroup: number): void {
    const name = state.meta.name;
    if (this.present.keys.length > 0) {
      const bytes = encodeColumns(this.present.keys, this.present.values);
      this.entries += this.present.keys.length;
      this.stateBytes += bytes.byteLength;
      w.addBlock(keyedBlockName(name, keyGroup), bytes);
    }
    if (this.removed.length > 0) {
      const bytes = encodeColumns(this.removed, new Array<number>(this.removed.length).fill(0));
      this.stateBytes += bytes.byteLength;
      w.addBlock(tombstoneBlockName(name, keyGroup), bytes);
    }
    this.present = { keys: [], values: [] };
    this.removed = [];
  }

  private writeTimers(w: StateFileWriter): void {
    if (this.src.timers === undefined) return;
    for (const { keyGroup, bytes } of this.src.timers.encode()) {
      this.stateBytes += bytes.byteLength;
      w.addBlock(timerBlockName(keyGroup), bytes);
    }
  }

  private finish(w: StateFileWriter): void {
    const range = { start: this.src.keyGroupRange.start, end: this.src.keyGroupRange.end };
    const part = this.src.part;
    const meta: KeyedSnapshotMeta = {
      states: [...this.src.states.values()].map((s) => s.meta), keyGroupRange: range, maxParallelism: this.src.maxParallelism, delta: true,
      ...(part.droppedStates.length > 0 ? { droppedStates: part.droppedStates } : {}),
    };
    const name = this.target!.shared!.streamName;
    w.close(meta).then(
      (size) => {
        if (this.settled) return;
        this.settled = true;
        this.resolve({
          keyGroupRange: range, streams: [], stateSize: this.stateBytes, entries: this.entries,
          chain: [...part.chainBefore, { name, size, checkpointId: part.checkpointId, kind: 'delta' }],
        });
      },
      (e) => this.fail(e),
    );
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

  private fail(e: unknown): void {
    if (this.settled) return;
    this.abortWith(e instanceof Error ? e : new Error(String(e)));
  }

  abort(): void {
    if (this.settled) return;
    this.abortWith(new Error('snapshot aborted'));
  }

  private abortWith(e: Error): void {
    this.aborted = true;
    this.settled = true;
    this.reject(e);
    this.release();
    void this.opening?.then(() => this.writer?.abort());
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.src.view.done();
    this.src.onReleased(this);
  }
}
