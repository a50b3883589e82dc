import type { NormKey } from '../key-groups.ts';
import type { InsertTracking } from '../key-column-cache.ts';
import { KeyTable } from '../key-table.ts';

/**
 * The map of one key group of one state (a KeyTable: a Map's interface, faster lookups) that
 * knows, for the key column cache (../key-column-cache.ts), which keys were inserted since the
 * group's last full snapshot. A KeyTable keeps its entries in insertion order and only appends
 * to them, so those are the entries from the count it held at that snapshot, unless an entry was
 * removed since (the overrides below stop the tracking: every removal counts, whoever makes it)
 * or the table renumbered its entries. Inserts record nothing: the record path pays nothing for
 * the cache (before, every insert pushed its key on a list: 52 ms of a 5 M-record word count
 * with 1 s checkpoints, and the lists' growth).
 */
export class GroupMap extends KeyTable implements InsertTracking {
  /** Entries (holes included) when the key column cache was filled; -1: not tracked. */
  private filledAt = -1;
  /** The table's numbering then: renumbered since (holes dropped), the count means nothing. */
  private filledGeneration = 0;

  insertedSinceFill(): NormKey[] | undefined {
    const from = this.filledAt;
    if (from < 0 || this.generation !== this.filledGeneration) return undefined;
    const kv = this.kv;
    const used = kv.length >> 1;
    if (used < from) return undefined;
    const keys: NormKey[] = new Array(used - from);
    for (let e = from; e < used; e++) {
      const k = kv[2 * e];
      // A removed entry here went around deleteHashed (which stops the tracking): unknown.
      if (typeof k !== 'string' && typeof k !== 'number') return undefined;
      keys[e - from] = k;
    }
    return keys;
  }

  markFilled(): void {
    this.filledAt = this.kv.length >> 1;
    this.filledGeneration = this.generation;
  }

  forgetInserts(): void {
    this.filledAt = -1;
  }

  /** delete(key) goes through this too. */
  override deleteHashed(key: NormKey, h: number): boolean {
    const removed = super.deleteHashed(key, h);
    if (removed) this.filledAt = -1;
    return removed;
  }

  override clear(): void {
    super.clear();
    this.filledAt = -1;
  }
}

/**
 * The same over a V8 Map, for groups of number keys. A KeyTable wins on string keys: a Map
 * compares a candidate key string by loading it, the table by its hash first. On number keys a
 * Map compares in place, and measured no slower: Nexmark q5 (auction ids in thousands of window
 * tables) ran ~15 % slower on KeyTables. Its inserts are not tracked: number keys need no key
 * column cache, and a group of them that also holds strings encodes every key each snapshot.
 */
export class NumberGroupMap extends Map<NormKey, unknown> implements InsertTracking {
  insertedSinceFill(): undefined {
    return undefined;
  }

  markFilled(): void {}

  forgetInserts(): void {}

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

/**
 * A group map holding keys[i] -> values[i] in that order (a restored block's columns), of the
 * kind its first key suits. A KeyTable is filled in one go (KeyTable.fillEmpty).
 */
export function filledGroup(keys: readonly NormKey[], values: readonly unknown[]): GroupMap | NumberGroupMap {
  const n = keys.length;
  const g = newGroupMap(n === 0 ? '' : keys[0]!);
  if (g instanceof GroupMap) g.fillEmpty(keys, values, n);
  else for (let i = 0; i < n; i++) g.set(keys[i]!, values[i]);
  return g;
}

/** Replaces every value of the group by fn(value), in place and in order (a restore decoding raw values). */
export function mapGroupValues(g: Group, fn: (v: unknown) => unknown): void {
  if (g instanceof GroupMap) g.mapValuesInPlace(fn);
  else for (const [k, v] of g) g.set(k, fn(v));
}
