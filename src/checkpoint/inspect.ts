/**
 * Offline inspection of a checkpoint or savepoint: operators, their states, key counts and
 * sizes per key-group range, non-keyed state, and single values by key. Reads only the
 * snapshot's files, through checkpoint storage (the storage that serves the reference: a local
 * directory, or in-memory storage in this thread): its metadata verified, its state files
 * opened with the worker view's openState. Never modifies anything.
 */
import { inlineStateInput } from './inline-state.ts';
import { existsSync } from 'node:fs';
import { decodeValue } from '../core/codec.ts';
import { keyGroupOf, normalizeKey } from '../state/key-groups.ts';
import { decodeGroup, decodeGroupColumns, groupSize, type StateMeta } from '../state/state-codec.ts';
import type { NormKey } from '../state/key-groups.ts';
import type { CheckpointMetadata, OperatorStateMeta } from './metadata.ts';
import { openStateFile, StateFileReader } from './state-file.ts';
import { isDirectory, type StorageResolver } from './storage.ts';
import { storageResolver } from './storage-resolver.ts';
import { NO_METADATA } from './storage-verify.ts';
import { keyedBlockName, METADATA_FILE, metadataReference, parseBlockName, schemeOf, sharedStateReference, stateFileReference, tombstoneBlockName } from './names.ts';
import { broadcastSerializerKey, listSerializerKey, type InlineOperatorState, type SerializerRecord } from '../core/checkpoint-format.ts';
import type { KeyedSnapshotMeta } from '../state/heap/format.ts';
import { WeirError } from '../core/errors.ts';

export class InspectError extends WeirError {
  constructor(message: string) {
    super('INSPECT', message);
  }
}

export interface StateSummary {
  readonly name: string;
  readonly kind: string;
  readonly serializer: { readonly name: string; readonly version: number };
  readonly ttl: boolean;
  keys: number;
  bytes: number;
}

export interface RangeSummary {
  readonly subtask: number;
  readonly keyGroupRange: { readonly start: number; readonly end: number };
  readonly file: string;
  readonly fileSize: number;
  keys: number;
  timers: number;
  bytes: number;
}

export interface OperatorSummary extends Omit<OperatorStateMeta, 'subtasks'> {
  readonly states: StateSummary[];
  readonly ranges: RangeSummary[];
  /** serializer: the one its items were written with (recorded since operator state had serializers); undefined: raw values. */
  readonly operatorState: { readonly name: string; readonly distribution: string; readonly items: number; readonly serializer?: SerializerRecord }[];
  readonly broadcastState: { readonly name: string; readonly entries: number; readonly serializer?: SerializerRecord }[];
  /** Window operators: how their windows are kept (what a restore must match). */
  readonly stateLayout?: string;
  /** Keyed operators: the kinds of keys their state is keyed by (what a restore's keys must include). */
  readonly keyKinds?: readonly string[];
  readonly sourceSplits: number;
  readonly committables: number;
}

export interface SnapshotSummary {
  readonly path: string;
  readonly type: string;
  readonly jobId: string;
  readonly jobName: string;
  readonly checkpointId: number;
  readonly timestamp: number;
  readonly formatVersion: number;
  readonly stateSize: number;
  readonly operators: OperatorSummary[];
}

/** The storage that serves snapshot references: local paths, and the job's storage if the caller has one. */
function storageFor(path: string, storages: StorageResolver) {
  try {
    return storages.forReference(path);
  } catch (e) {
    throw new InspectError(e instanceof Error ? e.message : String(e));
  }
}

export async function openSnapshot(path: string, storages: StorageResolver = storageResolver()): Promise<CheckpointMetadata> {
  const v = await storageFor(path, storages).verify(path);
  if (!v.ok) {
    if (v.reason === NO_METADATA) {
      // Say which case it is: a mistyped path or a file given for the directory is far more
      // common than a directory without metadata, and "no _metadata file" hides the typo.
      if (schemeOf(path) === undefined && !existsSync(path)) throw new InspectError(`${path} does not exist`);
      if (schemeOf(path) === undefined && !isDirectory(path)) throw new InspectError(`${path} is a file, not a checkpoint or savepoint directory`);
      throw new InspectError(`${path} is not a checkpoint or savepoint (no ${METADATA_FILE} file)`);
    }
    throw new InspectError(`${path}: ${v.reason}`);
  }
  return v.metadata;
}

function inlineOf(b64: string | undefined, where: string): InlineOperatorState | undefined {
  if (b64 === undefined) return undefined;
  try {
    return decodeValue<InlineOperatorState>(Buffer.from(b64, 'base64'));
  } catch (e) {
    throw new InspectError(`${where}: its inline state cannot be decoded (${(e as Error).message}; corrupt metadata)`);
  }
}

export async function summarize(path: string, storages: StorageResolver = storageResolver()): Promise<SnapshotSummary> {
  const m = await openSnapshot(path, storages);
  const operators: OperatorSummary[] = [];
  for (const op of m.operators) operators.push(await summarizeOperator(path, op, storages));
  return { path, type: m.type, jobId: m.jobId, jobName: m.jobName, checkpointId: m.checkpointId, timestamp: m.timestamp, formatVersion: m.version, stateSize: m.stats.stateSize, operators };
}

async function summarizeOperator(dir: string, op: OperatorStateMeta, storages: StorageResolver): Promise<OperatorSummary> {
  const states = new Map<string, StateSummary>();
  const ranges: RangeSummary[] = [];
  const lists = new Map<string, { distribution: string; items: number; serializer?: SerializerRecord }>();
  const broadcast = new Map<string, { entries: number; serializer?: SerializerRecord }>();
  let stateLayout: string | undefined;
  const keyKinds = new Set<string>();
  let splits = 0;
  let committables = 0;
  for (const s of op.subtasks) {
    const inline = inlineOf(s.inline, `${metadataReference(dir)}: operator "${op.name}" subtask ${s.subtask}`);
    for (const [name, l] of Object.entries(inline?.lists ?? {})) {
      // Split and union lists alike: each subtask snapshots its own items, and the state holds
      // all of them (a restore hands the union of every subtask's items to each new subtask), so
      // the count is the sum over subtasks. (Counting one subtask's items under-reported union state.)
      const cur = lists.get(name);
      const serializer = inline?.serializers?.[listSerializerKey(name)] ?? cur?.serializer;
      lists.set(name, { distribution: l.distribution, items: (cur?.items ?? 0) + l.items.length, ...(serializer !== undefined ? { serializer } : {}) });
    }
    for (const [name, e] of Object.entries(inline?.broadcast ?? {})) {
      const serializer = inline?.serializers?.[broadcastSerializerKey(name)];
      broadcast.set(name, { entries: e.length, ...(serializer !== undefined ? { serializer } : {}) });
    }
    stateLayout ??= inline?.stateLayout;
    for (const k of inline?.keyKinds ?? []) keyKinds.add(k);
    splits += inline?.splits?.length ?? 0;
    committables += inline?.committables?.length ?? 0;
    if (s.chain !== undefined) {
      ranges.push(await summarizeChain(dir, s, states, storages));
      continue;
    }
    if (s.file === undefined) continue;
    const input = s.fileInline !== undefined ? inlineStateInput(stateFileReference(dir, s.file), s.fileInline) : await openStateFile(storages.workerView, stateFileReference(dir, s.file), s.fileSize);
    try {
      const reader = await StateFileReader.open(input);
      const meta = reader.index.meta as { states: StateMeta[] };
      const formats = new Map(meta.states.map((st) => [st.name, st.blockFormat ?? 1]));
      for (const st of meta.states) if (!states.has(st.name)) states.set(st.name, { ...st, keys: 0, bytes: 0 });
      const r: RangeSummary = { subtask: s.subtask, keyGroupRange: s.keyGroupRange!, file: s.file, fileSize: s.fileSize!, keys: 0, timers: 0, bytes: 0 };
      for (const b of reader.index.blocks) {
        const bytes = await reader.readBlock(b);
        const block = parseBlockName(b.name);
        r.bytes += b.length;
        if (block.kind === 'timers') {
          r.timers += decodeValue<unknown[]>(bytes).length;
          continue;
        }
        const stateName = block.kind === 'keyed' ? block.state : '';
        const entries = groupSize(bytes, formats.get(stateName));
        const st = states.get(stateName);
        if (st) {
          st.keys += entries;
          st.bytes += b.length;
        }
        r.keys += entries;
      }
      ranges.push(r);
    } finally {
      await input.close();
    }
  }
  return {
    id: op.id, name: op.name, uid: op.uid, parallelism: op.parallelism, maxParallelism: op.maxParallelism, keyed: op.keyed,
    states: [...states.values()], ranges,
    operatorState: [...lists].map(([name, l]) => ({ name, ...l })),
    broadcastState: [...broadcast].map(([name, b]) => ({ name, ...b })),
    ...(stateLayout !== undefined ? { stateLayout } : {}),
    ...(keyKinds.size > 0 ? { keyKinds: [...keyKinds].sort() } : {}),
    sourceSplits: splits, committables,
  };
}

/**
 * One subtask's incremental chain, applied as a restore would (state/heap/restore.ts): a key
 * counts once however many files of the chain hold it, a tombstone removes it, a delta's timers
 * replace every timer of its key-group range (a key group with no timer block has none left), a
 * state a delta lists as dropped loses what earlier files held of it, and the states are those
 * the last file records (a window's state, dropped when the window fired, is not listed).
 */
async function summarizeChain(dir: string, s: OperatorStateMeta['subtasks'][number], states: Map<string, StateSummary>, storages: StorageResolver): Promise<RangeSummary> {
  const chain = s.chain!;
  const keys = new Map<string, Map<number, Set<NormKey>>>();
  const stateBytes = new Map<string, number>();
  const timers = new Map<number, number>();
  let current: readonly StateMeta[] = [];
  let bytes = 0;
  for (const c of chain) {
    const input = await openStateFile(storages.workerView, sharedStateReference(dir, c.name), c.size);
    try {
      const reader = await StateFileReader.open(input);
      const meta = reader.index.meta as KeyedSnapshotMeta;
      if (meta.delta === true) {
        for (let kg = meta.keyGroupRange.start; kg <= meta.keyGroupRange.end; kg++) timers.delete(kg);
        for (const name of meta.droppedStates ?? []) {
          keys.delete(name);
          stateBytes.delete(name);
        }
      }
      current = meta.states;
      const formats = new Map(meta.states.map((st) => [st.name, st.blockFormat ?? 1]));
      for (const b of reader.index.blocks) {
        const block = parseBlockName(b.name);
        bytes += b.length;
        const data = await reader.readBlock(b);
        if (block.kind === 'timers') {
          timers.set(block.keyGroup, decodeValue<unknown[]>(data).length);
          continue;
        }
        if (block.kind === 'unknown') continue;
        let byKg = keys.get(block.state);
        if (byKg === undefined) keys.set(block.state, (byKg = new Map()));
        let set = byKg.get(block.keyGroup);
        if (set === undefined) byKg.set(block.keyGroup, (set = new Set()));
        const cols = decodeGroupColumns(data, block.kind === 'tombstones' ? 3 : formats.get(block.state));
        for (const k of cols.keys) {
          if (block.kind === 'tombstones') set.delete(k);
          else set.add(k);
        }
        stateBytes.set(block.state, (stateBytes.get(block.state) ?? 0) + b.length);
      }
    } finally {
      await input.close();
    }
  }
  let total = 0;
  for (const st of current) {
    let summary = states.get(st.name);
    if (summary === undefined) states.set(st.name, (summary = { ...st, keys: 0, bytes: 0 }));
    let n = 0;
    for (const set of keys.get(st.name)?.values() ?? []) n += set.size;
    total += n;
    summary.keys += n;
    summary.bytes += stateBytes.get(st.name) ?? 0;
  }
  let numTimers = 0;
  for (const n of timers.values()) numTimers += n;
  return {
    subtask: s.subtask, keyGroupRange: s.keyGroupRange!, file: chain.map((c) => `shared/${c.name}`).join(' + '), fileSize: chain.reduce((a, c) => a + c.size, 0),
    keys: total, timers: numTimers, bytes,
  };
}

/**
 * The value of `stateName` for key `nk` in a subtask's chain: the last file that holds or removes
 * it decides, a delta that lists the state as dropped removes it. `knownStates` gets the states
 * the last file records.
 */
async function lookupInChain(path: string, s: OperatorStateMeta['subtasks'][number], stateName: string, nk: NormKey, kg: number, storages: StorageResolver, knownStates: Set<string>): Promise<{ found: boolean; value: unknown }> {
  let out: { found: boolean; value: unknown } = { found: false, value: undefined };
  for (const c of s.chain!) {
    const input = await openStateFile(storages.workerView, sharedStateReference(path, c.name), c.size);
    try {
      const reader = await StateFileReader.open(input);
      const meta = reader.index.meta as KeyedSnapshotMeta;
      knownStates.clear();
      for (const x of meta.states) knownStates.add(x.name);
      if (meta.delta === true && (meta.droppedStates ?? []).includes(stateName)) out = { found: false, value: undefined };
      const fmt = meta.states.find((x) => x.name === stateName)?.blockFormat;
      const entries = reader.index.blocks.find((b) => b.name === keyedBlockName(stateName, kg));
      if (entries !== undefined) for (const [k, v] of decodeGroup(await reader.readBlock(entries), fmt)) if (k === nk) out = { found: true, value: v };
      const removed = reader.index.blocks.find((b) => b.name === tombstoneBlockName(stateName, kg));
      if (removed !== undefined && decodeGroupColumns(await reader.readBlock(removed), 3).keys.includes(nk)) out = { found: false, value: undefined };
    } finally {
      await input.close();
    }
  }
  return out;
}

/** Finds an operator by uid, exact name, or id prefix; a clear error when none or several match. */
export function findOperator(m: CheckpointMetadata, q: string): OperatorStateMeta {
  const byUid = m.operators.filter((o) => o.uid === q);
  if (byUid.length === 1) return byUid[0]!;
  const byName = m.operators.filter((o) => o.name === q);
  if (byName.length === 1) return byName[0]!;
  const byId = m.operators.filter((o) => o.id.startsWith(q));
  if (byId.length === 1) return byId[0]!;
  const all = m.operators.map((o) => `"${o.name}"${o.uid ? ` (uid ${o.uid})` : ''} ${o.id.slice(0, 8)}`).join(', ');
  if (byName.length > 1 || byId.length > 1) throw new InspectError(`operator "${q}" is ambiguous; use its uid or id. Operators: ${all}`);
  throw new InspectError(`no operator "${q}" in the snapshot. Operators: ${all}`);
}

export interface ValueLookup {
  readonly operator: string;
  readonly state: string;
  readonly key: unknown;
  readonly keyGroup: number;
  readonly found: boolean;
  /** As stored (after the state's serializer encode; TTL values as {v, t}). */
  readonly value: unknown;
}

/**
 * The value of one state for one key. A key from the command line is a string; when no entry
 * matches it as a string, it is tried as a number (keys of numeric key selectors).
 */
export async function lookupValue(path: string, operatorQuery: string, stateName: string, rawKey: string, storages: StorageResolver = storageResolver()): Promise<ValueLookup> {
  const m = await openSnapshot(path, storages);
  const op = findOperator(m, operatorQuery);
  if (!op.keyed) throw new InspectError(`operator "${op.name}" has no keyed state`);
  const candidates: unknown[] = [rawKey];
  // The number too only when the text is its canonical form: "042", "0x2a" or " 42" matched key 42.
  if (String(Number(rawKey)) === rawKey) candidates.push(Number(rawKey));
  let knownStates = new Set<string>();
  for (const key of candidates) {
    const nk = normalizeKey(key);
    const kg = keyGroupOf(nk, op.maxParallelism);
    const s = op.subtasks.find((x) => x.keyGroupRange !== undefined && x.keyGroupRange.start <= kg && kg <= x.keyGroupRange.end && (x.file !== undefined || x.chain !== undefined));
    if (s === undefined) continue;
    if (s.chain !== undefined) {
      const known = new Set<string>();
      const r = await lookupInChain(path, s, stateName, nk, kg, storages, known);
      knownStates = known;
      if (r.found) return { operator: op.name, state: stateName, key, keyGroup: kg, found: true, value: r.value };
      continue;
    }
    const input = s.fileInline !== undefined ? inlineStateInput(stateFileReference(path, s.file!), s.fileInline) : await openStateFile(storages.workerView, stateFileReference(path, s.file!), s.fileSize);
    try {
      const reader = await StateFileReader.open(input);
      const meta = reader.index.meta as { states: StateMeta[] };
      knownStates = new Set(meta.states.map((x) => x.name));
      if (!knownStates.has(stateName)) continue;
      const block = reader.index.blocks.find((b) => b.name === keyedBlockName(stateName, kg));
      if (block === undefined) continue;
      const fmt = meta.states.find((x) => x.name === stateName)?.blockFormat;
      for (const [k, v] of decodeGroup(await reader.readBlock(block), fmt)) {
        if (k === nk) return { operator: op.name, state: stateName, key, keyGroup: kg, found: true, value: v };
      }
    } finally {
      await input.close();
    }
  }
  if (knownStates.size > 0 && !knownStates.has(stateName)) {
    throw new InspectError(`operator "${op.name}" has no state "${stateName}"; its states: ${[...knownStates].join(', ')}`);
  }
  const kg = keyGroupOf(normalizeKey(rawKey), op.maxParallelism);
  return { operator: op.name, state: stateName, key: rawKey, keyGroup: kg, found: false, value: undefined };
}
