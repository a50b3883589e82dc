/**
 * Checkpoint storage written once over the SnapshotFileSystem primitives: the layout of
 * names.ts, the metadata published last and verified, listing, the triggered-id record,
 * history and garbage collection. local/ and memory/ (and an object store later) differ only
 * in their file system, so the in-memory fake exercises exactly the code the local directory
 * runs.
 */
import { randomBytes } from 'node:crypto';
import type { CheckpointType } from '../core/checkpoint-format.ts';
import type { CheckpointStreamFactory, StateInputHandle } from '../core/state-streams.ts';
import { parseMetadata, serializeMetadata, sharedFilesOf, type CheckpointMetadata } from './metadata.ts';
import {
  checkpointReference, childReference, HISTORY_FILE, ID_RECORD_FILE, isPlainName, jobDirReference, metadataReference,
  normalizeReference, parseCheckpointDirName, parseCheckpointReference, savepointDirName, SHARED_DIR, TASK_OWNED_DIR,
} from './names.ts';
import { messageOf, StorageError } from './storage-error.ts';
import type { SnapshotFileSystem } from './storage-fs.ts';
import { confirmedSize, NO_METADATA, SKIPPING_CHECKPOINT, verifySnapshot } from './storage-verify.ts';
import type {
  CheckpointStorage, CheckpointStorageLocation, CheckpointStorageWorkerView, CompletedCheckpointRef, HistoryLines,
  SnapshotStorage, StorageLog, VerifyResult,
} from './storage.ts';

/** Listings newestCompleted makes at most while checkpoints appear and vanish under it. */
const NEWEST_LISTINGS = 5;

/** Random hex for savepoint names; injectable so deterministic tests get stable names. */
export type RandomHex = () => string;
const defaultRandomHex: RandomHex = () => randomBytes(6).toString('hex');

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One snapshot being written, at `reference` on `fs`. */
class FsLocation implements CheckpointStorageLocation {
  constructor(
    private readonly fs: SnapshotFileSystem,
    readonly checkpointId: number,
    readonly type: CheckpointType,
    readonly reference: string,
  ) {}

  async finalize(metadata: CheckpointMetadata): Promise<CompletedCheckpointRef> {
    if (metadata.checkpointId !== this.checkpointId || metadata.type !== this.type) {
      throw new Error(`metadata of ${metadata.type} ${metadata.checkpointId} given to the location of ${this.type} ${this.checkpointId}`);
    }
    // Published last and in one piece; the caller wrote every state file before this.
    await this.fs.writeAtomically(metadataReference(this.reference), encoder.encode(serializeMetadata(metadata)), { durable: true });
    // Read back as any reader will: a publish that did not take, or a state file shorter than
    // its task reported, means there is no checkpoint, and the job must not be told otherwise.
    const v = await verifySnapshot(this.fs, this.reference);
    if (!v.ok) throw new StorageError(`${this.reference} does not verify after its metadata was written: ${v.reason}`);
    return { path: this.reference, metadata: v.metadata };
  }

  discardState(name: string): Promise<void> {
    return this.fs.delete(childReference(this.reference, name));
  }

  dispose(): Promise<void> {
    return this.fs.deleteRecursively(this.reference);
  }
}

/** The task side over one file system. */
export class FsWorkerView implements CheckpointStorageWorkerView {
  constructor(private readonly fs: SnapshotFileSystem) {}

  resolveLocation(reference: string): CheckpointStreamFactory {
    const fs = this.fs;
    return {
      createStateStream(name: string) {
        if (!isPlainName(name)) return Promise.reject(new RangeError(`a state stream needs a plain name, got ${JSON.stringify(name)}`));
        return fs.createOutput(childReference(reference, name));
      },
    };
  }

  openState(reference: string): Promise<StateInputHandle> {
    return this.fs.openInput(reference);
  }

  discardState(location: string, name: string): Promise<void> {
    return this.fs.delete(childReference(location, name));
  }
}

/** Snapshots anywhere on one file system: savepoints, `--from` pointers. */
export class FsSnapshotStorage implements SnapshotStorage {
  readonly workerView: CheckpointStorageWorkerView;

  constructor(
    protected readonly fs: SnapshotFileSystem,
    protected readonly randomHex: RandomHex = defaultRandomHex,
  ) {
    this.workerView = new FsWorkerView(fs);
  }

  get threadLocal(): boolean {
    return this.fs.threadLocal;
  }

  handles(reference: string): boolean {
    return this.fs.handles(reference);
  }

  normalize(pointer: string): string {
    return normalizeReference(pointer);
  }

  async initSavepoint(targetDirectory: string, jobId: string, checkpointId: number): Promise<CheckpointStorageLocation> {
    const dir = childReference(this.normalize(targetDirectory), savepointDirName(jobId, this.randomHex()));
    await this.prepare(dir);
    return new FsLocation(this.fs, checkpointId, 'savepoint', dir);
  }

  verify(reference: string): Promise<VerifyResult> {
    return verifySnapshot(this.fs, reference);
  }

  async discard(reference: string): Promise<void> {
    // The metadata goes first: a checkpoint exists iff its metadata does, so a concurrent
    // listing (a restart looking for the latest checkpoint) sees it either whole or gone,
    // never with state files missing (which it would report as a corrupt checkpoint).
    await this.fs.delete(metadataReference(reference));
    await this.fs.deleteRecursively(reference);
  }

  protected async prepare(dir: string): Promise<void> {
    try {
      await this.fs.prepareDirectory(dir);
    } catch (e) {
      throw new StorageError(`cannot create ${dir}: ${messageOf(e)}`, { cause: e });
    }
  }
}

/** Bound on the triggered-id writes queued per job (triggers overlap by a few at most). */
const MAX_QUEUED_ID_RECORDS = 1024;

/** The checkpoints of the jobs under `root`. */
export class FsCheckpointStorage extends FsSnapshotStorage implements CheckpointStorage {
  readonly root: string;
  private readonly recording = new Map<string, { tail: Promise<void>; queued: number }>();
  private readonly recorded = new Map<string, number>();

  constructor(root: string, fs: SnapshotFileSystem, randomHex?: RandomHex) {
    super(fs, randomHex);
    this.root = normalizeReference(root);
    if (!fs.handles(this.root)) throw new RangeError(`${this.root} is not a place of this storage`);
  }

  jobDir(jobId: string): string {
    return jobDirReference(this.root, jobId);
  }

  checkpointDir(jobId: string, checkpointId: number): string {
    return checkpointReference(this.root, jobId, checkpointId);
  }

  async initJob(jobId: string): Promise<void> {
    try {
      await this.fs.prepareDirectory(childReference(this.jobDir(jobId), SHARED_DIR));
      await this.fs.prepareDirectory(childReference(this.jobDir(jobId), TASK_OWNED_DIR));
    } catch (e) {
      throw new StorageError(`checkpoint directory ${this.root} is not usable: ${messageOf(e)}`, { cause: e });
    }
  }

  async initCheckpoint(jobId: string, checkpointId: number): Promise<CheckpointStorageLocation> {
    const dir = this.checkpointDir(jobId, checkpointId);
    await this.prepare(dir);
    return new FsLocation(this.fs, checkpointId, 'checkpoint', dir);
  }

  /**
   * Triggers overlap (a periodic one and a savepoint or the final checkpoint), so writes are
   * chained per job (never two on the temp file at once), and an older id never overwrites a newer.
   */
  async recordTriggered(jobId: string, checkpointId: number): Promise<void> {
    const q = this.recording.get(jobId) ?? { tail: Promise.resolve(), queued: 0 };
    if (q.queued >= MAX_QUEUED_ID_RECORDS) throw new StorageError(`more than ${MAX_QUEUED_ID_RECORDS} checkpoint id records queued for job ${jobId}: storage is stuck`);
    q.queued++;
    const next = q.tail.catch(() => {}).then(async () => {
      if (checkpointId <= (this.recorded.get(jobId) ?? 0)) return;
      const file = childReference(this.jobDir(jobId), ID_RECORD_FILE);
      await this.fs.writeAtomically(file, encoder.encode(String(checkpointId)), { durable: false });
      this.recorded.set(jobId, checkpointId);
    });
    q.tail = next;
    this.recording.set(jobId, q);
    try {
      await next;
    } finally {
      q.queued--;
    }
  }

  async highestId(jobId: string): Promise<number> {
    const entries = await this.fs.list(this.jobDir(jobId));
    let max = 0;
    // A record that cannot be read fails (the caller's attempt, at a restart: the restart strategy
    // decides) instead of being taken for none: ids would go back to the highest directory left
    // after garbage collection, and a sink that skips ids it committed would drop new output.
    const recorded = await this.fs.readFile(childReference(this.jobDir(jobId), ID_RECORD_FILE));
    if (recorded !== undefined) {
      const n = Number(decoder.decode(recorded));
      if (Number.isSafeInteger(n)) max = n;
    }
    for (const e of entries) max = Math.max(max, parseCheckpointDirName(e.name) ?? 0);
    return max;
  }

  async jobs(): Promise<string[]> {
    return (await this.fs.list(this.root)).filter((e) => e.directory).map((e) => e.name).sort();
  }

  /**
   * `--from latest` reads the newest checkpoint per job this way, and an older one only when the
   * newest fails its check: it verified every retained checkpoint of every job under the root,
   * a request per state file each, before choosing one. With `named`, another job's newest is
   * only read (its metadata, one request), not verified: a root shared by 200 jobs took 1,851
   * requests and 5 to 6 s on s3rver to resume one of them.
   */
  /**
   * Listed again (at most NEWEST_LISTINGS times) while a directory it found had no metadata and
   * the listing has changed: a job still running there completes a checkpoint and discards the
   * one before between the listing and the reads (a resume started next to it was told "no
   * completed checkpoint" instead of meeting its lease).
   */
  async newestCompleted(jobId: string, log: StorageLog = () => {}, named?: string): Promise<CompletedCheckpointRef | undefined> {
    const logged = new Set<string>();
    let before: string | undefined;
    for (let listing = 0; listing < NEWEST_LISTINGS; listing++) {
      const dirs: { id: number; name: string }[] = [];
      for (const e of await this.fs.list(this.jobDir(jobId))) {
        const id = parseCheckpointDirName(e.name);
        if (id !== undefined) dirs.push({ id, name: e.name });
      }
      dirs.sort((a, b) => b.id - a.id);
      const names = dirs.map((d) => d.name).join('/');
      if (names === before) return undefined; // nothing changed: none is completed
      before = names;
      let unfinished = false;
      for (const d of dirs) {
        const path = childReference(this.jobDir(jobId), d.name);
        const r = await verifySnapshot(this.fs, path, named === undefined ? undefined : (m) => m.jobName === named);
        if (r.ok) return r.filesUnchecked === true ? { path, metadata: r.metadata, filesUnchecked: true } : { path, metadata: r.metadata };
        if (r.reason === NO_METADATA) unfinished = true;
        else if (!logged.has(path)) {
          logged.add(path);
          log(`${SKIPPING_CHECKPOINT}${path}: ${r.reason}`);
        }
      }
      if (!unfinished) return undefined;
    }
    return undefined;
  }

  async completed(jobId: string, log: StorageLog = () => {}): Promise<CompletedCheckpointRef[]> {
    const out: CompletedCheckpointRef[] = [];
    for (const e of await this.fs.list(this.jobDir(jobId))) {
      if (parseCheckpointDirName(e.name) === undefined) continue;
      const path = childReference(this.jobDir(jobId), e.name);
      const r = await this.verify(path);
      if (r.ok) out.push({ path, metadata: r.metadata });
      else if (r.reason !== NO_METADATA) log(`${SKIPPING_CHECKPOINT}${path}: ${r.reason}`);
    }
    return out.sort((a, b) => a.metadata.checkpointId - b.metadata.checkpointId);
  }

  /**
   * The newest job's checkpoint with the highest id. Within a job the id decides, not the time
   * of completion: a clock set back (another host, a correction) would make an older checkpoint
   * look newer, and so would a subsumed checkpoint whose metadata was written after a newer one
   * completed and whose deletion a kill cut short. Between jobs only the time can tell.
   */
  async latest(log: StorageLog = () => {}): Promise<CompletedCheckpointRef | undefined> {
    let best: CompletedCheckpointRef | undefined;
    for (const job of await this.jobs()) {
      const last = (await this.completed(job, log)).at(-1);
      if (last !== undefined && (best === undefined || last.metadata.completedAt > best.metadata.completedAt)) best = last;
    }
    return best;
  }

  checkpointOf(reference: string): { jobId: string; checkpointId: number } | undefined {
    return parseCheckpointReference(this.root, this.normalize(reference));
  }

  async appendHistory(jobId: string, entry: unknown): Promise<void> {
    await this.fs.append(childReference(this.jobDir(jobId), HISTORY_FILE), encoder.encode(JSON.stringify(entry) + '\n'));
  }

  async readHistory(jobId: string): Promise<HistoryLines> {
    const reference = childReference(this.jobDir(jobId), HISTORY_FILE);
    const bytes = await this.fs.readFile(reference);
    const entries: unknown[] = [];
    const unreadable: number[] = [];
    (bytes === undefined ? '' : decoder.decode(bytes)).split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        entries.push(JSON.parse(line));
      } catch {
        unreadable.push(i + 1);
      }
    });
    return { reference, entries, unreadable };
  }

  discardSharedState(jobId: string, name: string): Promise<void> {
    if (!isPlainName(name)) return Promise.reject(new RangeError(`a shared state file has a plain name, got ${JSON.stringify(name)}`));
    return this.fs.delete(childReference(childReference(this.jobDir(jobId), SHARED_DIR), name));
  }

  async collectSharedGarbage(jobId: string): Promise<number> {
    const shared = childReference(this.jobDir(jobId), SHARED_DIR);
    const files = (await this.fs.list(shared)).filter((e) => !e.directory).map((e) => e.name);
    if (files.length === 0) return 0;
    // Every checkpoint whose metadata parses keeps its files, verified or not: a checkpoint
    // skipped as corrupt today is not this collector's to break further. A metadata file that
    // cannot be read (an I/O error, a storage still failing after its retries) or parsed (a
    // newer weir's, after a rollback) may name any of them: nothing is deleted then. Only a
    // missing one (readFile's undefined: no checkpoint completed there) names nothing.
    const keep = new Set<string>();
    for (const e of await this.fs.list(this.jobDir(jobId))) {
      if (parseCheckpointDirName(e.name) === undefined) continue;
      const ref = metadataReference(childReference(this.jobDir(jobId), e.name));
      const bytes = await this.fs.readFile(ref);
      if (bytes === undefined) {
        // A gateway's 404 looks like S3's "no such key": asked another way before its files go.
        if ((await confirmedSize(this.fs, ref)) !== undefined) throw new Error(`shared files kept: ${ref} was reported missing, then found`);
        continue;
      }
      let m: CheckpointMetadata;
      try {
        m = parseMetadata(decoder.decode(bytes), ref);
      } catch (err) {
        throw new Error(`shared files kept: ${(err as Error).message}`);
      }
      for (const f of sharedFilesOf(m)) keep.add(f);
    }
    let n = 0;
    for (const f of files) {
      if (keep.has(f)) continue;
      await this.fs.delete(childReference(shared, f));
      n++;
    }
    return n;
  }

  async collectGarbage(jobId: string, keep: ReadonlySet<number> = new Set()): Promise<number> {
    let n = 0;
    for (const e of await this.fs.list(this.jobDir(jobId))) {
      const id = parseCheckpointDirName(e.name);
      if (id === undefined || keep.has(id)) continue;
      const dir = childReference(this.jobDir(jobId), e.name);
      // Only a metadata file that is not there makes a directory garbage: a storage that fails
      // to answer throws (the caller logs it), it never gets a good checkpoint deleted.
      if ((await this.fs.size(metadataReference(dir))) !== undefined) continue;
      // Asked another way (a listing on S3) before the directory goes: a HEAD's 404 from a
      // gateway is indistinguishable from "no such key", and deleted the newest good checkpoint.
      if ((await confirmedSize(this.fs, metadataReference(dir))) !== undefined) continue;
      await this.fs.deleteRecursively(dir);
      n++;
    }
    return n;
  }
}
