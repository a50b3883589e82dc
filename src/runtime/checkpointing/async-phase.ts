/**
 * Runs a keyed state snapshot's asynchronous phase on the task's thread: its CPU work as
 * scheduler steps between batches (records keep flowing), its I/O in the background.
 */
import type { CheckpointStreamFactory } from '../../core/state-streams.ts';
import type { KeyedStateHandle, KeyedStateSnapshot } from '../../state/backend.ts';
import type { Schedulable, Scheduler } from '../scheduler.ts';

export function runAsyncPhase(
  snapshot: KeyedStateSnapshot, streams: CheckpointStreamFactory, streamName: string, scheduler: Scheduler,
  shared?: { readonly streams: CheckpointStreamFactory; readonly streamName: string },
): Promise<KeyedStateHandle> {
  const steps: Schedulable = { queued: false, step: () => snapshot.step() };
  return snapshot.write({ streams, streamName, ...(shared !== undefined ? { shared } : {}), wake: () => scheduler.wake(steps) });
}
