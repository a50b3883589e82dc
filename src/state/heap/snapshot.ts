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
import type { KeyedStateHandle, KeyedStateSnapshot, KeyGroupBlockSource, SnapshotTarget } from '../backend.ts';
import { encodeGroup, stateMeta, type StateMeta } from '../state-codec.ts';
import { encodeColumns } from '../columnar-block.ts';
import type { NormKey } from '../key-groups.ts';
import { keyedBlockName, tombstoneBlockName } from '../../checkpoint/names.ts';
import { StateFileWrite, type IncrementalPart } from '../state-file-write.ts';
import type { KeyedSnapshotMeta } from './format.ts';
import type { RestoredState } from './restore.ts';
import type { FrozenGroupSink, StateTable } from './state-table.ts';
import { liveGroup } from './ttl-sweep.ts';

export type { IncrementalPart } from '../state-file-write.ts';

/** Groups serialized per step at most; keeps each step short so records keep flowing. */
const GROUPS_PER_STEP = 4;
/**
 * Entries serialized per step: a step ends once it has serialized this many (at least one
 * group). Four groups are quick at 1 M keys (8 K entries each) but blocked the task for
 * hundreds of milliseconds at 10 M (80 K each); with this bound a step stays near a
 * millisecond or two however large the groups are.
 */
const ENTRIES_PER_STEP = 32_768;

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
  /** Processing time at the synchronous phase: what has expired by then is left out (states with a TTL). */
  readonly nowMs: number;
}

export class HeapSnapshot implements KeyedStateSnapshot, FrozenGroupSink {
  private readonly todo: { table: StateTable; kg: number }[] = [];
  /** Serialized blocks waiting for the file: (name, bytes or their pieces, entries). */
  private readonly ready: { name: string; bytes: Uint8Array | Uint8Array[]; entries: number }[] = [];
  private readonly metas: StateMeta[] = [];
  private readonly timers: KeyGroupBlockSource | undefined;
  private readonly keyGroupRange: KeyGroupRange;
  private readonly maxParallelism: number;
  private readonly onReleased: (s: HeapSnapshot) => void;
  private readonly incremental: IncrementalPart | undefined;
  private readonly file: StateFileWrite;
  private released = false;
  private readonly nowMs: number;

  /** The synchronous phase: freezes only. */
  constructor(src: HeapSnapshotSource) {
    this.nowMs = src.nowMs;
    this.timers = src.timers;
    this.keyGroupRange = { start: src.keyGroupRange.start, end: src.keyGroupRange.end };
    this.maxParallelism = src.maxParallelism;
    this.onReleased = src.onReleased;
    this.incremental = src.incremental;
    this.file = new StateFileWrite(this.keyGroupRange, this.incremental, () => this.unfreezeAll());
    const delta = this.incremental?.kind === 'delta' ? this.incremental : undefined;
    for (const table of src.tables) {
      this.metas.push(stateMeta(table.descriptor));
      const frozen = delta === undefined ? table.freeze(this) : table.freezeChanged(this, delta.baseEpoch);
      for (const kg of frozen) this.todo.push({ table, kg });
    }
    // Restored states no descriptor claimed do not change: a delta has nothing of them (its base has).
    if (delta === undefined) for (const [name, r] of src.restored) {
      this.metas.push(r.meta);
      for (const [kg, bytes] of r.groups) this.ready.push({ name: keyedBlockName(name, kg), bytes, entries: 0 });
    }
    if (this.todo.length === 0) this.release();
  }

  /** Called by a table when a record touches a frozen group: serialize it before it changes. */
  serializeGroup(table: StateTable, kgIndex: number): void {
    const g = table.groups[kgIndex];
    const kg = table.range.start + kgIndex;
    if (this.incremental?.kind === 'delta') return this.serializeDelta(table, kgIndex, kg, g);
    const ttl = table.descriptor.ttl;
    const live = ttl === undefined || g === undefined ? g : liveGroup(g, table.descriptor.kind, ttl.ttlMs, this.nowMs);
    this.ready.push({ name: keyedBlockName(table.descriptor.name, kg), bytes: encodeGroup(table.descriptor, live, live === g ? table.keyCache(kgIndex) : undefined), entries: live?.size ?? 0 });
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
    // Expired at the snapshot: removed from it (a tombstone, so the base's older value goes too).
    const ttl = table.descriptor.ttl;
    if (ttl !== undefined && present.size > 0) {
      const live = liveGroup(present, table.descriptor.kind, ttl.ttlMs, this.nowMs);
      if (live !== present) {
        for (const k of present.keys()) if (!live.has(k)) removed.push(k);
        present.clear();
        for (const [k, v] of live) present.set(k, v);
      }
    }
    const name = table.descriptor.name;
    if (present.size > 0) this.ready.push({ name: keyedBlockName(name, kg), bytes: encodeGroup(table.descriptor, present), entries: present.size });
    if (removed.length > 0) this.ready.push({ name: tombstoneBlockName(name, kg), bytes: encodeColumns(removed, new Array<number>(removed.length).fill(0)), entries: 0 });
  }

  write(target: SnapshotTarget): Promise<KeyedStateHandle> {
    return this.file.open(target);
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
    return this.file.step(() => this.serializeSome(), () => this.finish());
  }

  /** Serializes up to GROUPS_PER_STEP frozen groups or ENTRIES_PER_STEP entries and adds every ready block; true while groups remain. */
  private serializeSome(): boolean {
    let budget = ENTRIES_PER_STEP;
    for (let n = 0; n < GROUPS_PER_STEP && budget > 0 && this.todo.length > 0 && this.file.hasRoom(); n++) {
      const { table, kg } = this.todo.shift()!;
      if (!table.isFrozen(kg)) continue; // a record already serialized it
      budget -= table.groups[kg]?.size ?? 0;
      table.thaw(kg);
    }
    if (this.todo.length === 0) this.release();
    for (const b of this.ready) this.file.add(b.name, b.bytes, b.entries);
    this.ready.length = 0;
    return this.todo.length > 0;
  }

  private finish(): void {
    this.file.addTimers(this.timers);
    const inc = this.incremental;
    const meta: KeyedSnapshotMeta = {
      states: this.metas, keyGroupRange: this.keyGroupRange, maxParallelism: this.maxParallelism,
      ...(inc?.kind === 'delta' ? { delta: true, ...(inc.droppedStates.length > 0 ? { droppedStates: inc.droppedStates } : {}) } : {}),
    };
    this.file.close(meta);
  }

  abort(): void {
    this.file.abort();
  }

  /** On a failure or abort: releases frozen groups without serializing them. */
  private unfreezeAll(): void {
    for (const { table, kg } of this.todo) table.unfreeze(kg);
    this.todo.length = 0;
    this.release();
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
