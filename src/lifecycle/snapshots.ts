/**
 * Savepoint decisions (issue 13 point 5), pure: retry backoff, and which savepoint history
 * cleanup disposes next. Cleanup keeps the newest completed savepoint whatever its age, never
 * touches a manual one (the user asked for it), nor one a deployment started from or will resume
 * from; of the rest (periodic and upgrade savepoints) it disposes those older than the maximum
 * age and the oldest beyond the maximum count.
 */
import type { AppStatus, SavepointRecord } from './status.ts';
import type { AppSpec } from './spec.ts';

/** Failed triggers of one savepoint before it is given up (FAILED). */
export const SAVEPOINT_MAX_FAILURES = 3;
/** The first retry's delay; doubled for each further failure (10, 20, 40 s as the Flink operator). */
export const RETRY_BASE_MS = 10_000;
/** The longest retry delay. */
export const RETRY_MAX_MS = 5 * 60_000;

export function backoffMs(failures: number): number {
  return Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.max(0, failures - 1));
}

/** Paths the application still needs: what it resumes from, and what it runs from until it has a checkpoint of its own. */
function pinned(status: AppStatus): Set<string> {
  const out = new Set<string>();
  if (status.restorePath !== undefined) out.add(status.restorePath);
  const d = status.deployment;
  if (d?.from !== undefined && d.lastCheckpoint === undefined) out.add(d.from);
  return out;
}

/** The next savepoint to dispose under the spec's history limits, or undefined. */
export function nextDisposal(status: AppStatus, spec: AppSpec, nowMs: number): SavepointRecord | undefined {
  const completed = status.savepoints.filter((r) => r.state === 'COMPLETED' && r.path !== undefined);
  if (completed.length <= 1) return undefined;
  const newest = completed.reduce((a, b) => ((b.completedAt ?? 0) > (a.completedAt ?? 0) ? b : a));
  const keep = pinned(status);
  const candidates = completed
    .filter((r) => r !== newest && r.trigger !== 'MANUAL' && !keep.has(r.path!) && (r.retryAt === undefined || r.retryAt <= nowMs))
    .sort((a, b) => (a.completedAt ?? 0) - (b.completedAt ?? 0));
  const tooOld = candidates.find((r) => nowMs - (r.completedAt ?? 0) > spec.savepoints.maxAgeMs);
  if (tooOld !== undefined) return tooOld;
  // Count every completed savepoint (manual ones too), dispose only the automatic ones.
  return completed.length > spec.savepoints.maxCount ? candidates[0] : undefined;
}
