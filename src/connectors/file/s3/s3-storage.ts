/**
 * The exactly-once file sink's storage on S3 (or an S3-compatible store) at s3://bucket/prefix,
 * without small files. A part file stays open across checkpoints as one multipart upload to
 * its final key, `<prefix>/part-<sub>-<run>-<n>.<jsonl|csv|parquet>`:
 * - as records arrive, every `s3.upload.part-size` bytes (at least S3's 5 MiB minimum) go up
 *   as a part in the background (at most 4 requests at once); from 8 parts' worth waiting the
 *   writer pushes back (its task takes no input until an upload ends), so a slow store slows the
 *   job instead of failing it; 32 parts' worth (one huge batch) fails the writer (bounded memory);
 * - at a barrier, the part's state is a committable {upload, parts uploaded, tail}: the bytes
 *   short of a full part travel in the checkpoint itself, followed by the bytes that would close
 *   the file now (Parquet: the footer of the row groups so far; the writer flushed a row group); the checkpoint is acknowledged only
 *   once the parts it names are uploaded (whenPrepared);
 * - a part closed by the rolling policy (size, age, inactivity; not per checkpoint) uploads its
 *   rest as the last part; its committable is completed (CompleteMultipartUpload) when its
 *   checkpoint completes: only then does the object exist, whole;
 * - after a restore, the restored checkpoint's open parts are completed from its parts and tail
 *   (so the file ends exactly at the checkpoint and nothing after it is in it), and orphan
 *   uploads (an interrupted attempt's, not named by the restored checkpoint) are aborted, but
 *   for those a savepoint marker names (below);
 * - at the barrier of a savepoint that does not stop the job, the uploads its committables hold
 *   are recorded in `<prefix>/.weir-savepoint-<sub>-<run>-<id>` before it is acknowledged: the
 *   savepoint commits nothing, and a restore of an earlier checkpoint meanwhile must not abort
 *   what a restore from the savepoint completes later (kept, one log line; a marker goes once no
 *   upload it names is left);
 * - the commit record is an object `<prefix>/.weir-committed-<sub>-<id>` per checkpoint id, the
 *   highest counting, written before the files of a commit are completed (commit protocol in
 *   exactly-once-file-sink.ts; older outputs have `<prefix>/.weir-committed-<sub>`).
 * There is no lease on an object store (as for checkpoints on S3): one job per output prefix.
 * The S3 client and its settings are the checkpoint storage's (checkpoint/s3): the job's
 * s3.* options, else the AWS SDK's own resolution (AWS_ENDPOINT_URL_S3, the credential chain).
 */
import { randomBytes } from 'node:crypto';
import { WeirError } from '../../../core/errors.ts';
import type { SinkContext } from '../../../core/sink.ts';
import { isNoSuchUpload, S3ObjectStore, type CompletedPart } from '../../../checkpoint/s3/object-store.ts';
import { currentJobS3Config, parseS3Reference, resolveS3Config, type S3Config, type S3Settings } from '../../../checkpoint/s3/settings.ts';
import type { FileCommittable } from '../exactly-once-file-sink.ts';
import { ownsSubtask, type CommitterSession, type FileSinkStorage, type OpenPart, type WriterSession } from '../sink-storage.ts';
import { jsonLines, MAX_MERGE_BYTES, mergedFile, type ByteWriter, type FileFormat } from '../formats.ts';
import {
  commitRecordName, COMMIT_RECORD_PREFIX, compactedAway, OPEN_RECORD_PREFIX, openRecordName, parseOpenRecordName, staleOpenRecords, compactedSize, decideCompletion, keptForSavepoints, overwritten, opensToComplete, orphanUploads, parsePartKey, parseCommitRecordName, parseSavepointMarkerName, partKey, resolveIntent,
  SAVEPOINT_MARKER_PREFIX, savepointHeldKeys, savepointMarkerName, smallCommittedFiles, staleCommitRecords, staleSavepointMarkers, type CompactionRecord, type SavepointMarker,
} from './protocol.ts';
import { mapBounded } from '../../../core/bounded-parallel.ts';

/** Requests one writer has in flight at most. */
const MAX_CONCURRENT_UPLOADS = 4;
/** Bytes waiting for upload (queued and in flight) before the writer pushes back on its task, in parts. */
const MAX_WAITING_PARTS = 8;
/**
 * Waiting bytes that fail the writer, in parts: only reached when one batch of records is larger
 * than this many parts (the task checks isAvailable between batches), a bound on memory all the same.
 */
const FAIL_WAITING_PARTS = 4 * MAX_WAITING_PARTS;
/** Uploaded part buffers a writer keeps for its next parts. */
const MAX_SPARE_BUFFERS = 2;
/**
 * `<prefix>/.weir-open-<sub>-<id>` (openRecordName): the part files the last checkpoint a subtask
 * committed holds open ({checkpointId, keys}), multipart uploads only a restore of it completes;
 * written when that set changes, deleted when it is empty. A fresh start refuses to abort such an
 * upload.
 */
/** A compaction's intent (`.weir-compact-<sub>-<run>-<k>`) and, once its sources are deleted, its record (`.weir-compacted-...`). */
const INTENT_PREFIX = '.weir-compact-';
/** GETs of compaction records in flight at once. */
const RECORD_READS_IN_FLIGHT = 16;
const DONE_PREFIX = '.weir-compacted-';
/** Listings of the compaction records before giving up when intents keep vanishing between a listing and their GETs. */
const MAX_RECORD_LISTINGS = 8;

export interface S3CompactionSettings {
  /** Merge committed files smaller than this; 0: no compaction. */
  readonly compactBelow: number;
  readonly compactMinFiles: number;
}

/**
 * Compactions and recoveries of one subtask's files in this thread take turns (a failed
 * attempt's committer may still be compacting while the next attempt restores).
 */
const compactionLocks = new Map<string, Promise<void>>();
function exclusive(key: string, fn: () => Promise<void>): Promise<void> {
  const run = (compactionLocks.get(key) ?? Promise.resolve()).then(fn);
  const tail = run.catch(() => {});
  compactionLocks.set(key, tail);
  void tail.then(() => {
    if (compactionLocks.get(key) === tail) compactionLocks.delete(key);
  });
  return run;
}

/** What this process knows of an upload it is writing: its id once created, the ETag of each part once uploaded. */
interface KnownUpload {
  uploadId: string | undefined;
  readonly etags: (string | undefined)[];
}

export class S3SinkStorage implements FileSinkStorage<FileCommittable> {
  readonly keepsPartsOpen = true;
  readonly bucket: string;
  readonly prefix: string;
  private store_: S3ObjectStore | undefined;
  /** Uploads written by writers of this sink in this thread, by key: a commit here needs no listing. */
  private readonly known = new Map<string, KnownUpload>();
  /** Runs of writers alive in this thread: their uploads are never orphans. */
  readonly liveRuns = new Set<string>();
  /** Per subtask in this thread: the check of its restored snapshot (checkRestorable), which its commit record waits for. */
  private readonly restoreChecks = new Map<number, Promise<void>>();
  /** Per subtask: the open-parts record this thread wrote last (null: none, every one deleted). */
  private readonly openWritten = new Map<number, number | null>();
  /** Per subtask: the highest commit record this thread wrote (its lower ones were deleted, or are being). */
  private readonly recorded = new Map<number, number>();

  readonly extension: string;

  constructor(
    readonly location: string, private readonly settings: S3Settings | undefined, readonly format: FileFormat = jsonLines(),
    readonly compaction: S3CompactionSettings = { compactBelow: 0, compactMinFiles: 8 },
  ) {
    this.extension = format.extension;
    const { bucket, key } = parseS3Reference(location);
    this.bucket = bucket;
    this.prefix = key;
    if (settings !== undefined) resolveS3Config(settings, `exactly-once file sink ${location}`); // checked now, used in each thread
  }

  /** The client, made on first use in each thread (the sink is built in every worker). */
  get store(): S3ObjectStore {
    this.store_ ??= new S3ObjectStore(this.config());
    return this.store_;
  }

  /**
   * This storage with its requests ended by the task's ctx.signal (S3ObjectStore.withSignal):
   * a view whose `store` is the signalled client and whose every other field is this storage's
   * own (read through the prototype: the same maps and sets of known uploads, live runs and
   * records; no method assigns a field outside the constructor and the `store` getter).
   */
  forTask(ctx: SinkContext): S3SinkStorage {
    if (ctx.signal === undefined) return this;
    return Object.create(this, { store: { value: this.store.withSignal(ctx.signal) } }) as S3SinkStorage;
  }

  private config(): S3Config {
    return this.settings !== undefined ? resolveS3Config(this.settings, `exactly-once file sink ${this.location}`) : currentJobS3Config();
  }

  private describe(key: string): string {
    return `s3://${this.bucket}/${key}`;
  }

  openWriter(ctx: SinkContext): WriterSession<FileCommittable> {
    const session = new S3WriterSession(this, ctx);
    if (ctx.restoredCheckpointId === undefined) this.restoreChecks.delete(ctx.subtaskIndex); // an earlier restore's, refused or not
    // A start without a restore (no recover() call): what earlier attempts left under the prefix
    // is garbage (no completed checkpoint names it); aborted in the background, never this writer's.
    if (ctx.restoredCheckpointId === undefined) session.background(() => this.abortOrphans(ctx, new Set()));
    return session;
  }

  openCommitter(ctx: SinkContext): CommitterSession {
    return new S3CommitterSession(this, ctx);
  }

  /** The key compactions of subtask `sub` take turns on. */
  lockKey(sub: number): string {
    return `${this.bucket}\0${this.prefix}\0${sub}`;
  }

  /**
   * Compaction intents and records of subtask `sub` under the prefix (intents only with
   * `intentsOnly`). An intent listed but gone by its GET was finished (its record written
   * before the intent was deleted, after the listing) or undone meanwhile: the prefix is listed
   * again until every intent listed is read, or a caller asking whether a file was compacted
   * missed the record that replaced the intent (and wrote the file a second time).
   */
  async compactionRecords(sub: number, intentsOnly = false): Promise<{ key: string; record: CompactionRecord; done: boolean }[]> {
    const head = this.prefix === '' ? '' : `${this.prefix}/`;
    const read = new Map<string, Uint8Array>();
    for (let round = 1; ; round++) {
      const listed = await this.store.list(this.bucket, partKey(this.prefix, intentsOnly ? `${INTENT_PREFIX}${sub}-` : '.weir-compact'));
      const mine = listed.objects.filter((o) => {
        const name = o.key.slice(head.length);
        return name.startsWith(`${DONE_PREFIX}${sub}-`) || name.startsWith(`${INTENT_PREFIX}${sub}-`);
      });
      // Records are never deleted (a restore may need any of them), so there are more with the
      // prefix's age: their GETs overlap, up to 16 at once (each costs a round trip on S3); a
      // second listing reads only what the first did not.
      const unread = mine.filter((o) => !read.has(o.key));
      const bodies = await mapBounded(unread, RECORD_READS_IN_FLIGHT, (o) => this.store.getObject(this.bucket, o.key));
      let vanished = 0;
      for (let i = 0; i < unread.length; i++) {
        const body = bodies[i];
        if (body === undefined) vanished++;
        else read.set(unread[i]!.key, body);
      }
      if (vanished > 0) {
        if (round < MAX_RECORD_LISTINGS) continue;
        throw new WeirError('CONNECTOR', `exactly-once file sink ${this.location}: the compaction records of subtask ${sub} kept changing while being read (${MAX_RECORD_LISTINGS} listings); another job writing under the same prefix?`);
      }
      const out: { key: string; record: CompactionRecord; done: boolean }[] = [];
      for (const o of mine) {
        const done = o.key.slice(head.length).startsWith(`${DONE_PREFIX}${sub}-`);
        let record: CompactionRecord;
        try {
          record = JSON.parse(Buffer.from(read.get(o.key)!).toString('utf8')) as CompactionRecord;
        } catch (e) {
          throw new WeirError('CONNECTOR', `exactly-once file sink ${this.location}: cannot read the compaction record ${this.describe(o.key)}: ${(e as Error).message}`);
        }
        if (typeof record?.target !== 'string' || !Array.isArray(record.sources)) throw new WeirError('CONNECTOR', `exactly-once file sink ${this.location}: the compaction record ${this.describe(o.key)} has no target or sources`);
        out.push({ key: o.key, record, done });
      }
      return out;
    }
  }

  /**
   * Before a restore writes anything (recover, and the commit record the restore's re-commit
   * writes, which waits for it): every file of the restored snapshot, over all subtasks, that
   * exists (or was compacted) shorter than the snapshot holds it (protocol.ts overwritten).
   * Checked in full first, so a refused restore has committed nothing: the earlier checkpoint
   * the message points to still restores without duplicates.
   */
  private async checkRestorable(referenced: readonly FileCommittable[]): Promise<void> {
    const mine = referenced.filter((c) => c.s3?.bytes !== undefined && parsePartKey(this.prefix, c.final) !== undefined);
    const sizes = await mapBounded(mine, RECORD_READS_IN_FLIGHT, (c) => this.store.headObject(this.bucket, c.final));
    const absent = mine.filter((_c, i) => sizes[i] === undefined);
    const compacted = await this.compactedSizes(absent.map((c) => c.final));
    for (let i = 0; i < mine.length; i++) {
      const c = mine[i]!;
      const found = overwritten({ objectBytes: sizes[i] ?? compacted.get(c.final), expectedBytes: c.s3!.bytes });
      if (found !== undefined) throw this.overwrittenError(c, found.reason);
    }
  }

  /** The sizes compactions recorded for the absent part files `keys` that they merged (one listing of the records per subtask). */
  private async compactedSizes(keys: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const subs = new Set(keys.map((k) => parsePartKey(this.prefix, k)!.subtask));
    for (const sub of subs) {
      const records = await this.compactionRecords(sub);
      if (records.length === 0) continue;
      const seen: { record: CompactionRecord; targetExists: boolean }[] = [];
      for (const r of records) seen.push({ record: r.record, targetExists: r.done || (await this.store.headObject(this.bucket, r.record.target)) !== undefined });
      for (const k of keys) {
        const bytes = compactedSize(k, seen);
        if (bytes !== undefined) out.set(k, bytes);
      }
    }
    return out;
  }

  private overwrittenError(c: FileCommittable, reason: string): WeirError {
    // Not retried: a restart restores the same snapshot and finds the same object.
    return new WeirError('RESTORE', `exactly-once file sink ${this.location}: the output file ${this.describe(c.final)} of checkpoint or savepoint ${c.s3!.checkpointId} cannot be committed: ${reason}; this snapshot can no longer be restored without losing records: restore that earlier checkpoint (or a later one of the run restored from it) instead, which replays them`);
  }

  /**
   * Whether an absent part file was committed and compacted since (see compactedAway), and
   * its size then when the record has it (compactedSize).
   */
  private async wasCompacted(key: string): Promise<{ bytes: number | undefined } | undefined> {
    const sub = parsePartKey(this.prefix, key)?.subtask;
    if (sub === undefined) return undefined;
    const records = (await this.compactionRecords(sub)).filter((r) => r.record.sources.includes(key));
    const seen: { record: CompactionRecord; targetExists: boolean }[] = [];
    for (const r of records) seen.push({ record: r.record, targetExists: r.done || (await this.store.headObject(this.bucket, r.record.target)) !== undefined });
    return compactedAway(key, seen) ? { bytes: compactedSize(key, seen) } : undefined;
  }

  /**
   * Finishes or undoes the compactions of the owned subtasks a crash interrupted (resolveIntent):
   * a target that exists was written whole, so its sources go and the intent becomes a record;
   * one that does not exist never let a source go, so the intent is dropped.
   */
  async resolveIntents(ctx: Pick<SinkContext, 'subtaskIndex' | 'parallelism'>): Promise<number> {
    // Intents of every subtask this one owns: its own, and for subtask 0 those of indices that no longer exist (a rescale).
    const head = this.prefix === '' ? '' : `${this.prefix}/`;
    const subs = new Set<number>([ctx.subtaskIndex]);
    for (const o of (await this.store.list(this.bucket, partKey(this.prefix, INTENT_PREFIX))).objects) {
      const m = /^\.weir-compact-(\d+)-/.exec(o.key.slice(head.length));
      if (m !== null && ownsSubtask(ctx, Number(m[1]))) subs.add(Number(m[1]));
    }
    let n = 0;
    for (const sub of subs) n += await this.resolveIntentsOf(sub);
    return n;
  }

  private async resolveIntentsOf(sub: number): Promise<number> {
    let n = 0;
    for (const { key, record } of await this.compactionRecords(sub, true)) {
      // Fenced first: a completion of the merged file still on its way (its client gave up on
      // it) can no longer land after the look below found no target and dropped the intent.
      if (record.done !== true) await this.abortUploadsOf(record.target);
      const d = resolveIntent(record, (await this.store.headObject(this.bucket, record.target)) !== undefined);
      if (d.step === 'finish') await this.finishCompaction(key, record);
      else if (d.step === 'undo') await this.store.deleteObject(this.bucket, key);
      if (d.step !== 'nothing') n++;
    }
    return n;
  }

  /**
   * A compaction's merged file, made visible by completing a multipart upload of one part, not by
   * a PUT. The outcome of a request whose answer is lost (a timeout, a cut connection) is unknown
   * to the client while the store may still carry it out: a PUT of the merged file that landed
   * after resolveIntentsOf had found no target and dropped the intent left the merged file beside
   * its sources, their records twice, for good. A completion can be fenced: resolveIntentsOf
   * aborts the target's uploads before it looks, and an upload aborted cannot be completed.
   */
  async writeMerged(key: string, body: Uint8Array): Promise<void> {
    const uploadId = await this.store.createMultipartUpload(this.bucket, key);
    const part = await this.store.uploadPart(this.bucket, key, uploadId, 1, body);
    if (await this.store.tryCompleteMultipartUpload(this.bucket, key, uploadId, [part])) return;
    // No such upload: completed by a try whose answer was lost (the object is there), or fenced.
    if ((await this.store.headObject(this.bucket, key)) === undefined) throw new WeirError('CONNECTOR', `exactly-once file sink ${this.location}: the upload of the merged file ${this.describe(key)} was aborted before it completed (an interrupted compaction resolved meanwhile); its sources stay as they are`);
  }

  /** Aborts every multipart upload of `key` (gone already: nothing to fence); a failure is thrown, the intent then waits for the next resolution. */
  private async abortUploadsOf(key: string): Promise<void> {
    for (const u of (await this.store.listMultipartUploads(this.bucket, key)).filter((x) => x.key === key)) {
      await this.store.abortMultipartUpload(this.bucket, key, u.uploadId).catch((e: unknown) => {
        if (!isNoSuchUpload(e)) throw e;
      });
    }
  }

  /** After the target exists: the sources deleted, the record written, the intent deleted (each step idempotent). */
  async finishCompaction(intentKey: string, record: CompactionRecord): Promise<void> {
    await this.store.deleteObjects(this.bucket, record.sources);
    const head = this.prefix === '' ? '' : `${this.prefix}/`;
    const name = intentKey.slice(head.length).slice(INTENT_PREFIX.length);
    await this.store.putObject(this.bucket, partKey(this.prefix, `${DONE_PREFIX}${name}`), Buffer.from(JSON.stringify({ ...record, done: true }) + '\n'));
    await this.store.deleteObject(this.bucket, intentKey);
  }

  publishes(c: FileCommittable): boolean {
    return c.s3?.kind === 'complete';
  }

  async publish(c: FileCommittable, ctx: SinkContext): Promise<void> {
    const s = c.s3;
    if (s === undefined) throw new WeirError('RESTORE', `exactly-once file sink ${this.location}: the checkpoint holds a local file's committable (${c.final}); restore it with its own output path`);
    await this.completeFile(c, undefined, ctx);
  }

  /** Called by the sink's writer: a part's upload, tracked until completed. */
  track(key: string): KnownUpload {
    const k: KnownUpload = { uploadId: undefined, etags: [] };
    this.known.set(key, k);
    return k;
  }

  /**
   * Makes the part file of `c` visible, idempotently (decideCompletion): from what this thread
   * knows of the upload, else from S3's listings (after a restore, or in another thread).
   */
  async completeFile(c: FileCommittable, tail: Buffer | undefined, ctx: SinkContext): Promise<void> {
    const key = c.final;
    const parts = c.s3!.parts;
    const known = this.known.get(key);
    if (tail === undefined && parts > 0 && known?.uploadId !== undefined && known.etags.length >= parts && known.etags.slice(0, parts).every((e) => e !== undefined)) {
      const list: CompletedPart[] = known.etags.slice(0, parts).map((etag, i) => ({ partNumber: i + 1, etag: etag! }));
      if (await this.store.tryCompleteMultipartUpload(this.bucket, key, known.uploadId, list)) {
        this.known.delete(key);
        await this.abortOtherUploads(key, known.uploadId, ctx);
        return;
      }
    }
    let uploadId: string | undefined = c.pending !== '' ? c.pending : known?.uploadId;
    let listed: CompletedPart[] | undefined;
    if (parts > 0) {
      const candidates = uploadId !== undefined ? [uploadId] : (await this.store.listMultipartUploads(this.bucket, key)).filter((u) => u.key === key).map((u) => u.uploadId);
      for (const id of candidates) {
        const l = await this.store.listParts(this.bucket, key, id);
        if (l === undefined) continue;
        uploadId = id;
        listed = l.filter((p) => p.partNumber <= parts);
        if (listed.length === parts) break;
      }
    }
    const objectBytes = listed === undefined ? await this.store.headObject(this.bucket, key) : undefined;
    const input = { parts, tailBytes: tail?.byteLength ?? 0, listed: listed?.map((p) => p.partNumber), objectExists: objectBytes !== undefined, objectBytes, expectedBytes: c.s3!.bytes };
    let d = decideCompletion(input);
    // Gone because a compaction merged it after it was committed: committed, not lost, never
    // written again; unless the part it merged was shorter than this state's (as above).
    if (d.step === 'lost' || d.step === 'put') {
      const compacted = await this.wasCompacted(key);
      if (compacted !== undefined) d = decideCompletion({ ...input, objectExists: true, objectBytes: compacted.bytes });
    }
    switch (d.step) {
      case 'already':
        if (parts > 0) await this.abortOtherUploads(key, uploadId, ctx); // a repeated commit: the first may have stopped before this
        break;
      case 'nothing':
        break;
      case 'put':
        await this.store.putObject(this.bucket, key, tail!);
        break;
      case 'lost':
        ctx.log(`weir: exactly-once file sink ${this.location}: the output file ${this.describe(key)} of checkpoint ${c.s3!.checkpointId} cannot be committed: ${d.reason}; its records are lost`);
        break;
      case 'fail':
        throw new WeirError('CONNECTOR', `exactly-once file sink ${this.location}: the output file ${this.describe(key)} of checkpoint ${c.s3!.checkpointId} cannot be committed now: ${d.reason}; nothing was aborted, the commit is retried after a restart`);
      case 'overwritten':
        throw this.overwrittenError(c, d.reason);
      case 'complete': {
        const all = [...listed!];
        if (d.uploadTail) all.push(await this.store.uploadPart(this.bucket, key, uploadId!, parts + 1, tail!));
        if (!(await this.store.tryCompleteMultipartUpload(this.bucket, key, uploadId!, all))) {
          // Completed by someone else in between (a repeated commit): fine if the object is there.
          if ((await this.store.headObject(this.bucket, key)) === undefined) throw new WeirError('CONNECTOR', `exactly-once file sink ${this.location}: the upload of ${this.describe(key)} vanished while being completed`);
        }
        await this.abortOtherUploads(key, uploadId, ctx);
        break;
      }
    }
    this.known.delete(key);
  }

  /**
   * After `key` was completed from upload `completed`: any other upload of the key is a leftover
   * (keys are unique per writer part), made when a CreateMultipartUpload whose answer was lost
   * was retried (the SDK's retry created a second upload; the writer knows only the one that
   * answered): aborted, or it stayed open, and billed, for good. Its failure does not fail the
   * commit (the file is committed); the next restore's orphan cleanup tries again.
   */
  private async abortOtherUploads(key: string, completed: string | undefined, ctx: SinkContext): Promise<void> {
    try {
      const others = (await this.store.listMultipartUploads(this.bucket, key)).filter((u) => u.key === key && u.uploadId !== completed);
      for (const u of others) await this.store.abortMultipartUpload(this.bucket, key, u.uploadId);
      if (others.length > 0) ctx.log(`weir: exactly-once file sink ${this.location}: aborted ${others.length} other multipart upload(s) of ${this.describe(key)} (a retried creation's), after completing it`);
    } catch (e) {
      ctx.log(`weir: exactly-once file sink ${this.location}: cannot abort other multipart uploads of ${this.describe(key)} after completing it (they stay until the next restore or a lifecycle rule): ${(e as Error).message}`);
    }
  }

  /**
   * One object per checkpoint id (commitRecordName), the highest counting: a PUT of an earlier
   * record landing late leaves a lower one beside it, not the record set back. The subtask's
   * lower records go after it (best effort: one left over only costs a small object); the first
   * time in this thread from a listing (another run's, an older single record), then the one
   * this thread wrote before.
   */
  async writeCommitRecord(subtask: number, checkpointId: number): Promise<void> {
    await this.restoreChecks.get(subtask); // a refused restore records nothing
    const key = partKey(this.prefix, commitRecordName(subtask, checkpointId));
    await this.store.putObject(this.bucket, key, Buffer.from(JSON.stringify({ checkpointId }) + '\n'));
    const before = this.recorded.get(subtask);
    if (before !== undefined && before >= checkpointId) return;
    this.recorded.set(subtask, checkpointId);
    try {
      const candidates = before === undefined
        ? (await this.store.list(this.bucket, partKey(this.prefix, `${COMMIT_RECORD_PREFIX}${subtask}`))).objects.map((o) => o.key)
        : [partKey(this.prefix, commitRecordName(subtask, before))];
      const stale = staleCommitRecords(this.prefix, candidates, subtask, checkpointId);
      if (stale.length > 0) await this.store.deleteObjects(this.bucket, stale);
    } catch {
      // Lower records left over change nothing (the highest counts); the next first write lists them again.
      this.recorded.delete(subtask);
    }
  }

  /** The highest checkpoint any subtask recorded; a record that cannot be read is an error, not "nothing". */
  async readCommitRecords(): Promise<number | undefined> {
    const listed = await this.store.list(this.bucket, partKey(this.prefix, COMMIT_RECORD_PREFIX));
    let highest: number | undefined;
    for (const o of listed.objects) {
      const named = parseCommitRecordName(this.prefix, o.key);
      if (named === undefined) continue;
      if (named.checkpointId !== undefined) {
        highest = Math.max(highest ?? 0, named.checkpointId);
        continue;
      }
      const body = await this.store.getObject(this.bucket, o.key);
      if (body === undefined) continue; // an older record deleted meanwhile (its subtask wrote a newer one)
      let id: unknown;
      try {
        id = (JSON.parse(Buffer.from(body ?? new Uint8Array()).toString('utf8')) as { checkpointId?: unknown }).checkpointId;
      } catch (e) {
        throw new WeirError('START', `cannot read the sink's commit record ${this.describe(o.key)}: ${(e as Error).message}`);
      }
      if (!(Number.isInteger(id) && (id as number) >= 0)) throw new WeirError('START', `the sink's commit record ${this.describe(o.key)} holds no checkpoint id`);
      highest = Math.max(highest ?? 0, id as number);
    }
    return highest;
  }

  /** Records (noteOpen) that completed checkpoint `checkpointId` of subtask `sub` holds `keys` open; none: the record goes. */
  async writeOpenRecord(sub: number, checkpointId: number, keys: readonly string[]): Promise<void> {
    // A new object per change, not one rewritten (staleOpenRecords); the subtask's earlier ones go
    // after it, the first time in this thread from a listing, then the one written before.
    if (keys.length > 0) await this.store.putObject(this.bucket, partKey(this.prefix, openRecordName(sub, checkpointId)), Buffer.from(JSON.stringify({ checkpointId, keys }) + '\n'));
    const before = this.openWritten.get(sub);
    const candidates = before === undefined
      ? (await this.store.list(this.bucket, partKey(this.prefix, `${OPEN_RECORD_PREFIX}${sub}`))).objects.map((o) => o.key)
      : before === null ? [] : [partKey(this.prefix, openRecordName(sub, before))];
    const stale = staleOpenRecords(this.prefix, candidates, sub, keys.length > 0 ? checkpointId : undefined);
    if (stale.length > 0) await this.store.deleteObjects(this.bucket, stale);
    this.openWritten.set(sub, keys.length > 0 ? checkpointId : null);
  }

  /**
   * A start without a restore aborts every upload of the sink's part files under the prefix
   * (openWriter): refused when one of them holds an open part a completed checkpoint of an
   * earlier run names (the open records), as that checkpoint, or a savepoint sharing the upload,
   * could then no longer be restored whole. Uploads a savepoint marker names are not counted:
   * a fresh start keeps them too (abortOrphans), so it destroys nothing a savepoint holds.
   */
  async freshStartRefusal(): Promise<string | undefined> {
    const head = this.prefix === '' ? '' : `${this.prefix}/`;
    const named = new Map<string, number>();
    for (const o of (await this.store.list(this.bucket, partKey(this.prefix, OPEN_RECORD_PREFIX))).objects) {
      if (parseOpenRecordName(this.prefix, o.key) === undefined) continue;
      const body = await this.store.getObject(this.bucket, o.key);
      if (body === undefined) continue; // deleted meanwhile: nothing open
      let rec: { checkpointId?: unknown; keys?: unknown };
      try {
        rec = JSON.parse(Buffer.from(body).toString('utf8')) as typeof rec;
      } catch (e) {
        throw new WeirError('START', `cannot read the sink's record of open part files ${this.describe(o.key)}: ${(e as Error).message}`);
      }
      if (!Number.isInteger(rec.checkpointId) || !Array.isArray(rec.keys)) throw new WeirError('START', `the sink's record of open part files ${this.describe(o.key)} holds no checkpoint id or keys`);
      for (const k of rec.keys) if (typeof k === 'string') named.set(k, Math.max(named.get(k) ?? 0, rec.checkpointId as number));
    }
    if (named.size === 0) return undefined;
    const open = (await this.store.listMultipartUploads(this.bucket, partKey(this.prefix, 'part-'))).filter((u) => named.has(u.key));
    if (open.length === 0) return undefined;
    const newest = Math.max(...open.map((u) => named.get(u.key)!));
    return `${this.describe(this.prefix)} holds ${open.length} multipart upload(s) with records not visible yet (open part files) that completed checkpoint ${newest} (and any later one) of an earlier run holds, and a start without a restore would abort them: restore that run's latest checkpoint or savepoint with --from, write to another prefix, or start fresh all the same with --allow-duplicate-output (the uploads are aborted: that run's snapshots then restore without their records)`;
  }

  /** No lease on an object store (nothing there can tell a dead holder): one job per output prefix. */
  lease(): { release(): void } {
    return { release: () => {} };
  }

  /**
   * After a restore from `restoredId`: complete the open parts of this subtask's share of the
   * restored committables (the file ends at the checkpoint; a closed part's committable is
   * completed by the committer), then abort the uploads of owned subtasks that the restored
   * checkpoint does not name (an interrupted attempt's, or checkpoints after the restored one).
   */
  async recover(ctx: SinkContext, restoredId: number, committables: readonly FileCommittable[], referenced: readonly FileCommittable[]): Promise<void> {
    // Set before the first await: the restore's re-commit, started right after this call, waits
    // for it. On the compaction lock: a compaction of the failed attempt still running here
    // deleting a part meanwhile would hide its size from the HEAD (its record may not be read yet).
    const check = exclusive(this.lockKey(ctx.subtaskIndex), () => this.checkRestorable(referenced));
    check.catch(() => {}); // awaited below; also by writeCommitRecord
    this.restoreChecks.set(ctx.subtaskIndex, check);
    await check;
    // All of it on the subtask's compaction lock. A compaction of the failed attempt still
    // running in this thread ends first (it may delete files this completes), and an interrupted
    // one is finished or undone now, as on a local directory (left to the next compaction, which
    // only a commit starts, a restored subtask that committed nothing more left the merged file
    // and its sources both visible for good). The open parts are completed on the lock too: the
    // restore's first commit starts a compaction at once, and one merging a part completed here
    // while this asked whether that part had been compacted (wasCompacted) had it written again.
    await exclusive(this.lockKey(ctx.subtaskIndex), async () => {
      const resolved = await this.resolveIntents(ctx);
      if (resolved > 0) ctx.log(`weir: exactly-once file sink ${this.location}: resolved ${resolved} interrupted compaction(s) of subtask ${ctx.subtaskIndex}`);
      const completeKeys = new Set(referenced.filter((c) => c.s3?.kind === 'complete').map((c) => c.final));
      const opens = opensToComplete(
        committables.filter((c) => c.s3?.kind === 'open').map((c) => ({ key: c.final, checkpointId: c.s3!.checkpointId, c })),
        completeKeys,
      );
      if (opens.length > 0) await this.writeCommitRecord(ctx.subtaskIndex, restoredId);
      for (const o of opens) await this.completeFile(o.c, Buffer.from(o.c.s3!.tail ?? '', 'base64'), ctx);
      // Other uploads of a completed open part's key are extras (a retried creation): not kept.
      const keep = new Set(referenced.map((c) => c.final));
      for (const o of opens) keep.delete(o.key);
      await this.abortOrphans(ctx, keep, new Set(opens.map((o) => o.key)));
    });
  }

  /**
   * Aborts owned uploads not in `keep` and not of a live writer, but for those a savepoint
   * marker names (kept, one log line: a restore from that savepoint completes them; nothing else
   * will). Markers of owned subtasks with no upload left go. Returns how many were aborted.
   */
  async abortOrphans(ctx: SinkContext, keep: ReadonlySet<string>, completed?: ReadonlySet<string>): Promise<number> {
    const markers = await this.savepointMarkers();
    const uploads = await this.store.listMultipartUploads(this.bucket, partKey(this.prefix, 'part-'));
    const owns = (sub: number) => ownsSubtask(ctx, sub);
    const { abort, kept, savepoints } = keptForSavepoints(orphanUploads(uploads, this.prefix, owns, this.liveRuns, keep), markers, completed);
    for (const u of abort) await this.store.abortMultipartUpload(this.bucket, u.key, u.uploadId).catch(() => {});
    if (abort.length > 0) ctx.log(`weir: exactly-once file sink ${this.location}: aborted ${abort.length} multipart upload(s) an interrupted attempt left (no retained checkpoint names them)`);
    if (kept.length > 0) {
      const keys = [...new Set(kept.map((u) => u.key))].sort();
      const shown = keys.slice(0, 3).map((k) => this.describe(k)).join(', ') + (keys.length > 3 ? `, and ${keys.length - 3} more` : '');
      ctx.log(`weir: exactly-once file sink ${this.location}: kept ${kept.length} multipart upload(s) that savepoint(s) ${savepoints.join(', ')} hold (taken after the restored snapshot, or never completed): a restore from such a savepoint completes them, nothing else will; abort them (and delete the ${SAVEPOINT_MARKER_PREFIX}* objects naming them) if it will not be restored: ${shown}`);
    }
    const stale = staleSavepointMarkers(markers, new Set(uploads.map((u) => u.key)), owns, this.liveRuns);
    if (stale.length > 0) await this.store.deleteObjects(this.bucket, stale.map((m) => m.key));
    return abort.length;
  }

  /** Records (at a savepoint's barrier, by writer `run` of subtask `sub`) that savepoint `savepointId` holds the uploads of `keys`. */
  async writeSavepointMarker(sub: number, run: string, savepointId: number, keys: readonly string[]): Promise<void> {
    await this.store.putObject(this.bucket, partKey(this.prefix, savepointMarkerName(sub, run, savepointId)), Buffer.from(JSON.stringify({ savepointId, keys }) + '\n'));
  }

  /** Every savepoint marker under the prefix (a marker deleted between the listing and its GET is skipped: it protected nothing). */
  async savepointMarkers(): Promise<SavepointMarker[]> {
    const listed = (await this.store.list(this.bucket, partKey(this.prefix, SAVEPOINT_MARKER_PREFIX))).objects
      .map((o) => ({ key: o.key, name: parseSavepointMarkerName(this.prefix, o.key) }))
      .filter((o) => o.name !== undefined);
    const bodies = await mapBounded(listed, RECORD_READS_IN_FLIGHT, (o) => this.store.getObject(this.bucket, o.key));
    const out: SavepointMarker[] = [];
    for (let i = 0; i < listed.length; i++) {
      const body = bodies[i];
      if (body === undefined) continue;
      const { key, name } = listed[i]!;
      let rec: { keys?: unknown };
      try {
        rec = JSON.parse(Buffer.from(body).toString('utf8')) as typeof rec;
      } catch (e) {
        throw new WeirError('CONNECTOR', `exactly-once file sink ${this.location}: cannot read the savepoint marker ${this.describe(key)}: ${(e as Error).message}`);
      }
      if (!Array.isArray(rec.keys) || !rec.keys.every((k) => typeof k === 'string')) throw new WeirError('CONNECTOR', `exactly-once file sink ${this.location}: the savepoint marker ${this.describe(key)} holds no keys`);
      out.push({ key, subtask: name!.subtask, run: name!.run, savepointId: name!.savepointId, keys: rec.keys as string[] });
    }
    return out;
  }
}

/**
 * After commits: compaction of this subtask's small committed files, in the background (off the
 * record path and off the commit: a commit does not wait for it; the task's end does, through
 * settle(), so a finished job leaves no intent behind). Steps, each
 * crash-safe (resolveIntents): earlier intents resolved; sources chosen and read (at most
 * MAX_MERGE_BYTES); the intent PUT; the merged file under its final key (writeMerged: a
 * multipart upload completed in one request, so it exists whole or not at all, and an interrupted
 * one can be fenced); the sources deleted; the record PUT, the intent deleted.
 */
class S3CommitterSession implements CommitterSession {
  private compacting: Promise<void> | undefined;
  private compactions = 0;
  private resolved = false;
  /** The last compaction failed: its intent may still be open (settle() resolves it, or fails). */
  private failed = false;
  private readonly run = randomBytes(4).toString('hex');

  /** The open keys this committer last recorded (noteOpen), sorted and joined; undefined: none yet. */
  private openRecorded: string | undefined;

  constructor(private readonly storage: S3SinkStorage, private readonly ctx: SinkContext) {}

  /** Written when the set changes (a part opened or completed), not at every checkpoint. */
  async noteOpen(checkpointId: number, keys: readonly string[]): Promise<void> {
    const now = [...keys].sort().join('\n');
    if (now === this.openRecorded || (now === '' && this.openRecorded === undefined)) return;
    await this.storage.writeOpenRecord(this.ctx.subtaskIndex, checkpointId, keys);
    this.openRecorded = now;
  }

  afterCommit(published: number): void {
    if (this.storage.compaction.compactBelow <= 0 || this.compacting !== undefined) return;
    if (published === 0 && this.resolved) return;
    this.compacting = exclusive(this.storage.lockKey(this.ctx.subtaskIndex), () => this.compact())
      .then(() => void (this.failed = false))
      .catch((e: unknown) => {
        this.failed = true;
        this.ctx.log(`weir: exactly-once file sink ${this.storage.location}: compaction of subtask ${this.ctx.subtaskIndex}'s small files stopped (its files stay as they are; the next compaction finishes or undoes it): ${(e as Error).message}`);
      })
      .finally(() => (this.compacting = undefined));
  }

  private async compact(): Promise<void> {
    const st = this.storage;
    const { store, bucket, prefix, format } = st;
    const sub = this.ctx.subtaskIndex;
    const finished = await st.resolveIntents(this.ctx);
    this.resolved = true;
    if (finished > 0) this.ctx.log(`weir: exactly-once file sink ${st.location}: resolved ${finished} interrupted compaction(s) of subtask ${sub}`);
    const listed = await store.list(bucket, partKey(prefix, `part-${sub}-`));
    const small = smallCommittedFiles(listed.objects, prefix, sub, format.extension, st.compaction.compactBelow, st.compaction.compactMinFiles);
    const sources: string[] = [];
    const sizes: number[] = [];
    const contents: Uint8Array[] = [];
    let total = 0;
    for (const key of small) {
      if (total >= MAX_MERGE_BYTES) break;
      const bytes = await store.getObject(bucket, key);
      if (bytes === undefined || !(format.mergeable?.(bytes) ?? true)) continue;
      sources.push(key);
      sizes.push(bytes.byteLength);
      contents.push(bytes);
      total += bytes.byteLength;
    }
    if (sources.length < st.compaction.compactMinFiles) return;
    const k = this.compactions++;
    const target = partKey(prefix, `part-${sub}-${this.run}-c${k}.${format.extension}`);
    const intentKey = partKey(prefix, `${INTENT_PREFIX}${sub}-${this.run}-${k}`);
    const record: CompactionRecord = { target, sources, sizes };
    await store.putObject(bucket, intentKey, Buffer.from(JSON.stringify(record) + '\n'));
    await st.writeMerged(target, Buffer.concat(mergedFile(format, contents)));
    await st.finishCompaction(intentKey, record);
  }

  /**
   * The compaction running, if any, has ended. One that failed left its intent open (a merged
   * file beside its sources: their records twice): resolved now, or the task fails rather than
   * finish with it so.
   */
  async settle(): Promise<void> {
    await this.compacting;
    if (!this.failed) return;
    await exclusive(this.storage.lockKey(this.ctx.subtaskIndex), async () => void (await this.storage.resolveIntents(this.ctx)));
    this.failed = false;
  }

  async close(): Promise<void> {
    await this.compacting;
  }
}

/** One writer's uploads: a bounded queue, at most MAX_CONCURRENT_UPLOADS requests at once. */
class S3WriterSession implements WriterSession<FileCommittable> {
  private failed: unknown;
  private waitingBytes = 0;
  /** isAvailable() said false: the task waits for a wake(). */
  private pushingBack = false;
  private active = 0;
  /** Queued requests: called with true to run, false to drop (the session closed first). */
  private readonly queue: ((run: boolean) => void)[] = [];
  private readonly running = new Set<Promise<void>>();
  /** close() was called: nothing queued or enqueued from here on runs (the task is over). */
  private closed = false;
  /** Background cleanup still running (a fresh start's orphan aborts), awaited by close(). */
  private readonly cleanups = new Set<Promise<void>>();
  readonly partSize: number;
  /** A part file of this writer filled a whole part: the next ones start with whole-part buffers. */
  bigFiles = false;
  /**
   * Whole-part buffers whose upload succeeded, for the next parts: a job writing big files
   * reuses a few buffers instead of allocating (and collecting) one per part. A buffer comes
   * back only once its UploadPart has answered (the store has every byte; the request is over).
   */
  private readonly spare: Buffer[] = [];
  private readonly run: string[] = [];

  constructor(readonly storage: S3SinkStorage, readonly ctx: SinkContext) {
    this.partSize = storage.store.config.uploadPartSizeBytes;
  }

  openPart(name: string): OpenPart<FileCommittable> {
    // The writer's run is in the part name: part-<sub>-<run>-<n>.
    const key = partKey(this.storage.prefix, `${name}.${this.storage.extension}`);
    const run = parsePartKey(this.storage.prefix, key)?.run;
    if (run !== undefined && !this.run.includes(run)) {
      this.run.push(run);
      this.storage.liveRuns.add(run);
    }
    return new S3Part(this, key, this.storage.track(key));
  }

  /**
   * At an intermediate savepoint's barrier: its marker (the uploads it holds), written through
   * the upload queue, so whenPrepared (and the savepoint's acknowledgement) waits for it and a
   * failed PUT fails the writer like a failed upload.
   */
  noteSavepoint(savepointId: number, committables: readonly FileCommittable[]): void {
    const keys = savepointHeldKeys(committables);
    const run = keys.length > 0 ? parsePartKey(this.storage.prefix, keys[0]!)?.run : undefined;
    if (run === undefined) return;
    this.enqueue(0, () => this.storage.writeSavepointMarker(this.ctx.subtaskIndex, run, savepointId, keys));
  }

  /** Runs `fn` in the background, its failure logged (cleanup that must not fail the writer). */
  background(fn: () => Promise<unknown>): void {
    const p: Promise<void> = fn().then(
      () => {},
      (e) => this.ctx.log(`weir: exactly-once file sink ${this.storage.location}: cleanup of earlier attempts' uploads failed (they stay until the next start): ${(e as Error).message}`),
    ).finally(() => this.cleanups.delete(p));
    this.cleanups.add(p);
  }

  /**
   * Back-pressure: false from MAX_WAITING_PARTS parts waiting (queued and in flight); the task
   * then takes no input, and is woken when an upload ends below it.
   */
  isAvailable(): boolean {
    if (this.waitingBytes < MAX_WAITING_PARTS * this.partSize) return true;
    this.pushingBack = true;
    return false;
  }

  /** Queues a request carrying `bytes`; throws when far too many bytes already wait (bounded). */
  enqueue(bytes: number, fn: () => Promise<void>): void {
    this.check();
    const limit = FAIL_WAITING_PARTS * this.partSize;
    if (this.waitingBytes > 0 && this.waitingBytes + bytes > limit) {
      throw new WeirError('CONNECTOR', `exactly-once file sink ${this.storage.location}: more than ${limit} bytes wait for upload to S3 in spite of back-pressure (one batch of records larger than that?); the store is slow or unreachable`);
    }
    this.waitingBytes += bytes;
    const p = new Promise<boolean>((resolve) => this.queue.push(resolve))
      .then((run) => (run && !this.closed ? fn() : undefined))
      .then(
        () => {},
        (e) => {
          this.failed ??= e;
        },
      )
      .finally(() => {
        this.waitingBytes -= bytes;
        this.active--;
        this.running.delete(p);
        this.pump();
        if (this.pushingBack && (this.isAvailable() || this.failed !== undefined)) {
          // Room again (or a failure the task must see at its next call): wake the task.
          this.pushingBack = false;
          this.ctx.wake?.();
        }
      });
    this.running.add(p);
    this.pump();
  }

  /** A buffer of the part size (its contents are garbage). */
  partBuffer(): Buffer {
    return this.spare.pop() ?? Buffer.allocUnsafeSlow(this.partSize);
  }

  /** `buf`'s upload is over: it may hold the next part. */
  recycle(buf: Buffer): void {
    if (buf.byteLength === this.partSize && this.spare.length < MAX_SPARE_BUFFERS) this.spare.push(buf);
  }

  private pump(): void {
    while (this.active < MAX_CONCURRENT_UPLOADS && this.queue.length > 0) {
      this.active++;
      this.queue.shift()!(!this.closed);
    }
  }

  check(): void {
    if (this.failed !== undefined) throw new WeirError('CONNECTOR', `exactly-once file sink ${this.storage.location}: an upload failed: ${(this.failed as Error).message ?? String(this.failed)}`, { cause: this.failed });
  }

  whenPrepared(): Promise<void> | undefined {
    if (this.running.size === 0) return this.failed === undefined ? undefined : Promise.resolve().then(() => this.check());
    return Promise.all([...this.running]).then(() => this.check());
  }

  /**
   * The task is over (cancelled or failed; after a finish nothing waits). Requests still queued
   * are dropped: they carry parts, or a savepoint's marker, of output after the last
   * acknowledged checkpoint (an acknowledgement waits for every request queued before its
   * barrier), which a restore writes again. They went on after the job was reported cancelled
   * and raced with a restore in the same process: an UploadPart landing in an upload the restore
   * was completing from its snapshot's parts, a marker after its cleanup. Resolves once the
   * requests under way have ended; the task's cancel waits for it (bounded, task.ts).
   */
  close(): Promise<void> {
    this.closed = true;
    for (const go of this.queue.splice(0)) {
      this.active++; // as pump() would: each one's end takes it off again
      go(false);
    }
    for (const r of this.run) this.storage.liveRuns.delete(r);
    this.spare.length = 0;
    return Promise.all([...this.running, ...this.cleanups]).then(() => {});
  }
}

/** The first buffer of a part file starts this small and doubles up to the part size (a small file holds little memory). */
const FIRST_BUFFER_BYTES = 64 * 1024;
/** UTF-8 bytes one UTF-16 code unit takes at most: a string of n units fits in 3n bytes. */
const MAX_UTF8_PER_UNIT = 3;

/**
 * A part file being written: one multipart upload, created with its first part. Bytes go
 * straight into the buffer of the next part to upload (a row format encodes its records into it
 * through `out`), and a full buffer is that part's body as it is: one copy of each byte, no
 * batch strings or Buffers joined at the cut. Parts are exactly the part size (the last one
 * shorter), as the SDK's Upload cuts them.
 */
class S3Part implements OpenPart<FileCommittable>, ByteWriter {
  size = 0;
  /** The bytes of the next part: buf[0, filled). */
  private buf: Buffer | undefined;
  private filled = 0;
  private partCount = 0;
  private creating: Promise<string> | undefined;
  readonly out: ByteWriter = this;

  constructor(private readonly session: S3WriterSession, private readonly key: string, private readonly known: KnownUpload) {}

  /** The buffer to write into, with room for at least one byte (a full one was cut right away). */
  private room(): Buffer {
    if (this.buf !== undefined) return this.buf;
    const partSize = this.session.partSize;
    // A file already past its first part (or a writer whose files grow that large) takes whole parts at once.
    this.buf = this.partCount > 0 || this.session.bigFiles ? this.session.partBuffer() : Buffer.allocUnsafeSlow(Math.min(FIRST_BUFFER_BYTES, partSize));
    return this.buf;
  }

  /** After writing `n` bytes at `filled`: a full part goes up. */
  private advance(n: number): void {
    this.filled += n;
    this.size += n;
    if (this.filled === this.session.partSize) this.cut();
  }

  /** Makes room for `n` more bytes by growing the first buffer (doubling, up to the part size); false when a whole part would not hold them. */
  private grow(n: number): boolean {
    const buf = this.room();
    const partSize = this.session.partSize;
    if (this.filled + n > partSize) return false;
    if (this.filled + n <= buf.byteLength) return true;
    let cap = buf.byteLength;
    while (cap < this.filled + n) cap *= 2;
    const bigger = cap >= partSize ? this.session.partBuffer() : Buffer.allocUnsafeSlow(cap);
    buf.copy(bigger, 0, 0, this.filled);
    this.buf = bigger;
    return true;
  }

  write(bytes: Uint8Array): void {
    let off = 0;
    while (off < bytes.byteLength) {
      const partSize = this.session.partSize;
      const n = Math.min(bytes.byteLength - off, partSize - this.filled);
      this.grow(n);
      this.buf!.set(off === 0 && n === bytes.byteLength ? bytes : bytes.subarray(off, off + n), this.filled);
      off += n;
      this.advance(n);
    }
  }

  writeString(s: string): void {
    const buf = this.room();
    if (this.filled + s.length * MAX_UTF8_PER_UNIT <= buf.byteLength) {
      this.advance(buf.write(s, this.filled));
      return;
    }
    const n = Buffer.byteLength(s);
    if (this.grow(n)) this.advance(this.buf!.write(s, this.filled));
    else this.write(Buffer.from(s)); // across the cut
  }

  writeByte(b: number): void {
    const buf = this.room();
    if (this.filled === buf.byteLength) this.grow(1);
    this.buf![this.filled] = b;
    this.advance(1);
  }

  append(bytes: Buffer): void {
    this.write(bytes);
  }

  /** Sends the buffered bytes as the next part. */
  private cut(): void {
    const body = this.filled === this.buf!.byteLength ? this.buf! : this.buf!.subarray(0, this.filled);
    this.buf = undefined;
    this.filled = 0;
    const n = ++this.partCount;
    if (body.byteLength === this.session.partSize) this.session.bigFiles = true;
    const session = this.session;
    const { store, bucket } = session.storage;
    if (this.creating === undefined) {
      this.creating = store.createMultipartUpload(bucket, this.key).then((id) => (this.known.uploadId = id));
      // Awaited only by the queued upload, which may start much later: a failure meanwhile must
      // not be an unhandled rejection (it ended the process); the upload reports it to the session.
      this.creating.catch(() => {});
    }
    const creating = this.creating;
    session.enqueue(body.byteLength, async () => {
      const id = await creating;
      const part = await store.uploadPart(bucket, this.key, id, n, body);
      this.known.etags[n - 1] = part.etag;
      session.recycle(body);
    });
  }

  close(): boolean {
    if (this.size === 0) return false;
    if (this.filled > 0) this.cut();
    return true;
  }

  seal(checkpointId: number): FileCommittable {
    return { pending: this.known.uploadId ?? '', final: this.key, s3: { kind: 'complete', parts: this.partCount, subtask: this.session.ctx.subtaskIndex, checkpointId, bytes: this.size } };
  }

  snapshot(checkpointId: number, closing?: Buffer): FileCommittable {
    const buffered = this.buf === undefined ? [] : [this.buf.subarray(0, this.filled)];
    const rest = closing !== undefined && closing.byteLength > 0 ? [...buffered, closing] : buffered;
    const one = rest.length === 1 ? rest[0]! : undefined;
    const tail = rest.length === 0 ? '' : one !== undefined ? Buffer.from(one.buffer, one.byteOffset, one.byteLength).toString('base64') : Buffer.concat(rest).toString('base64');
    const bytes = this.size + (closing?.byteLength ?? 0);
    return { pending: this.known.uploadId ?? '', final: this.key, s3: { kind: 'open', parts: this.partCount, tail, subtask: this.session.ctx.subtaskIndex, checkpointId, bytes } };
  }
}
