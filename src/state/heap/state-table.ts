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
 */
import type { AnyStateDescriptor } from '../../core/state.ts';
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { NormKey } from '../key-groups.ts';

/** Receives a frozen key group when it is about to be touched (copy-on-write by serializing first). */
export interface FrozenGroupSink {
  serializeGroup(table: StateTable, kgIndex: number): void;
}

export class StateTable {
  readonly groups: (Map<NormKey, unknown> | undefined)[];
  private frozen: Uint8Array | undefined;
  /** Groups still frozen by the snapshot in progress. */
  frozenCount = 0;
  private sink: FrozenGroupSink | undefined;

  constructor(readonly descriptor: AnyStateDescriptor, readonly range: KeyGroupRange) {
    this.groups = new Array(Math.max(0, range.end - range.start + 1)).fill(undefined);
  }

  /** The key group's map for reading; undefined when the group holds nothing yet. */
  read(kgIndex: number): Map<NormKey, unknown> | undefined {
    if (this.frozenCount > 0 && this.frozen![kgIndex] === 1) this.thaw(kgIndex);
    return this.groups[kgIndex];
  }

  /** The key group's map for writing, created on first use. */
  write(kgIndex: number): Map<NormKey, unknown> {
    if (this.frozenCount > 0 && this.frozen![kgIndex] === 1) this.thaw(kgIndex);
    let m = this.groups[kgIndex];
    if (m === undefined) {
      m = new Map();
      this.groups[kgIndex] = m;
    }
    return m;
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
