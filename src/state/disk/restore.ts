/**
 * Restoring the disk backend: the state files of a checkpoint or savepoint (written by either
 * backend; several after rescaling) are read block by block, and the blocks of this subtask's
 * key groups are loaded into the store, one write transaction per block, in the form they
 * were written (decoded only when a descriptor claims the state: backend.ts). Only one block
 * is in memory at a time, so a restore needs no more heap than the largest key group.
 * Timer blocks go back to the caller as they are.
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateInputHandle } from '../../core/state-streams.ts';
import { StateFileReader } from '../../checkpoint/state-file.ts';
import { parseBlockName } from '../../checkpoint/names.ts';
import type { KeyGroupBlock } from '../backend.ts';
import { decodeGroupColumns, type StateMeta } from '../state-codec.ts';
import type { KeyedSnapshotMeta } from '../heap/format.ts';
import { encodeStoreKey } from './keys.ts';
import { packStored, type DiskStore } from './store.ts';
import type { StoredState } from './backend.ts';

export interface LoadTarget {
  readonly store: DiskStore;
  readonly range: KeyGroupRange;
  readonly maxParallelism: number;
  /** Restored states by name: found here, or added with a new id. */
  readonly restored: Map<string, StoredState>;
  readonly allocateStateId: () => number;
}

export async function loadStateFiles(inputs: readonly StateInputHandle[], t: LoadTarget): Promise<KeyGroupBlock[]> {
  const timers: KeyGroupBlock[] = [];
  for (const input of inputs) {
    const reader = await StateFileReader.open(input);
    const meta = reader.index.meta as KeyedSnapshotMeta;
    if (meta.maxParallelism !== t.maxParallelism) {
      throw new Error(`state file ${input.description} was written with max parallelism ${meta.maxParallelism}, the operator now has ${t.maxParallelism}; the number of key groups cannot change`);
    }
    const metas = new Map<string, StateMeta>(meta.states.map((m) => [m.name, m]));
    for (const b of reader.index.blocks) {
      const block = parseBlockName(b.name);
      if (block.kind === 'unknown' || block.keyGroup < t.range.start || block.keyGroup > t.range.end) continue;
      const bytes = await reader.readBlock(b);
      if (block.kind === 'timers') {
        timers.push({ keyGroup: block.keyGroup, bytes });
        continue;
      }
      const m = metas.get(block.state);
      if (m === undefined) throw new Error(`state file ${input.description} has a block for unknown state "${block.state}"`);
      let s = t.restored.get(block.state);
      if (s === undefined) t.restored.set(block.state, (s = { stateId: t.allocateStateId(), meta: m }));
      loadBlock(t.store, block.keyGroup, s.stateId, bytes, m.blockFormat);
    }
  }
  return timers;
}

function loadBlock(store: DiskStore, keyGroup: number, stateId: number, bytes: Uint8Array, blockFormat: number | undefined): void {
  const { keys, values } = decodeGroupColumns(bytes, blockFormat);
  store.write((w) => {
    for (let i = 0; i < keys.length; i++) w.put(encodeStoreKey(keyGroup, stateId, keys[i]!), packStored(values[i]));
  });
}
