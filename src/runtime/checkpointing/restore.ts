/**
 * Task-side restore of keyed state: the state files of this subtask's key groups are opened
 * (local files until checkpoint storage hands out inputs), read by the operator's state
 * backend, and the timers that came with them are decoded for the timer service.
 */
import type { StateInputHandle } from '../../core/state-streams.ts';
import { openLocalStateFile } from '../../checkpoint/local-streams.ts';
import type { KeyedStateBackend } from '../../state/backend.ts';
import { decodeTimerBlocks, type RestoredTimers } from './timer-blocks.ts';

export type { RestoredTimers } from './timer-blocks.ts';

export type OpenStateFile = (path: string, expectedSize: number) => Promise<StateInputHandle>;

export async function loadKeyedState(
  backend: KeyedStateBackend,
  files: readonly { path: string; size: number }[],
  openFile: OpenStateFile = openLocalStateFile,
): Promise<RestoredTimers> {
  const inputs: StateInputHandle[] = [];
  try {
    for (const f of files) inputs.push(await openFile(f.path, f.size));
    return decodeTimerBlocks(await backend.restore(inputs));
  } finally {
    await Promise.all(inputs.map((i) => i.close()));
  }
}
