/**
 * What the heap backend puts in a state file (checkpoint/state-file.ts): one block per
 * (state, key group) named "k/<state>/<kg>" (block format in state-codec.ts), one block of
 * timers per key group named "t/<kg>", and this meta in the file's index. Savepoints of
 * earlier versions are read with it (test/savepoint/golden.test.ts), so it only ever grows
 * compatibly.
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateMeta } from '../state-codec.ts';

export interface KeyedSnapshotMeta {
  readonly states: readonly StateMeta[];
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
}

export function stateBlockName(state: string, keyGroup: number): string {
  return `k/${state}/${keyGroup}`;
}

export function timerBlockName(keyGroup: number): string {
  return `t/${keyGroup}`;
}

export type ParsedBlockName =
  | { readonly kind: 'state'; readonly state: string; readonly keyGroup: number }
  | { readonly kind: 'timers'; readonly keyGroup: number };

/** "k/<state>/<kg>" (state names may contain slashes) or "t/<kg>"; undefined for blocks of no known kind. */
export function parseBlockName(name: string): ParsedBlockName | undefined {
  if (name.startsWith('t/')) return { kind: 'timers', keyGroup: Number(name.slice(2)) };
  if (name.startsWith('k/')) {
    const i = name.lastIndexOf('/');
    return { kind: 'state', state: name.slice(2, i), keyGroup: Number(name.slice(i + 1)) };
  }
  return undefined;
}
