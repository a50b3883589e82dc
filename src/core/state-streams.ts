/**
 * The seam between state backends (what to write) and checkpoint storage (where it goes), as
 * Flink's CheckpointStreamFactory: a backend's asynchronous snapshot phase writes each of its
 * state files through a stream the storage hands out, and a restore reads them back through
 * handles the storage opens. Backends never see paths, directories or buckets; storage never
 * sees state.
 *
 * Output is append-only (a state file is written front to back, its index last), so a local
 * file, an in-memory object or an object-store multipart upload can all implement it.
 * Input is random-access by range (a restoring subtask reads only the key groups it owns).
 */

/** One state file being written. Not safe for concurrent writes: one write in flight at a time. */
export interface StateOutputStream {
  /**
   * Appends the chunks in order (a gathering write: no concatenation needed). Once it
   * resolves the stream holds no reference to them: the caller reuses their memory.
   */
  write(chunks: readonly Uint8Array[]): Promise<void>;
  /** Makes everything durable and closes; resolves with the stream's total size in bytes. */
  close(): Promise<number>;
  /** Abandons the stream and removes what was written (best effort, never throws). */
  abort(): Promise<void>;
}

/** Opens state streams inside one checkpoint's location, for one subtask. */
export interface CheckpointStreamFactory {
  /**
   * A new state stream called `name` (unique within the checkpoint: storage names it, see the
   * storage's names module); what the snapshot records is `name`, resolved again on restore.
   */
  createStateStream(name: string): Promise<StateOutputStream>;
}

/** One state file being read. */
export interface StateInputHandle {
  /** Where it is, for error messages (a path or URL; never credentials). */
  readonly description: string;
  readonly size: number;
  /** Reads exactly `length` bytes at `position`; fails if the file is shorter. */
  read(position: number, length: number): Promise<Uint8Array>;
  close(): Promise<void>;
}
