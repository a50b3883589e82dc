/**
 * State handles of the heap backend: each reads and writes the slot of the current key (the
 * backend's KeyContext) in its state's table, through read()/write() so a group frozen by a
 * snapshot in progress is serialized before it is touched. Every change is marked in the
 * table (StateTable.mark, a no-op unless incremental checkpoints track changes), and so is every
 * read that hands out a live object the caller could mutate in place.
 */
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from '../../core/state.ts';
import { checkedMapEntries, checkListElement, checkListElements, checkMapKey, clearsValue, defaultValueOf } from '../../core/state.ts';
import type { KeyContext } from '../key-context.ts';
import type { StateTable } from './state-table.ts';

export class ValueHandle<T> implements ValueState<T> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext, private readonly defaultValue: T | undefined) {}
  value(): T | undefined {
    const g = this.t.read(this.ctx.kgIndex);
    const v = g === undefined ? undefined : (g.getHashed(this.ctx.key, this.ctx.hash) as T | undefined);
    if (v === undefined) return defaultValueOf(this.defaultValue);
    if (typeof v === 'object' && v !== null) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
    return v;
  }
  update(value: T): void {
    if (clearsValue(value)) return this.clear();
    this.t.write(this.ctx.kgIndex, this.ctx.key).setHashed(this.ctx.key, this.ctx.hash, value);
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
  clear(): void {
    if (this.t.read(this.ctx.kgIndex)?.deleteHashed(this.ctx.key, this.ctx.hash)) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
}

export class ListHandle<T> implements ListState<T> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext) {}
  get(): readonly T[] {
    const g = this.t.read(this.ctx.kgIndex);
    const l = g?.getHashed(this.ctx.key, this.ctx.hash) as T[] | undefined;
    if (l === undefined) return EMPTY;
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash); // the live array is handed out
    return l;
  }
  add(value: T): void {
    checkListElement(value, 'add');
    const g = this.t.write(this.ctx.kgIndex, this.ctx.key);
    const l = g.getHashed(this.ctx.key, this.ctx.hash) as T[] | undefined;
    if (l === undefined) g.setHashed(this.ctx.key, this.ctx.hash, [value]);
    else l.push(value);
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
  addAll(values: readonly T[]): void {
    checkListElements(values, 'addAll');
    if (values.length === 0) return;
    const g = this.t.write(this.ctx.kgIndex, this.ctx.key);
    const l = g.getHashed(this.ctx.key, this.ctx.hash) as T[] | undefined;
    if (l === undefined) g.setHashed(this.ctx.key, this.ctx.hash, values.slice());
    // Up to the length it had: `values` may be this list (addAll(list.get())), which grows.
    else for (let i = 0, n = values.length; i < n; i++) l.push(values[i]!);
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
  update(values: readonly T[]): void {
    checkListElements(values, 'update');
    if (values.length === 0) return this.clear();
    this.t.write(this.ctx.kgIndex, this.ctx.key).setHashed(this.ctx.key, this.ctx.hash, values.slice());
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
  clear(): void {
    if (this.t.read(this.ctx.kgIndex)?.deleteHashed(this.ctx.key, this.ctx.hash)) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
}
export const EMPTY: readonly never[] = Object.freeze([]);

export class MapHandle<K, V> implements MapState<K, V> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext) {}
  private map(): Map<K, V> | undefined {
    return this.t.read(this.ctx.kgIndex)?.getHashed(this.ctx.key, this.ctx.hash) as Map<K, V> | undefined;
  }
  /** The map, marked changed: its values are handed out (or about to change). */
  private mapMarked(): Map<K, V> | undefined {
    const m = this.map();
    if (m !== undefined) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
    return m;
  }
  private mapForWrite(): Map<K, V> {
    const g = this.t.write(this.ctx.kgIndex, this.ctx.key);
    let m = g.getHashed(this.ctx.key, this.ctx.hash) as Map<K, V> | undefined;
    if (m === undefined) {
      m = new Map();
      g.setHashed(this.ctx.key, this.ctx.hash, m);
    }
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
    return m;
  }
  get(key: K): V | undefined {
    checkMapKey(key, 'get');
    const v = this.map()?.get(key);
    if (typeof v === 'object' && v !== null) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
    return v;
  }
  put(key: K, value: V): void {
    checkMapKey(key, 'put');
    this.mapForWrite().set(key, value);
  }
  putAll(entries: Iterable<readonly [K, V]>): void {
    const list = checkedMapEntries(entries);
    if (list.length === 0) return; // nothing put stores no empty map (the disk backend keeps none either)
    const m = this.mapForWrite();
    for (const [k, v] of list) m.set(k, v);
  }
  remove(key: K): void {
    checkMapKey(key, 'remove');
    const m = this.mapMarked();
    if (m === undefined) return;
    m.delete(key);
    if (m.size === 0) this.clear();
  }
  contains(key: K): boolean {
    checkMapKey(key, 'contains');
    return this.map()?.has(key) ?? false;
  }
  entries(): IterableIterator<[K, V]> {
    return (this.mapMarked() ?? new Map<K, V>()).entries();
  }
  keys(): IterableIterator<K> {
    return (this.map() ?? new Map<K, V>()).keys();
  }
  values(): IterableIterator<V> {
    return (this.mapMarked() ?? new Map<K, V>()).values();
  }
  isEmpty(): boolean {
    const m = this.map();
    return m === undefined || m.size === 0;
  }
  clear(): void {
    if (this.t.read(this.ctx.kgIndex)?.deleteHashed(this.ctx.key, this.ctx.hash)) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
}

export class ReducingHandle<T> implements ReducingState<T> {
  constructor(private readonly inner: ValueState<T>, private readonly reduce: (a: T, b: T) => T) {}
  get(): T | undefined {
    return this.inner.value();
  }
  add(value: T): void {
    // As Flink's reducing state: adding null clears (it called reduce with null).
    if (clearsValue(value)) return this.clear();
    const cur = this.inner.value();
    this.inner.update(cur === undefined ? value : this.reduce(cur, value));
  }
  clear(): void {
    this.inner.clear();
  }
}

export class AggregatingHandle<IN, ACC, OUT> implements AggregatingState<IN, OUT> {
  constructor(private readonly inner: ValueState<ACC>, private readonly fn: { createAccumulator(): ACC; add(v: IN, a: ACC): ACC; getResult(a: ACC): OUT }) {}
  get(): OUT | undefined {
    const acc = this.inner.value();
    return acc === undefined ? undefined : this.fn.getResult(acc);
  }
  add(value: IN): void {
    if (clearsValue(value)) return this.clear(); // as Flink's aggregating state
    const acc = this.inner.value() ?? this.fn.createAccumulator();
    this.inner.update(this.fn.add(value, acc));
  }
  clear(): void {
    this.inner.clear();
  }
}
