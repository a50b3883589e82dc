/**
 * Operator (non-keyed) state of one subtask: named lists, split or unioned on restore, and
 * broadcast maps, replicated on every subtask.
 */
import { checkMapKey, type BroadcastState, type BroadcastStateDescriptor, type ListState, type ListStateDescriptor, type StateSerializer } from '../core/state.ts';
import { broadcastSerializerKey, listSerializerKey, type InlineOperatorState, type SerializerRecord } from '../core/checkpoint-format.ts';
import { serializerDecoder } from './state-codec.ts';

export type ListDistribution = 'split' | 'union';

export class OperatorListState<T> implements ListState<T> {
  items: T[] = [];
  constructor(readonly descriptor: ListStateDescriptor<T>, readonly distribution: ListDistribution) {}
  get(): readonly T[] {
    return this.items;
  }
  add(value: T): void {
    this.items.push(value);
  }
  addAll(values: readonly T[]): void {
    for (const v of values) this.items.push(v);
  }
  update(values: readonly T[]): void {
    this.items = values.slice();
  }
  clear(): void {
    this.items = [];
  }
}

export class HeapBroadcastState<K, V> implements BroadcastState<K, V> {
  readonly map = new Map<K, V>();
  constructor(readonly descriptor: BroadcastStateDescriptor<K, V>) {}
  get(key: K): V | undefined {
    checkMapKey(key, 'get', 'BroadcastState');
    return this.map.get(key);
  }
  contains(key: K): boolean {
    checkMapKey(key, 'contains', 'BroadcastState');
    return this.map.has(key);
  }
  entries(): IterableIterator<[K, V]> {
    return this.map.entries();
  }
  put(key: K, value: V): void {
    checkMapKey(key, 'put', 'BroadcastState');
    this.map.set(key, value);
  }
  remove(key: K): void {
    checkMapKey(key, 'remove', 'BroadcastState');
    this.map.delete(key);
  }
  clear(): void {
    this.map.clear();
  }
}

/** Read-only view handed to processElement, which must not change broadcast state (it would diverge per subtask). */
export function readOnlyView<K, V>(s: HeapBroadcastState<K, V>) {
  // The writers exist only to fail clearly: JavaScript callers (or casts) would otherwise get
  // "put is not a function", which says neither which state nor where it may be changed.
  const readOnly = (method: string) => (): never => {
    throw new TypeError(
      `broadcast state "${s.descriptor.name}" is read-only in processElement (${method} is not allowed there); change it in processBroadcastElement, which every subtask runs alike`,
    );
  };
  return {
    get: (k: K) => s.get(k),
    contains: (k: K) => s.contains(k),
    entries: () => s.map.entries(),
    put: readOnly('put'),
    remove: readOnly('remove'),
    clear: readOnly('clear'),
  };
}

/** Restored state the job has not claimed yet: in its snapshot encoding, with the serializer that wrote it (none: raw values). */
interface RestoredList {
  readonly distribution: ListDistribution;
  readonly items: unknown[];
  readonly serializer: SerializerRecord | undefined;
}
interface RestoredBroadcast {
  readonly entries: [unknown, unknown][];
  readonly serializer: SerializerRecord | undefined;
}

export class OperatorStateStore {
  /** Lists and broadcast states the job claimed (getListState, getBroadcastState): values as the job uses them. */
  readonly lists = new Map<string, OperatorListState<unknown>>();
  readonly broadcasts = new Map<string, HeapBroadcastState<unknown, unknown>>();
  /** `subtaskIndex`: a union list restored as a split one keeps its items on subtask 0 only. */
  constructor(private readonly where: string, private readonly subtaskIndex = 0) {}

  /**
   * Restored lists and broadcast states wait here, encoded, until the job claims them with its
   * descriptor: then the serializer they were written by is checked against the descriptor's
   * and their values decoded (migrated), as keyed state's are. Until then a snapshot keeps them
   * as they came, with their serializer record.
   */
  private readonly restoredLists = new Map<string, RestoredList>();
  private readonly restoredBroadcast = new Map<string, RestoredBroadcast>();

  getListState<T>(desc: ListStateDescriptor<T>, distribution: ListDistribution): ListState<T> {
    const existing = this.lists.get(desc.name);
    if (existing !== undefined) {
      if (existing.distribution !== distribution) {
        throw new Error(`${this.where}: operator state "${desc.name}" is registered as ${existing.distribution} list state, not ${distribution}`);
      }
      return existing as unknown as ListState<T>;
    }
    const s = new OperatorListState<T>(desc, distribution);
    const restored = this.restoredLists.get(desc.name);
    if (restored !== undefined) {
      const decode = this.decoder(desc.name, restored.serializer, desc.serializer as StateSerializer<unknown>);
      // Restored under the other distribution mode: the new mode applies from now on. A split
      // list restored as union keeps its share (the next union holds each item once). A union
      // list was given whole to every subtask: as a split list each item must live on one, or
      // the next snapshot held p copies of it (Flink refuses the switch; here subtask 0 keeps them).
      const drop = restored.distribution === 'union' && distribution === 'split' && this.subtaskIndex !== 0;
      s.items = drop ? [] : (restored.items.map(decode) as T[]);
      this.restoredLists.delete(desc.name);
    }
    this.lists.set(desc.name, s as OperatorListState<unknown>);
    return s;
  }

  /**
   * The restored items are copied: the restore plan gives every subtask the same union-list and
   * broadcast values (by reference within one thread), and a subtask that changes a value in
   * place must not change it in its neighbours (Flink deserializes a copy per subtask).
   * `serializer`: the one the items were written by (absent: raw values, snapshots of earlier versions).
   */
  restoreList(name: string, distribution: ListDistribution, restoredItems: unknown[], serializer?: SerializerRecord): void {
    this.restoredLists.set(name, { distribution, items: structuredClone(restoredItems), serializer });
  }

  restoreBroadcast(name: string, restoredEntries: [unknown, unknown][], serializer?: SerializerRecord): void {
    this.restoredBroadcast.set(name, { entries: structuredClone(restoredEntries), serializer });
  }

  getBroadcastState<K, V>(desc: BroadcastStateDescriptor<K, V>): HeapBroadcastState<K, V> {
    let s = this.broadcasts.get(desc.name);
    if (s === undefined) {
      const b = new HeapBroadcastState(desc as BroadcastStateDescriptor<unknown, unknown>);
      const restored = this.restoredBroadcast.get(desc.name);
      if (restored !== undefined) {
        const decode = this.decoder(desc.name, restored.serializer, desc.serializer as StateSerializer<unknown>);
        for (const [k, v] of restored.entries) b.map.set(k, decode(v));
        this.restoredBroadcast.delete(desc.name);
      }
      this.broadcasts.set(desc.name, b);
      s = b;
    }
    return s as unknown as HeapBroadcastState<K, V>;
  }

  /** No record: raw values (snapshots of earlier versions), taken as they are. */
  private decoder(name: string, written: SerializerRecord | undefined, s: StateSerializer<unknown>): (v: unknown) => unknown {
    return written === undefined ? (v) => v : serializerDecoder(this.where, name, written, s);
  }

  /**
   * The lists and broadcast states for a snapshot: claimed ones in their serializer's encoding
   * with its name and version, unclaimed restored ones as they were restored. Undefined when
   * there are none.
   */
  snapshot(): Pick<InlineOperatorState, 'lists' | 'broadcast' | 'serializers'> | undefined {
    if (this.lists.size + this.restoredLists.size + this.broadcasts.size + this.restoredBroadcast.size === 0) return undefined;
    const out: Pick<InlineOperatorState, 'lists' | 'broadcast' | 'serializers'> = {};
    const serializers: Record<string, SerializerRecord> = {};
    if (this.lists.size + this.restoredLists.size > 0) {
      const lists: NonNullable<InlineOperatorState['lists']> = (out.lists = {});
      for (const [name, r] of this.restoredLists) {
        lists[name] = { distribution: r.distribution, items: r.items.slice() };
        if (r.serializer !== undefined) serializers[listSerializerKey(name)] = r.serializer;
      }
      for (const [name, l] of this.lists) {
        const s = l.descriptor.serializer as StateSerializer<unknown>;
        lists[name] = { distribution: l.distribution, items: s.encode ? l.items.map((v) => s.encode!(v)) : l.items.slice() };
        serializers[listSerializerKey(name)] = { name: s.name, version: s.version };
      }
    }
    if (this.broadcasts.size + this.restoredBroadcast.size > 0) {
      const broadcast: NonNullable<InlineOperatorState['broadcast']> = (out.broadcast = {});
      for (const [name, r] of this.restoredBroadcast) {
        broadcast[name] = r.entries.slice();
        if (r.serializer !== undefined) serializers[broadcastSerializerKey(name)] = r.serializer;
      }
      for (const [name, b] of this.broadcasts) {
        const s = b.descriptor.serializer as StateSerializer<unknown>;
        broadcast[name] = s.encode ? [...b.map].map(([k, v]) => [k, s.encode!(v)]) : [...b.map];
        serializers[broadcastSerializerKey(name)] = { name: s.name, version: s.version };
      }
    }
    if (Object.keys(serializers).length > 0) out.serializers = serializers;
    return out;
  }
}
