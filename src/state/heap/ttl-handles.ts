/**
 * TTL state handles of the heap backend: values are stored wrapped with their last-access
 * time ({v, t}, the same form snapshots record); expired values are invisible and removed
 * lazily, when read. Any access to an existing entry marks the key changed (StateTable.mark):
 * a read may remove it, restamp it or hand out a live object.
 */
import type { ListState, MapState, StateTtlConfig, ValueState } from '../../core/state.ts';
import { checkedMapEntries, checkListElement, checkListElements, checkMapKey, clearsValue, defaultValueOf } from '../../core/state.ts';
import type { Clock } from '../../core/clock.ts';
import type { KeyContext } from '../key-context.ts';
import type { StateTable } from './state-table.ts';
import { EMPTY } from './handles.ts';

interface Stamped<T> {
  v: T;
  /** Processing time of the last write (or read, with onReadAndWrite). */
  t: number;
}

function ttlExpired(s: Stamped<unknown>, cfg: StateTtlConfig, now: number): boolean {
  return s.t + cfg.ttlMs <= now;
}

export class TtlValueHandle<T> implements ValueState<T> {
  constructor(
    private readonly t: StateTable,
    private readonly ctx: KeyContext,
    private readonly defaultValue: T | undefined,
    private readonly clock: Clock,
    private readonly cfg: StateTtlConfig,
  ) {}
  value(): T | undefined {
    const g = this.t.read(this.ctx.kgIndex);
    const s = g?.getHashed(this.ctx.key, this.ctx.hash) as Stamped<T> | undefined;
    if (s === undefined) return defaultValueOf(this.defaultValue);
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
    const now = this.clock.now();
    if (ttlExpired(s, this.cfg, now)) {
      if (this.cfg.visibility === 'returnExpiredIfNotCleanedUp') return s.v;
      g!.deleteHashed(this.ctx.key, this.ctx.hash);
      return defaultValueOf(this.defaultValue);
    }
    if (this.cfg.updateType === 'onReadAndWrite') s.t = now;
    return s.v;
  }
  update(value: T): void {
    if (clearsValue(value)) return this.clear();
    this.t.write(this.ctx.kgIndex, this.ctx.key).setHashed(this.ctx.key, this.ctx.hash, { v: value, t: this.clock.now() } satisfies Stamped<T>);
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
  clear(): void {
    if (this.t.read(this.ctx.kgIndex)?.deleteHashed(this.ctx.key, this.ctx.hash)) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
}

export class TtlListHandle<T> implements ListState<T> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext, private readonly clock: Clock, private readonly cfg: StateTtlConfig) {}
  get(): readonly T[] {
    const g = this.t.read(this.ctx.kgIndex);
    const l = g?.getHashed(this.ctx.key, this.ctx.hash) as Stamped<T>[] | undefined;
    if (l === undefined) return EMPTY;
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
    const now = this.clock.now();
    const live = this.cfg.visibility === 'returnExpiredIfNotCleanedUp' ? l : l.filter((s) => !ttlExpired(s, this.cfg, now));
    if (live.length !== l.length) {
      if (live.length === 0) g!.deleteHashed(this.ctx.key, this.ctx.hash);
      else g!.setHashed(this.ctx.key, this.ctx.hash, live);
    }
    // Only live elements are restamped: an expired one still visible (returnExpiredIfNotCleanedUp)
    // would otherwise come back to life at every read and never be cleaned up (Flink filters first).
    if (this.cfg.updateType === 'onReadAndWrite') for (const s of live) if (!ttlExpired(s, this.cfg, now)) s.t = now;
    return live.map((s) => s.v);
  }
  add(value: T): void {
    checkListElement(value, 'add');
    const g = this.t.write(this.ctx.kgIndex, this.ctx.key);
    const l = g.getHashed(this.ctx.key, this.ctx.hash) as Stamped<T>[] | undefined;
    const s = { v: value, t: this.clock.now() };
    if (l === undefined) g.setHashed(this.ctx.key, this.ctx.hash, [s]);
    else l.push(s);
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
  addAll(values: readonly T[]): void {
    checkListElements(values, 'addAll');
    for (const v of values) this.add(v);
  }
  update(values: readonly T[]): void {
    checkListElements(values, 'update');
    if (values.length === 0) return this.clear();
    const now = this.clock.now();
    this.t.write(this.ctx.kgIndex, this.ctx.key).setHashed(this.ctx.key, this.ctx.hash, values.map((v) => ({ v, t: now })));
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
  clear(): void {
    if (this.t.read(this.ctx.kgIndex)?.deleteHashed(this.ctx.key, this.ctx.hash)) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
}

export class TtlMapHandle<K, V> implements MapState<K, V> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext, private readonly clock: Clock, private readonly cfg: StateTtlConfig) {}
  /** The key's map, marked changed when there is one (every caller may restamp, remove or hand out values). */
  private map(): Map<K, Stamped<V>> | undefined {
    const m = this.t.read(this.ctx.kgIndex)?.getHashed(this.ctx.key, this.ctx.hash) as Map<K, Stamped<V>> | undefined;
    if (m !== undefined) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
    return m;
  }
  private live(): Map<K, Stamped<V>> | undefined {
    const m = this.map();
    if (m === undefined || this.cfg.visibility === 'returnExpiredIfNotCleanedUp') return m;
    const now = this.clock.now();
    for (const [k, s] of m) if (ttlExpired(s, this.cfg, now)) m.delete(k);
    if (m.size === 0) {
      this.clear();
      return undefined;
    }
    return m;
  }
  get(key: K): V | undefined {
    checkMapKey(key, 'get');
    const m = this.map();
    const s = m?.get(key);
    if (s === undefined) return undefined;
    const now = this.clock.now();
    if (ttlExpired(s, this.cfg, now)) {
      if (this.cfg.visibility === 'returnExpiredIfNotCleanedUp') return s.v;
      this.remove(key);
      return undefined;
    }
    if (this.cfg.updateType === 'onReadAndWrite') s.t = now;
    return s.v;
  }
  put(key: K, value: V): void {
    checkMapKey(key, 'put');
    const g = this.t.write(this.ctx.kgIndex, this.ctx.key);
    let m = g.getHashed(this.ctx.key, this.ctx.hash) as Map<K, Stamped<V>> | undefined;
    if (m === undefined) {
      m = new Map();
      g.setHashed(this.ctx.key, this.ctx.hash, m);
    }
    m.set(key, { v: value, t: this.clock.now() });
    this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
  putAll(entries: Iterable<readonly [K, V]>): void {
    for (const [k, v] of checkedMapEntries(entries)) this.put(k, v);
  }
  remove(key: K): void {
    checkMapKey(key, 'remove');
    const m = this.map();
    if (m === undefined) return;
    m.delete(key);
    if (m.size === 0) this.clear();
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
      for (const [, s] of all) if (!ttlExpired(s, this.cfg, now)) s.t = now;
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
    if (this.t.read(this.ctx.kgIndex)?.deleteHashed(this.ctx.key, this.ctx.hash)) this.t.mark(this.ctx.kgIndex, this.ctx.key, this.ctx.hash);
  }
}
