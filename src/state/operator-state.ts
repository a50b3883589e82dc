/**
 * Operator (non-keyed) state of one subtask: named lists, split or unioned on restore, and
 * broadcast maps, replicated on every subtask.
 */
import { BroadcastStateDescriptor, checkMapKey, ListStateDescriptor, type BroadcastState, type ListState } from '../core/state.ts';

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

export class OperatorStateStore {
  readonly lists = new Map<string, OperatorListState<unknown>>();
  readonly broadcasts = new Map<string, HeapBroadcastState<unknown, unknown>>();
  /** `subtaskIndex`: a union list restored as a split one keeps its items on subtask 0 only. */
  constructor(private readonly where: string, private readonly subtaskIndex = 0) {}

  getListState<T>(desc: ListStateDescriptor<T>, distribution: ListDistribution): ListState<T> {
    const existing = this.lists.get(desc.name);
    if (existing !== undefined && this.restoredLists.delete(desc.name) && existing.distribution !== distribution) {
      // Restored under the other distribution mode: the new mode applies from now on. A split
      // list restored as union keeps its share (the next union holds each item once). A union
      // list was given whole to every subtask: as a split list each item must live on one, or
      // the next snapshot held p copies of it (Flink refuses the switch; here subtask 0 keeps them).
      const l = new OperatorListState<T>(desc, distribution);
      l.items = existing.distribution === 'union' && this.subtaskIndex !== 0 ? [] : (existing.items.slice() as T[]);
      this.lists.set(desc.name, l as OperatorListState<unknown>);
      return l;
    }
    if (existing !== undefined) {
      if (existing.distribution !== distribution) {
        throw new Error(`${this.where}: operator state "${desc.name}" is registered as ${existing.distribution} list state, not ${distribution}`);
      }
      return existing as unknown as ListState<T>;
    }
    const s = new OperatorListState<T>(desc, distribution);
    this.lists.set(desc.name, s as OperatorListState<unknown>);
    return s;
  }

  /** Restored lists wait here until getListState claims them (then the descriptor's distribution is checked). */
  private readonly restoredLists = new Map<string, { distribution: ListDistribution; items: unknown[] }>();
  private readonly restoredBroadcast = new Map<string, [unknown, unknown][]>();

  /**
   * The restored items are copied: the restore plan gives every subtask the same union-list and
   * broadcast values (by reference within one thread), and a subtask that changes a value in
   * place must not change it in its neighbours (Flink deserializes a copy per subtask).
   */
  restoreList(name: string, distribution: ListDistribution, restoredItems: unknown[]): void {
    const items = structuredClone(restoredItems);
    this.restoredLists.set(name, { distribution, items });
    // Also visible in the store right away, so a snapshot taken before the job claims it keeps it.
    const l = new OperatorListState<unknown>(new ListStateDescriptor<unknown>(name), distribution);
    l.items = items.slice();
    this.lists.set(name, l);
  }

  restoreBroadcast(name: string, restoredEntries: [unknown, unknown][]): void {
    const entries = structuredClone(restoredEntries);
    this.restoredBroadcast.set(name, entries);
    const b = new HeapBroadcastState<unknown, unknown>(new BroadcastStateDescriptor<unknown, unknown>(name));
    for (const [k, v] of entries) b.map.set(k, v);
    this.broadcasts.set(name, b);
  }

  getBroadcastState<K, V>(desc: BroadcastStateDescriptor<K, V>): HeapBroadcastState<K, V> {
    let s = this.broadcasts.get(desc.name);
    if (s === undefined) {
      s = new HeapBroadcastState(desc as BroadcastStateDescriptor<unknown, unknown>);
      this.broadcasts.set(desc.name, s);
    }
    return s as unknown as HeapBroadcastState<K, V>;
  }
}
