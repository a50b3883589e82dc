/**
 * The heap keyed-state backend: live objects in Maps, one Map per key group and state.
 * Keeping key groups apart is what makes snapshots per key group, and rescaling by moving
 * key groups, cheap. The current key is set by the operator before user code runs; every
 * handle reads and writes the slot of that key.
 */
import type {
  AggregatingState, AggregatingStateDescriptor, AnyStateDescriptor, ListState, ListStateDescriptor,
  MapState, MapStateDescriptor, ReducingState, ReducingStateDescriptor, StateTtlConfig, ValueState,
  ValueStateDescriptor,
} from '../core/state.ts';
import type { Clock } from '../core/clock.ts';
import { keyGroupOf, normalizeKey } from './key-groups.ts';
import { decodeGroupColumns, restoreDecoder, type StateMeta } from './state-codec.ts';
import type { KeyGroupRange } from '../core/checkpoint-format.ts';

export type NormKey = string | number;

/** The key whose state handles currently read and write. */
export class KeyContext {
  key: NormKey = '';
  originalKey: unknown = undefined;
  keyGroup = -1;
  /** keyGroup - range.start, the index into every table's groups. */
  kgIndex = -1;
}

/** Receives a frozen key group when it is about to be touched (copy-on-write by serializing first). */
export interface FrozenGroupSink {
  serializeGroup(table: StateTable, kgIndex: number): void;
}

/**
 * One state's data: a Map from key to value per key group of this subtask's range.
 *
 * Snapshots freeze key groups instead of copying them: the synchronous phase only marks the
 * non-empty groups frozen; the asynchronous phase serializes them in the background while
 * records flow. Any access to a still-frozen group first serializes that group (one group,
 * bounded work), so the snapshot sees the group exactly as it was at the barrier, however the
 * user mutates values in place afterwards.
 */
export class StateTable {
  readonly groups: (Map<NormKey, unknown> | undefined)[];
  frozen: Uint8Array | undefined;
  frozenCount = 0;
  sink: FrozenGroupSink | undefined;
  constructor(readonly descriptor: AnyStateDescriptor, readonly range: KeyGroupRange) {
    this.groups = new Array(Math.max(0, range.end - range.start + 1)).fill(undefined);
  }
  /** The key group's map for reading; undefined when the group holds nothing yet. */
  read(kgIndex: number): Map<NormKey, unknown> | undefined {
    if (this.frozenCount > 0 && this.frozen![kgIndex] === 1) this.thaw(kgIndex);
    return this.groups[kgIndex];
  }
  /** Serializes a frozen group into the snapshot in progress and releases it. */
  thaw(kgIndex: number): void {
    this.frozen![kgIndex] = 0;
    this.frozenCount--;
    this.sink!.serializeGroup(this, kgIndex);
  }
  /** Marks every non-empty group frozen for `sink`; returns the frozen group indices. */
  freeze(sink: FrozenGroupSink): number[] {
    if (this.frozenCount > 0) throw new Error(`state "${this.descriptor.name}" is already frozen by a snapshot in progress`);
    const out: number[] = [];
    this.frozen ??= new Uint8Array(this.groups.length);
    for (let i = 0; i < this.groups.length; i++) {
      const g = this.groups[i];
      if (g !== undefined && g.size > 0) {
        this.frozen[i] = 1;
        out.push(i);
      }
    }
    this.frozenCount = out.length;
    this.sink = sink;
    return out;
  }
  /** The key group's map for writing, created on first use. */
  write(kgIndex: number): Map<NormKey, unknown> {
    if (this.frozenCount > 0 && this.frozen![kgIndex] === 1) this.thaw(kgIndex);
    let m = this.groups[kgIndex];
    if (m === undefined) {
      m = new Map();
      this.groups[kgIndex] = m;
    }
    return m;
  }
  size(): number {
    let n = 0;
    for (const g of this.groups) if (g !== undefined) n += g.size;
    return n;
  }
}

/** State read from a snapshot that no descriptor has claimed yet: decoded when the job registers it. */
export interface RestoredState {
  readonly meta: StateMeta;
  /** Encoded key-group blocks, by key group. */
  readonly groups: Map<number, Uint8Array>;
}

export class HeapKeyedStateBackend {
  readonly ctx = new KeyContext();
  readonly tables = new Map<string, StateTable>();
  private readonly handles = new Map<string, unknown>();
  /** Restored but not yet registered states; carried into later snapshots untouched until claimed. */
  readonly restored = new Map<string, RestoredState>();

  constructor(
    readonly range: KeyGroupRange,
    readonly maxParallelism: number,
    readonly clock: Clock,
    private readonly where: string,
  ) {}

  /** Sets the current key from a key selector's result. Returns the key group. */
  setCurrentKey(originalKey: unknown): number {
    const k = normalizeKey(originalKey);
    const kg = keyGroupOf(k, this.maxParallelism);
    this.setCurrentNormalizedKey(k, kg, originalKey);
    return kg;
  }

  /** Sets the current key whose key group is already known (computed by the partitioner). */
  setCurrentKeyInGroup(originalKey: unknown, kg: number): void {
    this.setCurrentNormalizedKey(normalizeKey(originalKey), kg, originalKey);
  }

  setCurrentNormalizedKey(k: NormKey, kg: number, originalKey: unknown): void {
    const ctx = this.ctx;
    if (kg < this.range.start || kg > this.range.end) {
      throw new Error(
        `${this.where}: key ${JSON.stringify(String(originalKey))} is in key group ${kg}, outside this subtask's range ` +
          `[${this.range.start}, ${this.range.end}]; the stream was not partitioned by this key (use keyBy right before)`,
      );
    }
    ctx.key = k;
    ctx.originalKey = originalKey;
    ctx.keyGroup = kg;
    ctx.kgIndex = kg - this.range.start;
  }

  table(desc: AnyStateDescriptor): StateTable {
    let t = this.tables.get(desc.name);
    if (t === undefined) {
      t = new StateTable(desc, this.range);
      const r = this.restored.get(desc.name);
      if (r !== undefined) {
        // The backend's clock, not Date.now(): TTL checks compare against this.clock.now().
        const decode = restoreDecoder(this.where, r.meta, desc, () => this.clock.now());
        for (const [kg, bytes] of r.groups) {
          const m = new Map<NormKey, unknown>();
          const { keys, values } = decodeGroupColumns(bytes, r.meta.blockFormat);
          for (let i = 0; i < keys.length; i++) m.set(keys[i]!, decode(values[i]));
          if (m.size > 0) t.groups[kg - this.range.start] = m;
        }
        this.restored.delete(desc.name);
      }
      this.tables.set(desc.name, t);
    } else if (t.descriptor.kind !== desc.kind) {
      throw new Error(`${this.where}: state "${desc.name}" is registered as ${t.descriptor.kind} state and cannot be used as ${desc.kind} state`);
    }
    return t;
  }

  private handle<H>(desc: AnyStateDescriptor, make: (t: StateTable) => H): H {
    const existing = this.handles.get(desc.name);
    if (existing !== undefined) {
      const t = this.tables.get(desc.name)!;
      if (t.descriptor.kind !== desc.kind) {
        throw new Error(`${this.where}: state "${desc.name}" is registered as ${t.descriptor.kind} state and cannot be used as ${desc.kind} state`);
      }
      return existing as H;
    }
    const h = make(this.table(desc));
    this.handles.set(desc.name, h);
    return h;
  }

  getValueState<T>(desc: ValueStateDescriptor<T>): ValueState<T> {
    return this.handle(desc, (t) => (desc.ttl ? new TtlValueHandle<T>(t, this.ctx, desc.defaultValue, this.clock, desc.ttl) : new ValueHandle<T>(t, this.ctx, desc.defaultValue)));
  }
  getListState<T>(desc: ListStateDescriptor<T>): ListState<T> {
    return this.handle(desc, (t) => (desc.ttl ? new TtlListHandle<T>(t, this.ctx, this.clock, desc.ttl) : new ListHandle<T>(t, this.ctx)));
  }
  getMapState<K, V>(desc: MapStateDescriptor<K, V>): MapState<K, V> {
    return this.handle(desc, (t) => (desc.ttl ? new TtlMapHandle<K, V>(t, this.ctx, this.clock, desc.ttl) : new MapHandle<K, V>(t, this.ctx)));
  }
  getReducingState<T>(desc: ReducingStateDescriptor<T>): ReducingState<T> {
    return this.handle(desc, (t) => {
      const inner = desc.ttl ? new TtlValueHandle<T>(t, this.ctx, undefined, this.clock, desc.ttl) : new ValueHandle<T>(t, this.ctx, undefined);
      return new ReducingHandle<T>(inner, desc.reduce);
    });
  }
  getAggregatingState<IN, ACC, OUT>(desc: AggregatingStateDescriptor<IN, ACC, OUT>): AggregatingState<IN, OUT> {
    return this.handle(desc, (t) => {
      const inner = desc.ttl ? new TtlValueHandle<ACC>(t, this.ctx, undefined, this.clock, desc.ttl) : new ValueHandle<ACC>(t, this.ctx, undefined);
      return new AggregatingHandle<IN, ACC, OUT>(inner, desc.aggregate);
    });
  }

  /**
   * Removes a state entirely (e.g. a window's state once the window is gone). A group still
   * frozen by a snapshot in progress is serialized first, so that snapshot keeps it.
   */
  dropState(name: string): void {
    const t = this.tables.get(name);
    if (t !== undefined && t.frozenCount > 0) {
      for (let i = 0; i < t.groups.length; i++) if (t.frozen![i] === 1) t.thaw(i);
    }
    this.tables.delete(name);
    this.handles.delete(name);
    this.restored.delete(name);
  }

  /** Every key that has a value under `stateName`, as the user's keys. */
  *keys(stateName: string): IterableIterator<{ key: NormKey; keyGroup: number }> {
    const t = this.tables.get(stateName);
    if (t === undefined) return;
    for (let i = 0; i < t.groups.length; i++) {
      const g = t.read(i);
      if (g === undefined) continue;
      for (const k of [...g.keys()]) yield { key: k, keyGroup: this.range.start + i };
    }
  }
}

class ValueHandle<T> implements ValueState<T> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext, private readonly defaultValue: T | undefined) {}
  value(): T | undefined {
    const g = this.t.read(this.ctx.kgIndex);
    const v = g === undefined ? undefined : (g.get(this.ctx.key) as T | undefined);
    return v === undefined ? this.defaultValue : v;
  }
  update(value: T): void {
    if (value === undefined) return this.clear();
    this.t.write(this.ctx.kgIndex).set(this.ctx.key, value);
  }
  clear(): void {
    this.t.read(this.ctx.kgIndex)?.delete(this.ctx.key);
  }
}

class ListHandle<T> implements ListState<T> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext) {}
  get(): readonly T[] {
    const g = this.t.read(this.ctx.kgIndex);
    return ((g?.get(this.ctx.key) as T[] | undefined) ?? EMPTY) as readonly T[];
  }
  add(value: T): void {
    const g = this.t.write(this.ctx.kgIndex);
    const l = g.get(this.ctx.key) as T[] | undefined;
    if (l === undefined) g.set(this.ctx.key, [value]);
    else l.push(value);
  }
  addAll(values: readonly T[]): void {
    if (values.length === 0) return;
    const g = this.t.write(this.ctx.kgIndex);
    const l = g.get(this.ctx.key) as T[] | undefined;
    if (l === undefined) g.set(this.ctx.key, values.slice());
    else for (const v of values) l.push(v);
  }
  update(values: readonly T[]): void {
    if (values.length === 0) return this.clear();
    this.t.write(this.ctx.kgIndex).set(this.ctx.key, values.slice());
  }
  clear(): void {
    this.t.read(this.ctx.kgIndex)?.delete(this.ctx.key);
  }
}
const EMPTY: readonly never[] = Object.freeze([]);

class MapHandle<K, V> implements MapState<K, V> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext) {}
  private map(): Map<K, V> | undefined {
    return this.t.read(this.ctx.kgIndex)?.get(this.ctx.key) as Map<K, V> | undefined;
  }
  private mapForWrite(): Map<K, V> {
    const g = this.t.write(this.ctx.kgIndex);
    let m = g.get(this.ctx.key) as Map<K, V> | undefined;
    if (m === undefined) {
      m = new Map();
      g.set(this.ctx.key, m);
    }
    return m;
  }
  get(key: K): V | undefined {
    return this.map()?.get(key);
  }
  put(key: K, value: V): void {
    this.mapForWrite().set(key, value);
  }
  putAll(entries: Iterable<readonly [K, V]>): void {
    const m = this.mapForWrite();
    for (const [k, v] of entries) m.set(k, v);
  }
  remove(key: K): void {
    const m = this.map();
    if (m === undefined) return;
    m.delete(key);
    if (m.size === 0) this.clear();
  }
  contains(key: K): boolean {
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
    this.t.read(this.ctx.kgIndex)?.delete(this.ctx.key);
  }
}

class ReducingHandle<T> implements ReducingState<T> {
  constructor(private readonly inner: ValueState<T>, private readonly reduce: (a: T, b: T) => T) {}
  get(): T | undefined {
    return this.inner.value();
  }
  add(value: T): void {
    const cur = this.inner.value();
    this.inner.update(cur === undefined ? value : this.reduce(cur, value));
  }
  clear(): void {
    this.inner.clear();
  }
}

class AggregatingHandle<IN, ACC, OUT> implements AggregatingState<IN, OUT> {
  constructor(private readonly inner: ValueState<ACC>, private readonly fn: { createAccumulator(): ACC; add(v: IN, a: ACC): ACC; getResult(a: ACC): OUT }) {}
  get(): OUT | undefined {
    const acc = this.inner.value();
    return acc === undefined ? undefined : this.fn.getResult(acc);
  }
  add(value: IN): void {
    const acc = this.inner.value() ?? this.fn.createAccumulator();
    this.inner.update(this.fn.add(value, acc));
  }
  clear(): void {
    this.inner.clear();
  }
}

// ---- TTL: values wrapped with their last-access time; expired values are invisible and removed lazily.

interface Stamped<T> {
  v: T;
  /** Processing time of the last write (or read, with onReadAndWrite). */
  t: number;
}

function ttlExpired(s: Stamped<unknown>, cfg: StateTtlConfig, now: number): boolean {
  return s.t + cfg.ttlMs <= now;
}

class TtlValueHandle<T> implements ValueState<T> {
  constructor(
    private readonly t: StateTable,
    private readonly ctx: KeyContext,
    private readonly defaultValue: T | undefined,
    private readonly clock: Clock,
    private readonly cfg: StateTtlConfig,
  ) {}
  value(): T | undefined {
    const g = this.t.read(this.ctx.kgIndex);
    const s = g?.get(this.ctx.key) as Stamped<T> | undefined;
    if (s === undefined) return this.defaultValue;
    const now = this.clock.now();
    if (ttlExpired(s, this.cfg, now)) {
      if (this.cfg.visibility === 'returnExpiredIfNotCleanedUp') return s.v;
      g!.delete(this.ctx.key);
      return this.defaultValue;
    }
    if (this.cfg.updateType === 'onReadAndWrite') s.t = now;
    return s.v;
  }
  update(value: T): void {
    if (value === undefined) return this.clear();
    this.t.write(this.ctx.kgIndex).set(this.ctx.key, { v: value, t: this.clock.now() } satisfies Stamped<T>);
  }
  clear(): void {
    this.t.read(this.ctx.kgIndex)?.delete(this.ctx.key);
  }
}

class TtlListHandle<T> implements ListState<T> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext, private readonly clock: Clock, private readonly cfg: StateTtlConfig) {}
  get(): readonly T[] {
    const g = this.t.read(this.ctx.kgIndex);
    const l = g?.get(this.ctx.key) as Stamped<T>[] | undefined;
    if (l === undefined) return EMPTY;
    const now = this.clock.now();
    const live = this.cfg.visibility === 'returnExpiredIfNotCleanedUp' ? l : l.filter((s) => !ttlExpired(s, this.cfg, now));
    if (live.length !== l.length) {
      if (live.length === 0) g!.delete(this.ctx.key);
      else g!.set(this.ctx.key, live);
    }
    if (this.cfg.updateType === 'onReadAndWrite') for (const s of live) s.t = now;
    return live.map((s) => s.v);
  }
  add(value: T): void {
    const g = this.t.write(this.ctx.kgIndex);
    const l = g.get(this.ctx.key) as Stamped<T>[] | undefined;
    const s = { v: value, t: this.clock.now() };
    if (l === undefined) g.set(this.ctx.key, [s]);
    else l.push(s);
  }
  addAll(values: readonly T[]): void {
    for (const v of values) this.add(v);
  }
  update(values: readonly T[]): void {
    if (values.length === 0) return this.clear();
    const now = this.clock.now();
    this.t.write(this.ctx.kgIndex).set(this.ctx.key, values.map((v) => ({ v, t: now })));
  }
  clear(): void {
    this.t.read(this.ctx.kgIndex)?.delete(this.ctx.key);
  }
}

class TtlMapHandle<K, V> implements MapState<K, V> {
  constructor(private readonly t: StateTable, private readonly ctx: KeyContext, private readonly clock: Clock, private readonly cfg: StateTtlConfig) {}
  private map(): Map<K, Stamped<V>> | undefined {
    return this.t.read(this.ctx.kgIndex)?.get(this.ctx.key) as Map<K, Stamped<V>> | undefined;
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
    const g = this.t.write(this.ctx.kgIndex);
    let m = g.get(this.ctx.key) as Map<K, Stamped<V>> | undefined;
    if (m === undefined) {
      m = new Map();
      g.set(this.ctx.key, m);
    }
    m.set(key, { v: value, t: this.clock.now() });
  }
  putAll(entries: Iterable<readonly [K, V]>): void {
    for (const [k, v] of entries) this.put(k, v);
  }
  remove(key: K): void {
    const m = this.map();
    if (m === undefined) return;
    m.delete(key);
    if (m.size === 0) this.clear();
  }
  contains(key: K): boolean {
    return this.get(key) !== undefined;
  }
  *entries(): IterableIterator<[K, V]> {
    const m = this.live();
    if (m) for (const [k, s] of [...m]) yield [k, s.v];
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
    this.t.read(this.ctx.kgIndex)?.delete(this.ctx.key);
  }
}

