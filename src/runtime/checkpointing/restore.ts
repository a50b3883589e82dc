/**
 * Task-side restore of keyed state: the state files of this subtask's key groups are opened
 * through checkpoint storage (the task's CheckpointStorageWorkerView, by the references the
 * restore plan built), read by the operator's state backend, and the timers that came with
 * them are decoded for the timer service. Local, in-memory and any later storage restore alike.
 */
import type { StateInputHandle } from '../../core/state-streams.ts';
import { inlineStateInput } from '../../checkpoint/inline-state.ts';
import { openStateFile } from '../../checkpoint/state-file.ts';
import type { CheckpointStorageWorkerView } from '../../checkpoint/storage.ts';
import type { KeyedStateBackend } from '../../state/backend.ts';
import { decodeTimerBlocks, type RestoredTimers } from './timer-blocks.ts';

export type { RestoredTimers } from './timer-blocks.ts';

/**
 * Restores `backend` from `files` (a reference and the size the snapshot recorded for each);
 * a file of another size is refused before it is read.
 */
export async function loadKeyedState(
  backend: KeyedStateBackend,
  files: readonly { path: string; size: number; inline?: string; chain?: true }[],
  storage: CheckpointStorageWorkerView,
): Promise<RestoredTimers> {
  if (files.some((f) => f.chain) && backend.restoresChains !== true) {
    throw new Error('this checkpoint is incremental (a chain of base and delta files) and this state backend cannot read such chains; restore it with the backend that wrote it, or take a savepoint (always full) and restore from that');
  }
  const inputs: StateInputHandle[] = [];
  try {
    for (const f of files) inputs.push(f.inline !== undefined ? inlineStateInput(f.path, f.inline) : await openStateFile(storage, f.path, f.size));
    return decodeTimerBlocks(await backend.restore(inputs));
  } finally {
    await Promise.all(inputs.map((i) => i.close()));
  }
}
