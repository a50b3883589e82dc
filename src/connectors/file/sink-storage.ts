/**
 * The seam between the exactly-once file sink's logic (exactly-once-file-sink.ts: rolling,
 * the writer, the commit protocol, the committed-output record, the lease) and where its files
 * live: a local directory (local/) or an S3 prefix (s3/). A storage says how a part file is
 * written, what its committable is, how it is made visible, where the commit record is kept,
 * and how leftovers of an interrupted attempt are cleaned up after a restore.
 *
 * Local operations are synchronous (the local sink's commits and recovery stay synchronous
 * where they always were); S3 ones return promises. `andThen()` chains either (a module must not export `then`: it would be a thenable).
 */
import type { SinkContext } from '../../core/sink.ts';
import type { ByteWriter } from './formats.ts';

/** One part file being written by a writer. */
export interface OpenPart<C> {
  /** Bytes appended so far. */
  readonly size: number;
  /** Appends bytes (synchronous; a storage may upload in the background). */
  append(bytes: Buffer): void;
  /** Where a row format may encode records directly (formats.ts ByteWriter): the same as append() of their bytes, without them as a Buffer first. */
  readonly out?: ByteWriter;
  /** Nothing more is written to the part: made durable (or its upload started). False when it held nothing (and is gone). */
  close(): boolean;
  /**
   * The committable of a closed part, at the barrier of checkpoint `checkpointId`; `savepoint`:
   * the barrier is a savepoint's that does not stop the job (its commit waits for a later
   * checkpoint's, or for a job started from it: a local pending file says so in its name).
   */
  seal(checkpointId: number, savepoint?: boolean): C;
  /**
   * The committable of a part that stays open across the barrier (storages with keepsPartsOpen).
   * `closing`: the bytes that would close the file now (a Parquet footer), recorded after the
   * part's bytes, so a restore completes the file as it stood at the barrier.
   */
  snapshot?(checkpointId: number, closing?: Buffer): C;
}

/** A writer's side of a storage (one per writer: one subtask's attempt). */
export interface WriterSession<C> {
  openPart(name: string): OpenPart<C>;
  /** Resolves once the committables of checkpoint `checkpointId` name durable data (see SinkWriter.whenPrepared). */
  whenPrepared?(checkpointId: number): Promise<void> | undefined;
  /**
   * At the barrier of a savepoint that does not stop the job, after its committables were made
   * (S3: records which uploads the savepoint holds, so that a restore of an earlier checkpoint
   * keeps them; made durable before whenPrepared resolves).
   */
  noteSavepoint?(savepointId: number, committables: readonly C[]): void;
  /** Throws what went wrong in the background (a failed upload), if anything. */
  check?(): void;
  /**
   * Back-pressure: false while the session holds as many bytes waiting for the store as it may;
   * it calls ctx.wake() when there is room again (SinkWriter.isAvailable).
   */
  isAvailable?(): boolean;
  /** Starts no request from here on; resolves once those under way have ended (SinkWriter.close). */
  close(): void | Promise<void>;
}

/** A committer's side of a storage (one per committer). */
export interface CommitterSession {
  /** After a commit's publishes (local: fsync of the directory, compaction). */
  afterCommit(published: number): void | Promise<void>;
  /**
   * Before a commit's publishes: the parts completed checkpoint `checkpointId` holds open
   * (S3: multipart uploads only a restore of it completes), recorded beside the output so that
   * a start without a restore can tell it would destroy them (FileSinkStorage.freshStartRefusal).
   */
  noteOpen?(checkpointId: number, keys: readonly string[]): void | Promise<void>;
  /** Background work afterCommit started has ended (S3: a compaction; local waits in afterCommit). */
  settle?(): Promise<void>;
  close(): void | Promise<void>;
}

export interface FileSinkStorage<C> {
  /** The directory or s3:// reference, for messages. */
  readonly location: string;
  /** Parts stay open across checkpoints (S3 multipart uploads) instead of rolling at every barrier. */
  readonly keepsPartsOpen: boolean;
  /**
   * The storage as one task's writer and committer use it: its requests end when the task's
   * ctx.signal fires (S3: none outlives a cancelled attempt). Absent: the storage itself (local
   * operations have nothing in flight that a signal could stop).
   */
  forTask?(ctx: SinkContext): FileSinkStorage<C>;
  /** A writer starting without a recover() call (a first attempt, or no checkpoint to restore). */
  openWriter(ctx: SinkContext): WriterSession<C>;
  openCommitter(ctx: SinkContext): CommitterSession;
  /** Whether committing `c` makes a file visible (the state of a part still open does not). */
  publishes(c: C): boolean;
  /** Makes the file of `c` visible; idempotent (already visible: nothing to do). */
  publish(c: C, ctx: SinkContext): void | Promise<void>;
  /** The commit record (commit-record.ts for local directories): written before the publishes. */
  writeCommitRecord(subtask: number, checkpointId: number): void | Promise<void>;
  readCommitRecords(): number | undefined | Promise<number | undefined>;
  /** See TwoPhaseCommitSink.recover. */
  recover(ctx: SinkContext, restoredId: number, committables: readonly C[], referenced: readonly C[]): void | Promise<void>;
  lease(owner: string): { release(): void };
  /** Why a start without a restore must not run on this output (it would destroy what a completed checkpoint of an earlier run holds); undefined: it may. */
  freshStartRefusal?(): Promise<string | undefined>;
}

/** Runs `next` after `first`: synchronously when `first` is not a promise. */
export function andThen(first: void | Promise<void>, next: () => void | Promise<void>): void | Promise<void> {
  return first instanceof Promise ? first.then(next) : next();
}

/** Whether a subtask index's leftovers are this subtask's to clean up (subtask 0 also takes indices that no longer exist). */
export function ownsSubtask(ctx: Pick<SinkContext, 'subtaskIndex' | 'parallelism'>, sub: number): boolean {
  return sub === ctx.subtaskIndex || (ctx.subtaskIndex === 0 && sub >= ctx.parallelism);
}
