/**
 * The disk backend's write-back cache: state access stays synchronous and mostly in memory.
 *
 * Each registered state has a StateCache: a Map from key to Entry holding the value in the
 * form the handles use (the heap backend's form: TTL values as {v, t}, map state as a Map).
 * A read that misses loads the key from the store (one synchronous point get, skipped when
 * the state's key filter says the key was never written; a missing key is cached as absent too). A write changes the entry and marks it dirty; dirty entries go to
 * the store in one write transaction per `flushEvery` of them (never one per record), written
 * by the store's write thread (write-thread.ts) while the task goes on; and all of them, with
 * every batch still on the write thread committed, before a snapshot and keys().
 *
 * The entries of all states together are bounded (`maxEntries`): past it, each entry loaded
 * takes the place of one evicted by the CLOCK rule (a ring of all cached entries and a hand
 * going round it; an entry read or written since the hand last passed gets a second chance),
 * so states lose entries in proportion to their size. An entry evicted whose value the store
 * does not have yet (dirty, or in a batch on the write thread: the store's reads do not see a
 * batch before it commits) leaves the ring but stays in its state's map, pending, until the
 * flush writes it and that write has committed; a read of its key finds it there and puts it
 * back in the ring. So eviction never forces a small write transaction. So the JS heap holds a bounded working set (at most
 * `maxEntries` cached plus `flushEvery` dirty plus MAX_BATCHES_BEHIND batches being written),
 * whatever the size of the state.
 *
 * Like Flink's RocksDB backend, a value changed in place without an update() (or add(), put())
 * may be lost once its entry is evicted; the handles of this backend always mark what they change.
 */
import { noCurrentKey, type KeyContext } from '../key-context.ts';
import type { NormKey } from '../key-groups.ts';
import { keyHash } from '../key-table.ts';
import { EntryTable } from './entry-table.ts';
import type { KeyFilter } from './key-filter.ts';
import { checkStoreKeyLength, scratchStoreKey } from './keys.ts';
import type { DiskStore } from './store.ts';
import { packStored, unpackStored } from './stored-value.ts';
import { BatchWriter } from './write-thread.ts';

/**
 * Batches on the write thread at most: a flush past it waits for the oldest to commit, which
 * bounds the memory of batches and of the pending entries they keep in the states' maps.
 */
const MAX_BATCHES_BEHIND = 2;
/** Spare entries kept at most (one is taken per load right after one is evicted: few wait). */
const MAX_SPARE = 64;

/**
 * A cached key's value. Its fields are rewritten when an evicted entry is recycled for another
 * key (WriteBack.spare): code holds an Entry only within one call, never across a state access.
 */
export interface Entry {
  key: NormKey;
  /** keyHash(key): the cache index's and the key filter's, computed once per miss. */
  hash: number;
  keyGroup: number;
  /** The value in the handles' form; undefined when the key has no value. */
  value: unknown;
  dirty: boolean;
  /** Used again since it was loaded or last swept (CLOCK's reference bit): a key read and written once is not. */
  ref: boolean;
  /** The write-thread batch holding its last value written, until that batch commits (0: none). */
  behind: number;
  /** In CLOCK's ring; false: evicted, still in its state's map until its value is committed to the store. */
  inRing: boolean;
  cache: StateCache;
}

/** Converts between the handles' form of a value and the form stored (and snapshotted). */
export interface ValueForms {
  toStored(live: unknown): unknown;
  fromStored(raw: unknown): unknown;
}

export class StateCache {
  /**
   * The state's entries in the ring, and those evicted before their value was committed to
   * the store (pending: dirty, or in a batch on the write thread), which leave when their batch
   * commits or go back in the ring when their key is used again. One map for both: a miss
   * costs one lookup. An EntryTable (entry-table.ts): entries come and go with nearly every
   * record when the keys do not fit the cache.
   */
  readonly entries = new EntryTable<Entry>();
  dropped = false;
  /**
   * The entry current() or set() found last, while it is cached: a record usually reads its
   * key's value and then writes it, and this spares the second lookup in `entries`.
   */
  last: Entry | undefined;

  constructor(
    private readonly wb: WriteBack,
    readonly stateId: number,
    readonly ctx: KeyContext,
    readonly forms: ValueForms,
    /** Keys this state may have in the store; undefined: any key may be there (ask the store). */
    readonly filter: KeyFilter | undefined,
  ) {}

  /** The entry of the current key, loaded from the store on a miss. */
  current(): Entry {
    if (this.ctx.kgIndex < 0) throw noCurrentKey();
    const key = this.ctx.key;
    const l = this.last;
    if (l !== undefined && l.key === key) {
      l.ref = true;
      return l;
    }
    const h = this.ctx.hash; // keyHash(key), computed when the key was set
    const e = this.entries.get(key, h);
    if (e !== undefined) {
      // Pending: its value is newer than the store's; back in the ring.
      if (e.inRing) e.ref = true;
      else this.wb.admit(e);
      return (this.last = e);
    }
    return (this.last = this.load(key, h, this.ctx.keyGroup));
  }

  /** The entry of a key, cached or pending (snapshot cleanup checks). */
  peek(key: NormKey): Entry | undefined {
    return this.entries.get(key, keyHash(key));
  }

  private load(key: NormKey, h: number, keyGroup: number): Entry {
    let bytes: Uint8Array | undefined;
    if (this.filter !== undefined && !this.filter.mayHave(h)) checkStoreKeyLength(key); // never written: not in the store
    else bytes = this.wb.store.get(scratchStoreKey(keyGroup, this.stateId, key));
    const e = this.wb.newEntry(key, h, keyGroup, bytes === undefined ? undefined : this.forms.fromStored(unpackStored(bytes)), this);
    this.entries.insert(e);
    this.wb.admit(e);
    return e;
  }

  /** Sets the current key's value (undefined removes it); a blind write: nothing is read from the store. */
  set(value: unknown): void {
    if (this.ctx.kgIndex < 0) throw noCurrentKey();
    const key = this.ctx.key;
    const l = this.last;
    let e: Entry | undefined;
    let h = 0;
    if (l !== undefined && l.key === key) e = l;
    else e = this.entries.get(key, (h = this.ctx.hash));
    if (e !== undefined) {
      e.value = value;
      if (e.inRing) e.ref = true;
      else this.wb.admit(e);
    } else {
      // Here, at the write that names it, not at the flush of some later record's batch.
      checkStoreKeyLength(key);
      e = this.wb.newEntry(key, h, this.ctx.keyGroup, value, this);
      this.entries.insert(e);
      this.wb.admit(e);
    }
    this.last = e;
    this.wb.markDirty(e);
  }

  /** The entry's value was changed in place: write it back. Call after the change. */
  changed(e: Entry): void {
    this.wb.markDirty(e);
  }

  /** Forgets every entry (the state was dropped; its stored entries are removed by the backend). */
  clear(): void {
    this.last = undefined;
    this.entries.clear();
    this.dropped = true;
    this.wb.forget(this);
  }
}

/** Batches are shorter than this, so key group * span + index sorts by group, then index. */
const ORDER_SPAN = 2 ** 31;

/**
 * The batch's indices in key group order, stable: the store's keys begin with the key group,
 * so puts in this order land in neighbouring B-tree pages still in the CPU's caches, where the
 * batch's own order (the cache's eviction order) is random. A numeric sort of a Float64Array
 * (one C++ call); sorting by the whole key was measured to cost more than it saved.
 */
function inKeyGroupOrder(batch: readonly Entry[]): Float64Array {
  if (batch.length >= ORDER_SPAN) throw new Error(`a flush of ${batch.length} entries is too large`);
  const order = new Float64Array(batch.length);
  for (let i = 0; i < batch.length; i++) order[i] = batch[i]!.keyGroup * ORDER_SPAN + i;
  return order.sort();
}

export class WriteBack {
  /** Every entry cached, over all states: CLOCK's ring (at most maxEntries long). */
  private ring: Entry[] = [];
  /** CLOCK's hand: the next entry of the ring to look at when one must go. */
  private hand = 0;
  /** Incremental checkpoints: told of every change (changes.ts). */
  tracker: { mark(stateId: number, keyGroup: number, key: NormKey): void } | undefined;
  private dirty: Entry[] = [];
  readonly caches = new Set<StateCache>();
  /** Batches sent to the write thread and not yet seen committed, oldest first. */
  private readonly behind: { seq: number; entries: Entry[] }[] = [];
  private readonly batch = new BatchWriter();
  /**
   * Entries evicted and gone from their state's map (clean, nothing on the write thread: no
   * reference to them is left), reused for the next keys loaded. With keys that do not fit the
   * cache nearly every record loads one entry and evicts another; each new entry lived for a
   * lap of the ring, long enough to be promoted to V8's old space, and the scavenges copying
   * them and the old-space collections freeing them were a tenth of the task's time.
   */
  private readonly spare: Entry[] = [];

  /** Runs after every flush with the number of entries written (the backend's incremental TTL cleanup). */
  afterFlush: ((written: number) => void) | undefined;

  constructor(
    readonly store: DiskStore,
    private readonly maxEntries: number,
    private readonly flushEvery: number,
  ) {}

  markDirty(e: Entry): void {
    this.tracker?.mark(e.cache.stateId, e.keyGroup, e.key);
    if (e.dirty) return;
    e.dirty = true;
    // The key filter learns the key now, not when the flush writes it: a write mostly follows
    // the load that just checked the filter, so its word is still in the CPU's cache. Early is
    // safe: the filter only ever answers "maybe" for more keys.
    e.cache.filter?.add(e.hash);
    this.dirty.push(e);
    if (this.dirty.length >= this.flushEvery) {
      if (this.store.writesBehind) this.flushBehind();
      else this.flush();
    }
  }

  /** An entry for a key loaded or set, recycled when one is spare. */
  newEntry(key: NormKey, hash: number, keyGroup: number, value: unknown, cache: StateCache): Entry {
    const e = this.spare.pop();
    if (e === undefined) return { key, hash, keyGroup, value, dirty: false, ref: false, behind: 0, inRing: false, cache };
    if (e.inRing || e.dirty || e.behind !== 0) throw new Error('disk state cache: a spare entry is still in use');
    e.key = key;
    e.hash = hash;
    e.keyGroup = keyGroup;
    e.value = value;
    e.ref = false;
    e.cache = cache;
    return e;
  }

  /** Entries cached, over all states. */
  get count(): number {
    return this.ring.length;
  }

  dirtyCount(): number {
    return this.dirty.length;
  }

  /**
   * Writes every dirty entry to the store in one synchronous transaction, after every batch on
   * the write thread has committed: then the store holds every change and its reads see them
   * (a snapshot's read view, keys()).
   */
  flush(): void {
    this.store.drain(); // this cache's batches, and the backend's batches of TTL removals
    this.settle();
    if (this.dirty.length === 0) return;
    // Entries stay dirty and listed until the whole batch is written: an entry that cannot be
    // encoded fails this flush and the next, never leaving the others dirty but unlisted (a
    // dirty entry is not listed again, so their changes never reached the store or a snapshot).
    const batch = this.dirty;
    const order = inKeyGroupOrder(batch);
    this.store.write((w) => {
      for (let i = 0; i < order.length; i++) {
        const e = batch[order[i]! % ORDER_SPAN]!;
        if (e.cache.dropped) continue;
        const k = scratchStoreKey(e.keyGroup, e.cache.stateId, e.key);
        if (e.value === undefined) w.remove(k);
        else w.put(k, packStored(e.cache.forms.toStored(e.value)));
      }
    });
    this.dirty = [];
    for (const e of batch) e.dirty = false;
    // Every entry is now clean and in the store: the pending ones (all in this batch: the
    // write thread's batches have committed) can go.
    for (const e of batch) if (!e.inRing && !e.cache.dropped) e.cache.entries.delete(e);
    this.afterFlush?.(batch.length);
  }

  /**
   * Sends the dirty entries to the write thread as one batch (one transaction there); they
   * stay readable from their state's map (cached or pending) until it commits. Waits first when
   * MAX_BATCHES_BEHIND batches are still being written.
   */
  private flushBehind(): void {
    this.settle();
    while (this.behind.length >= MAX_BATCHES_BEHIND) {
      this.store.waitBehind(this.behind[0]!.seq);
      this.settle();
    }
    const batch = this.dirty;
    const w = this.batch;
    try {
      for (const e of batch) {
        const c = e.cache;
        if (c.dropped) continue;
        if (e.value === undefined) w.remove(e.keyGroup, c.stateId, e.key);
        else w.putStored(e.keyGroup, c.stateId, e.key, c.forms.toStored(e.value));
      }
    } catch (err) {
      w.discard(); // the entries stay dirty and listed (see flush)
      throw err;
    }
    this.dirty = [];
    for (const e of batch) e.dirty = false;
    const seq = this.store.writeBehind(w.take());
    for (const e of batch) e.behind = seq;
    this.behind.push({ seq, entries: batch });
    this.afterFlush?.(batch.length);
  }

  /**
   * Takes in the batches the write thread has committed: their entries' values are in the
   * store now, so those pending (evicted) and not changed since leave their state's map.
   */
  private settle(): void {
    if (this.behind.length === 0) return;
    const committed = this.store.committedBehind();
    if (this.behind[0]!.seq > committed) return;
    // Before any pending entry leaves: later reads must see the commits.
    this.store.renewReads();
    while (this.behind.length > 0 && this.behind[0]!.seq <= committed) {
      const { seq, entries } = this.behind.shift()!;
      for (const e of entries) {
        if (e.behind !== seq) continue; // written again in a later batch
        e.behind = 0;
        if (!e.inRing && !e.dirty && !e.cache.dropped) e.cache.entries.delete(e);
      }
    }
  }

  /**
   * A new entry is in its state's map: puts it in the ring, in the place of one evicted by
   * CLOCK once the ring is full (the hand clears the reference bit of every entry it passes
   * that has it set, and evicts the first that has not). An evicted entry whose value is not
   * committed to the store yet stays in its state's map, pending, until it is.
   */
  admit(e: Entry): void {
    const ring = this.ring;
    e.inRing = true;
    if (ring.length < this.maxEntries) {
      ring.push(e);
      return;
    }
    let h = this.hand;
    for (;;) {
      if (h >= ring.length) h = 0;
      const v = ring[h]!;
      if (v.ref) {
        v.ref = false;
        h++;
        continue;
      }
      v.inRing = false;
      if (v.cache.last === v) v.cache.last = undefined;
      // Pending while the store does not have its value; else gone, and spare.
      if (!v.dirty && v.behind === 0) {
        v.cache.entries.delete(v);
        v.value = undefined;
        if (this.spare.length < MAX_SPARE) this.spare.push(v);
      }
      ring[h] = e;
      this.hand = h + 1;
      return;
    }
  }

  /** Takes the entries of a dropped state out of the ring. */
  forget(c: StateCache): void {
    this.ring = this.ring.filter((e) => e.cache !== c);
    if (this.hand >= this.ring.length) this.hand = 0;
  }
}
