/**
 * Checkpoint storage: where checkpoints and savepoints live. As in Flink, three pieces:
 *
 * - CheckpointStorage (Flink's CheckpointStorageAccess), on the job manager: creates the
 *   location of each checkpoint and savepoint, lists, resolves and discards completed ones,
 *   keeps the job's checkpoint history and the record of triggered ids, collects garbage;
 * - CheckpointStorageLocation: one snapshot being written; its reference (a string) travels
 *   to the tasks in the trigger request and the barrier, and finalize() publishes its metadata;
 * - CheckpointStorageWorkerView, on the tasks: resolves a location reference to a
 *   CheckpointStreamFactory (src/core/state-streams.ts) through which a task writes its state
 *   files, and opens them again as StateInputHandles on restore.
 *
 * The invariant every implementation keeps: a checkpoint exists if and only if its metadata
 * exists and verifies, and the metadata is written last. "Atomically" is the implementation's
 * business, not a rename's: a local directory writes a temp file, fsyncs and renames it; an
 * object store (no rename) publishes the metadata with one PUT. Nothing in these interfaces
 * needs a rename or a directory.
 *
 * Implementations: local/ (the embedded default, a directory tree) and memory/ (a fake with
 * injectable faults for deterministic tests); both sit on the SnapshotFileSystem primitives
 * (storage-fs.ts), so layout, verification, listing and garbage collection are written once
 * (storage-on-fs.ts) and an object store only adds its primitives.
 */
import type { CheckpointType } from '../core/checkpoint-format.ts';
import type { CheckpointStreamFactory, StateInputHandle } from '../core/state-streams.ts';
import type { CheckpointMetadata } from './metadata.ts';

export type StorageLog = (line: string) => void;

/** A checkpoint or savepoint whose metadata verifies. */
export interface CompletedCheckpointRef {
  /** Its reference: an absolute directory for local storage, a URL otherwise. */
  readonly path: string;
  readonly metadata: CheckpointMetadata;
  /**
   * Set by newestCompleted(job, log, named) on a checkpoint of a job of another name: its
   * metadata was read and checked, its state files were not (it is listed, never restored).
   */
  readonly filesUnchecked?: true;
}

export type VerifyResult = { ok: true; metadata: CheckpointMetadata; filesUnchecked?: true } | { ok: false; reason: string };

/** One checkpoint or savepoint being written (Flink's CheckpointStorageLocation). */
export interface CheckpointStorageLocation {
  readonly checkpointId: number;
  readonly type: CheckpointType;
  /** Where it is; tasks resolve it with CheckpointStorageWorkerView.resolveLocation. */
  readonly reference: string;
  /**
   * Publishes the metadata, after every state file is written: atomically (a reader sees the
   * whole metadata or none), durably, and then checks that the snapshot verifies as a reader
   * would see it. Resolves only if it does; a rejection means the checkpoint does not exist
   * (whatever was written is garbage for dispose() or garbage collection).
   */
  finalize(metadata: CheckpointMetadata): Promise<CompletedCheckpointRef>;
  /** Removes one state file (of an acknowledgement no checkpoint will use). Missing is fine. */
  discardState(name: string): Promise<void>;
  /** Removes everything written here (an aborted attempt). Missing is fine. */
  dispose(): Promise<void>;
}

/** The task side of storage (Flink's CheckpointStorageWorkerView). */
export interface CheckpointStorageWorkerView {
  /** The stream factory of a location reference from a trigger request or barrier. */
  resolveLocation(reference: string): CheckpointStreamFactory;
  /** Opens a state file named by a restore (a reference built by the restore plan). */
  openState(reference: string): Promise<StateInputHandle>;
  /** Removes a state file a task wrote for a checkpoint that was aborted. Missing is fine. */
  discardState(location: string, name: string): Promise<void>;
}

/**
 * Snapshots addressed by reference on one kind of place (a scheme): savepoints go to any
 * target directory there, and a user's `--from` pointer is resolved there.
 */
export interface SnapshotStorage {
  /** Whether this storage serves `reference` (by its scheme and place). */
  handles(reference: string): boolean;
  /** True when tasks on other threads cannot reach it (in-memory storage needs workers: 1). */
  readonly threadLocal: boolean;
  /** A user's pointer as the reference it names (local: made absolute). */
  normalize(pointer: string): string;
  /** Creates a new savepoint directory below `targetDirectory` (a name unique to this attempt). */
  initSavepoint(targetDirectory: string, jobId: string, checkpointId: number): Promise<CheckpointStorageLocation>;
  /** Checks a checkpoint or savepoint: metadata present and intact, every state file whole. */
  verify(reference: string): Promise<VerifyResult>;
  /** Deletes a snapshot: metadata first (so it stops existing at once), then the rest. */
  discard(reference: string): Promise<void>;
  readonly workerView: CheckpointStorageWorkerView;
}

/** The lines of a job's checkpoint history; unreadable ones (a torn append) by line number. */
export interface HistoryLines {
  /** Where the history is, for messages. */
  readonly reference: string;
  readonly entries: readonly unknown[];
  /** 1-based numbers of lines that are not JSON. */
  readonly unreadable: readonly number[];
}

/** The checkpoints of the jobs under one root (Flink's CheckpointStorageAccess). */
export interface CheckpointStorage extends SnapshotStorage {
  /** The root, as a reference (an absolute directory, or a URL). */
  readonly root: string;
  jobDir(jobId: string): string;
  checkpointDir(jobId: string, checkpointId: number): string;
  /** Prepares the job's layout; fails clearly (a StartError-worthy message) when the root cannot be used. */
  initJob(jobId: string): Promise<void>;
  initCheckpoint(jobId: string, checkpointId: number): Promise<CheckpointStorageLocation>;
  /** Records that `checkpointId` was triggered, so it is never used again (sinks name files by id). */
  recordTriggered(jobId: string, checkpointId: number): Promise<void>;
  /** Highest checkpoint id ever used under the job, 0 for none. */
  highestId(jobId: string): Promise<number>;
  /** Job ids with checkpoints (or their layout) under the root, sorted. */
  jobs(): Promise<string[]>;
  /** Every verifying checkpoint of a job, oldest first; broken ones are reported through `log`. */
  completed(jobId: string, log?: StorageLog): Promise<CompletedCheckpointRef[]>;
  /**
   * The newest verifying checkpoint of a job, checked from the newest down (broken ones reported
   * through `log`). With `named`: a newest whose metadata names another job is returned at once,
   * `filesUnchecked`, without a request per state file (a root shared by many jobs).
   */
  newestCompleted(jobId: string, log?: StorageLog, named?: string): Promise<CompletedCheckpointRef | undefined>;
  /** The newest verifying checkpoint over every job under the root. */
  latest(log?: StorageLog): Promise<CompletedCheckpointRef | undefined>;
  /** The job and checkpoint id if `reference` is one of this root's checkpoint directories. */
  checkpointOf(reference: string): { readonly jobId: string; readonly checkpointId: number } | undefined;
  appendHistory(jobId: string, entry: unknown): Promise<void>;
  readHistory(jobId: string): Promise<HistoryLines>;
  /** Removes checkpoint directories without metadata (interrupted or aborted attempts) not in `keep`. */
  collectGarbage(jobId: string, keep?: ReadonlySet<number>): Promise<number>;
  /** Removes one file of the job's shared directory (incremental chains). Missing is fine. */
  discardSharedState(jobId: string, name: string): Promise<void>;
  /**
   * Removes the files of the job's shared directory that no checkpoint of the job names (any
   * whose metadata parses, even one that no longer verifies); returns how many. Only while no
   * checkpoint of the job is being written (at an attempt's start, at the job's end).
   */
  collectSharedGarbage(jobId: string): Promise<number>;
}

/** Picks the storage that serves a reference (by scheme): savepoints, `--from`, task-side locations. */
export interface StorageResolver {
  forReference(reference: string): SnapshotStorage;
  /** The task side over every storage the resolver knows. */
  readonly workerView: CheckpointStorageWorkerView;
}

export { StorageError } from './storage-error.ts';
// The local implementation, under the names the rest of the code base has always used.
export { LocalCheckpointStorage, verifyCheckpoint, isDirectory } from './local/local-storage.ts';
