/**
 * Runs a two-phase-commit sink: records go to the writer; at the barrier the writer's
 * committables go into the ledger, and the snapshot carries every committable whose commit
 * has not finished (see commit-ledger.ts for why "not finished", not "not queued"). When a
 * checkpoint completes the ledger's due committables are committed; they leave the state only
 * once that commit has finished. Committables restored from a checkpoint are committed again
 * before any new record is written (the checkpoint completed, even if the notification was
 * lost), and stay in the state until that re-commit has finished too.
 * Commits run strictly in checkpoint order, one batch at a time; an async commit that fails
 * fails the task.
 */
import { setMaxListeners } from 'node:events';
import { sinkIdentityChanged, type PrepareCommitOptions, type SinkCommitter, type SinkContext, type SinkWriter, type TwoPhaseCommitSink } from '../../core/sink.ts';
import { WeirError } from '../../core/errors.ts';
import type { Batch } from '../../core/batch.ts';
import { CommitLedger, type CommitBatch } from './commit-ledger.ts';
import { StreamOperator } from './operator.ts';
import type { InlineOperatorState } from '../../core/checkpoint-format.ts';

/** Longest one commit may take before the task fails, unless the sink says (TwoPhaseCommitSink.commitTimeoutMs). */
const DEFAULT_COMMIT_TIMEOUT_MS = 120_000;

/**
 * After a cancel or failure, how long the sink's requests under way (a commit, uploads) may
 * take to end by themselves before SinkContext.signal stops them. Below the executor's
 * CANCEL_IO_WAIT_MS (task-executor.ts asserts it), so they have ended, or been stopped, before
 * the attempt is reported ended.
 */
export const SINK_IO_ABORT_MS = 3_000;
/**
 * Listeners SinkContext.signal may hold at once without Node's leak warning (10 by default): each
 * request under way holds one until it ends, and a sink runs up to ~20 (an S3 file sink: 16
 * record reads beside 4 part uploads). Beyond this, a warning says requests pile up.
 */
const SINK_SIGNAL_LISTENERS = 64;

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(message)), ms);
    t.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

export class CommitSinkOperator extends StreamOperator {
  private writer!: SinkWriter<unknown, unknown>;
  private committer!: SinkCommitter<unknown>;
  /** Committables not yet committed, by the checkpoint that prepared them. */
  private readonly ledger = new CommitLedger<unknown>();
  private restored: unknown[] = [];
  /** The subtask that prepared each restored committable (the restore plan always gives them). */
  private restoredOwners: number[] | undefined;
  private restoredIdentity: string | undefined;
  private restoredId: number | undefined;
  private commitChain: Promise<void> = Promise.resolve();
  private failed: unknown;
  /**
   * The task ended without finishing (cancelled, or failed): no commit queued after this runs.
   * Their committables are in every snapshot since (the ledger's invariant), so the restore
   * commits them, as Flink's does; performed after the cancel, they moved the committed output
   * past what the job had when it was said to be cancelled, under a restore started meanwhile.
   */
  private fenced = false;
  /** What was under way at close(): the commit in flight, the writer's requests, then the committer's close. */
  private ioEnd: Promise<void> | undefined;
  /** SinkContext.signal: stops the sink's requests still under way SINK_IO_ABORT_MS after a cancel or failure. */
  private readonly abortIo = (() => {
    const ac = new AbortController();
    setMaxListeners(SINK_SIGNAL_LISTENERS, ac.signal);
    return ac;
  })();
  /**
   * The highest checkpoint or savepoint id this sink prepared for or was restored from. Without
   * checkpointing, the end-of-input commit takes the id after it: a sink's committed position
   * (a PostgreSQL progress row, a file sink's commit record) only moves forward, and below a
   * savepoint's id the end's commit would read as another run's (or lower the record, so that
   * a restore from the savepoint wrote its output again).
   */
  private highestId = 0;

  constructor(private readonly sink: TwoPhaseCommitSink<unknown, unknown>) {
    super();
  }

  override restoreInline(state: InlineOperatorState): void {
    super.restoreInline(state);
    this.restored = state.committables ?? [];
    this.restoredOwners = state.committableOwners;
    this.restoredIdentity = state.sinkIdentity;
  }

  private ctx(): SinkContext {
    const t = this.env.taskInfo;
    const clock = this.env.clock;
    const services = this.env.services;
    return {
      subtaskIndex: t.subtaskIndex, parallelism: t.parallelism, attemptNumber: t.attemptNumber, operatorId: t.operatorId,
      now: () => clock.now(), restoredCheckpointId: this.restoredId, log: (line) => services.log(line),
      deadLetters: (records) => {
        this.deadLetterCount += records.length;
        services.deadLetters(this.sink.name, t.subtaskIndex, records);
      },
      wake: () => void this.env.scheduleMail(clock.now(), () => {}),
      signal: this.abortIo.signal,
    };
  }

  /**
   * Commits still running must end before the task does (the final checkpoint's output), and so
   * must the work they started in the background (a compaction), or the process could exit in
   * the middle of it.
   */
  override quiesce(): Promise<void> | undefined {
    const drained = this.writer?.drain?.();
    const committed = this.commitChain.then(() => this.committer?.settle?.());
    return Promise.all([committed, drained]).then(() => this.rethrow());
  }

  override hasRoom(): boolean {
    return this.writer?.isAvailable?.() ?? true;
  }

  protected override setUp(): void {
    this.restoredId = this.env.restoredCheckpointId;
    // Never at or below an id a sink may have committed (an earlier run's, when duplicates are accepted).
    this.highestId = Math.max(this.restoredId ?? 0, (this.env.firstCheckpointId ?? 1) - 1);
    const identity = this.sink.identity?.();
    if (this.restoredIdentity !== undefined && identity !== undefined && identity !== this.restoredIdentity) {
      // Before anything is committed: under the new identity the restored output would be committed again.
      throw new WeirError('RESTORE', sinkIdentityChanged(this.sink.name, this.restoredIdentity, identity));
    }
    const ctx = this.ctx();
    try {
      this.committer = this.sink.createCommitter(ctx);
      if (this.restoredId !== undefined) {
        // Re-commit first: those committables belong to a completed checkpoint. recover() finishes
        // some of them itself (an S3 sink's open part: completed with the tail the checkpoint
        // holds), so they leave the state only once both have finished: a checkpoint completed
        // before that would no longer name them, and a crash then lost their records.
        const due = this.ledger.restored(this.restoredId, this.restored, this.restoredOwners ?? this.restored.map(() => this.env.taskInfo.subtaskIndex));
        const rec = this.sink.recover?.(ctx, this.restoredId, this.restored, this.env.referencedCommittables ?? this.restored);
        const recovered = rec instanceof Promise ? rec : undefined;
        if (due !== undefined) this.commit(due, recovered);
        else if (recovered !== undefined) this.chain(() => recovered);
      }
      this.writer = this.sink.createWriter(ctx);
    } catch (e) {
      throw this.fail(e, `sink "${this.sink.name}" open`);
    }
  }

  processBatch(batch: Batch): void {
    this.rethrow();
    try {
      this.writer.write(batch.values, batch.timestamps);
    } catch (e) {
      throw this.failOn(e, `sink "${this.sink.name}"`, batch.values[0]);
    }
  }

  /** The checkpoint id of a stop-with-savepoint's barrier, once it came (the job ends after it). */
  private stopAt: number | undefined;
  /** The id of the last savepoint's barrier that does not stop the job (its commit waits for a later checkpoint's). */
  private savepointAt: number | undefined;

  override prepareSnapshotPreBarrier(checkpointId: number, stop?: boolean, savepoint?: boolean): void {
    super.prepareSnapshotPreBarrier(checkpointId, stop, savepoint);
    if (stop === true) this.stopAt = checkpointId;
    else if (savepoint === true) this.savepointAt = checkpointId;
  }

  /** What the barrier of `checkpointId` tells the writer besides its id. */
  private barrierOptions(checkpointId: number): PrepareCommitOptions | undefined {
    if (this.stopAt === checkpointId) return { stop: true };
    if (this.savepointAt === checkpointId) return { savepoint: true };
    return undefined;
  }

  override snapshotInline(checkpointId: number): InlineOperatorState | undefined {
    this.rethrow();
    let fresh: unknown[];
    try {
      // At a stop the writer leaves nothing open: the stop's commit makes all its output visible.
      // At a savepoint that does not stop, the writer may keep its output for the next checkpoint.
      fresh = this.writer.prepareCommit(checkpointId, this.barrierOptions(checkpointId));
    } catch (e) {
      throw this.fail(e, `sink "${this.sink.name}" prepareCommit`);
    }
    this.ledger.prepared(checkpointId, fresh, this.env.taskInfo.subtaskIndex);
    if (checkpointId > this.highestId) this.highestId = checkpointId;
    const base = super.snapshotInline(checkpointId) ?? {};
    const identity = this.sink.identity?.();
    return { ...base, committables: this.ledger.snapshot(), committableOwners: this.ledger.snapshotOwners(), ...(identity !== undefined ? { sinkIdentity: identity } : {}) };
  }

  override durableBeforeAck(checkpointId: number): Promise<void> | undefined {
    return this.writer.whenPrepared?.(checkpointId);
  }

  override notifyCheckpointComplete(checkpointId: number): void {
    super.notifyCheckpointComplete(checkpointId);
    const due = this.ledger.completed(checkpointId);
    if (due !== undefined) this.commit(due);
    this.rethrow();
  }

  /** Queues the commit of `batch`; its committables leave the ledger only once it (and `alsoAwait`) has finished. */
  private commit(batch: CommitBatch<unknown>, alsoAwait?: Promise<void>): void {
    const run = (): void | Promise<void> => {
      const committed = this.committer.commit(batch.committables, batch.upToCheckpointId);
      return alsoAwait === undefined ? committed : Promise.all([committed, alsoAwait]).then(() => undefined);
    };
    this.chain(run, () => this.ledger.committed(batch));
  }

  /**
   * Queues `fn` behind every commit queued before it. Once one has failed (or timed out) none
   * queued after it runs: a later checkpoint's commit would move the sink's committed position
   * past the failed one (a Redis or JetStream progress key), and the restore's re-commit, which
   * carries the failed checkpoint's committables, would then take them as done: output lost.
   * The task fails instead, and the restore commits both in order.
   */
  private chain(fn: () => void | Promise<void>, onDone?: () => void): void {
    this.commitChain = this.commitChain
      .then(() => {
        if (this.failed !== undefined || this.fenced) return undefined;
        const ms = this.sink.commitTimeoutMs ?? DEFAULT_COMMIT_TIMEOUT_MS;
        return withTimeout(Promise.resolve().then(fn), ms, `commit did not finish within ${ms / 1000} s (the sink's commitTimeoutMs)`).then(onDone);
      })
      .catch((e) => {
        this.failed ??= e;
      });
  }

  private rethrow(): void {
    if (this.failed !== undefined) throw this.fail(this.failed, `sink "${this.sink.name}" commit`);
  }

  override finish(): void {
    try {
      this.writer.finish?.();
      // Without checkpoints there is no commit point but the end: commit everything now, also
      // what intermediate savepoints prepared (they commit nothing themselves).
      if (!this.env.checkpointing) {
        const saved = this.ledger.completed(Number.MAX_SAFE_INTEGER);
        const endId = this.highestId + 1;
        const last = this.writer.prepareCommit(endId);
        if (last.length === 0) {
          if (saved !== undefined) this.commit(saved);
          return;
        }
        // Durable first, as a checkpoint's are before its ack: an S3 part still uploading was
        // found missing by the commit, and the job's whole output lost with a log line. In one
        // call with the savepoints' committables: a writer may have carried a savepoint's output
        // into the end's (PostgreSQL two-phase), and its committer tells so from the list.
        const all = [...(saved?.committables ?? []), ...last];
        this.chain(async () => {
          await this.writer.whenPrepared?.(endId);
          await this.committer.commit(all, endId);
        }, saved === undefined ? undefined : () => this.ledger.committed(saved));
      }
    } catch (e) {
      throw this.fail(e, `sink "${this.sink.name}" finish`);
    }
  }

  protected override tearDown(): void {
    // After a finish every commit has run (quiesce); after a cancel or failure none queued runs.
    this.fenced = true;
    let written: void | Promise<void> = undefined;
    try {
      written = this.writer?.close?.();
    } catch {
      // best effort
    }
    const committed = this.commitChain.then(() => this.committer?.close?.());
    const ended = Promise.all([committed, written]).then(() => {}, () => {});
    // A request stuck past the grace is stopped (a real timer: the task's clock no longer runs).
    const stop = setTimeout(() => this.abortIo.abort(), SINK_IO_ABORT_MS);
    stop.unref();
    this.ioEnd = ended.finally(() => clearTimeout(stop));
  }

  override closed(): Promise<void> | undefined {
    return this.ioEnd;
  }
}
