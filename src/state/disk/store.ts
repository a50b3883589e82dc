/**
 * The disk backend's store: one LMDB environment (lmdb-js) in a directory of its own, made
 * for one operator subtask and removed when it is disposed (or when the process exits).
 * The store is a local working copy, never the durable state: checkpoints write state files
 * (snapshot.ts), so the store is opened without fsync (noSync) and thrown away on failure.
 *
 * Reads are point gets on the memory map. Writes are batches, each in one write transaction
 * (WriteBack decides when): either synchronous (write) or sent to the write thread
 * (writeBehind, write-thread.ts), whose batches commit in order and are seen by reads once
 * committed. A synchronous write first waits for every batch sent, so writes land in the order
 * they were made. A snapshot reads through a read transaction, LMDB's MVCC view of the store
 * as it was when it began, while writes go on.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Database, Transaction } from 'lmdb';
import { WeirError } from '../../core/errors.ts';
import { acquireDirLease, leaseHolderGone, type DirLease } from '../../core/dir-lease.ts';
import { WriteBehind } from './write-thread.ts';
import { StoreReader, type ReadJob, type ReadRequest } from './reader-thread.ts';

/**
 * lmdb, loaded when the first store opens: loading it (a native addon) costs ~70 ms of CPU,
 * which every worker thread of every job paid at start, disk backend or not. Its CommonJS
 * build, so that loading stays synchronous like the store.
 */
let lmdb: typeof import('lmdb') | undefined;
const lmdbLib = (): typeof import('lmdb') => (lmdb ??= createRequire(import.meta.url)('lmdb') as typeof import('lmdb'));

/** Directories of stores still open in this process: removed at exit if nobody disposed them. */
const openDirs = new Set<string>();
let exitHookInstalled = false;

function removeAtExit(dir: string): void {
  openDirs.add(dir);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const d of openDirs) rmSync(d, { recursive: true, force: true });
  });
}

/** Names this thread's directory of stores under a base directory (ownStoresDir). */
const STORES_PREFIX = 'weir-stores-';

/** This thread's directory of stores under each base directory, its lease, and how many of its stores are open. */
const ownStores = new Map<string, { dir: string; lease: DirLease | undefined; open: number }>();

/**
 * The directory this thread's stores go in under `baseDir`, made with its first store under a
 * lease naming this process (core/dir-lease.ts): a later process can then tell that one left
 * by a process that died is garbage (a SIGKILL runs no exit hook, and each crash left a whole
 * copy of the state behind, for good). Making it first removes such directories whose process
 * is gone. Removed with its last store, so a long-lived process keeps none empty.
 */
function openInOwnDir(baseDir: string): string {
  let own = ownStores.get(baseDir);
  if (own === undefined) {
    mkdirSync(baseDir, { recursive: true });
    removeDeadStores(baseDir);
    const dir = mkdtempSync(join(baseDir, STORES_PREFIX));
    own = { dir, lease: leaseOrNone(dir), open: 0 };
    ownStores.set(baseDir, own);
    removeAtExit(dir);
  }
  own.open++;
  return mkdtempSync(join(own.dir, 'weir-state-'));
}

/**
 * The lease of a new stores directory; none where the file system cannot hold one (the lease is
 * linked into place, and some file systems have no hard links): the stores work as before, and a
 * directory left by this process if it is killed is not swept (nothing can tell it is dead).
 */
function leaseOrNone(dir: string): DirLease | undefined {
  try {
    return acquireDirLease(dir, 'disk state directory', `disk state of process ${process.pid}`);
  } catch {
    return undefined;
  }
}

/** A store of `baseDir` was disposed: its thread's directory goes with the last one. */
function closedInOwnDir(baseDir: string): void {
  const own = ownStores.get(baseDir);
  if (own === undefined || --own.open > 0) return;
  ownStores.delete(baseDir);
  openDirs.delete(own.dir);
  own.lease?.release();
  rmSync(own.dir, { recursive: true, force: true });
}

/** Directories of stores under `baseDir` whose process is gone (never one that may be alive, nor one without a lease yet). */
function removeDeadStores(baseDir: string): void {
  let names: string[];
  try {
    names = readdirSync(baseDir);
  } catch {
    return;
  }
  for (const n of names) {
    if (!n.startsWith(STORES_PREFIX)) continue;
    const dir = join(baseDir, n);
    if (leaseHolderGone(dir)) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * How long a write waits for the write thread's batches before it gives up (a batch of the
 * cache's flush commits in well under a second; this is a thread stuck or starved).
 */
const WRITE_BEHIND_TIMEOUT_MS = 120_000;

export class DiskStore {
  /**
   * Whether batches go to the write thread: on the main thread only. A worker thread is
   * ended by terminate() (a job's attempt ending), which runs no JS first, and a write thread
   * nested in it ended with a batch open hangs that termination; so there flushes stay
   * synchronous, as before the write thread. The main thread's exit waits for its batches.
   */
  readonly writesBehind = isMainThread;
  readonly dir: string;
  private readonly db: Database<Buffer, Buffer>;
  private readonly openOptions: object;
  /** The line to the write thread, opened with the first batch sent. */
  private behind: WriteBehind | undefined;
  /** The write thread's last batch that reads are known to see (renewReads). */
  private readsSeeBatch = 0;
  /** The line to the snapshot reader thread (started with the store: ready by the first checkpoint); undefined when not used. */
  private readonly reader: StoreReader | undefined;
  private closed = false;

  /** `snapshotThread`: whether full snapshots may be read on the snapshot reader thread (reader-thread.ts). */
  constructor(private readonly baseDir: string, private readonly where: string, snapshotThread = true) {
    try {
      this.dir = openInOwnDir(baseDir);
    } catch (e) {
      throw new WeirError('STATE_BACKEND', `${where}: cannot make a directory for the disk state backend under ${baseDir}: ${(e as Error).message}`, { cause: e });
    }
    removeAtExit(this.dir);
    // Not useWritemap: ~20% faster random writes, but with MDB_WRITEMAP LMDB can abort in
    // mdb_freelist_save ("Assertion 'x <= dl[0].mid' failed"); the integration test hit it once.
    this.openOptions = { path: this.dir, keyEncoding: 'binary', encoding: 'binary', noSync: true, compression: false, cache: false };
    try {
      this.db = lmdbLib().open<Buffer, Buffer>(this.openOptions);
    } catch (e) {
      openDirs.delete(this.dir);
      rmSync(this.dir, { recursive: true, force: true });
      closedInOwnDir(baseDir);
      throw e;
    }
    this.reader = snapshotThread ? new StoreReader(this.openOptions) : undefined;
  }

  /** The stored bytes of a key, valid until the next store call (decode them at once). */
  get(key: Buffer): Uint8Array | undefined {
    return this.db.getBinaryFast(key) ?? undefined;
  }

  /**
   * Runs `fn` in one synchronous write transaction (its puts and removes commit together),
   * after every batch sent to the write thread has committed.
   */
  write(fn: (w: StoreWriter) => void): void {
    this.drain();
    this.db.transactionSync(() => fn(this.writer));
  }

  /** Sends a batch (write-thread.ts's format) to the write thread; its sequence number (from 1, in order). */
  writeBehind(batch: { buf: ArrayBuffer; len: number }): number {
    this.behind ??= new WriteBehind(this.openOptions, this.where);
    return this.behind.send(batch.buf, batch.len);
  }

  /** The last batch of the write thread committed (0: none); throws if one failed. */
  committedBehind(): number {
    return this.behind?.committed() ?? 0;
  }

  /** Blocks until batch `seq` of the write thread has committed (bounded: throws after a timeout). */
  waitBehind(seq: number): void {
    this.behind?.waitFor(seq, WRITE_BEHIND_TIMEOUT_MS);
  }

  /**
   * Blocks until every batch sent to the write thread has committed, and lets reads see them:
   * also those that had committed already when it was called (a batch of TTL removals sent
   * during a snapshot can commit before the next read, within the same event-loop turn, so
   * "not busy" does not mean "visible").
   */
  drain(): void {
    if (this.behind === undefined) return;
    if (this.behind.busy()) this.behind.drain(WRITE_BEHIND_TIMEOUT_MS);
    if (this.behind.committed() > this.readsSeeBatch) this.renewReads();
  }

  /**
   * Reads from here on see every commit so far (the write thread's too: lmdb-js renews its
   * read transaction once per event-loop turn, and a batch may commit within a turn).
   */
  renewReads(): void {
    // Read before the reset: a batch committing in between is seen too, and renewed for again.
    this.readsSeeBatch = this.behind?.committed() ?? 0;
    (this.db as unknown as { resetReadTxn(): void }).resetReadTxn();
  }

  private readonly writer: StoreWriter = {
    put: (key, value) => void this.db.putSync(key, value),
    remove: (key) => void this.db.removeSync(key),
  };

  /** A read-only view of the store as it is now; release it with done(). */
  readView(): Transaction {
    return this.db.useReadTransaction();
  }

  /**
   * Has the snapshot reader thread open a read view of the store as it is now (every write
   * committed: the caller drained first) and read it into blocks; undefined when it cannot
   * (or is not used): the caller reads its own view (readView()).
   */
  beginThreadedRead(req: ReadRequest): ReadJob | undefined {
    return this.reader?.begin(req);
  }

  /** Entries with start <= key < end, in key order, from `view` (or the store as it is now). */
  range(start: Buffer, end: Buffer, view?: Transaction): Iterable<{ key: Buffer; value: Buffer }> {
    return this.db.getRange(view === undefined ? { start, end } : { start, end, transaction: view }) as Iterable<{ key: Buffer; value: Buffer }>;
  }

  /** Keys with start <= key < end, as they are now. */
  keys(start: Buffer, end: Buffer): Iterable<Buffer> {
    return this.db.getKeys({ start, end }) as Iterable<Buffer>;
  }

  /** Closes the store and deletes its directory (a read view still open is abandoned). */
  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    openDirs.delete(this.dir);
    this.behind?.close();
    this.reader?.close();
    // The mapping stays valid for anything still reading until close finishes; the files go now.
    void this.db.close().catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
    closedInOwnDir(this.baseDir);
  }
}

export interface StoreWriter {
  put(key: Buffer, value: Buffer): void;
  remove(key: Buffer): void;
}
