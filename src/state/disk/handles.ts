/**
 * State handles of the disk backend: each reads and writes the current key's entry in its
 * state's write-back cache (cache.ts), in the heap backend's value forms (TTL values as
 * {v, t}; map state as a Map), and marks every change, so nothing changed through a handle
 * is lost when the entry is evicted. Reducing and aggregating state are value state underneath
 * (the heap backend's wrappers).
 */
import type { ListState, MapState, StateTtlConfig, ValueState } from '../../core/state.ts';
import { checkedMapEntries, checkListElement, checkListElements, checkMapKey, clearsValue, defaultValueOf } from '../../core/state.ts';
import type { Clock } from '../../core/clock.ts';
import type { StateCache } from './cache.ts';

const EMPTY: readonly never[] = Object.freeze([]);

interface Stamped<T> {
  v: T;
  /** Processing time of the last write (or read, with onReadAndWrite). */
  t: number;
}

export function ttlExpired(t: number, cfg: StateTtlConfig, now: number): boolean {
  return t + cfg.ttlMs <= now;
}

export class DiskValueHandle<T> implements ValueState<T> {
  constructor(private readonly c: StateCache, private readonly defaultValue: T | undefined) {}
  value(): T | undefined {
    const v = this.c.current().value as T | undefined;
    return v === undefined ? defaultValueOf(this.defaultValue) : v;
  }
  update(value: T): void {
    if (clearsValue(value)) return this.clear();
    this.c.set(value);
  }
  clear(): void {
    const e = this.c.current();
    if (e.value === undefined) return;
    e.value = undefined;
    this.c.changed(e);
  }
}

export class DiskListHandle<T> implements ListState<T> {
  constructor(private readonly c: StateCache) {}
  get(): readonly T[] {
    return (this.c.current().value as T[] | undefined) ?? EMPTY;
  }
  add(value: T): void {
    checkListElement(value, 'add');
    const e = this.c.current();
    const l = e.value as T[] | undefined;
    if (l === undefined) e.value = [value];
    else l.push(value);
    this.c.changed(e);
  }
  addAll(values: readonly T[]): void {
    checkListElements(values, 'addAll');
    if (values.length === 0) return;
    const e = this.c.current();
    const l = e.value as T[] | undefined;
    if (l === undefined) e.value = values.slice();
    // Up to the length it had: `values` may be this list (addAll(list.get())), which grows.
    else for (let i = 0, n = values.length; i < n; i++) l.push(values[i]!);
    this.c.changed(e);
  }
  update(values: readonly T[]): void {
    checkListElements(values, 'update');
    if (values.length === 0) return this.clear();
    this.c.set(values.slice());
  }
  clear(): void {
    const e = this.c.current();
    if (e.value === undefined) return;
    e.value = undefined;
    this.c.changed(e);
  }
}

export class DiskMapHandle<K, V> implements MapState<K, V> {
  constructor(private readonly c: StateCache) {}
  private map(): Map<K, V> | undefined {
    return this.c.current().value as Map<K, V> | undefined;
  }
  get(key: K): V | undefined {
    checkMapKey(key, 'get');
    return this.map()?.get(key);
  }
  put(key: K, value: V): void {
    checkMapKey(key, 'put');
    const e = this.c.current();
    let m = e.value as Map<K, V> | undefined;
    if (m === undefined) e.value = m = new Map();
    m.set(key, value);
    this.c.changed(e);
  }
  putAll(entries: Iterable<readonly [K, V]>): void {
    const list = checkedMapEntries(entries);
    const e = this.c.current();
    let m = e.value as Map<K, V> | undefined;
    if (m === undefined) e.value = m = new Map();
    for (const [k, v] of list) m.set(k, v);
    if (m.size === 0) e.value = undefined;
    this.c.changed(e);
  }
  remove(key: K): void {
    checkMapKey(key, 'remove');
    const e = this.c.current();
    const m = e.value as Map<K, V> | undefined;
    if (m === undefined || !m.delete(key)) return;
    if (m.size === 0) e.value = undefined;
    this.c.changed(e);
  }
  contains(key: K): boolean {
    checkMapKey(key, 'contains');
    return this.map()?.has(key) ?? false;
  }
  entries(): IterableIterator<[K, V]> {
    return (this.map() ?? new Map<K, V>()).entries();
  }
  keys(): IterableIterator<K> {
    return (this.map() ?? new Map<K, V>()).keys();
  }
  values(): IterableIterator<V> {
    return (this.map() ?? new Map<K, V>()).values();
  }
  isEmpty(): boolean {
    const m = this.map();
    return m === undefined || m.size === 0;
  }
  clear(): void {
    const e = this.c.current();
    if (e.value === undefined) return;
    e.value = undefined;
    this.c.changed(e);
  }
}

export class DiskTtlValueHandle<T> implements ValueState<T> {
  constructor(
    private readonly c: StateCache,
    private readonly defaultValue: T | undefined,
    private readonly clock: Clock,
    private readonly cfg: StateTtlConfig,
  ) {}
  value(): T | undefined {
    const e = this.c.current();
    const s = e.value as Stamped<T> | undefined;
    if (s === undefined) return defaultValueOf(this.defaultValue);
    const now = this.clock.now();
    if (ttlExpired(s.t, this.cfg, now)) {
      if (this.cfg.visibility === 'returnExpiredIfNotCleanedUp') return s.v;
      e.value = undefined;
      this.c.changed(e);
      return defaultValueOf(this.defaultValue);
    }
    if (this.cfg.updateType === 'onReadAndWrite') {
      s.t = now;
      this.c.changed(e);
    }
    return s.v;
  }
  update(value: T): void {
    if (clearsValue(value)) return this.clear();
    this.c.set({ v: value, t: this.clock.now() } satisfies Stamped<T>);
  }
  clear(): void {
    const e = this.c.current();
    if (e.value === undefined) return;
    e.value = undefined;
    this.c.changed(e);
  }
}

export class DiskTtlListHandle<T> implements ListState<T> {
  constructor(private readonly c: StateCache, private readonly clock: Clock, private readonly cfg: StateTtlConfig) {}
  get(): readonly T[] {
    const e = this.c.current();
    const l = e.value as Stamped<T>[] | undefined;
    if (l === undefined) return EMPTY;
    const now = this.clock.now();
    const live = this.cfg.visibility === 'returnExpiredIfNotCleanedUp' ? l : l.filter((s) => !ttlExpired(s.t, this.cfg, now));
    let changed = live.length !== l.length;
    if (changed) e.value = live.length === 0 ? undefined : live;
    // Only live elements are restamped: an expired one still visible (returnExpiredIfNotCleanedUp)
    // would otherwise come back to life at every read and never be cleaned up (Flink filters first).
    if (this.cfg.updateType === 'onReadAndWrite') {
      for (const s of live) {
        if (ttlExpired(s.t, this.cfg, now)) continue;
        s.t = now;
        changed = true;
      }
    }
    if (changed) this.c.changed(e);
    return live.map((s) => s.v);
  }
  add(value: T): void {
    checkListElement(value, 'add');
    const e = this.c.current();
    const l = e.value as Stamped<T>[] | undefined;
    const s = { v: value, t: this.clock.now() };
    if (l === undefined) e.value = [s];
    else l.push(s);
    this.c.changed(e);
  }
  addAll(values: readonly T[]): void {
    checkListElements(values, 'addAll');
    for (const v of values) this.add(v);
  }
  update(values: readonly T[]): void {
    checkListElements(values, 'update');
    if (values.length === 0) return this.clear();
    const now = this.clock.now();
    this.c.set(values.map((v) => ({ v, t: now })));
  }
  clear(): void {
    const e = this.c.current();
    if (e.value === undefined) return;
    e.value = undefined;
    this.c.changed(e);
  }
}

export class DiskTtlMapHandle<K, V> implements MapState<K, V> {
  constructor(private readonly c: StateCache, private readonly clock: Clock, private readonly cfg: StateTtlConfig) {}
  /** The current key's map with expired entries removed (unless they stay visible). */
  private live(): Map<K, Stamped<V>> | undefined {
    const e = this.c.current();
    const m = e.value as Map<K, Stamped<V>> | undefined;
    if (m === undefined || this.cfg.visibility === 'returnExpiredIfNotCleanedUp') return m;
    const now = this.clock.now();
    let removed = false;
    for (const [k, s] of m) {
      if (ttlExpired(s.t, this.cfg, now)) {
        m.delete(k);
        removed = true;
      }
    }
    if (m.size === 0) e.value = undefined;
    if (removed) this.c.changed(e);
    return m.size === 0 ? undefined : m;
  }
  get(key: K): V | undefined {
    checkMapKey(key, 'get');
    const e = this.c.current();
    const m = e.value as Map<K, Stamped<V>> | undefined;
    const s = m?.get(key);
    if (s === undefined) return undefined;
    const now = this.clock.now();
    if (ttlExpired(s.t, this.cfg, now)) {
      if (this.cfg.visibility === 'returnExpiredIfNotCleanedUp') return s.v;
      this.remove(key);
      return undefined;
    }
    if (this.cfg.updateType === 'onReadAndWrite') {
      s.t = now;
      this.c.changed(e);
    }
    return s.v;
  }
  put(key: K, value: V): void {
    checkMapKey(key, 'put');
    const e = this.c.current();
    let m = e.value as Map<K, Stamped<V>> | undefined;
    if (m === undefined) e.value = m = new Map();
    m.set(key, { v: value, t: this.clock.now() });
    this.c.changed(e);
  }
  putAll(entries: Iterable<readonly [K, V]>): void {
    for (const [k, v] of checkedMapEntries(entries)) this.put(k, v);
  }
  remove(key: K): void {
    checkMapKey(key, 'remove');
    const e = this.c.current();
    const m = e.value as Map<K, Stamped<V>> | undefined;
    if (m === undefined || !m.delete(key)) return;
    if (m.size === 0) e.value = undefined;
    this.c.changed(e);
  }
  contains(key: K): boolean {
    checkMapKey(key, 'contains');
    return this.get(key) !== undefined;
  }
  *entries(): IterableIterator<[K, V]> {
    const m = this.live();
    if (m === undefined) return;
    const all = [...m];
    // Iterating reads every entry: with onReadAndWrite each live one is restamped, as Flink's
    // TtlMapState iterator does (before, entries read only by iteration expired).
    if (this.cfg.updateType === 'onReadAndWrite') {
      const now = this.clock.now();
      let restamped = false;
      for (const [, s] of all) {
        if (ttlExpired(s.t, this.cfg, now)) continue;
        s.t = now;
        restamped = true;
      }
      if (restamped) this.c.changed(this.c.current());
    }
    // Entries removed or replaced since the listing was taken (by the caller, between two
    // steps) are skipped or read anew, as a Map's own iterator does.
    for (const [k] of all) {
      const cur = m.get(k);
      if (cur !== undefined) yield [k, cur.v];
    }
  }
  *keys(): IterableIterator<K> {
    for (const [k] of this.entries()) yield k;
  }
  *values(): IterableIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }
  isEmpty(): boolean {
    return this.live() === undefined;
  }
  clear(): void {
    const e = this.c.current();
    if (e.value === undefined) return;
    e.value = undefined;
    this.c.changed(e);
  }
}
