/**
 * A snapshot of the heap backend: its state tables and the given timer blocks go into one
 * state file, a block per (state, key group) and per key group of timers (format.ts).
 *
 * Synchronous phase (the constructor; records blocked): freeze the tables' non-empty key
 * groups; nothing is copied or serialized. Asynchronous phase (records flowing): step()
 * serializes frozen groups a few at a time, and the writer sends them to the state stream
 * with asynchronous I/O. A record that touches a still-frozen group serializes that group
 * first (StateTable.thaw), so what is written is exactly the state at the barrier.
 *
 * Incremental checkpoints (src/state/heap/incremental.ts decides which): a 'base' is the full
 * file written to the job's shared directory; a 'delta' freezes only the groups with keys
 * changed since its base's epoch and writes, per such group, the changed keys' values at the
 * barrier ("k/" blocks) and the changed keys now absent ("d/" tombstone blocks), plus every
 * timer in full. The handle then names the whole chain: the base's chain and this file.
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import { StateFileWriter } from '../../checkpoint/state-file.ts';
import type { ChainFile, KeyedStateHandle, KeyedStateSnapshot, KeyGroupBlockSource, SnapshotTarget } from '../backend.ts';
import { encodeGroup, stateMeta, type StateMeta } from '../state-codec.ts';
import { encodeColumns } from '../columnar-block.ts';
import type { NormKey } from '../key-groups.ts';
import { keyedBlockName, timerBlockName, tombstoneBlockName } from '../../checkpoint/names.ts';
import type { KeyedSnapshotMeta } from './format.ts';
import type { RestoredState } from './restore.ts';
import type { FrozenGroupSink, StateTable } from './state-table.ts';

/** Groups serialized per step; keeps each step short so records keep flowing. */
const GROUPS_PER_STEP = 4;
/** Serialized bytes allowed to wait for the stream before serialization pauses. */
const MAX_PENDING_BYTES = 16 << 20;

export interface HeapSnapshotSource {
  readonly tables: Iterable<StateTable>;
  /** Restored states no descriptor claimed: written again as they were read. */
  readonly restored: ReadonlyMap<string, RestoredState>;
  readonly timers: KeyGroupBlockSource | undefined;
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /** Called once no group is frozen by this snapshot any more. */
  readonly onReleased: (s: HeapSnapshot) => void;
  /** Absent: a full file in the checkpoint's own location (canonical, as savepoints). */
  readonly incremental?: IncrementalPart;
}

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

export class HeapSnapshot implements KeyedStateSnapshot, FrozenGroupSink {
  private readonly todo: { table: StateTable; kg: number }[] = [];
  private readonly ready: { name: string; bytes: Uint8Array }[] = [];
  private readonly metas: StateMeta[] = [];
  private readonly timers: KeyGroupBlockSource | undefined;
  private readonly keyGroupRange: KeyGroupRange;
  private readonly maxParallelism: number;
  private readonly onReleased: (s: HeapSnapshot) => void;
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
  private readonly incremental: IncrementalPart | undefined;
  private resolve!: (h: KeyedStateHandle) => void;
  private reject!: (e: Error) => void;
  private readonly result: Promise<KeyedStateHandle>;

  /** The synchronous phase: freezes only. */
  constructor(src: HeapSnapshotSource) {
    this.timers = src.timers;
    this.keyGroupRange = { start: src.keyGroupRange.start, end: src.keyGroupRange.end };
    this.maxParallelism = src.maxParallelism;
    this.onReleased = src.onReleased;
    this.result = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    this.result.catch(() => {});
    this.incremental = src.incremental;
    const delta = this.incremental?.kind === 'delta' ? this.incremental : undefined;
    for (const table of src.tables) {
      this.metas.push(stateMeta(table.descriptor));
      const frozen = delta === undefined ? table.freeze(this) : table.freezeChanged(this, delta.baseEpoch);
      for (const kg of frozen) this.todo.push({ table, kg });
    }
    // Restored states no descriptor claimed do not change: a delta has nothing of them (its base has).
    if (delta === undefined) for (const [name, r] of src.restored) {
      this.metas.push(r.meta);
      for (const [kg, bytes] of r.groups) this.ready.push({ name: keyedBlockName(name, kg), bytes });
    }
    if (this.todo.length === 0) this.release();
  }

  /** Called by a table when a record touches a frozen group: serialize it before it changes. */
  serializeGroup(table: StateTable, kgIndex: number): void {
    const g = table.groups[kgIndex];
    const kg = table.range.start + kgIndex;
    if (this.incremental?.kind === 'delta') return this.serializeDelta(table, kgIndex, kg, g);
    const bytes = encodeGroup(table.descriptor, g);
    this.entries += g?.size ?? 0;
    this.ready.push({ name: keyedBlockName(table.descriptor.name, kg), bytes });
  }

  /** The group's keys changed since the base: present ones with their values, absent ones as tombstones. */
  private serializeDelta(table: StateTable, kgIndex: number, kg: number, g: Map<NormKey, unknown> | undefined): void {
    const present = new Map<NormKey, unknown>();
    const removed: NormKey[] = [];
    for (const k of table.changedSince(kgIndex, this.incremental!.baseEpoch)) {
      const v = g?.get(k);
      if (v === undefined) removed.push(k);
      else present.set(k, v);
    }
    const name = table.descriptor.name;
    if (present.size > 0) {
      this.entries += present.size;
      this.ready.push({ name: keyedBlockName(name, kg), bytes: encodeGroup(table.descriptor, present) });
    }
    if (removed.length > 0) this.ready.push({ name: tombstoneBlockName(name, kg), bytes: encodeColumns(removed, new Array<number>(removed.length).fill(0)) });
  }

  write(target: SnapshotTarget): Promise<KeyedStateHandle> {
    if (this.target !== undefined) throw new Error('a snapshot is written once');
    this.target = target;
    if (this.aborted) return this.result;
    const streams = this.incremental === undefined ? target.streams : target.shared?.streams;
    const name = this.incremental === undefined ? target.streamName : target.shared?.streamName;
    if (streams === undefined || name === undefined) {
      this.fail(new Error('an incremental snapshot needs a shared directory to write to (savepoints are always full)'));
      return this.result;
    }
    this.opening = streams.createStateStream(name).then(StateFileWriter.create).then(
      (w) => {
        this.writer = w;
        if (this.aborted) void w.abort();
        else target.wake();
      },
      (e) => this.fail(e),
    );
    return this.result;
  }

  /** Serializes everything still frozen, right now (a newer snapshot needs the tables). */
  serializeRemaining(): void {
    while (this.todo.length > 0) {
      const { table, kg } = this.todo.shift()!;
      if (table.isFrozen(kg)) table.thaw(kg);
    }
    this.release();
  }

  step(): boolean {
    if (this.done || this.aborted || this.writer === undefined || this.waitingIo) return false;
    try {
      const w = this.writer;
      let n = 0;
      while (n < GROUPS_PER_STEP && this.todo.length > 0 && w.pendingBytes() < MAX_PENDING_BYTES) {
        const { table, kg } = this.todo.shift()!;
        if (table.isFrozen(kg)) table.thaw(kg); // else a record already serialized it
        n++;
      }
      if (this.todo.length === 0) this.release();
      for (const b of this.ready) {
        this.stateBytes += b.bytes.byteLength;
        w.addBlock(b.name, b.bytes);
      }
      this.ready.length = 0;
      if (w.pendingBytes() >= MAX_PENDING_BYTES) {
        this.waitIo(w.drain());
        return false;
      }
      if (this.todo.length > 0) return true;
      this.writeTimers(w);
      this.done = true;
      this.finish(w);
      return false;
    } catch (e) {
      this.fail(e);
      return false;
    }
  }

  private writeTimers(w: StateFileWriter): void {
    if (this.timers === undefined) return;
    for (const { keyGroup, bytes } of this.timers.encode()) {
      this.stateBytes += bytes.byteLength;
      w.addBlock(timerBlockName(keyGroup), bytes);
    }
  }

  private finish(w: StateFileWriter): void {
    const inc = this.incremental;
    const meta: KeyedSnapshotMeta = {
      states: this.metas, keyGroupRange: this.keyGroupRange, maxParallelism: this.maxParallelism,
      ...(inc?.kind === 'delta' ? { delta: true, ...(inc.droppedStates.length > 0 ? { droppedStates: inc.droppedStates } : {}) } : {}),
    };
    const name = inc === undefined ? this.target!.streamName : this.target!.shared!.streamName;
    w.close(meta).then(
      (size) => {
        if (this.settled) return;
        this.settled = true;
        const base = { keyGroupRange: this.keyGroupRange, stateSize: this.stateBytes, entries: this.entries };
        if (inc === undefined) this.resolve({ ...base, streams: [{ name, size }] });
        else this.resolve({ ...base, streams: [], chain: [...inc.chainBefore, { name, size, checkpointId: inc.checkpointId, kind: inc.kind }] });
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

  /** Releases frozen groups without serializing them, abandons the stream, rejects. */
  private abortWith(e: Error): void {
    this.aborted = true;
    this.settled = true;
    this.reject(e);
    for (const { table, kg } of this.todo) table.unfreeze(kg);
    this.todo.length = 0;
    this.release();
    void this.opening?.then(() => this.writer?.abort());
  }

  /** False once every group this snapshot froze is serialized or released. */
  holdsFrozenGroups(): boolean {
    return !this.released;
  }

  private release(): void {
    if (this.released) return;
    this.released = true;
    this.onReleased(this);
  }
}
