/**
 * Restoring the disk backend: the state files of a checkpoint or savepoint (written by either
 * backend; several after rescaling) are read block by block, and the blocks of this subtask's
 * key groups are loaded into the store, one write transaction per block, in the form they
 * were written (decoded only when a descriptor claims the state: backend.ts). Only one block
 * is in memory at a time, so a restore needs no more heap than the largest key group.
 * Timer blocks go back to the caller as they are. Incremental chains (from either backend)
 * are applied file by file: a delta's entries are put over what is there, its tombstones
 * removed.
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateInputHandle } from '../../core/state-streams.ts';
import { StateFileReader } from '../../checkpoint/state-file.ts';
import { parseBlockName } from '../../checkpoint/names.ts';
import type { KeyGroupBlock } from '../backend.ts';
import { checkMergedStateFiles, decodeGroupColumns, type StateMeta } from '../state-codec.ts';
import type { KeyedSnapshotMeta } from '../heap/format.ts';
import { encodeStoreKey, storeKeyPrefix } from './keys.ts';
import type { NormKey } from '../key-groups.ts';
import type { DiskStore } from './store.ts';
import { packStored } from './stored-value.ts';
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
  const timers = new Map<number, Uint8Array>();
  /** The file that first recorded each state (checkMergedStateFiles' message). */
  const firstFileOf = new Map<string, string>();
  for (const input of inputs) {
    const reader = await StateFileReader.open(input);
    const meta = reader.index.meta as KeyedSnapshotMeta;
    if (meta.maxParallelism !== t.maxParallelism) {
      throw new Error(`state file ${input.description} was written with max parallelism ${meta.maxParallelism}, the operator now has ${t.maxParallelism}; the number of key groups cannot change`);
    }
    // A delta of an incremental chain (heap/format.ts) applies over the files before it: its
    // timers replace those of its key-group range, dropped states go first, tombstones remove.
    const delta = meta.delta === true;
    const from = Math.max(t.range.start, meta.keyGroupRange.start);
    const to = Math.min(t.range.end, meta.keyGroupRange.end);
    if (delta) {
      for (let kg = from; kg <= to; kg++) timers.delete(kg);
      for (const name of meta.droppedStates ?? []) dropRestored(t, name, from, to);
    }
    const metas = new Map<string, StateMeta>(meta.states.map((m) => [m.name, m]));
    for (const b of reader.index.blocks) {
      const block = parseBlockName(b.name);
      if (block.kind === 'unknown' || block.keyGroup < t.range.start || block.keyGroup > t.range.end) continue;
      const bytes = await reader.readBlock(b);
      if (block.kind === 'timers') {
        timers.set(block.keyGroup, bytes);
        continue;
      }
      const m = metas.get(block.state);
      if (m === undefined) throw new Error(`state file ${input.description} has a block for unknown state "${block.state}"`);
      if (block.kind === 'tombstones') {
        if (!delta) throw new Error(`state file ${input.description} is a full snapshot with a tombstone block ${b.name}`);
        const s = t.restored.get(block.state);
        if (s !== undefined) removeKeys(t.store, block.keyGroup, s.stateId, decodeGroupColumns(bytes, 3).keys);
        continue;
      }
      let s = t.restored.get(block.state);
      if (s === undefined) t.restored.set(block.state, (s = { stateId: t.allocateStateId(), meta: m }));
      else if (delta) checkSameState(s.meta, m, input.description);
      else checkMergedStateFiles(s.meta, m, firstFileOf.get(block.state) ?? 'an earlier state file', input.description);
      if (!firstFileOf.has(block.state)) firstFileOf.set(block.state, input.description);
      loadBlock(t.store, block.keyGroup, s.stateId, bytes, m.blockFormat);
    }
  }
  return [...timers].map(([keyGroup, bytes]) => ({ keyGroup, bytes }));
}

/** A state dropped since the chain's base: its entries in [from, to] go; the state too once nothing of it is left. */
function dropRestored(t: LoadTarget, name: string, from: number, to: number): void {
  const s = t.restored.get(name);
  if (s === undefined) return;
  for (let kg = from; kg <= to; kg++) {
    const keys = [...t.store.keys(storeKeyPrefix(kg, s.stateId), storeKeyPrefix(kg, s.stateId + 1))].map((k) => Buffer.from(k));
    if (keys.length > 0) t.store.write((w) => keys.forEach((k) => w.remove(k)));
  }
  for (let kg = t.range.start; kg <= t.range.end; kg++) {
    for (const _ of t.store.keys(storeKeyPrefix(kg, s.stateId), storeKeyPrefix(kg, s.stateId + 1))) return;
  }
  t.restored.delete(name);
}

function removeKeys(store: DiskStore, keyGroup: number, stateId: number, keys: readonly NormKey[]): void {
  store.write((w) => {
    for (const k of keys) w.remove(encodeStoreKey(keyGroup, stateId, k));
  });
}

/** A chain is written by one job run: a state's serializer and kind are the same in all its files. */
function checkSameState(a: StateMeta, b: StateMeta, where: string): void {
  if (a.kind !== b.kind || a.ttl !== b.ttl || a.serializer.name !== b.serializer.name || a.serializer.version !== b.serializer.version) {
    throw new Error(`${where}: state "${b.name}" is recorded differently in this delta than in its chain's base; the incremental chain is inconsistent`);
  }
}

function loadBlock(store: DiskStore, keyGroup: number, stateId: number, bytes: Uint8Array, blockFormat: number | undefined): void {
  const { keys, values } = decodeGroupColumns(bytes, blockFormat);
  store.write((w) => {
    for (let i = 0; i < keys.length; i++) w.put(encodeStoreKey(keyGroup, stateId, keys[i]!), packStored(values[i]));
  });
}
