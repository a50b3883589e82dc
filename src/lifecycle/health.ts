/**
 * Health of a running deployment (issue 13 point 7), pure: too many restarts of the job inside
 * its process within a window, or no completed checkpoint within the progress window, make it
 * unhealthy; the reconciler then restarts it from its latest state, with an event. As in the
 * Flink operator, a job that ended is never health-restarted (it is handled as ended).
 */
import type { Deployment } from './status.ts';
import type { AppSpec } from './spec.ts';

/** Records restarts seen since the last observation; keeps only those inside the window (bounded). */
export function foldRestarts(d: Deployment, observedRestarts: number, spec: AppSpec, nowMs: number): void {
  const bound = spec.health.restartsThreshold + 1;
  for (let n = d.restarts; n < observedRestarts && d.restartTimes.length < bound * 2; n++) d.restartTimes.push(nowMs);
  d.restarts = Math.max(d.restarts, observedRestarts);
  d.restartTimes = d.restartTimes.filter((t) => nowMs - t <= spec.health.restartsWindowMs).slice(-bound);
}

/** Why the deployment is unhealthy, or undefined. */
export function unhealthy(d: Deployment, spec: AppSpec, nowMs: number): string | undefined {
  if (d.restartTimes.length > spec.health.restartsThreshold) {
    return `${d.restartTimes.length} restarts within ${spec.health.restartsWindowMs} ms (threshold ${spec.health.restartsThreshold})`;
  }
  const window = spec.health.checkpointProgressWindowMs;
  if (window !== undefined && d.runningSince !== undefined) {
    const since = Math.max(d.runningSince, d.lastCheckpoint?.completedAt ?? 0);
    if (nowMs - since > window) return `no completed checkpoint for ${nowMs - since} ms (progress window ${window} ms)`;
  }
  return undefined;
}
