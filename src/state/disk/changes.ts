/**
 * The disk backend's change log for incremental checkpoints: every key written back (the
 * write-back cache's markDirty, the one place every change passes) or removed by snapshot TTL
 * cleanup, per state id and key group, with the epoch of its last change (the heap backend's
 * scheme: ChainPlanner's epochs). A delta collects the keys changed after its base's epoch
 * in its synchronous phase (bounded by the changes, not the state) and forgets older ones.
 */
import type { NormKey } from '../key-groups.ts';
import type { ChangeEpoch } from '../heap/state-table.ts';
import { KeyTable } from '../key-table.ts';

export interface ChangedGroup {
  readonly stateId: number;
  readonly keyGroup: number;
  readonly keys: NormKey[];
}

export class DiskChangeLog {
  /** stateId -> keyGroup -> key -> epoch of its last change. */
  private readonly byState = new Map<number, Map<number, Map<NormKey, number>>>();

  constructor(private readonly epoch: ChangeEpoch) {}

  mark(stateId: number, keyGroup: number, key: NormKey): void {
    let g = this.byState.get(stateId);
    if (g === undefined) this.byState.set(stateId, (g = new Map()));
    let k = g.get(keyGroup);
    if (k === undefined) g.set(keyGroup, (k = new KeyTable<number>())); // a lookup per change: see ../key-table.ts
    k.set(key, this.epoch.epoch);
  }

  /** The keys changed after `baseEpoch`, group by group in key-group order; older records go. */
  collect(baseEpoch: number): ChangedGroup[] {
    const out: ChangedGroup[] = [];
    for (const [stateId, groups] of this.byState) {
      for (const [keyGroup, keys] of groups) {
        const changed: NormKey[] = [];
        for (const [k, e] of keys) {
          if (e > baseEpoch) changed.push(k);
          else keys.delete(k);
        }
        if (keys.size === 0) groups.delete(keyGroup);
        if (changed.length > 0) out.push({ stateId, keyGroup, keys: changed });
      }
      if (groups.size === 0) this.byState.delete(stateId);
    }
    return out.sort((a, b) => a.keyGroup - b.keyGroup || a.stateId - b.stateId);
  }

  /** A dropped state's records (its id is never used again). */
  forget(stateId: number): void {
    this.byState.delete(stateId);
  }
}
