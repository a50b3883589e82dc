/**
 * The disk keyed-state backend: keyed state in an embedded LMDB store on local disk
 * (store.ts), one per operator subtask, with a bounded write-back cache in front of it
 * (cache.ts), so state can be many times larger than the JS heap while user code keeps
 * synchronous state access. Keys are laid out key group first (keys.ts); snapshots read a
 * point-in-time view of the store and write the same state files as the heap backend
 * (snapshot.ts); a restore loads the blocks of this subtask's key groups into the store.
 *
 * Each state has an id in the store's keys. A restored state keeps its stored form until a
 * descriptor claims it: then it is adopted as it is when the serializer, its version, the kind
 * and TTL are unchanged, or rewritten through the serializer's migration otherwise.
 */
import type {
  AggregatingState, AggregatingStateDescriptor, AnyStateDescriptor, ListState, ListStateDescriptor, MapState,
  MapStateDescriptor, ReducingState, ReducingStateDescriptor, ValueState, ValueStateDescriptor,
} from '../../core/state.ts';
import type { Clock } from '../../core/clock.ts';
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateInputHandle } from '../../core/state-streams.ts';
import { WeirError } from '../../core/errors.ts';
import type {
  KeyedStateBackend, KeyedStateBackendFactory, KeyedStateSnapshot, KeyGroupBlock, KeyGroupBlockSource, SnapshotOptions, SnapshotTarget,
} from '../backend.ts';
import { ChainPlanner } from '../heap/incremental.ts';
import { DiskChangeLog } from './changes.ts';
import { DiskDeltaSnapshot } from './delta-snapshot.ts';
import { KeyContext } from '../key-context.ts';
import { keyBits, keyGroupOfBits, normalizeKey, type NormKey } from '../key-groups.ts';
import { keyHash, keyHashOfBits } from '../key-table.ts';
import { BLOCK_FORMAT, restoreDecoder, stateMeta, stateValueEncoder, type StateMeta } from '../state-codec.ts';
import { AggregatingHandle, ReducingHandle } from '../heap/handles.ts';
import { StateCache, WriteBack, type ValueForms } from './cache.ts';
import {
  DiskListHandle, DiskMapHandle, DiskTtlListHandle, DiskTtlMapHandle, DiskTtlValueHandle, DiskValueHandle, ttlExpired,
} from './handles.ts';
import {
  encodeStoreKey, keyGroupOfStoreKey, MAX_STATE_ID, normKeyOfStoreKey, stateIdOfStoreKey, storeKeyPrefix,
} from './keys.ts';
import { KeyFilter } from './key-filter.ts';
import { loadStateFiles } from './restore.ts';
import { blockState, DiskSnapshot, type ExpiredKey, type SnapshotState } from './snapshot.ts';
import { ThreadedDiskSnapshot } from './threaded-snapshot.ts';
import type { IncrementalPart } from '../state-file-write.ts';
import { DiskStore } from './store.ts';
import { packStored, unpackStored } from './stored-value.ts';
import { BatchWriter } from './write-thread.ts';
import { resolveDiskOptions, type DiskBackendOptions, type ResolvedDiskOptions } from './options.ts';

interface Registered {
  readonly desc: AnyStateDescriptor;
  readonly cache: StateCache;
  readonly handle: unknown;
}

/** A restored state no descriptor has claimed yet: in the store under its id, in the form it was written. */
export interface StoredState {
  readonly stateId: number;
  readonly meta: StateMeta;
}

/** Entries moved per write transaction when a restored state is migrated or a state dropped. */
const BATCH_ENTRIES = 10_000;
/**
 * Store entries the incremental TTL cleanup looks at per entry the cache wrote back (so it
 * costs a fixed share of the writes), and at most per flush.
 */
const CLEANUP_ENTRIES_PER_WRITE = 2;
const MAX_CLEANUP_ENTRIES = 1000;

export class DiskKeyedStateBackend implements KeyedStateBackend {
  readonly ctx: KeyContext;
  private storeOrUndefined: DiskStore | undefined;
  private wb: WriteBack | undefined;
  private readonly states = new Map<string, Registered>();
  private readonly restored = new Map<string, StoredState>();
  private readonly inProgress = new Set<DiskSnapshot | DiskDeltaSnapshot | ThreadedDiskSnapshot>();
  /** Incremental checkpoints: epochs and the chain deltas build on (the heap backend's planner). */
  private readonly chains = new ChainPlanner();
  private changes: DiskChangeLog | undefined;
  readonly restoresChains = true;
  private nextStateId = 1;
  /** Where the incremental TTL cleanup goes on (a store key; undefined: from the start). */
  private cleanupFrom: Buffer | undefined;

  constructor(
    readonly keyGroupRange: KeyGroupRange,
    readonly maxParallelism: number,
    private readonly clock: Clock,
    private readonly where: string,
    private readonly options: ResolvedDiskOptions,
  ) {
    this.ctx = new KeyContext(keyGroupRange, where);
  }

  /** The store, made on first use (a keyed operator that never uses state makes no directory). */
  private get store(): DiskStore {
    if (this.storeOrUndefined === undefined) {
      this.storeOrUndefined = new DiskStore(this.options.dir, this.where, this.options.snapshotThread);
      this.wb = new WriteBack(this.storeOrUndefined, this.options.cacheEntries, this.options.flushEvery);
      this.wb.afterFlush = (written) => this.cleanupSome(Math.min(MAX_CLEANUP_ENTRIES, written * CLEANUP_ENTRIES_PER_WRITE));
    }
    return this.storeOrUndefined;
  }

  private get writeBack(): WriteBack {
    void this.store;
    return this.wb!;
  }

  /** The store's directory (diagnostics and tests); undefined before first use. */
  storeDir(): string | undefined {
    return this.storeOrUndefined?.dir;
  }

  /** Entries in the write-back cache (diagnostics and tests). */
  cachedEntries(): number {
    return this.wb?.count ?? 0;
  }

  setCurrentKey(originalKey: unknown): number {
    const k = normalizeKey(originalKey);
    const bits = keyBits(k);
    const kg = keyGroupOfBits(bits, this.maxParallelism);
    this.ctx.set(k, kg, originalKey, keyHashOfBits(k, bits));
    return kg;
  }

  setCurrentKeyInGroup(originalKey: unknown, keyGroup: number): void {
    const k = normalizeKey(originalKey);
    this.ctx.set(k, keyGroup, originalKey, keyHash(k));
  }

  setCurrentNormalizedKey(key: NormKey, keyGroup: number, originalKey: unknown): void {
    this.ctx.set(key, keyGroup, originalKey, keyHash(key));
  }

  setCurrentPreparedKey(originalKey: unknown, key: NormKey, keyGroup: number, hash: number): void {
    this.ctx.set(key, keyGroup, originalKey, hash);
  }

  /**
   * Ids of dropped states whose entries are removed, given out again before new ones: ids are
   * 16 bits, and event-time windows register a state per window and drop it when it is purged
   * (1 s windows used them all up in 18 hours of event time, and the job failed). Safe to reuse:
   * a snapshot in progress reads a view opened at its barrier and names states by the ids it
   * took then; the change log forgot the id at the drop.
   */
  private readonly freeStateIds: number[] = [];

  private allocateStateId(): number {
    const free = this.freeStateIds.shift();
    if (free !== undefined) return free;
    if (this.nextStateId > MAX_STATE_ID) throw new WeirError('STATE_BACKEND', `${this.where}: more than ${MAX_STATE_ID} states registered and dropped in one subtask`);
    return this.nextStateId++;
  }

  private handle<H>(desc: AnyStateDescriptor, make: (c: StateCache) => H): H {
    const existing = this.states.get(desc.name);
    if (existing !== undefined) {
      if (existing.desc.kind !== desc.kind) throw this.kindMismatch(existing.desc, desc);
      return existing.handle as H;
    }
    const forms: ValueForms = {
      toStored: stateValueEncoder(desc),
      fromStored: restoreDecoder(this.where, stateMeta(desc), desc, () => this.clock.now()),
    };
    const claimed = this.claimRestored(desc, forms);
    const stateId = claimed ?? this.allocateStateId();
    // A new id has nothing in the store but what the cache writes: its key filter is exact.
    const filter = claimed === undefined ? new KeyFilter(this.options.cacheEntries) : undefined;
    const cache = new StateCache(this.writeBack, stateId, this.ctx, forms, filter);
    this.writeBack.caches.add(cache);
    const h = make(cache);
    this.states.set(desc.name, { desc, cache, handle: h });
    return h;
  }

  private kindMismatch(registered: AnyStateDescriptor, desc: AnyStateDescriptor): Error {
    return new Error(`${this.where}: state "${desc.name}" is registered as ${registered.kind} state and cannot be used as ${desc.kind} state`);
  }

  /**
   * The store id of the restored state of this name, adopted when its stored form is the one
   * `desc` writes, else rewritten under a new id through the serializer's migration; undefined
   * when nothing of this name was restored.
   */
  private claimRestored(desc: AnyStateDescriptor, forms: ValueForms): number | undefined {
    const r = this.restored.get(desc.name);
    if (r === undefined) return undefined;
    // Checks the restored state against the descriptor (and fails as the heap backend does).
    const decode = restoreDecoder(this.where, r.meta, desc, () => this.clock.now());
    this.restored.delete(desc.name);
    // The chain's base holds this state as read; deltas would hold it as now declared: a new base.
    this.chains.invalidateChains();
    const m = r.meta;
    const same = m.serializer.name === desc.serializer.name && m.serializer.version === desc.serializer.version && m.ttl === (desc.ttl !== undefined);
    if (same) return r.stateId;
    const stateId = this.allocateStateId();
    this.rewriteState(r.stateId, (w, keyGroup, key, raw) => {
      w.put(encodeStoreKey(keyGroup, stateId, key), packStored(forms.toStored(decode(raw))));
    });
    this.freeStateIds.push(r.stateId);
    return stateId;
  }

  /**
   * Visits every stored entry of a state (key group by key group, a batch per write
   * transaction), removing it after `each` ran for it.
   */
  private rewriteState(stateId: number, each?: (w: { put(k: Buffer, v: Buffer): void }, keyGroup: number, key: NormKey, raw: unknown) => void): void {
    const store = this.store;
    // The ranges read below must hold the write thread's batches (a dropped state's last writes).
    store.drain();
    for (let kg = this.keyGroupRange.start; kg <= this.keyGroupRange.end; kg++) {
      const start = storeKeyPrefix(kg, stateId);
      const end = storeKeyPrefix(kg, stateId + 1);
      for (;;) {
        const batch: { key: Buffer; value: Buffer }[] = [];
        for (const e of store.range(start, end)) {
          batch.push({ key: Buffer.from(e.key), value: Buffer.from(e.value) });
          if (batch.length >= BATCH_ENTRIES) break;
        }
        if (batch.length === 0) break;
        store.write((w) => {
          for (const e of batch) {
            each?.(w, kg, normKeyOfStoreKey(e.key), unpackStored(e.value));
            w.remove(e.key);
          }
        });
      }
    }
  }

  getValueState<T>(desc: ValueStateDescriptor<T>): ValueState<T> {
    return this.handle(desc, (c) => (desc.ttl ? new DiskTtlValueHandle<T>(c, desc.defaultValue, this.clock, desc.ttl) : new DiskValueHandle<T>(c, desc.defaultValue)));
  }
  getListState<T>(desc: ListStateDescriptor<T>): ListState<T> {
    return this.handle(desc, (c) => (desc.ttl ? new DiskTtlListHandle<T>(c, this.clock, desc.ttl) : new DiskListHandle<T>(c)));
  }
  getMapState<K, V>(desc: MapStateDescriptor<K, V>): MapState<K, V> {
    return this.handle(desc, (c) => (desc.ttl ? new DiskTtlMapHandle<K, V>(c, this.clock, desc.ttl) : new DiskMapHandle<K, V>(c)));
  }
  getReducingState<T>(desc: ReducingStateDescriptor<T>): ReducingState<T> {
    return this.handle(desc, (c) => {
      const inner = desc.ttl ? new DiskTtlValueHandle<T>(c, undefined, this.clock, desc.ttl) : new DiskValueHandle<T>(c, undefined);
      return new ReducingHandle<T>(inner, desc.reduce);
    });
  }
  getAggregatingState<IN, ACC, OUT>(desc: AggregatingStateDescriptor<IN, ACC, OUT>): AggregatingState<IN, OUT> {
    return this.handle(desc, (c) => {
      const inner = desc.ttl ? new DiskTtlValueHandle<ACC>(c, undefined, this.clock, desc.ttl) : new DiskValueHandle<ACC>(c, undefined);
      return new AggregatingHandle<IN, ACC, OUT>(inner, desc.aggregate);
    });
  }

  /** Removes the state's entries from the store; a snapshot in progress still reads them in its view. */
  dropState(name: string): void {
    const s = this.states.get(name);
    if (s !== undefined) {
      this.states.delete(name);
      this.writeBack.caches.delete(s.cache);
      s.cache.clear();
      this.rewriteState(s.cache.stateId);
      this.changes?.forget(s.cache.stateId);
      this.freeStateIds.push(s.cache.stateId);
    }
    const r = this.restored.get(name);
    if (r !== undefined) {
      this.restored.delete(name);
      this.rewriteState(r.stateId);
      this.freeStateIds.push(r.stateId);
    }
    // The next deltas say "this state is gone" (a state made later under this name has a new id).
    if (s !== undefined || r !== undefined) this.chains.stateDropped(name);
  }

  *keys(stateName: string): IterableIterator<{ key: NormKey; keyGroup: number }> {
    for (let kg = this.keyGroupRange.start; kg <= this.keyGroupRange.end; kg++) {
      for (const key of this.keysInGroup(stateName, kg)) yield { key, keyGroup: kg };
    }
  }

  /** The group's keys as they are now (changes not yet written back are written first). */
  keysInGroup(stateName: string, keyGroup: number): Iterable<NormKey> {
    const s = this.states.get(stateName);
    if (s === undefined) return [];
    this.writeBack.flush();
    const out: NormKey[] = [];
    const id = s.cache.stateId;
    for (const k of this.store.keys(storeKeyPrefix(keyGroup, id), storeKeyPrefix(keyGroup, id + 1))) out.push(normKeyOfStoreKey(k));
    return out;
  }

  hasStates(): boolean {
    return this.states.size > 0 || this.restored.size > 0;
  }

  restoredStateNames(): string[] {
    return [...this.restored.keys()];
  }

  snapshot(timers?: KeyGroupBlockSource, options?: SnapshotOptions): KeyedStateSnapshot {
    this.writeBack.flush();
    const states: SnapshotState[] = [];
    for (const s of this.states.values()) states.push({ stateId: s.cache.stateId, meta: stateMeta(s.desc), ttl: s.desc.ttl });
    for (const r of this.restored.values()) states.push({ stateId: r.stateId, meta: { ...r.meta, blockFormat: BLOCK_FORMAT }, ttl: undefined });
    if (options?.incremental === undefined) return this.fullSnapshot(states, timers);
    if (!this.chains.isTracking) {
      this.chains.startTracking();
      this.changes = new DiskChangeLog(this.chains.current);
      this.writeBack.tracker = this.changes;
    }
    const part = this.chains.plan(options.checkpointId, options.incremental);
    const id = part.checkpointId;
    let snap: KeyedStateSnapshot;
    if (part.kind === 'base') {
      // The canonical full file, written to the shared directory as the chain's base.
      snap = this.fullSnapshot(states, timers, part);
    } else {
      const d = new DiskDeltaSnapshot({
        store: this.store,
        view: this.store.readView(),
        states: new Map(states.map((x) => [x.stateId, x])),
        changed: this.changes!.collect(part.baseEpoch),
        timers,
        keyGroupRange: this.keyGroupRange,
        maxParallelism: this.maxParallelism,
        now: this.clock.now(),
        part,
        onReleased: (x) => this.inProgress.delete(x),
      });
      this.inProgress.add(d);
      snap = d;
    }
    return {
      write: (t: SnapshotTarget) => snap.write(t).then((h) => {
        this.chains.recordWritten(id, h.chain!);
        return h;
      }),
      step: () => snap.step(),
      abort: () => snap.abort(),
    };
  }

  /**
   * A full snapshot (canonical file), read and encoded by the snapshot reader thread when it
   * can open its view now (the store is flushed: its view is the state at the barrier), else
   * on the task's thread.
   */
  private fullSnapshot(states: SnapshotState[], timers: KeyGroupBlockSource | undefined, base?: IncrementalPart): KeyedStateSnapshot {
    const now = this.clock.now();
    const common = {
      ...(base !== undefined ? { base } : {}),
      states,
      timers,
      keyGroupRange: this.keyGroupRange,
      maxParallelism: this.maxParallelism,
      onExpired: (keys: ExpiredKey[]) => this.removeExpired(keys),
      onReleased: (x: DiskSnapshot | ThreadedDiskSnapshot) => this.inProgress.delete(x),
    };
    const job = this.store.beginThreadedRead({ start: storeKeyPrefix(this.keyGroupRange.start), end: storeKeyPrefix(this.keyGroupRange.end + 1), states: states.map(blockState), now });
    const s = job !== undefined
      ? new ThreadedDiskSnapshot({ ...common, job, where: this.where })
      : new DiskSnapshot({ ...common, store: this.store, view: this.store.readView(), now });
    this.inProgress.add(s);
    return s;
  }

  notifyCheckpointComplete(checkpointId: number): void {
    this.chains.complete(checkpointId);
  }

  notifyCheckpointAborted(checkpointId: number): void {
    this.chains.aborted(checkpointId);
  }

  /**
   * Cleanup on snapshot (and the incremental cleanup): removes from the store the keys found
   * expired, unless they were written since (the cache holds them, cached or pending, or the
   * stored value is no longer expired).
   */
  private removeExpired(keys: readonly ExpiredKey[]): void {
    const byId = new Map<number, Registered>();
    for (const s of this.states.values()) byId.set(s.cache.stateId, s);
    const now = this.clock.now();
    // Sent as a batch to the write thread, after the batches before it: a key neither cached
    // nor pending has no write on the way, so the store's value read here is its last one,
    // and nothing waits for the write thread (the cleanup runs after every flush).
    const gone: ExpiredKey[] = [];
    for (const x of keys) {
      const s = byId.get(x.stateId);
      if (s === undefined || s.desc.ttl === undefined || s.cache.peek(x.key) !== undefined) continue;
      const bytes = this.store.get(encodeStoreKey(x.keyGroup, x.stateId, x.key));
      if (bytes === undefined) continue;
      if (storedFullyExpired(unpackStored(bytes), s.desc.kind, s.desc.ttl.ttlMs, now)) {
        gone.push(x);
        this.changes?.mark(x.stateId, x.keyGroup, x.key);
      }
    }
    if (gone.length === 0) return;
    if (this.store.writesBehind) {
      const w = new BatchWriter(1024);
      for (const x of gone) w.remove(x.keyGroup, x.stateId, x.key);
      this.store.writeBehind(w.take());
    } else {
      this.store.write((w) => {
        for (const x of gone) w.remove(encodeStoreKey(x.keyGroup, x.stateId, x.key));
      });
    }
  }

  /**
   * Incremental TTL cleanup: looks at the next `budget` entries of the store (going round it,
   * flush after flush) and removes those of TTL states that have fully expired, so expired
   * state does not wait for a read or a snapshot to leave the disk. Bounded work.
   */
  private cleanupSome(budget: number): void {
    const ttlIds = new Map<number, Registered>();
    for (const s of this.states.values()) if (s.desc.ttl !== undefined) ttlIds.set(s.cache.stateId, s);
    if (ttlIds.size === 0) return;
    const start = this.cleanupFrom ?? storeKeyPrefix(this.keyGroupRange.start);
    const end = storeKeyPrefix(this.keyGroupRange.end + 1);
    const expired: ExpiredKey[] = [];
    let seen = 0;
    let last: Buffer | undefined;
    for (const { key, value } of this.store.range(start, end)) {
      if (seen++ >= budget) break;
      last = Buffer.from(key);
      const s = ttlIds.get(stateIdOfStoreKey(key));
      if (s === undefined) continue;
      if (storedFullyExpired(unpackStored(value), s.desc.kind, s.desc.ttl!.ttlMs, this.clock.now())) {
        expired.push({ stateId: s.cache.stateId, keyGroup: keyGroupOfStoreKey(key), key: normKeyOfStoreKey(key) });
      }
    }
    // Past the last key seen next time (a key is never empty: 0x00 after it is the next possible key); round again at the end.
    this.cleanupFrom = last === undefined || seen <= budget ? undefined : Buffer.concat([last, ZERO]);
    if (expired.length > 0) this.removeExpired(expired);
  }

  async restore(inputs: readonly StateInputHandle[]): Promise<KeyGroupBlock[]> {
    if (this.states.size > 0) throw new Error(`${this.where}: state is restored before any state is registered`);
    return loadStateFiles(inputs, {
      store: this.store,
      range: this.keyGroupRange,
      maxParallelism: this.maxParallelism,
      restored: this.restored,
      allocateStateId: () => this.allocateStateId(),
    });
  }

  dispose(): void {
    for (const s of [...this.inProgress]) s.abort();
    this.states.clear();
    this.restored.clear();
    this.storeOrUndefined?.dispose();
    this.storeOrUndefined = undefined;
    this.wb = undefined;
  }
}

const ZERO = Buffer.from([0]);

/** Whether nothing of a stored TTL value is live any more (stored forms of state-codec.ts). */
function storedFullyExpired(raw: unknown, kind: string, ttlMs: number, now: number): boolean {
  const cfg = { ttlMs };
  switch (kind) {
    case 'list':
      return (raw as { t: number }[]).every((s) => ttlExpired(s.t, cfg, now));
    case 'map':
      return (raw as [unknown, { t: number }][]).every(([, s]) => ttlExpired(s.t, cfg, now));
    default:
      return ttlExpired((raw as { t: number }).t, cfg, now);
  }
}

/** A disk backend factory with its settings (state.backend.disk.*). */
export function diskBackendFactory(options: DiskBackendOptions = {}): KeyedStateBackendFactory {
  const resolved = resolveDiskOptions(options);
  return {
    name: 'disk',
    create: (p) => new DiskKeyedStateBackend(p.keyGroupRange, p.maxParallelism, p.clock, p.where, resolved),
  };
}
