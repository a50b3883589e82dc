/**
 * Incremental TTL cleanup of the heap backend (Flink's "incremental cleanup" for heap state).
 * Expired values are invisible when read, but a key that is never read again would stay in
 * memory and in every snapshot for ever: with an ever-growing key space (a session id, a
 * request id) state under a TTL grew without bound. So every time the backend is given a new
 * current key (once per record of a keyed operator), the sweep looks at a few entries of the
 * TTL states, going round every key group, and removes those that are wholly expired (a value;
 * a list or map all of whose elements are). Looking at more entries per record than records
 * add keys keeps the state at about what the TTL allows.
 *
 * Removal goes through StateTable.write, so a group frozen by a snapshot in progress is
 * serialized first (the snapshot keeps what it froze).
 */
import type { StateTtlConfig } from '../../core/state.ts';
import type { NormKey } from '../key-groups.ts';
import type { StateTable } from './state-table.ts';
import { KeyTable, keyHash } from '../key-table.ts';

/** Entries looked at per call: more than one record can add, so the sweep keeps ahead. */
export const ENTRIES_PER_STEP = 2;

export class TtlSweep {
  /** Key group being swept and the position in it (a live Map iterator: deletions are safe). */
  private kgIndex = 0;
  private cursor: Iterator<[NormKey, unknown]> | undefined;
  /** The group the cursor walks, and its table's generation at the cursor's last step. */
  private cursorGroup: ReadonlyMap<NormKey, unknown> | undefined;
  private cursorGeneration = 0;
  /** Entries removed so far (tests, metrics). */
  removed = 0;

  constructor(
    private readonly table: StateTable,
    private readonly ttl: StateTtlConfig,
  ) {}

  /** Looks at up to `entries` entries (bounded: at most one pass over the groups when they are empty). */
  step(nowMs: number, entries = ENTRIES_PER_STEP): void {
    const groups = this.table.groups;
    let looked = 0;
    for (let emptyGroups = 0; looked < entries && emptyGroups <= groups.length; ) {
      const g = groups[this.kgIndex];
      // Between two steps other records (timers above all) may have replaced the group or
      // renumbered its table more than once, which a live iterator cannot follow (it failed the
      // job): the sweep starts that group over; looking at entries again is harmless.
      if (this.cursor !== undefined && (g !== this.cursorGroup || (g instanceof KeyTable && g.generation - this.cursorGeneration > 1))) this.cursor = undefined;
      if (this.cursor === undefined) {
        if (g === undefined || g.size === 0) {
          emptyGroups++;
          this.next();
          continue;
        }
        this.cursor = g.entries();
        this.cursorGroup = g;
      }
      const r = this.cursor.next();
      if (g instanceof KeyTable) this.cursorGeneration = g.generation;
      if (r.done === true) {
        this.next();
        continue;
      }
      looked++;
      const [key, value] = r.value;
      if (whollyExpired(value, this.table.descriptor.kind, this.ttl.ttlMs, nowMs)) {
        const h = keyHash(key);
        this.table.write(this.kgIndex, key).deleteHashed(key, h);
        this.table.mark(this.kgIndex, key, h); // incremental checkpoints: the next delta removes it too
        this.removed++;
      }
    }
  }

  private next(): void {
    this.cursor = undefined;
    this.kgIndex = this.kgIndex + 1 >= this.table.groups.length ? 0 : this.kgIndex + 1;
  }
}

interface Stamped {
  readonly t: number;
}

/** A stored TTL value ({v, t}; a list of them; a Map of them) none of whose parts is still alive. */
function whollyExpired(stored: unknown, kind: string, ttlMs: number, nowMs: number): boolean {
  const dead = (s: Stamped) => s.t + ttlMs <= nowMs;
  switch (kind) {
    case 'list':
      return (stored as Stamped[]).every(dead);
    case 'map':
      for (const s of (stored as Map<unknown, Stamped>).values()) if (!dead(s)) return false;
      return true;
    default:
      return dead(stored as Stamped);
  }
}

/**
 * The group as a snapshot should hold it: entries wholly expired at `nowMs` left out, and the
 * expired elements of lists and maps (Flink's cleanup in full snapshots; the disk backend's
 * snapshots do the same, disk/snapshot-blocks.ts withoutExpired). The group itself when nothing
 * expired, so the snapshot's key column cache still applies.
 */
export function liveGroup(g: ReadonlyMap<NormKey, unknown>, kind: string, ttlMs: number, nowMs: number): ReadonlyMap<NormKey, unknown> {
  let out: Map<NormKey, unknown> | undefined;
  let i = 0;
  for (const [key, stored] of g) {
    const live = liveValue(stored, kind, ttlMs, nowMs);
    if (live !== stored && out === undefined) {
      // The first change: copy the entries before it.
      out = new Map();
      let j = 0;
      for (const [k, v] of g) {
        if (j++ === i) break;
        out.set(k, v);
      }
    }
    if (out !== undefined && live !== undefined) out.set(key, live);
    i++;
  }
  return out ?? g;
}

/** A stored TTL value without its expired parts; undefined when nothing is alive; itself when all is. */
function liveValue(stored: unknown, kind: string, ttlMs: number, nowMs: number): unknown {
  const alive = (s: Stamped) => s.t + ttlMs > nowMs;
  switch (kind) {
    case 'list': {
      const l = stored as Stamped[];
      if (l.every(alive)) return stored;
      const live = l.filter(alive);
      return live.length === 0 ? undefined : live;
    }
    case 'map': {
      const m = stored as Map<unknown, Stamped>;
      let dead = 0;
      for (const s of m.values()) if (!alive(s)) dead++;
      if (dead === 0) return stored;
      if (dead === m.size) return undefined;
      const live = new Map<unknown, Stamped>();
      for (const [k, s] of m) if (alive(s)) live.set(k, s);
      return live;
    }
    default:
      return alive(stored as Stamped) ? stored : undefined;
  }
}
