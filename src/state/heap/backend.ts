/**
 * The heap keyed-state backend (the default): live objects in Maps, one Map per key group
 * and state (state-table.ts). Snapshots freeze groups and serialize them in the background
 * (snapshot.ts); a restore keeps blocks encoded until a descriptor claims them (restore.ts).
 * With incremental checkpoints, changes are tracked per key and snapshots are a base or a
 * delta on the last completed checkpoint (incremental.ts).
 */
import type {
  AggregatingState, AggregatingStateDescriptor, AnyStateDescriptor, ListState, ListStateDescriptor, MapState,
  MapStateDescriptor, ReducingState, ReducingStateDescriptor, ValueState, ValueStateDescriptor,
} from '../../core/state.ts';
import type { Clock } from '../../core/clock.ts';
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateInputHandle } from '../../core/state-streams.ts';
import type {
  KeyedStateBackend, KeyedStateBackendFactory, KeyedStateHandle, KeyedStateSnapshot, KeyGroupBlock, KeyGroupBlockSource, SnapshotOptions, SnapshotTarget,
} from '../backend.ts';
import { ChainPlanner } from './incremental.ts';
import { KeyContext } from '../key-context.ts';
import { keyBits, keyGroupOfBits, normalizeKey, type NormKey } from '../key-groups.ts';
import { decodeGroupColumns, restoreDecoder } from '../state-codec.ts';
import { COLUMNAR_FORMAT } from '../columnar-block.ts';
import { AggregatingHandle, ListHandle, MapHandle, ReducingHandle, ValueHandle } from './handles.ts';
import { readStateFiles, type RestoredState } from './restore.ts';
import { HeapSnapshot } from './snapshot.ts';
import { StateTable } from './state-table.ts';
import { filledGroup, mapGroupValues } from './group-map.ts';
import { KeyTable, keyHash, keyHashOfBits } from '../key-table.ts';
import { TtlListHandle, TtlMapHandle, TtlValueHandle } from './ttl-handles.ts';
import { TtlSweep } from './ttl-sweep.ts';

/** Settings of the heap backend (state.backend.heap.*). */
export interface HeapBackendOptions {
  /** Keep each key group's key column between full snapshots (key-column-cache.ts); default on. */
  readonly snapshotKeyCache?: boolean;
}

/**
 * Entries a state needs before a batch prefetches its lookups: below this its tables stay in
 * the CPU's caches and the prefetch pass only costs (bench/key-table.ts, the word count).
 */
const PREFETCH_MIN_ENTRIES = 1 << 17;
/**
 * The largest size hint per key group (presizeLike): a window that gets far fewer keys than the
 * one before it holds at most this many empty entries' index per group (16 KiB), not the whole
 * previous size. Groups above it grow by rebuilds as without a hint, a few for large ones.
 */
const PRESIZE_MAX_ENTRIES = 1024;
/** Batches between two looks at the states' sizes (a look sums every key group's size). */
const PREFETCH_RECHECK_BATCHES = 64;

export class HeapKeyedStateBackend implements KeyedStateBackend {
  /** A value read is the table's own, and reading an object marks it changed for incremental checkpoints. */
  readonly keepsInPlaceChanges = true;
  readonly ctx: KeyContext;
  private readonly tables = new Map<string, StateTable>();
  private readonly handles = new Map<string, unknown>();
  /** Restored but not yet registered states; carried into later snapshots untouched until claimed. */
  private readonly restored = new Map<string, RestoredState>();
  /** Snapshots that still have frozen groups. */
  private readonly freezing = new Set<HeapSnapshot>();
  /** Incremental checkpoints: change epochs and the chain deltas build on. */
  private readonly chains = new ChainPlanner();
  readonly restoresChains = true;
  /** Incremental cleanup of the states with a TTL, a few entries per record (ttl-sweep.ts). */
  private sweeps: { readonly name: string; readonly sweep: TtlSweep }[] = [];

  constructor(
    readonly keyGroupRange: KeyGroupRange,
    readonly maxParallelism: number,
    private readonly clock: Clock,
    private readonly where: string,
    private readonly options: HeapBackendOptions = {},
  ) {
    this.ctx = new KeyContext(keyGroupRange, where);
  }

  /**
   * Prefetch (see KeyedStateBackend.prefetch): only where state is large enough that its
   * lookups miss the CPU's caches; decided again every PREFETCH_RECHECK_BATCHES batches.
   */
  wantsPrefetch(): boolean {
    if (--this.prefetchRecheck <= 0) this.recheckPrefetch();
    return this.prefetchTables.length !== 0;
  }

  prefetch(_keys: readonly NormKey[], kgIndexes: Int32Array, hashes: Int32Array, n: number): number {
    if (this.pfEntries.length < n) this.pfEntries = new Int32Array(2 * n);
    const of = this.pfTables;
    let x = 0;
    for (const t of this.prefetchTables) {
      for (let i = 0; i < n; i++) of[i] = t.tableOf(kgIndexes[i]!);
      x += KeyTable.touchAll(of, hashes, n, this.pfEntries, this.pfKeys);
    }
    return x;
  }

  private pfEntries = new Int32Array(0);
  private pfTables: (KeyTable<unknown> | undefined)[] = [];
  private readonly pfKeys: unknown[] = [];

  private prefetchRecheck = 0;
  private prefetchTables: StateTable[] = [];

  private recheckPrefetch(): void {
    this.prefetchRecheck = PREFETCH_RECHECK_BATCHES;
    this.prefetchTables = [...this.tables.values()].filter((t) => t.entryCount() >= PREFETCH_MIN_ENTRIES);
  }

  setCurrentKey(originalKey: unknown): number {
    const ctx = this.ctx;
    // The key of the record before (a windowAll's one key, runs of a hot key): the same
    // number or string normalises and hashes to what ctx holds, so neither is done again.
    if (originalKey === ctx.originalKey && (typeof originalKey === 'number' || typeof originalKey === 'string')) {
      if (this.sweeps.length !== 0) this.sweep();
      return ctx.keyGroup;
    }
    const k = normalizeKey(originalKey);
    const bits = keyBits(k);
    const kg = keyGroupOfBits(bits, this.maxParallelism);
    this.ctx.set(k, kg, originalKey, keyHashOfBits(k, bits));
    if (this.sweeps.length !== 0) this.sweep();
    return kg;
  }

  setCurrentKeyInGroup(originalKey: unknown, keyGroup: number): void {
    const ctx = this.ctx;
    if (originalKey === ctx.originalKey && keyGroup === ctx.keyGroup && (typeof originalKey === 'number' || typeof originalKey === 'string')) {
      if (this.sweeps.length !== 0) this.sweep();
      return;
    }
    const k = normalizeKey(originalKey);
    this.ctx.set(k, keyGroup, originalKey, keyHash(k));
    if (this.sweeps.length !== 0) this.sweep();
  }

  setCurrentPreparedKey(originalKey: unknown, key: NormKey, keyGroup: number, hash: number): void {
    this.ctx.set(key, keyGroup, originalKey, hash);
    if (this.sweeps.length !== 0) this.sweep();
  }

  /** A record's share of TTL cleanup: a few entries of each TTL state (before the record touches state). */
  private sweep(): void {
    const now = this.clock.now();
    for (const s of this.sweeps) s.sweep.step(now);
  }

  setCurrentNormalizedKey(key: NormKey, keyGroup: number, originalKey: unknown): void {
    this.ctx.set(key, keyGroup, originalKey, keyHash(key));
  }

  /** The state's table, created (and filled from restored data) on first use. */
  private table(desc: AnyStateDescriptor): StateTable {
    let t = this.tables.get(desc.name);
    if (t === undefined) {
      t = new StateTable(desc, this.keyGroupRange, this.options.snapshotKeyCache ?? true);
      const r = this.restored.get(desc.name);
      if (r !== undefined) {
        this.decodeRestored(t, r);
        this.restored.delete(desc.name);
        // The base holds this state as read (its old meta); deltas would hold it as now declared.
        this.chains.invalidateChains();
      }
      if (this.chains.isTracking) t.track(this.chains.current);
      this.tables.set(desc.name, t);
      if (desc.ttl !== undefined) this.sweeps.push({ name: desc.name, sweep: new TtlSweep(t, desc.ttl) });
    } else if (t.descriptor.kind !== desc.kind) {
      throw this.kindMismatch(t, desc);
    }
    return t;
  }

  private decodeRestored(t: StateTable, r: RestoredState): void {
    // The backend's clock, not Date.now(): TTL checks compare against this.clock.now().
    const decode = restoreDecoder(this.where, r.meta, t.descriptor, () => this.clock.now());
    for (const [kg, bytes] of r.groups) {
      // A group merged from an incremental chain is a map already: its raw values decoded in place.
      let g = r.merged.get(kg);
      if (g !== undefined) {
        mapGroupValues(g, decode);
      } else {
        const { keys, values } = decodeGroupColumns(bytes, r.meta.blockFormat);
        if (keys.length === 0) continue;
        for (let i = 0; i < keys.length; i++) values[i] = decode(values[i]); // the decoded columns are this loop's own
        g = filledGroup(keys, values);
      }
      if (g.size === 0) continue;
      const kgIndex = kg - this.keyGroupRange.start;
      t.groups[kgIndex] = g;
      if (r.meta.blockFormat === COLUMNAR_FORMAT) t.restoreKeyCache(kgIndex, bytes);
    }
  }

  private kindMismatch(t: StateTable, desc: AnyStateDescriptor): Error {
    return new Error(`${this.where}: state "${desc.name}" is registered as ${t.descriptor.kind} state and cannot be used as ${desc.kind} state`);
  }

  private handle<H>(desc: AnyStateDescriptor, make: (t: StateTable) => H): H {
    const existing = this.handles.get(desc.name);
    if (existing !== undefined) {
      const t = this.tables.get(desc.name)!;
      if (t.descriptor.kind !== desc.kind) throw this.kindMismatch(t, desc);
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

  /** A group still frozen by a snapshot in progress is serialized first, so that snapshot keeps it. */
  dropState(name: string): void {
    this.tables.get(name)?.thawAll();
    const existed = this.tables.delete(name) || this.restored.has(name);
    this.sweeps = this.sweeps.filter((s) => s.name !== name);
    this.handles.delete(name);
    this.restored.delete(name);
    // The next deltas say "this state is gone" (a state of the same name made later is all new keys).
    if (existed) this.chains.stateDropped(name);
  }

  *keys(stateName: string): IterableIterator<{ key: NormKey; keyGroup: number }> {
    const t = this.tables.get(stateName);
    if (t === undefined) return;
    for (let i = 0; i < t.groups.length; i++) {
      const g = t.read(i);
      if (g === undefined) continue;
      for (const k of [...g.keys()]) yield { key: k, keyGroup: this.keyGroupRange.start + i };
    }
  }

  keysInGroup(stateName: string, keyGroup: number): Iterable<NormKey> {
    const t = this.tables.get(stateName);
    const g = t?.read(keyGroup - this.keyGroupRange.start);
    return g === undefined ? NO_KEYS : g.keys();
  }

  visitGroup(stateName: string, keyGroup: number, visit: (value: unknown, key: NormKey) => void): boolean {
    const t = this.tables.get(stateName);
    if (t === undefined) return true;
    if (t.descriptor.ttl !== undefined) return false;
    const g = t.read(keyGroup - this.keyGroupRange.start);
    if (g instanceof KeyTable) g.visitReadOnly(visit);
    else if (g !== undefined) g.forEach(visit);
    return true;
  }

  presizeLike(stateName: string, likeStateName: string): void {
    const t = this.tables.get(stateName);
    const like = this.tables.get(likeStateName);
    if (t === undefined || like === undefined) return;
    const hints = new Int32Array(t.groups.length);
    for (let i = 0; i < hints.length; i++) hints[i] = Math.min(like.groups[i]?.size ?? 0, PRESIZE_MAX_ENTRIES);
    t.sizeHints = hints;
  }

  hasStates(): boolean {
    return this.tables.size > 0 || this.restored.size > 0;
  }

  restoredStateNames(): string[] {
    return [...this.restored.keys()];
  }

  snapshot(timers?: KeyGroupBlockSource, options?: SnapshotOptions): KeyedStateSnapshot {
    // Tables hold one frozen version at a time: an older snapshot still serializing in the
    // background finishes its frozen groups now (bounded by what it has left).
    for (const s of [...this.freezing]) s.serializeRemaining();
    let incremental;
    if (options?.incremental !== undefined) {
      if (!this.chains.isTracking) {
        this.chains.startTracking();
        for (const t of this.tables.values()) t.track(this.chains.current);
      }
      incremental = this.chains.plan(options.checkpointId, options.incremental);
    }
    const s = new HeapSnapshot({
      tables: this.tables.values(),
      restored: this.restored,
      timers,
      keyGroupRange: this.keyGroupRange,
      maxParallelism: this.maxParallelism,
      onReleased: (x) => this.freezing.delete(x),
      ...(incremental !== undefined ? { incremental } : {}),
      nowMs: this.clock.now(),
    });
    if (s.holdsFrozenGroups()) this.freezing.add(s);
    if (incremental === undefined) return s;
    const id = incremental.checkpointId;
    return {
      write: (target: SnapshotTarget): Promise<KeyedStateHandle> => s.write(target).then((h) => {
        this.chains.recordWritten(id, h.chain!);
        return h;
      }),
      step: () => s.step(),
      abort: () => s.abort(),
    };
  }

  notifyCheckpointComplete(checkpointId: number): void {
    this.chains.complete(checkpointId);
  }

  notifyCheckpointAborted(checkpointId: number): void {
    this.chains.aborted(checkpointId);
  }

  async restore(inputs: readonly StateInputHandle[]): Promise<KeyGroupBlock[]> {
    if (this.tables.size > 0) throw new Error(`${this.where}: state is restored before any state is registered`);
    return readStateFiles(inputs, this.keyGroupRange, this.maxParallelism, this.restored);
  }

  dispose(): void {
    for (const s of [...this.freezing]) s.abort();
    this.tables.clear();
    this.handles.clear();
    this.restored.clear();
  }

  /** Key groups frozen by snapshots in progress, over all states (diagnostics and tests). */
  frozenGroups(): number {
    let n = 0;
    for (const t of this.tables.values()) n += t.frozenCount;
    return n;
  }

  /** Bytes the key column caches hold over all states (diagnostics and tests). */
  snapshotKeyCacheBytes(): number {
    let n = 0;
    for (const t of this.tables.values()) n += t.keyCacheBytes();
    return n;
  }

  /** Whether one key group of one state is still frozen by a snapshot in progress (diagnostics and tests). */
  isGroupFrozen(stateName: string, keyGroup: number): boolean {
    return this.tables.get(stateName)?.isFrozen(keyGroup - this.keyGroupRange.start) ?? false;
  }
}

const NO_KEYS: readonly NormKey[] = Object.freeze([]);

export const heapBackendFactory: KeyedStateBackendFactory = heapBackendFactoryWith({});

/** The heap backend with settings (state.backend.heap.*). */
export function heapBackendFactoryWith(options: HeapBackendOptions): KeyedStateBackendFactory {
  return { name: 'heap', create: (p) => new HeapKeyedStateBackend(p.keyGroupRange, p.maxParallelism, p.clock, p.where, options) };
}
