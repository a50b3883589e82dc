/**
 * Reading heap-backend state files back: the blocks of this subtask's key groups, from every
 * file that holds some of them (one file at the same parallelism, several after rescaling).
 * State blocks stay encoded until the job registers each state, so serializer checks and
 * migrations run against the descriptor the new code declares; timer blocks go back to the
 * caller as they are.
 */
import type { KeyGroupRange } from '../../core/checkpoint-format.ts';
import type { StateInputHandle } from '../../core/state-streams.ts';
import { StateFileReader } from '../../checkpoint/state-file.ts';
import type { KeyGroupBlock } from '../backend.ts';
import type { StateMeta } from '../state-codec.ts';
import { parseBlockName } from '../../checkpoint/names.ts';
import type { KeyedSnapshotMeta } from './format.ts';

/** State read from a snapshot that no descriptor has claimed yet: decoded when the job registers it. */
export interface RestoredState {
  readonly meta: StateMeta;
  /** Encoded key-group blocks, by key group. */
  readonly groups: Map<number, Uint8Array>;
}

/** Adds the state blocks of `range` to `restored`; returns the timer blocks of `range`, file by file. */
export async function readStateFiles(
  inputs: readonly StateInputHandle[],
  range: KeyGroupRange,
  maxParallelism: number,
  restored: Map<string, RestoredState>,
): Promise<KeyGroupBlock[]> {
  const timers: KeyGroupBlock[] = [];
  for (const input of inputs) {
    const reader = await StateFileReader.open(input);
    const meta = reader.index.meta as KeyedSnapshotMeta;
    if (meta.maxParallelism !== maxParallelism) {
      throw new Error(`state file ${input.description} was written with max parallelism ${meta.maxParallelism}, the operator now has ${maxParallelism}; the number of key groups cannot change`);
    }
    const metas = new Map<string, StateMeta>(meta.states.map((m) => [m.name, m]));
    for (const b of reader.index.blocks) {
      const block = parseBlockName(b.name);
      if (block.kind === 'unknown' || block.keyGroup < range.start || block.keyGroup > range.end) continue;
      const bytes = await reader.readBlock(b);
      if (block.kind === 'timers') {
        timers.push({ keyGroup: block.keyGroup, bytes });
        continue;
      }
      const m = metas.get(block.state);
      if (m === undefined) throw new Error(`state file ${input.description} has a block for unknown state "${block.state}"`);
      let r = restored.get(block.state);
      if (r === undefined) restored.set(block.state, (r = { meta: m, groups: new Map() }));
      r.groups.set(block.keyGroup, bytes);
    }
  }
  return timers;
}
