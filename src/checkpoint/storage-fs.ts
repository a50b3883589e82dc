/**
 * The few operations checkpoint storage needs from the place it keeps files, one
 * implementation per kind of place: a local directory tree (local/), an in-memory map with
 * injectable faults (memory/), an object-store bucket later (s3/). Everything above it (the
 * layout in names.ts, verification, listing, ids, garbage collection: storage-on-fs.ts) is
 * written once.
 *
 * Shaped so an object store fits: there is no rename and no real directory here. Metadata is
 * published with writeAtomically (local: temp file, fsync, rename, fsync the directory; an
 * object store: one PUT); "directories" are what list() derives from names, and
 * prepareDirectory is allowed to do nothing.
 *
 * References are absolute (names.ts): a path for local files, a URL for anything else.
 */
import type { StateInputHandle, StateOutputStream } from '../core/state-streams.ts';

export interface DirectoryEntry {
  readonly name: string;
  readonly directory: boolean;
}

export interface SnapshotFileSystem {
  /** Whether `reference` is a place of this file system (a path, or its URL scheme). */
  handles(reference: string): boolean;
  /** True when other threads cannot reach the files (in-memory). */
  readonly threadLocal: boolean;
  /** Makes `dir` ready to hold files (local: mkdir -p). Object stores need nothing. */
  prepareDirectory(dir: string): Promise<void>;
  /** A new file written front to back; fails if the file exists. Its parent is prepared. */
  createOutput(file: string): Promise<StateOutputStream>;
  openInput(file: string): Promise<StateInputHandle>;
  /** A whole small file (metadata, the id record, the history); undefined when there is none. */
  readFile(file: string): Promise<Uint8Array | undefined>;
  /**
   * Publishes a whole file at once: readers see the old content (or none) or all of the new,
   * never part of it. `durable`: on stable storage before this resolves.
   */
  writeAtomically(file: string, bytes: Uint8Array, options: { readonly durable: boolean }): Promise<void>;
  /** Appends to a file, creating it (a lost tail on a crash is tolerated by readers). */
  append(file: string, bytes: Uint8Array): Promise<void>;
  /** Size in bytes, or undefined when there is no such file. */
  size(file: string): Promise<number | undefined>;
  /**
   * The size again, asked by another kind of request where the storage has one (S3: a listing,
   * whose answer has a body; a HEAD's 404 has none, and a gateway's looks like S3's "no such
   * key"). Asked before a file's absence or size deletes or condemns a checkpoint. Absent:
   * size() is asked again.
   */
  confirmSize?(file: string): Promise<number | undefined>;
  /** Entries directly below `dir`; empty when it does not exist. */
  list(dir: string): Promise<readonly DirectoryEntry[]>;
  /** Removes a file; a missing one is fine. */
  delete(file: string): Promise<void>;
  /** Removes `dir` and everything below it; a missing one is fine. */
  deleteRecursively(dir: string): Promise<void>;
}

/**
 * The error code of readFile refusing what is not a small regular file (a device, a FIFO, a
 * file past its bound): the snapshot holding it is bad, not the storage.
 */
export const NOT_A_SMALL_FILE = 'WEIR_NOT_A_SMALL_FILE';
