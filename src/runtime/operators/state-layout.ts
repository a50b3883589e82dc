/**
 * How an operator keeps its state, as text recorded beside it in every snapshot (the inline
 * state's `stateLayout`): a window operator's windows are keyed states whose names hold only the
 * window's start, and its contents are accumulators, lists or reduced values. A job restored with
 * other windows (another size, slide or offset, session instead of tumbling) or another kind of
 * window function found state it could not read: windows rebuilt with the new size were dropped
 * as fired without firing, session windows never read tumbling ones, and a reduce read an
 * aggregate's accumulator. Refused instead, before the operator opens, naming both layouts.
 */
import { WeirError } from '../../core/errors.ts';

export function checkStateLayout(operator: string, was: unknown, now: string): void {
  // Snapshots taken before layouts were recorded: taken as this one (as they always were).
  if (was === undefined || was === now) return;
  const shown = typeof was === 'string' ? was : JSON.stringify(was);
  throw new WeirError(
    'RESTORE',
    `operator "${operator}": the snapshot keeps its state as ${shown}, this job as ${now}; it cannot carry over. Restore with the windows and window function it was taken with, or give the operator a new uid and restore with --allow-non-restored-state to start it empty`,
  );
}
