/**
 * What the heap backend puts in a state file (checkpoint/state-file.ts): one block per
 * (state, key group), block format in state-codec.ts; one block of timers per key group; and
 * this meta in the file's index. The block names are checkpoint storage's (names.ts:
 * keyedBlockName "k/<state>/<kg>", timerBlockName "t/<kg>", parseBlockName), the one place
 * every name is built and parsed, so inspect and restore read what the backend writes.
 * Savepoints of earlier versions are read with it (test/savepoint/golden.test.ts), so it only
 * ever grows compatibly.
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateMeta } from '../state-codec.ts';

export interface KeyedSnapshotMeta {
  readonly states: readonly StateMeta[];
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /**
   * A delta of an incremental chain: its "k/" blocks hold only changed keys (applied over what
   * the chain's earlier files hold), "d/" blocks the keys removed; its timers are complete for
   * its key-group range. Absent: a full (canonical) file.
   */
  readonly delta?: true;
  /**
   * Deltas: states dropped since the chain's base. A restore removes what the earlier files
   * hold of them (in this file's key-group range) before applying this file's blocks.
   */
  readonly droppedStates?: readonly string[];
}
