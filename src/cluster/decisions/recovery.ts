/**
 * What the job master does when an attempt ends, as pure decisions: finish, fall back from a
 * corrupt checkpoint to the one before it, restart (when and from where), or give up. Time
 * comes in as an argument (the restart strategy's backoff); listing the candidate checkpoints
 * is the shell's I/O, done only when a decision asks for it, and handed back here to choose.
 *
 * Bounds: a fallback never spends a restart, so fallbacks in a row are bounded on their own
 * (maxCorruptFallbacks); restarts are bounded by the restart strategy (none, fixed-delay and
 * failure-rate give up; exponential-delay, Flink's default, after attempts-before-reset-backoff
 * restarts without a stable period, by default never, each time after a backoff of up to
 * max-backoff).
 */
import type { CompletedCheckpointRef } from '../../checkpoint/storage.ts';
import type { SerializedError } from '../messages.ts';
import type { RestartBackoff } from '../restart-strategy.ts';

/** Failures every restart meets again, with why: ended at once, no restart spent (as RESTORE). */
const REPEATING_FAILURES: Readonly<Record<string, string>> = {
  MALFORMED_RECORD: 'a malformed record is read again by every restart and fails it the same way; set malformed: \'dead-letter\' to route such records aside',
  STATE_RESTORE: 'the restored state does not fit the job, and every restart restores it again',
};

export type AttemptOutcome =
  | { readonly status: 'FINISHED' }
  | { readonly status: 'CANCELED' }
  /** corruptCheckpoint: the snapshot the attempt restored from could not be read (not the job's fault). */
  | { readonly status: 'FAILED'; readonly error: SerializedError; readonly corruptCheckpoint?: string };

export type AfterAttempt =
  | { readonly type: 'end'; readonly outcome: AttemptOutcome; readonly log?: string }
  /** List the job's completed checkpoints, then chooseFallback(). */
  | { readonly type: 'fall-back'; readonly corrupt: string; readonly error: SerializedError }
  /** List the job's completed checkpoints (when checkpointing), wait delayMs, then restartFrom(). */
  | { readonly type: 'restart'; readonly delayMs: number; readonly reason: string; readonly error: SerializedError };

export type FallbackChoice =
  | { readonly type: 'restore'; readonly from: CompletedCheckpointRef; readonly log: string }
  | { readonly type: 'end'; readonly outcome: AttemptOutcome };

export type RestartChoice =
  | { readonly type: 'restart'; readonly from: CompletedCheckpointRef | undefined; readonly log: string }
  | { readonly type: 'end'; readonly outcome: AttemptOutcome; readonly log: string };

export interface RecoveryConfig {
  readonly maxCorruptFallbacks: number;
}

export class RecoveryLogic {
  /** Snapshots that failed to restore: never chosen again. */
  private readonly bad = new Set<string>();
  /**
   * Checkpoints of an earlier run newer than the one this run started from: the user went back
   * past them (--from an older checkpoint of the same job). Never restored: a restart to one
   * would skip what this run has not yet reprocessed. (Flink gives the resumed job a
   * checkpoint store of its own.)
   */
  private readonly abandoned = new Set<string>();
  /**
   * The newest savepoint whose output the sinks committed (stop-with-savepoint, drained or
   * not): a restart never goes back past it, or that output would be written again. (Flink
   * keeps such savepoints in the completed checkpoint store; intermediate ones commit nothing.)
   */
  private committedSavepoint: CompletedCheckpointRef | undefined;
  private fallbacksInRow = 0;

  constructor(
    private readonly config: RecoveryConfig,
    private readonly restart: RestartBackoff,
    /** The snapshot the user named (--from <path>), as a reference: never fallen back from. */
    private readonly explicitSnapshot: string | undefined,
  ) {}

  abandon(paths: Iterable<string>): void {
    for (const p of paths) this.abandoned.add(p);
  }

  savepointCommitted(ref: CompletedCheckpointRef): void {
    if (this.committedSavepoint === undefined || ref.metadata.checkpointId > this.committedSavepoint.metadata.checkpointId) this.committedSavepoint = ref;
  }

  afterAttempt(outcome: AttemptOutcome, cancelled: boolean, now: number): AfterAttempt {
    if (outcome.status !== 'FAILED') return { type: 'end', outcome };
    if (cancelled) return { type: 'end', outcome: { status: 'CANCELED' } };
    const corrupt = outcome.corruptCheckpoint;
    if (corrupt !== undefined) {
      // Not the job's fault: the snapshot is bad. Try the previous one without spending a
      // restart; but never away from a snapshot the user named explicitly.
      this.bad.add(corrupt);
      this.fallbacksInRow++;
      if (corrupt === this.explicitSnapshot) return this.cannotRestore(corrupt, outcome.error, '');
      if (this.fallbacksInRow > this.config.maxCorruptFallbacks) {
        return this.cannotRestore(corrupt, outcome.error, ` (${this.fallbacksInRow} corrupt checkpoints in a row; giving up)`);
      }
      return { type: 'fall-back', corrupt, error: outcome.error };
    }
    this.fallbacksInRow = 0;
    if (outcome.error.code === 'RESTORE') {
      // The snapshot does not fit the job (a sink's identity changed, state of a removed operator):
      // every restart would be refused the same way.
      return { type: 'end', outcome, log: `weir: job failed and will not restart: the checkpoint cannot be restored into this job (${outcome.error.message})` };
    }
    const repeats = REPEATING_FAILURES[outcome.error.code ?? ''];
    if (repeats !== undefined) {
      // Replayed from the same checkpoint, the same record or state fails the next attempt the
      // same way: with checkpointing the default strategy restarted such a job for ever.
      return { type: 'end', outcome, log: `weir: job failed and will not restart: ${repeats} (${outcome.error.message})` };
    }
    const d = this.restart.onFailure(now);
    if (!d.restart) {
      // With restarts configured, say why they stopped; without, the caller reports the error.
      const log = this.restart.config.type !== 'none' ? `weir: job failed and will not restart again (${d.reason})` : undefined;
      return log === undefined ? { type: 'end', outcome } : { type: 'end', outcome, log };
    }
    return { type: 'restart', delayMs: d.delayMs, reason: d.reason, error: outcome.error };
  }

  /** After 'fall-back': the newest good checkpoint, else the restored snapshot; never empty state. */
  chooseFallback(step: Extract<AfterAttempt, { type: 'fall-back' }>, candidates: readonly CompletedCheckpointRef[], restoredFrom: CompletedCheckpointRef | undefined): FallbackChoice {
    const prev = this.latestGood(candidates, restoredFrom);
    if (prev === undefined) return this.cannotRestore(step.corrupt, step.error, '');
    return {
      type: 'restore', from: prev,
      log: `weir: checkpoint ${step.corrupt} cannot be restored (${step.error.message}); falling back to the previous checkpoint ${prev.path}`,
    };
  }

  /**
   * After 'restart': where the next attempt starts (the newest good checkpoint, or where this one
   * started). `newestCompletedThisRun`: the newest checkpoint this run completed. When none of
   * the listed checkpoints can be used (the newest failed its check, and retention kept no other),
   * going back to where the run began (empty state, or a snapshot retention has since deleted)
   * would repeat everything the completed checkpoints committed: the job ends instead, saying so.
   */
  restartFrom(
    step: Extract<AfterAttempt, { type: 'restart' }>,
    candidates: readonly CompletedCheckpointRef[] | undefined,
    restoredFrom: CompletedCheckpointRef | undefined,
    newestCompletedThisRun?: number,
  ): RestartChoice {
    // Without checkpointing (no candidates) a stop's committed savepoint still counts: before, the
    // restart went back to the beginning, and its sinks' committed output was written again.
    const listed = this.latestGood(candidates ?? [], undefined);
    if (listed === undefined && candidates !== undefined && newestCompletedThisRun !== undefined) {
      const back = restoredFrom !== undefined ? `${restoredFrom.metadata.type} ${restoredFrom.metadata.checkpointId}` : 'empty state';
      return {
        type: 'end',
        outcome: { status: 'FAILED', error: { ...step.error, message: `${step.error.message}; and it cannot restart: checkpoint ${newestCompletedThisRun}, the newest this run completed, and every other it kept cannot be restored (see the lines above), and going back to ${back} would write its output again; restore one by hand (--from) once it is repaired, or start over on purpose` } },
        log: `weir: job failed and will not restart: no checkpoint it completed can be restored`,
      };
    }
    const from = listed ?? (restoredFrom !== undefined && !this.bad.has(restoredFrom.path) ? restoredFrom : undefined);
    return {
      type: 'restart',
      from,
      log: `weir: job failed (${step.error.message}); restarting in ${step.delayMs} ms (${step.reason}) from ${from ? `${from.metadata.type} ${from.metadata.checkpointId}` : 'the beginning'}`,
    };
  }

  /**
   * The newest of: the newest candidate neither bad nor abandoned, and the committed savepoint
   * (unless bad); else a restored snapshot from elsewhere (a savepoint, another job's checkpoint).
   */
  private latestGood(candidates: readonly CompletedCheckpointRef[], restoredFrom: CompletedCheckpointRef | undefined): CompletedCheckpointRef | undefined {
    let best: CompletedCheckpointRef | undefined;
    for (let i = candidates.length - 1; i >= 0 && best === undefined; i--) {
      const c = candidates[i]!;
      if (!this.bad.has(c.path) && !this.abandoned.has(c.path)) best = c;
    }
    const sp = this.committedSavepoint;
    if (sp !== undefined && !this.bad.has(sp.path) && (best === undefined || sp.metadata.checkpointId > best.metadata.checkpointId)) best = sp;
    if (best !== undefined) return best;
    if (restoredFrom !== undefined && !this.bad.has(restoredFrom.path)) return restoredFrom;
    return undefined;
  }

  private cannotRestore(corrupt: string, error: SerializedError, why: string): { type: 'end'; outcome: AttemptOutcome } {
    return { type: 'end', outcome: { status: 'FAILED', error: { ...error, message: `cannot restore from ${corrupt}: ${error.message}${why}` } } };
  }
}
