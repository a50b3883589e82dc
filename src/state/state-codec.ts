/**
 * How keyed state turns into snapshot data and back, key group by key group. Values go
 * through the state's serializer (name + version recorded with the data), so a newer job
 * can read older state through the serializer's migration, or be refused with a message that
 * names the operator and the state.
 */
import type { AnyStateDescriptor, StateKind, StateSerializer } from '../core/state.ts';
import { decodeValue } from '../core/codec.ts';
import { COLUMNAR_FORMAT, columnarSize, decodeColumns } from './columnar-block.ts';
import { encodeMapColumnParts } from './columnar-map.ts';
import { allocBlock } from './block-pool.ts';
import type { NormKey } from './key-groups.ts';
import type { KeyColumnCache } from './key-column-cache.ts';
import { WeirError } from '../core/errors.ts';

export interface StateMeta {
  readonly name: string;
  readonly kind: StateKind;
  readonly serializer: { readonly name: string; readonly version: number };
  readonly ttl: boolean;
  /**
   * Layout of this state's key-group blocks: 1 (absent) = msgpack [[key, value], ...];
   * 2 = msgpack [keys, values]; 3 = columns (columnar-block.ts). Old snapshots stay
   * readable; new ones are written as 3.
   */
  readonly blockFormat?: number;
}

/** The block layout written by this version. */
export const BLOCK_FORMAT = COLUMNAR_FORMAT;

/**
 * Several full state files restored into one subtask (a rescale merging old subtasks) must
 * record a state alike: its values are decoded (and migrated) with one meta. They differ when
 * the job was changed (a serializer's version, a TTL) and an old subtask never used the state
 * after that restore before the next snapshot (it registers states as records come), so its
 * file still records the old form. Decoding every file with the first file's meta then read
 * values of the other form wrongly (migrated twice, or not at all): refused instead, saying
 * what to do. The block layout may differ (files of an older weir): readers decode each
 * block with its own file's layout.
 */
export function checkMergedStateFiles(first: StateMeta, next: StateMeta, firstFile: string, nextFile: string): void {
  if (first.kind === next.kind && first.ttl === next.ttl && first.serializer.name === next.serializer.name && first.serializer.version === next.serializer.version) return;
  const form = (m: StateMeta) => `${m.kind} state, serializer ${m.serializer.name} v${m.serializer.version}${m.ttl ? ', with TTL' : ''}`;
  throw new StateRestoreError(
    `state "${next.name}" is recorded as ${form(first)} in ${firstFile} and as ${form(next)} in ${nextFile} (an old subtask did not use the state between a restore that changed it and this snapshot); ` +
      'restore at the parallelism the snapshot was taken with, let every subtask use the state, take a new savepoint, and rescale from that',
  );
}

export function stateMeta(d: AnyStateDescriptor): StateMeta {
  return { name: d.name, kind: d.kind, serializer: { name: d.serializer.name, version: d.serializer.version }, ttl: d.ttl !== undefined, blockFormat: BLOCK_FORMAT };
}

type Enc = (v: unknown) => unknown;

/**
 * The encoder from a state's values as the heap holds them (TTL values as {v, t}, map state as
 * a Map) to the form a block records (the serializer's encoding; maps as [key, value] pairs).
 */
export function stateValueEncoder(d: AnyStateDescriptor): (v: unknown) => unknown {
  return valueEncoder(d);
}

function valueEncoder(d: AnyStateDescriptor): Enc {
  const s = d.serializer;
  const base: Enc = s.encode ? (v) => s.encode!(v) : (v) => v;
  const one: Enc = d.ttl ? (st) => ({ v: base((st as { v: unknown }).v), t: (st as { t: number }).t }) : base;
  switch (d.kind) {
    case 'list':
      return (l) => (l as unknown[]).map(one);
    case 'map':
      return (m) => [...(m as Map<unknown, unknown>)].map(([k, v]) => [k, one(v)]);
    default:
      return one;
  }
}

/**
 * Encodes one key group of a state (its entries as the heap holds them: TTL values as
 * {v, t}) as a block: keys and encoded values as two columns, written straight from the Map
 * (columnar-map.ts: no array per entry, no intermediate arrays per group), into pooled
 * memory (block-pool.ts) that the state file releases once written: snapshots only.
 * `keyCache`: the group's key column from its last full snapshot (key-column-cache.ts); with
 * it the block comes in pieces, its key columns the cache's own memory (encodeMapColumnParts).
 */
export function encodeGroup(descriptor: AnyStateDescriptor, g: ReadonlyMap<NormKey, unknown> | undefined, keyCache?: KeyColumnCache): Uint8Array | Uint8Array[] {
  const plain = descriptor.kind === 'value' && descriptor.serializer.encode === undefined && descriptor.ttl === undefined;
  return encodeMapColumnParts(g ?? EMPTY, plain ? undefined : valueEncoder(descriptor), allocBlock, keyCache);
}

const EMPTY: ReadonlyMap<NormKey, unknown> = new Map();

export class StateRestoreError extends WeirError {
  constructor(message: string) {
    super('STATE_RESTORE', message);
  }
}

/**
 * Checks the serializer a state was written by against the one the job now uses and returns
 * the decoder of one value: the same name, a version no newer, and decode(data, writtenVersion)
 * when older. Keyed state (restoreDecoder) and operator list and broadcast state share it.
 */
export function serializerDecoder(where: string, state: string, written: { readonly name: string; readonly version: number }, s: StateSerializer<unknown>): (raw: unknown) => unknown {
  if (written.name !== s.name) {
    throw new StateRestoreError(`${where}: state "${state}" was written by serializer "${written.name}" v${written.version} and the job now uses "${s.name}" v${s.version}; they are incompatible`);
  }
  if (written.version > s.version) {
    throw new StateRestoreError(`${where}: state "${state}" was written by serializer "${s.name}" v${written.version}, newer than this job's v${s.version}; restore with the newer job version`);
  }
  if (written.version < s.version && s.decode === undefined) {
    throw new StateRestoreError(`${where}: state "${state}" was written by serializer "${s.name}" v${written.version}; v${s.version} declares no decode(data, writtenVersion) to migrate it`);
  }
  const version = written.version;
  return s.decode ? (v: unknown) => s.decode!(v, version) : (v: unknown) => v;
}

/**
 * Checks a restored state against the descriptor now in use and returns a decoder for its values.
 * `now` is the backend's processing-time clock: values of a state that gains a TTL at restore are
 * stamped with it (not Date.now()), so their expiry is measured on the same clock TTL checks use.
 */
export function restoreDecoder(where: string, meta: StateMeta, d: AnyStateDescriptor, now: () => number = Date.now): (raw: unknown) => unknown {
  if (meta.kind !== d.kind) {
    throw new StateRestoreError(`${where}: state "${d.name}" was written as ${meta.kind} state and is now declared as ${d.kind} state; a state's kind cannot change`);
  }
  const base = serializerDecoder(where, d.name, meta.serializer, d.serializer);
  const ttlNow = d.ttl !== undefined;
  // TTL added or removed: wrap with a fresh timestamp, or unwrap.
  const one = meta.ttl
    ? ttlNow
      ? (st: unknown) => ({ v: base((st as { v: unknown }).v), t: (st as { t: number }).t })
      : (st: unknown) => base((st as { v: unknown }).v)
    : ttlNow
      ? (v: unknown) => ({ v: base(v), t: now() })
      : base;
  switch (d.kind) {
    case 'list':
      return (l) => (l as unknown[]).map(one);
    case 'map':
      return (m) => new Map((m as [unknown, unknown][]).map(([k, v]) => [k, one(v)]));
    default:
      return one;
  }
}

/** A block's keys and values as two columns, in the layout its state's meta says (blockFormat). */
export function decodeGroupColumns(bytes: Uint8Array, blockFormat = 1): { keys: NormKey[]; values: unknown[] } {
  switch (blockFormat) {
    case 1: {
      const entries = decodeValue<[NormKey, unknown][]>(bytes);
      return { keys: entries.map((e) => e[0]), values: entries.map((e) => e[1]) };
    }
    case 2: {
      const [keys, values] = decodeValue<[NormKey[], unknown[]]>(bytes);
      return { keys, values };
    }
    case 3:
      return decodeColumns(bytes);
    default:
      throw unknownFormat(blockFormat);
  }
}

function unknownFormat(blockFormat: number): StateRestoreError {
  return new StateRestoreError(`unknown state block format ${blockFormat}; the snapshot was written by a newer weir`);
}

/** Entries of a block, in the layout its state's meta says (blockFormat). */
export function* decodeGroup(bytes: Uint8Array, blockFormat = 1): IterableIterator<[NormKey, unknown]> {
  const { keys, values } = decodeGroupColumns(bytes, blockFormat);
  for (let i = 0; i < keys.length; i++) yield [keys[i]!, values[i]];
}

/** Number of entries in a block. */
export function groupSize(bytes: Uint8Array, blockFormat = 1): number {
  if (blockFormat === 3) return columnarSize(bytes);
  if (blockFormat !== 1 && blockFormat !== 2) throw unknownFormat(blockFormat);
  const v = decodeValue<unknown[]>(bytes);
  return blockFormat === 1 ? v.length : (v[0] as unknown[]).length;
}
