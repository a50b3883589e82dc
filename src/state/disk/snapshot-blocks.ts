/**
 * The CPU half of a full disk snapshot, the same wherever it runs (the task's thread,
 * snapshot.ts, or the snapshot reader thread, reader-main.ts): store entries, read in key
 * order, become one canonical block per (state, key group) (heap/format.ts's layout, encoded by
 * columnar-block.ts), with TTL entries expired at the synchronous phase left out and reported.
 * One implementation for both, so both write the same bytes.
 */
import type { StateTtlConfig } from '../../core/state.ts';
import { keyedBlockName } from '../../checkpoint/names.ts';
import type { NormKey } from '../key-groups.ts';
import { encodeColumns } from '../columnar-block.ts';
import { keyGroupOfStoreKey, normKeyOfStoreKey, stateIdOfStoreKey } from './keys.ts';
import { unpackStored } from './stored-value.ts';
import { ttlExpired } from './handles.ts';

/** One state as the snapshot reads it (plain data: it is sent to the reader thread). */
export interface BlockState {
  readonly stateId: number;
  readonly name: string;
  /** The state's kind (its stored form: value, list or map). */
  readonly kind: string;
  /** The state's TTL (registered states only): expired entries are left out. */
  readonly ttl: StateTtlConfig | undefined;
}

/** A key the snapshot found expired in its view. */
export interface ExpiredKey {
  readonly stateId: number;
  readonly keyGroup: number;
  readonly key: NormKey;
}

/** An encoded (state, key group) block. */
export interface EncodedBlock {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly entries: number;
}

export class BlockBuilder {
  private readonly bySid = new Map<number, BlockState>();
  private block: { state: BlockState; keyGroup: number; keys: NormKey[]; values: unknown[] } | undefined;

  /** `now`: processing time at the synchronous phase (entries expired then are left out). */
  constructor(states: readonly BlockState[], private readonly now: number) {
    for (const s of states) this.bySid.set(s.stateId, s);
  }

  /**
   * Takes the next stored entry (in key order): a block finished by it goes to `out`, a key
   * found expired to `expired`.
   */
  add(key: Buffer, value: Uint8Array, out: EncodedBlock[], expired: ExpiredKey[]): void {
    const state = this.bySid.get(stateIdOfStoreKey(key));
    if (state === undefined) return; // registered after the synchronous phase, or dropped
    const keyGroup = keyGroupOfStoreKey(key);
    if (this.block === undefined || this.block.state !== state || this.block.keyGroup !== keyGroup) {
      this.end(out);
      this.block = { state, keyGroup, keys: [], values: [] };
    }
    let raw = unpackStored(value);
    if (state.ttl !== undefined) {
      raw = withoutExpired(raw, state.kind, state.ttl, this.now);
      if (raw === undefined) {
        expired.push({ stateId: state.stateId, keyGroup, key: normKeyOfStoreKey(key) });
        return;
      }
    }
    this.block.keys.push(normKeyOfStoreKey(key));
    this.block.values.push(raw);
  }

  /** Ends the block being built: to `out` if it holds anything. */
  end(out: EncodedBlock[]): void {
    const b = this.block;
    this.block = undefined;
    if (b === undefined || b.keys.length === 0) return;
    out.push({ name: keyedBlockName(b.state.name, b.keyGroup), bytes: encodeColumns(b.keys, b.values), entries: b.keys.length });
  }
}

/**
 * A stored TTL value without its expired parts (the stored forms of state-codec.ts: {v, t};
 * lists of them; maps as [key, {v, t}] pairs); undefined when nothing is left.
 */
export function withoutExpired(raw: unknown, kind: string, ttl: StateTtlConfig, now: number): unknown {
  switch (kind) {
    case 'list': {
      const l = (raw as { t: number }[]).filter((s) => !ttlExpired(s.t, ttl, now));
      return l.length === 0 ? undefined : l;
    }
    case 'map': {
      const m = (raw as [unknown, { t: number }][]).filter(([, s]) => !ttlExpired(s.t, ttl, now));
      return m.length === 0 ? undefined : m;
    }
    default:
      return ttlExpired((raw as { t: number }).t, ttl, now) ? undefined : raw;
  }
}
