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
    const a = this.added;
    if (a !== undefined && this.size !== n) {
      // Past a quarter of the group the list costs more than encoding every key again.
      if (a.length > (n >>> 2) + 1024) this.added = undefined;
      else a.push(key);
    }
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
}
