/**
 * The disk backend's write-back cache: state access stays synchronous and mostly in memory.
 *
 * Each registered state has a StateCache: a Map from key to Entry holding the value in the
 * form the handles use (the heap backend's form: TTL values as {v, t}, map state as a Map).
 * A read that misses loads the key from the store (one synchronous point get; a missing key
 * is cached as absent too). A write changes the entry and marks it dirty; dirty entries go to
 * the store in one write transaction per `flushEvery` of them (never one per record), and all
 * of them before a snapshot, keys() and eviction.
 *
 * The entries of all states together are bounded (`maxEntries`): past it, about a tenth of
 * them is evicted by the CLOCK rule (an entry read or written since the last sweep gets a
 * second chance), each state in proportion to its size. So the JS heap holds a bounded
 * working set, whatever the size of the state.
 *
 * Like Flink's RocksDB backend, a value changed in place without an update() (or add(), put())
 * may be lost once its entry is evicted; the handles of this backend always mark what they change.
 */
import type { KeyContext } from '../key-context.ts';
import type { NormKey } from '../key-groups.ts';
import { encodeStoreKey } from './keys.ts';
import { packStored, unpackStored, type DiskStore } from './store.ts';

export interface Entry {
  readonly key: NormKey;
  readonly keyGroup: number;
  /** The value in the handles' form; undefined when the key has no value. */
  value: unknown;
  dirty: boolean;
  /** Used again since it was loaded or last swept (CLOCK's reference bit): a key read and written once is not. */
  ref: boolean;
  readonly cache: StateCache;
}

/** Converts between the handles' form of a value and the form stored (and snapshotted). */
export interface ValueForms {
  toStored(live: unknown): unknown;
  fromStored(raw: unknown): unknown;
}

export class StateCache {
  readonly entries = new Map<NormKey, Entry>();
  dropped = false;

  constructor(
    private readonly wb: WriteBack,
    readonly stateId: number,
    readonly ctx: KeyContext,
    readonly forms: ValueForms,
  ) {}

  /** The entry of the current key, loaded from the store on a miss. */
  current(): Entry {
    const key = this.ctx.key;
    const e = this.entries.get(key);
    if (e !== undefined) {
      e.ref = true;
      return e;
    }
    return this.load(key, this.ctx.keyGroup);
  }

  /** The entry of a key (iteration over keys; snapshot cleanup checks). */
  peek(key: NormKey): Entry | undefined {
    return this.entries.get(key);
  }

  private load(key: NormKey, keyGroup: number): Entry {
    this.wb.makeRoom();
    const bytes = this.wb.store.get(encodeStoreKey(keyGroup, this.stateId, key));
    const value = bytes === undefined ? undefined : this.forms.fromStored(unpackStored(bytes));
    const e: Entry = { key, keyGroup, value, dirty: false, ref: false, cache: this };
    this.entries.set(key, e);
    this.wb.count++;
    return e;
  }

  /** Sets the current key's value (undefined removes it); a blind write: nothing is read from the store. */
  set(value: unknown): void {
    const key = this.ctx.key;
    let e = this.entries.get(key);
    if (e === undefined) {
      this.wb.makeRoom();
      e = { key, keyGroup: this.ctx.keyGroup, value, dirty: false, ref: false, cache: this };
      this.entries.set(key, e);
      this.wb.count++;
    } else {
      e.ref = true;
      e.value = value;
    }
    this.wb.markDirty(e);
  }

  /** The entry's value was changed in place: write it back. Call after the change. */
  changed(e: Entry): void {
    this.wb.markDirty(e);
  }

  /** Forgets every entry (the state was dropped; its stored entries are removed by the backend). */
  clear(): void {
    this.wb.count -= this.entries.size;
    this.entries.clear();
    this.dropped = true;
  }
}

export class WriteBack {
  /** Entries cached, over all states. */
  count = 0;
  /** Incremental checkpoints: told of every change (changes.ts). */
  tracker: { mark(stateId: number, keyGroup: number, key: NormKey): void } | undefined;
  private dirty: Entry[] = [];
  readonly caches = new Set<StateCache>();

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
    this.dirty.push(e);
    if (this.dirty.length >= this.flushEvery) this.flush();
  }

  dirtyCount(): number {
    return this.dirty.length;
  }

  /** Writes every dirty entry to the store in one transaction. */
  flush(): void {
    if (this.dirty.length === 0) return;
    const batch = this.dirty;
    this.dirty = [];
    // Not sorted by key: measured, sorting cost more than it saved (word count, 1M keys).
    this.store.write((w) => {
      for (const e of batch) {
        e.dirty = false;
        if (e.cache.dropped) continue;
        const k = encodeStoreKey(e.keyGroup, e.cache.stateId, e.key);
        if (e.value === undefined) w.remove(k);
        else w.put(k, packStored(e.cache.forms.toStored(e.value)));
      }
    });
    this.afterFlush?.(batch.length);
  }

  /** Called before an entry is added: evicts about a tenth of the entries once the cache is full. */
  makeRoom(): void {
    if (this.count < this.maxEntries) return;
    this.flush();
    const target = Math.floor(this.maxEntries * 0.9);
    const fraction = (this.count - target) / this.count;
    for (const c of this.caches) {
      let n = Math.ceil(c.entries.size * fraction);
      // CLOCK: an entry used since the last sweep moves to the back with its bit cleared.
      for (const e of c.entries.values()) {
        if (n <= 0) break;
        if (e.ref) {
          e.ref = false;
          c.entries.delete(e.key);
          c.entries.set(e.key, e);
        } else {
          c.entries.delete(e.key);
          this.count--;
          n--;
        }
      }
    }
  }
}
