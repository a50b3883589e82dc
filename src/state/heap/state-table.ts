/**
 * One state's data on the heap: a Map from key to value per key group of the subtask's range.
 * Keeping key groups apart is what makes snapshots per key group, and rescaling by moving
 * key groups, cheap.
 *
 * Copy-on-write by freezing: a snapshot's synchronous phase only marks the non-empty groups
 * frozen; its asynchronous phase serializes them in the background while records flow. Any
 * access to a still-frozen group first serializes that group (one group, bounded work), so
 * the snapshot sees the group exactly as it was at the barrier, however the user mutates
 * values in place afterwards.
 *
 * Change tracking (incremental checkpoints, on once the backend takes its first incremental
 * snapshot): every key a handle changes is recorded per key group with the epoch of its last
 * change (epochs advance at each checkpoint's synchronous phase). A delta holds the keys whose
 * epoch is above its base's; a key changed again later only gets a higher epoch, so it stays in
 * every delta that needs it. Marking thaws a frozen group first, like any access.
 *
 * Key column caches (on unless turned off): per key group, the string keys' column as the last
 * full snapshot encoded it, which the next one reuses when the group only gained keys since
 * (key-column-cache.ts; the group's GroupMap records its own inserts and removals).
 */
import type { AnyStateDescriptor } from '../../core/state.ts';
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { NormKey } from '../key-groups.ts';
import { noCurrentKey } from '../key-context.ts';
import { fillFromStored, KeyColumnCache } from '../key-column-cache.ts';
import { storedKeyColumn } from '../columnar-block.ts';
import { GroupMap, newGroupMap, type Group } from './group-map.ts';
import { KeyTable } from '../key-table.ts';

/** Receives a frozen key group when it is about to be touched (copy-on-write by serializing first). */
export interface FrozenGroupSink {
  serializeGroup(table: StateTable, kgIndex: number): void;
}

/** The current change epoch, shared by a backend's tables. */
export interface ChangeEpoch {
  epoch: number;
}

export class StateTable {
  readonly groups: (Group | undefined)[];
  /** Set while changes are tracked (incremental checkpoints). */
  private tracker: ChangeEpoch | undefined;
  /** Per key group: changed keys with the epoch of their last change. */
  private changes: (KeyTable<number> | undefined)[] = [];
  /** Per key group: the highest epoch marked. */
  private maxEpoch: Float64Array | undefined;
  private frozen: Uint8Array | undefined;
  /** Groups still frozen by the snapshot in progress. */
  frozenCount = 0;
  private sink: FrozenGroupSink | undefined;
  /** Per key group: its key column from the last full snapshot; undefined while caching is off. */
  private readonly keyCaches: (KeyColumnCache | undefined)[] | undefined;

  constructor(readonly descriptor: AnyStateDescriptor, readonly range: KeyGroupRange, keyCache = true) {
    this.groups = new Array(Math.max(0, range.end - range.start + 1)).fill(undefined);
    this.keyCaches = keyCache ? new Array(this.groups.length).fill(undefined) : undefined;
  }

  /**
   * Per key group: entries its map is sized for when made (presizeLike); undefined: none.
   * Only a hint: a wrong one costs a rebuild or some empty index slots, never an entry.
   */
  sizeHints: Int32Array | undefined;

  /** The group's key column cache for a full snapshot (made on first use); undefined when caching is off. */
  keyCache(kgIndex: number): KeyColumnCache | undefined {
    const c = this.keyCaches;
    if (c === undefined) return undefined;
    return (c[kgIndex] ??= new KeyColumnCache());
  }

  /**
   * After a restore: the group's key column cache from the block it was restored from, which
   * holds the group's keys in the group's order (the group was filled from the block's keys, or
   * the block encoded from the group: a chain's merged groups). A block of other keys
   * (numbers), or a group whose size differs (keys given twice), is left for its first snapshot
   * to encode, as before.
   */
  restoreKeyCache(kgIndex: number, block: Uint8Array): void {
    const g = this.groups[kgIndex];
    if (this.keyCaches === undefined || !(g instanceof GroupMap)) return;
    const col = storedKeyColumn(block);
    if (col === undefined || col.count !== g.size) return;
    fillFromStored(this.keyCache(kgIndex)!, g, col);
  }

  /** Bytes the key column caches hold (tests, diagnostics). */
  keyCacheBytes(): number {
    let n = 0;
    for (const c of this.keyCaches ?? []) if (c !== undefined) n += c.bytes;
    return n;
  }

  /*
   * read, write and mark run for every state access, and V8 inlines them into the user's
   * function with the rest of the chain (collect, the chained sink) under one budget of
   * bytecode per compiled function (920 bytes in Node 20). Their rare paths (no current key, a
   * group frozen by a snapshot, a group made, change tracking) are functions of their own, never
   * inlined while they do not run: with them inline, a keyed function's state access used up the
   * budget before the chained sink's call, and each record collected was allocated to be passed
   * to it (2 workers, keyed count: ~130 MB per worker per 2.5 M records).
   */

  /** The key group's map for reading; undefined when the group holds nothing yet. */
  read(kgIndex: number): Group | undefined {
    if (this.frozenCount === 0 && kgIndex >= 0) return this.groups[kgIndex];
    return this.readRare(kgIndex);
  }

  private readRare(kgIndex: number): Group | undefined {
    if (kgIndex < 0) throw noCurrentKey();
    if (this.frozen![kgIndex] === 1) this.thaw(kgIndex);
    return this.groups[kgIndex];
  }

  /** The group's table when it is a KeyTable (prefetch: backend.ts), else undefined; never thaws. */
  tableOf(kgIndex: number): KeyTable<unknown> | undefined {
    const g = this.groups[kgIndex];
    return g instanceof KeyTable ? g : undefined;
  }

  /** Entries over all key groups (a sum over the groups: not for the record path). */
  entryCount(): number {
    let n = 0;
    for (const g of this.groups) if (g !== undefined) n += g.size;
    return n;
  }

  /** The key group's map for writing, created on first use (of a kind suited to `key`, the key about to be written). */
  write(kgIndex: number, key: NormKey): Group {
    if (this.frozenCount === 0 && kgIndex >= 0) {
      const m = this.groups[kgIndex];
      if (m !== undefined) return m;
    }
    return this.writeRare(kgIndex, key);
  }

  private writeRare(kgIndex: number, key: NormKey): Group {
    if (kgIndex < 0) throw noCurrentKey();
    if (this.frozenCount > 0 && this.frozen![kgIndex] === 1) this.thaw(kgIndex);
    let m = this.groups[kgIndex];
    if (m === undefined) {
      m = newGroupMap(key);
      const hint = this.sizeHints?.[kgIndex];
      if (hint !== undefined && m instanceof KeyTable) m.reserve(hint);
      this.groups[kgIndex] = m;
    }
    return m;
  }

  /** Starts tracking changes (every key changed from now on is recorded). */
  track(tracker: ChangeEpoch): void {
    if (this.tracker !== undefined) return;
    this.tracker = tracker;
    this.changes = new Array(this.groups.length).fill(undefined);
    this.maxEpoch = new Float64Array(this.groups.length);
  }

  get tracking(): boolean {
    return this.tracker !== undefined;
  }

  /** Records that `key` of the group changed (or may have: a value read as an object may be mutated in place). */
  mark(kgIndex: number, key: NormKey, h: number): void {
    if (this.tracker !== undefined) this.markTracked(kgIndex, key, h);
  }

  private markTracked(kgIndex: number, key: NormKey, h: number): void {
    const tr = this.tracker!;
    if (this.frozenCount > 0 && this.frozen![kgIndex] === 1) this.thaw(kgIndex);
    let c = this.changes[kgIndex];
    if (c === undefined) this.changes[kgIndex] = c = new KeyTable<number>(); // a lookup per change: see ../key-table.ts
    c.setHashed(key, h, tr.epoch);
    this.maxEpoch![kgIndex] = tr.epoch;
  }

  /**
   * The keys of a group changed after `baseEpoch`; forgets those changed at or before it
   * (no later delta is based on anything older).
   */
  changedSince(kgIndex: number, baseEpoch: number): NormKey[] {
    const c = this.changes[kgIndex];
    if (c === undefined) return [];
    const out: NormKey[] = [];
    for (const [k, e] of c) {
      if (e > baseEpoch) out.push(k);
      else c.delete(k);
    }
    if (c.size === 0) this.changes[kgIndex] = undefined;
    return out;
  }

  /**
   * Freezes the groups with changes after `baseEpoch` (possibly empty now: removed keys) for a
   * delta; drops the change records of the others (all at or before the base). Returns the indices.
   */
  freezeChanged(sink: FrozenGroupSink, baseEpoch: number): number[] {
    if (this.frozenCount > 0) throw new Error(`state "${this.descriptor.name}" is already frozen by a snapshot in progress`);
    const out: number[] = [];
    this.frozen ??= new Uint8Array(this.groups.length);
    for (let i = 0; i < this.groups.length; i++) {
      if (this.changes[i] === undefined) continue;
      if (this.maxEpoch![i] > baseEpoch) {
        this.frozen[i] = 1;
        out.push(i);
      } else {
        this.changes[i] = undefined;
      }
    }
    this.frozenCount = out.length;
    this.sink = sink;
    return out;
  }

  isFrozen(kgIndex: number): boolean {
    return this.frozenCount > 0 && this.frozen![kgIndex] === 1;
  }

  /** Serializes a frozen group into the snapshot in progress and releases it. */
  thaw(kgIndex: number): void {
    this.frozen![kgIndex] = 0;
    this.frozenCount--;
    this.sink!.serializeGroup(this, kgIndex);
  }

  /** Serializes every group still frozen (the state is about to go away, or a newer snapshot needs it). */
  thawAll(): void {
    for (let i = 0; this.frozenCount > 0 && i < this.groups.length; i++) if (this.frozen![i] === 1) this.thaw(i);
  }

  /** Releases a frozen group without serializing it (the snapshot was aborted). */
  unfreeze(kgIndex: number): void {
    if (!this.isFrozen(kgIndex)) return;
    this.frozen![kgIndex] = 0;
    this.frozenCount--;
  }

  /** Marks every non-empty group frozen for `sink`; returns the frozen group indices. */
  freeze(sink: FrozenGroupSink): number[] {
    if (this.frozenCount > 0) throw new Error(`state "${this.descriptor.name}" is already frozen by a snapshot in progress`);
    const out: number[] = [];
    this.frozen ??= new Uint8Array(this.groups.length);
    for (let i = 0; i < this.groups.length; i++) {
      const g = this.groups[i];
      if (g !== undefined && g.size > 0) {
        this.frozen[i] = 1;
        out.push(i);
      } else if (this.keyCaches !== undefined) {
        this.keyCaches[i] = undefined; // an empty group has nothing to reuse: let its keys go
      }
    }
    this.frozenCount = out.length;
    this.sink = sink;
    return out;
  }

  size(): number {
    let n = 0;
    for (const g of this.groups) if (g !== undefined) n += g.size;
    return n;
  }
}
