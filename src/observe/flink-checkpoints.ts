/**
 * Checkpoint statistics in the JSON shapes of Flink's REST API (rest/messages/checkpoints):
 * GET /jobs/:id/checkpoints, …/checkpoints/details/:cid, …/details/:cid/subtasks/:vid and
 * …/checkpoints/config. Pure functions of the job's checkpoint view. Unlike Flink, `history`
 * is the job's whole life (persisted beside the checkpoints), not the last 10.
 */
import type { CheckpointHistoryEntry } from '../checkpoint/history.ts';
import type { CheckpointStatsView } from '../cluster/job-control.ts';
import type { SubtaskCheckpointStats } from '../core/checkpoint-format.ts';
import { JAVA_LONG_MAX } from './json-reply.ts';

export interface VertexRef {
  readonly index: number;
  readonly id: string;
  readonly name: string;
  readonly parallelism: number;
}

export interface Stats {
  min: number;
  max: number;
  avg: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  p999: number;
}

/** Flink's StatsSummaryDto: min/max/avg and quantiles (nearest rank); zeros when there is nothing. */
export function statsSummary(xs: readonly number[]): Stats {
  if (xs.length === 0) return { min: 0, max: 0, avg: 0, p50: 0, p90: 0, p95: 0, p99: 0, p999: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
  return { min: s[0]!, max: s[s.length - 1]!, avg: s.reduce((a, b) => a + b, 0) / s.length, p50: q(0.5), p90: q(0.9), p95: q(0.95), p99: q(0.99), p999: q(0.999) };
}

function vertexOfTask(task: string): number {
  return Number(task.split(':')[0]);
}

function subtaskOfTask(task: string): number {
  return Number(task.split(':')[1]);
}

/** A subtask's whole state: an incremental checkpoint's stateSize is only what it wrote (its checkpointed size). */
const fullSize = (s: SubtaskCheckpointStats): number => s.fullStateSize ?? s.stateSize;

function perVertex(e: CheckpointHistoryEntry, vertices: readonly VertexRef[]): Record<string, unknown> {
  const tasks: Record<string, unknown> = {};
  for (const v of vertices) {
    const subs = Object.entries(e.subtasks ?? {}).filter(([t]) => vertexOfTask(t) === v.index);
    tasks[v.id] = {
      id: v.id, status: e.status,
      latest_ack_timestamp: e.latestAckTimestamp ?? -1,
      state_size: subs.reduce((a, [, s]) => a + fullSize(s), 0),
      checkpointed_size: subs.reduce((a, [, s]) => a + s.stateSize, 0),
      end_to_end_duration: e.endToEndDurationMs ?? -1,
      num_subtasks: v.parallelism,
      num_acknowledged_subtasks: subs.length,
    };
  }
  return tasks;
}

/** A history entry as Flink's CheckpointStatistics (completed and failed add their fields). */
export function checkpointStatistics(e: CheckpointHistoryEntry, vertices: readonly VertexRef[]): Record<string, unknown> {
  const subs = Object.values(e.subtasks ?? {});
  const out: Record<string, unknown> = {
    className: e.status === 'COMPLETED' ? 'completed' : e.status === 'FAILED' ? 'failed' : 'in_progress',
    id: e.id, status: e.status,
    is_savepoint: e.type !== 'checkpoint',
    checkpoint_type: e.type === 'checkpoint' ? 'CHECKPOINT' : 'SAVEPOINT',
    trigger_timestamp: e.triggerTimestamp,
    latest_ack_timestamp: e.latestAckTimestamp ?? -1,
    state_size: e.stateSize,
    // What this checkpoint wrote: an incremental one's delta (state_size counts the files it reuses).
    checkpointed_size: e.checkpointedSize,
    end_to_end_duration: e.endToEndDurationMs ?? -1,
    alignment_buffered: 0,
    processed_data: 0,
    // Unaligned checkpoints: the in-flight data stored as channel state.
    persisted_data: subs.reduce((a, s) => a + (s.persistedInFlightBytes ?? 0), 0),
    num_subtasks: e.numSubtasks,
    num_acknowledged_subtasks: e.numAcknowledged,
    tasks: perVertex(e, vertices),
    // weir's own: the phase maxima over subtasks, what the trend and timeline views draw.
    sync_duration_max: subs.reduce((a, s) => Math.max(a, s.syncMs), 0),
    async_duration_max: subs.reduce((a, s) => Math.max(a, s.asyncMs), 0),
    alignment_duration_max: subs.reduce((a, s) => Math.max(a, s.alignmentMs), 0),
    start_delay_max: subs.reduce((a, s) => Math.max(a, s.startDelayMs), 0),
    attempt: e.attempt,
  };
  if (e.status === 'COMPLETED') {
    out['external_path'] = e.externalPath ?? null;
    out['discarded'] = false;
  }
  if (e.status === 'FAILED') {
    out['failure_timestamp'] = e.triggerTimestamp + (e.endToEndDurationMs ?? 0);
    out['failure_message'] = e.failureMessage !== undefined ? `${e.failureReason ?? 'FAILED'}: ${e.failureMessage}` : e.failureReason ?? null;
  }
  return out;
}

/** GET /jobs/:id/checkpoints. `limit` bounds the history returned (newest first). */
export function checkpointingStatistics(v: CheckpointStatsView, vertices: readonly VertexRef[], limit: number): Record<string, unknown> {
  const all = v.history;
  const completed = all.filter((e) => e.status === 'COMPLETED');
  const failed = all.filter((e) => e.status === 'FAILED');
  const lastOf = (xs: readonly CheckpointHistoryEntry[], pred: (e: CheckpointHistoryEntry) => boolean) => {
    for (let i = xs.length - 1; i >= 0; i--) if (pred(xs[i]!)) return checkpointStatistics(xs[i]!, vertices);
    return null;
  };
  const history: Record<string, unknown>[] = [];
  for (const e of [...v.inProgress].sort((a, b) => b.id - a.id)) history.push(checkpointStatistics(e, vertices));
  for (let i = all.length - 1; i >= 0 && history.length < limit; i--) history.push(checkpointStatistics(all[i]!, vertices));
  return {
    // From the counters, not the history kept in memory: thinned past its bound, counts from it went down.
    counts: { restored: v.restored?.count ?? 0, total: v.ended.completed + v.ended.failed + v.inProgress.length, in_progress: v.inProgress.length, completed: v.ended.completed, failed: v.ended.failed },
    summary: {
      state_size: statsSummary(completed.map((e) => e.stateSize)),
      checkpointed_size: statsSummary(completed.map((e) => e.checkpointedSize)),
      end_to_end_duration: statsSummary(completed.map((e) => e.endToEndDurationMs ?? 0)),
      alignment_buffered: statsSummary([]),
      processed_data: statsSummary([]),
      persisted_data: statsSummary(completed.map((e) => Object.values(e.subtasks ?? {}).reduce((a, s) => a + (s.persistedInFlightBytes ?? 0), 0))),
    },
    latest: {
      completed: lastOf(all, (e) => e.status === 'COMPLETED' && e.type === 'checkpoint'),
      savepoint: lastOf(all, (e) => e.status === 'COMPLETED' && e.type !== 'checkpoint'),
      failed: lastOf(all, (e) => e.status === 'FAILED'),
      restored: v.restored === undefined ? null : { id: v.restored.id, restore_timestamp: v.restored.at, is_savepoint: v.restored.isSavepoint, external_path: v.restored.path },
    },
    history,
  };
}

function find(v: CheckpointStatsView, id: number): CheckpointHistoryEntry | undefined {
  return v.inProgress.find((e) => e.id === id) ?? [...v.history].reverse().find((e) => e.id === id);
}

/** GET …/checkpoints/details/:cid, or undefined when there is no such checkpoint. */
export function checkpointDetails(v: CheckpointStatsView, vertices: readonly VertexRef[], id: number): Record<string, unknown> | undefined {
  const e = find(v, id);
  return e === undefined ? undefined : checkpointStatistics(e, vertices);
}

function subtaskJson(index: number, e: CheckpointHistoryEntry, s: SubtaskCheckpointStats | undefined): Record<string, unknown> {
  if (s === undefined) return { index, status: 'pending_or_failed' };
  return {
    index, status: 'completed',
    ack_timestamp: e.triggerTimestamp + s.startDelayMs + s.alignmentMs + s.syncMs + s.asyncMs,
    end_to_end_duration: s.startDelayMs + s.alignmentMs + s.syncMs + s.asyncMs,
    state_size: fullSize(s), checkpointed_size: s.stateSize,
    checkpoint: { sync: s.syncMs, async: s.asyncMs },
    alignment: { buffered: 0, processed: 0, persisted: s.persistedInFlightBytes ?? 0, duration: s.alignmentMs },
    start_delay: s.startDelayMs,
    unaligned_checkpoint: s.unaligned === true,
    aborted: false,
  };
}

/** GET …/checkpoints/details/:cid/subtasks/:vid: per subtask phase timings and a summary. */
export function subtaskDetails(v: CheckpointStatsView, vertex: VertexRef, id: number): Record<string, unknown> | undefined {
  const e = find(v, id);
  if (e === undefined) return undefined;
  const subtasks: Record<string, unknown>[] = [];
  const acked: SubtaskCheckpointStats[] = [];
  for (let i = 0; i < vertex.parallelism; i++) {
    const s = e.subtasks?.[`${vertex.index}:${i}`];
    if (s !== undefined) acked.push(s);
    subtasks.push(subtaskJson(i, e, s));
  }
  const stat = (f: (s: SubtaskCheckpointStats) => number) => statsSummary(acked.map(f));
  return {
    id: e.id, status: e.status, latest_ack_timestamp: e.latestAckTimestamp ?? -1,
    state_size: acked.reduce((a, s) => a + fullSize(s), 0), checkpointed_size: acked.reduce((a, s) => a + s.stateSize, 0),
    end_to_end_duration: e.endToEndDurationMs ?? -1, num_subtasks: vertex.parallelism, num_acknowledged_subtasks: acked.length,
    summary: {
      state_size: stat(fullSize),
      checkpointed_size: stat((s) => s.stateSize),
      end_to_end_duration: stat((s) => s.startDelayMs + s.alignmentMs + s.syncMs + s.asyncMs),
      checkpoint_duration: { sync: stat((s) => s.syncMs), async: stat((s) => s.asyncMs) },
      alignment: { buffered: statsSummary([]), processed: statsSummary([]), persisted: stat((s) => s.persistedInFlightBytes ?? 0), duration: stat((s) => s.alignmentMs) },
      start_delay: stat((s) => s.startDelayMs),
    },
    subtasks,
  };
}

/** GET …/checkpoints/config. */
export function checkpointConfigJson(v: CheckpointStatsView): Record<string, unknown> {
  const c = v.config;
  return {
    mode: c.mode === 'exactly-once' ? 'exactly_once' : 'at_least_once',
    interval: c.intervalMs ?? JAVA_LONG_MAX, // Flink's "never"
    timeout: c.timeoutMs,
    min_pause: c.minPauseMs,
    max_concurrent: c.maxConcurrent,
    externalization: { enabled: c.retention !== 'none', delete_on_cancellation: c.retention !== 'retain-on-cancel' },
    state_backend: v.stateBackend,
    // Flink names the storage by its class; the location says which: a path or an s3:// URI.
    checkpoint_storage: c.dir === undefined ? 'none' : /^[a-z][a-z0-9+.-]*:\/\//i.test(c.dir) ? c.dir : `file: ${c.dir}`,
    unaligned_checkpoints: c.unaligned ?? false,
    tolerable_failed_checkpoints: c.tolerableFailures,
    aligned_checkpoint_timeout: c.alignedCheckpointTimeoutMs ?? 0,
    checkpoints_after_tasks_finish: true,
    retained: c.numRetained,
  };
}

/**
 * GET …/checkpoints/trend (weir's own, beyond Flink): every completed checkpoint of the job's
 * whole life as parallel arrays, compact enough for a chart of a long history.
 */
/**
 * Points in one trend answer at most: beyond, every k-th completed checkpoint (and the newest).
 * The whole history of a job a week old at 1 s was 24 MB per request, polled each second.
 */
export const MAX_TREND_POINTS = 2000;

export function checkpointTrend(v: CheckpointStatsView): Record<string, number[]> {
  const out = { id: [] as number[], trigger_timestamp: [] as number[], end_to_end_duration: [] as number[], checkpointed_size: [] as number[], state_size: [] as number[] };
  let completed = 0;
  for (const e of v.history) if (e.status === 'COMPLETED') completed++;
  const stride = Math.max(1, Math.ceil(completed / MAX_TREND_POINTS));
  let n = 0;
  for (const e of v.history) {
    if (e.status !== 'COMPLETED') continue;
    const i = n++;
    if (i % stride !== 0 && i !== completed - 1) continue;
    out.id.push(e.id);
    out.trigger_timestamp.push(e.triggerTimestamp);
    out.end_to_end_duration.push(e.endToEndDurationMs ?? 0);
    out.checkpointed_size.push(e.checkpointedSize);
    out.state_size.push(e.stateSize);
  }
  return out;
}
