/**
 * Reading heap-backend state files back: the blocks of this subtask's key groups, from every
 * file that holds some of them (one file at the same parallelism, several after rescaling).
 * State blocks stay encoded until the job registers each state, so serializer checks and
 * migrations run against the descriptor the new code declares; timer blocks go back to the
 * caller as they are.
 *
 * Incremental chains come as their files in order, base first (several chains after
 * rescaling, of disjoint key groups, one after the other). A delta file (meta.delta) is
 * applied over what came before: its entries replace, its tombstones remove, and its timers
 * replace every timer of its key-group range. Only the key groups a delta touches are decoded
 * and encoded again; the others keep the base's bytes.
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateInputHandle } from '../../core/state-streams.ts';
import { StateFileReader } from '../../checkpoint/state-file.ts';
import type { KeyGroupBlock } from '../backend.ts';
import { COLUMNAR_FORMAT, decodeColumns, encodeColumns } from '../columnar-block.ts';
import { encodeMapColumns } from '../columnar-map.ts';
import { filledGroup, newGroupMap, type Group } from './group-map.ts';
import { checkMergedStateFiles, decodeGroupColumns, StateRestoreError, type StateMeta } from '../state-codec.ts';
import { encodeValue } from '../../core/codec.ts';
import { parseBlockName } from '../../checkpoint/names.ts';
import { mapBounded } from '../../core/bounded-parallel.ts';
import type { KeyedSnapshotMeta } from './format.ts';

/** State read from a snapshot that no descriptor has claimed yet: decoded when the job registers it. */
export interface RestoredState {
  readonly meta: StateMeta;
  /** Encoded key-group blocks, by key group (in meta's block layout). */
  readonly groups: Map<number, Uint8Array>;
  /**
   * The groups of `groups` merged from an incremental chain (a base block and its deltas), also
   * as the maps the merge made, raw (serializer-encoded) values by key, in their blocks' order.
   * Registering the state takes these instead of decoding the blocks again (the blocks stay for
   * a snapshot taken before the state is registered): decoding every key string a second time
   * cost more than reading the chain (bench/restore-chain.ts).
   */
  readonly merged: Map<number, Group>;
  /** The file that recorded meta (error messages). */
  readonly file: string;
}

/**
 * Key groups being merged from a chain: raw (serializer-encoded) values by key, in the group
 * maps the restored state will keep (filled from the base block in one go). A chain's every
 * delta touches most groups (1 % of 1 M keys changed is ~80 keys in each of 128), so most
 * groups are merged.
 */
type Merging = Map<RestoredState, Map<number, Group>>;

/**
 * Blocks of one state file read at once. Why: a restore read its blocks one after the other, so
 * each waited for the last (on S3 a round trip each; locally a 10 M-key restore at p=1 spent 0.7
 * s of its 5.3 s waiting for reads into fresh memory, ~11 µs a page on this project's VMs).
 */
const BLOCK_READS_IN_FLIGHT = 4;

/** Adds the state blocks of `range` to `restored`; returns the timer blocks of `range`. */
export async function readStateFiles(
  inputs: readonly StateInputHandle[],
  range: KeyGroupRange,
  maxParallelism: number,
  restored: Map<string, RestoredState>,
): Promise<KeyGroupBlock[]> {
  const timers = new Map<number, Uint8Array>();
  const merging: Merging = new Map();
  for (const input of inputs) {
    const reader = await StateFileReader.open(input);
    const meta = reader.index.meta as KeyedSnapshotMeta;
    if (meta.maxParallelism !== maxParallelism) {
      throw new Error(`state file ${input.description} was written with max parallelism ${meta.maxParallelism}, the operator now has ${maxParallelism}; the number of key groups cannot change`);
    }
    const delta = meta.delta === true;
    const from = Math.max(range.start, meta.keyGroupRange.start);
    const to = Math.min(range.end, meta.keyGroupRange.end);
    if (delta) for (let kg = from; kg <= to; kg++) timers.delete(kg);
    if (delta) for (const name of meta.droppedStates ?? []) dropState(restored, merging, name, from, to);
    const metas = new Map<string, StateMeta>(meta.states.map((m) => [m.name, m]));
    const wanted = reader.index.blocks
      .map((b) => ({ b, block: parseBlockName(b.name) }))
      .filter(({ block }) => block.kind !== 'unknown' && block.keyGroup >= range.start && block.keyGroup <= range.end);
    // A full snapshot's blocks are all kept until the job registers its states, so reading them
    // at once holds nothing more; a delta's blocks (changed keys only) are small.
    const read = await mapBounded(wanted, BLOCK_READS_IN_FLIGHT, ({ b }) => reader.readBlock(b));
    for (let i = 0; i < wanted.length; i++) {
      const { b, block } = wanted[i]!;
      if (block.kind === 'unknown') continue;
      const bytes = read[i]!;
      if (block.kind === 'timers') {
        timers.set(block.keyGroup, bytes);
        continue;
      }
      const m = metas.get(block.state);
      if (m === undefined) throw new Error(`state file ${input.description} has a block for unknown state "${block.state}"`);
      if (!delta) {
        if (block.kind !== 'keyed') throw new Error(`state file ${input.description} is a full snapshot with a tombstone block ${b.name}`);
        let r = restored.get(block.state);
        if (r === undefined) restored.set(block.state, (r = { meta: m, groups: new Map(), merged: new Map(), file: input.description }));
        else checkMergedStateFiles(r.meta, m, r.file, input.description);
        // One layout per state: a block of another file's layout (an older weir's) in this one's.
        r.groups.set(block.keyGroup, sameBlockFormat(r.meta, m) ? bytes : relayout(bytes, m, r.meta));
        merging.get(r)?.delete(block.keyGroup);
        continue;
      }
      applyDelta(restored, merging, m, block.kind, block.keyGroup, bytes, input.description);
    }
  }
  for (const [r, groups] of merging) {
    for (const [kg, entries] of groups) {
      if (entries.size === 0) {
        r.groups.delete(kg);
        continue;
      }
      r.groups.set(kg, encodeMapColumns(entries));
      r.merged.set(kg, entries);
    }
  }
  return [...timers].map(([keyGroup, bytes]) => ({ keyGroup, bytes }));
}

function sameBlockFormat(a: StateMeta, b: StateMeta): boolean {
  return (a.blockFormat ?? 1) === (b.blockFormat ?? 1);
}

/** A block of layout `from` re-encoded in layout `to` (columnar; or, to an older layout, columns written as that layout). */
function relayout(bytes: Uint8Array, from: StateMeta, to: StateMeta): Uint8Array {
  const { keys, values } = decodeGroupColumns(bytes, from.blockFormat);
  if ((to.blockFormat ?? 1) === COLUMNAR_FORMAT) return encodeColumns(keys, values);
  return encodeValue((to.blockFormat ?? 1) === 1 ? keys.map((k, i) => [k, values[i]]) : [keys, values]);
}

/** A state dropped since the chain's base: what earlier files held of it in [from, to] goes. */
function dropState(restored: Map<string, RestoredState>, merging: Merging, name: string, from: number, to: number): void {
  const r = restored.get(name);
  if (r === undefined) return;
  const m = merging.get(r);
  for (let kg = from; kg <= to; kg++) {
    r.groups.delete(kg);
    m?.delete(kg);
  }
  if (r.groups.size === 0 && (m === undefined || m.size === 0)) {
    restored.delete(name);
    merging.delete(r);
  }
}

function applyDelta(restored: Map<string, RestoredState>, merging: Merging, m: StateMeta, kind: 'keyed' | 'tombstones', kg: number, bytes: Uint8Array, where: string): void {
  let r = restored.get(m.name);
  if (r === undefined) restored.set(m.name, (r = { meta: { ...m, blockFormat: COLUMNAR_FORMAT }, groups: new Map(), merged: new Map(), file: where }));
  checkSameState(r.meta, m, where);
  let groups = merging.get(r);
  if (groups === undefined) merging.set(r, (groups = new Map()));
  const { keys, values } = decodeColumns(bytes);
  let entries = groups.get(kg);
  if (entries === undefined) {
    const before = r.groups.get(kg);
    if (before !== undefined) {
      const base = decodeGroupColumns(before, r.meta.blockFormat);
      entries = filledGroup(base.keys, base.values);
    } else {
      entries = newGroupMap(keys[0] ?? '');
    }
    groups.set(kg, entries);
  }
  if (kind === 'tombstones') for (const k of keys) entries.delete(k);
  else for (let i = 0; i < keys.length; i++) entries.set(keys[i]!, values[i]);
}

/** A chain is written by one job run: a state's serializer and layout are the same in all its files. */
function checkSameState(a: StateMeta, b: StateMeta, where: string): void {
  const same = a.kind === b.kind && a.ttl === b.ttl && a.serializer.name === b.serializer.name && a.serializer.version === b.serializer.version && (a.blockFormat ?? 1) === COLUMNAR_FORMAT && (b.blockFormat ?? 1) === COLUMNAR_FORMAT;
  if (!same) throw new StateRestoreError(`${where}: state "${b.name}" is recorded differently in this delta than in its chain's base (${JSON.stringify(a)} vs ${JSON.stringify(b)}); the incremental chain is inconsistent`);
}
