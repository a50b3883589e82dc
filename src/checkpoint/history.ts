/**
 * A job's checkpoint history for its whole life, not Flink's last 10: every checkpoint that
 * ended (completed or failed), as appended to checkpoint-history.jsonl beside the checkpoints,
 * read back when the job resumes (a restart of the process, `--from latest`), so trends of
 * duration and size survive failover. In memory the newest entries keep their per-subtask
 * timings; older ones keep the numbers a trend needs, and the oldest are thinned (every second
 * one dropped when the list is full), so memory stays bounded on a job of any age while the
 * trend still reaches back to its first checkpoint.
 */
import { strict as assert } from 'node:assert';
import type { SubtaskCheckpointStats } from '../core/checkpoint-format.ts';

export interface CheckpointHistoryEntry {
  readonly id: number;
  readonly status: 'COMPLETED' | 'FAILED' | 'IN_PROGRESS';
  readonly type: string;
  readonly triggerTimestamp: number;
  readonly endToEndDurationMs: number | undefined;
  readonly stateSize: number;
  readonly checkpointedSize: number;
  readonly numAcknowledged: number;
  readonly numSubtasks: number;
  /** Per subtask ("vertex:subtask") timings; dropped from old entries (see DETAILED_ENTRIES). */
  readonly subtasks: Readonly<Record<string, SubtaskCheckpointStats>> | undefined;
  readonly failureReason: string | undefined;
  readonly failureMessage: string | undefined;
  readonly externalPath: string | undefined;
  readonly attempt: number;
  readonly latestAckTimestamp?: number | undefined;
}

/** Entries that keep their per-subtask timings in memory (the file keeps them all). */
const DETAILED_ENTRIES = 1000;
/**
 * Entries kept in memory at all (about 270 bytes each without subtasks: some 13 MiB). It was
 * 600,000 entries and no thinning: 161 MiB after a week of 1 s checkpoints, trimmed from the
 * oldest end, so the start of a trend was lost anyway.
 */
export const MAX_HISTORY_ENTRIES = 50_000;

export class CheckpointHistory {
  private readonly entries: CheckpointHistoryEntry[] = [];
  private readonly ids = new Set<number>();
  /**
   * Checkpoints ended, by outcome, ever (not only those still in memory): Flink's
   * numberOfCompleted/FailedCheckpoints never go down within a job, and past MAX_HISTORY_ENTRIES counts
   * taken from the entries did. The newest completed one, for the last-checkpoint gauges.
   */
  completedCount = 0;
  failedCount = 0;
  lastCompleted: CheckpointHistoryEntry | undefined;

  /** Lines read from the history file; lines that are not history entries are skipped and counted. */
  load(lines: readonly unknown[]): number {
    let skipped = 0;
    for (const l of lines) {
      const e = parseEntry(l);
      if (e === undefined) skipped++;
      else this.add(e);
    }
    this.entries.sort((a, b) => a.id - b.id);
    return skipped;
  }

  /** A checkpoint ended; an id seen before (a line read back and ended again) is not doubled. */
  add(e: CheckpointHistoryEntry): void {
    if (this.ids.has(e.id)) return;
    this.ids.add(e.id);
    if (e.status === 'COMPLETED') {
      this.completedCount++;
      if (this.lastCompleted === undefined || e.id > this.lastCompleted.id) this.lastCompleted = e;
    } else if (e.status === 'FAILED') {
      this.failedCount++;
    }
    const list = this.entries;
    // Checkpoints end nearly in id order: insert from the back.
    let i = list.length;
    while (i > 0 && list[i - 1]!.id > e.id) i--;
    list.splice(i, 0, e);
    if (list.length > DETAILED_ENTRIES) {
      const old = list[list.length - DETAILED_ENTRIES - 1]!;
      if (old.subtasks !== undefined) list[list.length - DETAILED_ENTRIES - 1] = { ...old, subtasks: undefined };
    }
    if (list.length > MAX_HISTORY_ENTRIES) this.thinOldestHalf();
  }

  /** Every second entry of the older half dropped: the first stays, the spacing doubles. */
  private thinOldestHalf(): void {
    const list = this.entries;
    const half = list.length >> 1;
    let kept = 0;
    for (let i = 0; i < half; i++) {
      if (i % 2 === 1) this.ids.delete(list[i]!.id);
      else list[kept++] = list[i]!;
    }
    list.copyWithin(kept, half);
    list.length -= half - kept;
    assert(list.length <= MAX_HISTORY_ENTRIES, 'checkpoint history thinned below its bound');
  }

  /** Oldest first. */
  all(): readonly CheckpointHistoryEntry[] {
    return this.entries;
  }

  get(id: number): CheckpointHistoryEntry | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) if (this.entries[i]!.id === id) return this.entries[i];
    return undefined;
  }
}

/** The largest time a JavaScript Date holds, ms from the epoch. */
const MAX_DATE_MS = 8.64e15;

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** A history line as written by historyLine(); anything else (a foreign or damaged line) is undefined. */
export function parseEntry(l: unknown): CheckpointHistoryEntry | undefined {
  if (l === null || typeof l !== 'object') return undefined;
  const o = l as Record<string, unknown>;
  const id = num(o['id']);
  const status = o['status'];
  const trigger = num(o['triggerTimestamp']);
  if (id === undefined || trigger === undefined || (status !== 'COMPLETED' && status !== 'FAILED')) return undefined;
  // A time a Date can hold (±8.64e15 ms): printing 1e20 failed the listing ("Invalid time value").
  if (Math.abs(trigger) > MAX_DATE_MS) return undefined;
  const subtasks = o['subtasks'] !== null && typeof o['subtasks'] === 'object' ? (o['subtasks'] as Record<string, SubtaskCheckpointStats>) : undefined;
  return {
    id, status, type: str(o['type']) ?? 'checkpoint', triggerTimestamp: trigger, endToEndDurationMs: num(o['endToEndDurationMs']),
    stateSize: num(o['stateSize']) ?? 0, checkpointedSize: num(o['checkpointedSize']) ?? 0,
    numAcknowledged: num(o['numAcknowledged']) ?? 0, numSubtasks: num(o['numSubtasks']) ?? 0, subtasks,
    failureReason: str(o['failureReason']), failureMessage: str(o['failureMessage']), externalPath: str(o['externalPath']),
    attempt: num(o['attempt']) ?? 0, latestAckTimestamp: num(o['latestAckTimestamp']),
  };
}
