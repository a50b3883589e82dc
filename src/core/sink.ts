/**
 * The sink contract for exactly-once output (Flink's Sink V2 with a committer): a writer per
 * subtask writes records into something invisible to readers, and at each checkpoint barrier
 * hands over "committables" (a pending file, a prepared transaction). The committer makes
 * them visible once the checkpoint that holds them has completed. After a failure, the
 * committables of the restored checkpoint are committed again, so commit must be idempotent.
 */
import type { MalformedRecord } from './source.ts';

export interface SinkContext {
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  /** Processing time in ms. */
  now(): number;
  /** Id of the sink operator (its uid, or a stable hash): with the job, it names this sink's progress in external systems. */
  readonly operatorId?: string;
  /** Id of the checkpoint the job restored from, if any. */
  readonly restoredCheckpointId: number | undefined;
  /** Writes a line to the job's log (never credentials). */
  log(line: string): void;
  /**
   * Hands records the sink leaves out as malformed (its malformed: 'dead-letter') to the job's
   * dead letters, as a source's: counted, and written to the job's dead-letter directory (given,
   * or beside its first file output), else the first few shown in the log. A context made by
   * hand may lack it.
   */
  deadLetters?(records: readonly MalformedRecord[]): void;
  /** Wakes the sink's task (after isAvailable turned true again). Safe from any callback. */
  wake?(): void;
  /**
   * Fires when the task was cancelled or failed and its sink's requests still under way have
   * not ended within SINK_IO_ABORT_MS (commit-sink.ts): a sink stops them (and their retries),
   * so that none outlives the attempt, which is reported ended soon after. Their outcome is
   * then unknown, as after a crash: the restore settles it. A context made by hand may lack it.
   */
  readonly signal?: AbortSignal;
}

export interface SinkWriter<T, C> {
  /** Writes a batch of records (the arrays are borrowed for the call). */
  write(values: readonly T[], timestamps: readonly number[]): void;
  /** At a checkpoint barrier: make what was written so far durable and return it as committables. */
  prepareCommit(checkpointId: number, options?: PrepareCommitOptions): C[];
  /**
   * Optional: resolves once the committables prepareCommit(checkpointId) returned are durable
   * outside weir (a PREPARE TRANSACTION has finished). The checkpoint is acknowledged only
   * after; a rejection declines it, and the writer should then fail on its next call (the work
   * those committables name is lost).
   */
  whenPrepared?(checkpointId: number): Promise<void> | undefined;
  /** End of input: nothing more will be written (a final checkpoint follows). */
  finish?(): void;
  /**
   * Optional backpressure: false while the writer holds as much unacknowledged output as it may
   * (a bounded buffer); the task takes no input until it turns true and the writer calls ctx.wake().
   */
  isAvailable?(): boolean;
  /** Optional: resolves once everything written has reached the external system; awaited before the task ends. */
  drain?(): Promise<void> | undefined;
  /**
   * Starts no request to the external system from here on (a cancelled or failed task's
   * writer: what it still had queued belongs to no completed checkpoint). A returned promise
   * resolves once the requests already under way have ended; the attempt is reported ended
   * only after (bounded), so nothing of it reaches the system once the job is said to stop.
   */
  close?(): void | Promise<void>;
}

/** What a barrier tells the writer besides its checkpoint id. */
export interface PrepareCommitOptions {
  /**
   * The job stops after this snapshot (a stop-with-savepoint without drain: no record follows,
   * and the snapshot's commit is the last one). A writer that keeps output open across
   * checkpoints (the file sink's S3 part, one multipart upload) closes it now, so that commit
   * makes everything written visible, as a stop does for a local directory's files.
   */
  readonly stop?: boolean;
  /**
   * The barrier is a savepoint's that does not stop the job (an intermediate savepoint, or a
   * drained stop's final one). An intermediate savepoint is not committed when it completes
   * (docs/checkpointing.md, "Savepoints"): its committables wait for the next checkpoint's
   * commit, or for a job that starts from it. A writer whose prepared output holds locks until
   * its commit (PostgreSQL two-phase) may hand over its output as data instead and carry it into
   * the next checkpoint's, so that the next prepare does not wait for those locks; its committer
   * then leaves such a committable out when a later one of the same writer in the same commit
   * carries it.
   */
  readonly savepoint?: boolean;
}

export interface SinkCommitter<C> {
  /**
   * Makes committables visible; idempotent (may be called again for the same ones after a restore).
   * `checkpointId` (always given by the runtime; optional for callers such as tests) is the highest checkpoint whose committables are in the call (0: the end of a
   * job without checkpoints). A sink that implements `lastCommittedCheckpoint` records it here,
   * no later than the output becomes visible (in the commit's own transaction where the external
   * system has them; the file sink writes it beside its output before the renames), so a record
   * never says less than what is visible.
   */
  commit(committables: readonly C[], checkpointId?: number): void | Promise<void>;
  /**
   * Resolves once background work a commit started (the file sink's compaction on S3) has ended;
   * the task waits for it before it finishes, so a finished job leaves nothing half done.
   */
  settle?(): Promise<void>;
  close?(): void | Promise<void>;
}

export interface TwoPhaseCommitSink<T, C> {
  readonly name: string;
  /**
   * Longest one commit (of one checkpoint's committables, retries included) may take before the
   * task fails (default 120 s): a commit that hangs must not hang the job, and one that takes
   * longer by nature (a large transaction on a slow server) must not fail every attempt.
   */
  readonly commitTimeoutMs?: number;
  /** A sink writing files: their directory (the job's dead letters go beside it, in <dir>.dead-letters). */
  readonly outputDir?: string;
  createWriter(ctx: SinkContext): SinkWriter<T, C>;
  createCommitter(ctx: SinkContext): SinkCommitter<C>;
  /**
   * Before writing, after a restore: clean up what an interrupted attempt left behind that no
   * committable refers to. Receives this subtask's share of the restored committables (which it
   * commits again) and every committable of the restored checkpoint over all subtasks (what
   * any subtask commits again; prepared work of a completed checkpoint outside it was lost).
   */
  recover?(ctx: SinkContext, restoredCheckpointId: number, committables: readonly C[], referenced: readonly C[]): void | Promise<void>;
  /**
   * The highest checkpoint id whose output any subtask of this sink committed, as its committer
   * recorded it (beside the output, or in the external system); undefined when nothing was
   * committed there. The job manager reads it before every attempt, on the main thread: a
   * restore from an older checkpoint (or a fresh start) would replay records whose output is
   * already committed and write it twice, so the job refuses to start unless the user accepts
   * duplicates. A sink without it cannot be checked (its duplicates go unnoticed).
   */
  lastCommittedCheckpoint?(scope: CommitScope): number | undefined | Promise<number | undefined>;
  /**
   * Asked before an attempt that restores nothing (a fresh start), on the main thread: a
   * one-line reason when such a start would destroy work a completed checkpoint or savepoint of
   * an earlier run still needs (the file sink on S3: multipart uploads holding open parts, which
   * a fresh start aborts); undefined when nothing stands in the way. The start is refused with
   * it, or, with duplicates accepted (--allow-duplicate-output), the reason is logged as a warning.
   */
  freshStartRefusal?(scope: CommitScope): string | undefined | Promise<string | undefined>;
  /**
   * Takes an exclusive lease on the sink's output for the job's run (the file sink: its
   * directory; a database sink: an advisory lock), so two jobs never write one output. Called
   * on the main thread before the first attempt; throws when another live job holds it (naming
   * it); a holder that died is taken over. `owner` names this job in the holder's record.
   */
  lease?(owner: string): { release(): void };
  /**
   * Optional: what names this sink's output and progress records outside weir (a database
   * sink's jobId). Recorded in every checkpoint; a restore refuses a checkpoint taken under
   * another identity, because the progress records and prepared work of the old one would not
   * be recognised and the restored output would be committed a second time. It must therefore
   * stay the same across restarts: never generated per run.
   */
  identity?(): string;
}

/**
 * The refusal when a sink's identity changed since the snapshot being restored (the restore
 * plan checks the job's sink objects, each subtask its own: a jobId generated per module
 * evaluation differs between the job manager and the workers too).
 */
export function sinkIdentityChanged(sinkName: string, was: string, now: string): string {
  return `sink "${sinkName}" was checkpointed with ${was} and now has ${now}: its committed progress and prepared work are recorded under the old one, so a restore would write output twice; keep the sink's jobId the same across restarts (never generate it per run), or start without this checkpoint`;
}

/** Which sink operator is asked: its operator id (as in SinkContext.operatorId) and parallelism. */
export interface CommitScope {
  readonly operatorId: string;
  readonly parallelism: number;
}
