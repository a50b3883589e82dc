/**
 * The map of one key group of one state (a KeyTable: a Map's interface, faster lookups) that
 * records, for the key column cache (../key-column-cache.ts), which keys were inserted since the
 * group's last full snapshot and whether any was removed. Overriding the map's own methods makes every change count,
 * whoever makes it (handles, TTL reads and cleanup, anything later): none has to remember.
 */
import type { NormKey } from '../key-groups.ts';
import type { InsertTracking } from '../key-column-cache.ts';
import { KeyTable } from '../key-table.ts';

export class GroupMap extends KeyTable implements InsertTracking {
  /** Keys inserted since the cache was filled, in order; undefined: not tracked (no cache, or a removal). */
  added: NormKey[] | undefined = undefined;

  override set(key: NormKey, value: unknown): this {
    const n = this.size;
    super.set(key, value);
    noteInsert(this, n, key);
    return this;
  }

  override setHashed(key: NormKey, h: number, value: unknown): this {
    const n = this.size;
    super.setHashed(key, h, value);
    noteInsert(this, n, key);
    return this;
  }

  /** delete(key) goes through this too. */
  override deleteHashed(key: NormKey, h: number): boolean {
    const removed = super.deleteHashed(key, h);
    if (removed) this.added = undefined;
    return removed;
  }

  override clear(): void {
    super.clear();
    this.added = undefined;
  }
}

/**
 * The same over a V8 Map, for groups of number keys. A KeyTable wins on string keys: a Map
 * compares a candidate key string by loading it, the table by its hash first. On number keys a
 * Map compares in place, and measured no slower: Nexmark q5 (auction ids in thousands of window
 * tables) ran ~15 % slower on KeyTables.
 */
export class NumberGroupMap extends Map<NormKey, unknown> implements InsertTracking {
  added: NormKey[] | undefined = undefined;

  override set(key: NormKey, value: unknown): this {
    const n = this.size;
    super.set(key, value);
    noteInsert(this, n, key);
    return this;
  }

  override delete(key: NormKey): boolean {
    const removed = super.delete(key);
    if (removed) this.added = undefined;
    return removed;
  }

  override clear(): void {
    super.clear();
    this.added = undefined;
  }

  // A KeyTable's hashed access, for handles that read either kind: a Map hashes for itself.
  getHashed(key: NormKey, _h: number): unknown {
    return this.get(key);
  }

  setHashed(key: NormKey, _h: number, value: unknown): this {
    return this.set(key, value);
  }

  deleteHashed(key: NormKey, _h: number): boolean {
    return this.delete(key);
  }
}

/** The map of one key group of one state: a KeyTable for string keys, a Map for numbers (or either: both hold any key). */
export type Group = GroupMap | NumberGroupMap;

/** A group map for a group whose first key is `firstKey` (either kind holds any key correctly). */
export function newGroupMap(firstKey: NormKey): GroupMap | NumberGroupMap {
  return typeof firstKey === 'number' ? new NumberGroupMap() : new GroupMap();
}

/** Notes an insert (the size grew) in the list of inserts since the cache was filled. */
function noteInsert(g: InsertTracking & { readonly size: number }, sizeBefore: number, key: NormKey): void {
  const a = g.added;
  if (a === undefined || g.size === sizeBefore) return;
  // Past a quarter of the group the list costs more than encoding every key again.
  if (a.length > (sizeBefore >>> 2) + 1024) g.added = undefined;
  else a.push(key);
}
