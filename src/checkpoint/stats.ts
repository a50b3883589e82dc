/**
 * Checkpoint statistics, as Flink's web UI and REST API show them: counts, and per
 * checkpoint its status, trigger time, end-to-end duration, sizes, and per subtask the sync
 * and async durations, alignment duration and start delay; failed checkpoints with reasons.
 */
import type { CheckpointFailureReason } from './failure-reason.ts';
import type { CheckpointType, SubtaskCheckpointStats, TaskAck } from '../core/checkpoint-format.ts';

export type CheckpointStatus = 'IN_PROGRESS' | 'COMPLETED' | 'FAILED';

export interface CheckpointStatsEntry {
  readonly id: number;
  status: CheckpointStatus;
  readonly type: CheckpointType;
  readonly triggerTimestamp: number;
  latestAckTimestamp: number | undefined;
  /** Trigger to completion (or failure), ms. */
  endToEndDurationMs: number | undefined;
  /** Full state size, bytes (incremental: what this checkpoint wrote plus the earlier files of its chains). */
  stateSize: number;
  /** Bytes written by this checkpoint (the full size unless incremental: then the deltas, or a new base). */
  checkpointedSize: number;
  numAcknowledged: number;
  readonly numSubtasks: number;
  subtasks: Record<string, SubtaskCheckpointStats>;
  failureReason?: CheckpointFailureReason;
  failureMessage?: string;
  externalPath?: string;
  readonly attempt: number;
}

export interface CheckpointCounts {
  triggered: number;
  inProgress: number;
  completed: number;
  failed: number;
  restored: number;
}

export class CheckpointStatsTracker {
  readonly counts: CheckpointCounts = { triggered: 0, inProgress: 0, completed: 0, failed: 0, restored: 0 };
  private readonly history = new Map<number, CheckpointStatsEntry>();
  lastCompleted: CheckpointStatsEntry | undefined;
  lastFailed: CheckpointStatsEntry | undefined;
  lastRestore: { id: number; path: string; at: number; isSavepoint: boolean; count: number } | undefined;

  constructor(private readonly historySize = 10, private readonly onEnd: (e: CheckpointStatsEntry) => void = () => {}) {}

  triggered(id: number, type: CheckpointType, at: number, numSubtasks: number, attempt: number): void {
    this.counts.triggered++;
    this.counts.inProgress++;
    this.history.set(id, {
      id, status: 'IN_PROGRESS', type, triggerTimestamp: at, latestAckTimestamp: undefined, endToEndDurationMs: undefined,
      stateSize: 0, checkpointedSize: 0, numAcknowledged: 0, numSubtasks, subtasks: {}, attempt,
    });
    while (this.history.size > this.historySize) {
      const oldest = [...this.history.values()].find((e) => e.status !== 'IN_PROGRESS');
      if (oldest === undefined) break;
      this.history.delete(oldest.id);
    }
  }

  acknowledged(id: number, ack: TaskAck, at: number): void {
    const e = this.history.get(id);
    if (e === undefined || e.status !== 'IN_PROGRESS' || e.subtasks[ack.task] !== undefined) return;
    let reused = 0;
    for (const op of ack.operators) for (const c of op.chain ?? []) if (c.checkpointId !== id) reused += c.size;
    e.subtasks[ack.task] = reused > 0 ? { ...ack.stats, fullStateSize: ack.stats.stateSize + reused } : ack.stats;
    e.numAcknowledged++;
    e.latestAckTimestamp = at;
    e.stateSize += ack.stats.stateSize + reused;
    e.checkpointedSize += ack.stats.stateSize;
  }

  completed(id: number, at: number, path: string): void {
    const e = this.history.get(id);
    if (e === undefined) return;
    e.status = 'COMPLETED';
    e.endToEndDurationMs = at - e.triggerTimestamp;
    e.externalPath = path;
    this.counts.inProgress--;
    this.counts.completed++;
    this.lastCompleted = e;
    this.onEnd(e);
  }

  failed(id: number, at: number, reason: CheckpointFailureReason, message: string): void {
    const e = this.history.get(id);
    if (e === undefined || e.status !== 'IN_PROGRESS') return;
    e.status = 'FAILED';
    e.endToEndDurationMs = at - e.triggerTimestamp;
    e.failureReason = reason;
    e.failureMessage = message;
    this.counts.inProgress--;
    this.counts.failed++;
    this.lastFailed = e;
    this.onEnd(e);
  }

  restored(id: number, path: string, at: number, isSavepoint: boolean): void {
    this.counts.restored++;
    this.lastRestore = { id, path, at, isSavepoint, count: this.counts.restored };
  }

  entries(): CheckpointStatsEntry[] {
    return [...this.history.values()].sort((a, b) => b.id - a.id);
  }
}

/** min / avg / max of a list, as Flink's summary tab. */
export function summarize(xs: readonly number[]): { min: number; avg: number; max: number } | undefined {
  if (xs.length === 0) return undefined;
  return { min: Math.min(...xs), avg: xs.reduce((a, b) => a + b, 0) / xs.length, max: Math.max(...xs) };
}
