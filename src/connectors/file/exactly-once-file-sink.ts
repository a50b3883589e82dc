/**
 * Exactly-once file sink (JSON lines, CSV or Parquet: formats.ts), to a local directory or an
 * S3 prefix (`s3://bucket/prefix`).
 * Readers only ever see committed files; what a checkpoint has not committed is hidden (local:
 * dot files, local/local-storage.ts) or not an object yet (S3: an open multipart upload,
 * s3/s3-storage.ts).
 *
 * This file holds what both storages share (sink-storage.ts is the seam):
 * - rolling (rolling.ts): by size, age and inactivity; local parts also at every checkpoint
 *   (a local part is renamed to pending at the barrier), S3 parts stay open across checkpoints,
 *   so the number of files is set by the rolling policy, not by the checkpoint interval;
 * - the writer: encodes records in the sink's format (a bulk format such as Parquet flushes its
 *   row group at every barrier), rolls, and at the barrier hands over the committables of closed
 *   parts (and, on S3, the state of the part still open, with the bytes that would close it);
 * - records that do not fit the format (a Parquet record missing a column): the writer fails
 *   with a one-line reason naming the column, or dead-letters them (malformed: 'dead-letter');
 * - the commit protocol: the commit record (the last checkpoint a subtask committed, read by
 *   lastCommittedCheckpoint before every attempt) is written first, then the files are made
 *   visible, each idempotently (a restore commits a checkpoint's committables again), so the
 *   record may run ahead of the visible output, never behind it;
 * - the lease on the output (local directories; an object store has none).
 */
import { randomBytes } from 'node:crypto';
import { WeirError } from '../../core/errors.ts';
import { toMillis, type Duration } from '../../core/duration.ts';
import type { PrepareCommitOptions, SinkCommitter, SinkContext, SinkWriter, TwoPhaseCommitSink } from '../../core/sink.ts';
import type { MalformedRecord } from '../../core/source.ts';
import { isS3Reference, type S3Settings } from '../../checkpoint/s3/settings.ts';
import { toFileFormat, type FileFormat, type PartEncoder, type RejectRecord } from './formats.ts';
import { LocalDirectoryStorage } from './local/local-storage.ts';
import { rollAfterWrite, rollAtBarrier, rollBeforeWrite, type RollingPolicy } from './rolling.ts';
import { S3SinkStorage } from './s3/s3-storage.ts';
import { andThen, type CommitterSession, type FileSinkStorage, type OpenPart, type WriterSession } from './sink-storage.ts';
import { quoteRaw } from '../../core/redact.ts';

export interface ExactlyOnceFileSinkOptions {
  /** Roll a part when it reaches this many bytes (default 128 MiB). */
  readonly maxPartSize?: number;
  /** Roll a part when it has been open this long (default 60 s). */
  readonly rolloverInterval?: Duration;
  /** Roll a part nothing was written to for this long (default 60 s). */
  readonly inactivityInterval?: Duration;
  /** Compaction: merge committed files smaller than this (local directories: default 4 MiB; S3: off unless given); 0 turns compaction off. */
  readonly compactBelow?: number;
  /** Compaction: start once this many small committed files of a subtask exist (default 8). */
  readonly compactMinFiles?: number;
  /**
   * The files' format: jsonLines() (the default), csv({columns}), parquet({columns}) (formats.ts,
   * parquet/parquet-format.ts), or a function formatting a record as a line (JSON lines).
   */
  readonly format?: FileFormat | ((value: unknown) => string);
  /**
   * A record that does not fit the format (Parquet: a column missing or of the wrong type):
   * 'fail' (default) fails the job with a one-line reason naming the column; 'dead-letter' leaves
   * it out, to the job's dead letters as a source's malformed records: counted, and written to
   * --dead-letter-dir when given, else to <dir>.dead-letters/ beside the job's first local file
   * output, else (S3 outputs only) the first ones to the log.
   */
  readonly malformed?: 'fail' | 'dead-letter';
  /** S3 paths: settings for this sink; by default the job's (--s3-endpoint, s3.* options) and the AWS SDK's own. */
  readonly s3?: S3Settings;
}

/**
 * What a checkpoint hands from the writer to the committer. Local: a pending file and its
 * final name. S3: `final` is the object key, `pending` the multipart upload id ('' when the
 * upload's creation had not answered by the barrier), and `s3` the rest.
 */
export interface FileCommittable {
  readonly pending: string;
  readonly final: string;
  /** A local output's directory, absolute, as it was when the file was written (absent in older checkpoints). */
  readonly dir?: string;
  readonly s3?: S3PartState;
}

/** An S3 part file at a barrier: complete (closed, every byte uploaded) or open (its tail travels in the checkpoint). */
export interface S3PartState {
  readonly kind: 'complete' | 'open';
  /** Parts uploaded (numbered 1..parts). */
  readonly parts: number;
  /** Open parts: the bytes not uploaded yet, base64. */
  readonly tail?: string;
  readonly subtask: number;
  readonly checkpointId: number;
  /**
   * The file's size once completed from this state (absent in older checkpoints): a restore
   * finding the object shorter knows an earlier state of the same upload was completed since.
   */
  readonly bytes?: number;
}

export class ExactlyOnceFileSink<T> implements TwoPhaseCommitSink<T, FileCommittable> {
  readonly name: string;
  readonly maxPartSize: number;
  readonly rolloverMs: number;
  readonly inactivityMs: number;
  readonly compactBelow: number;
  readonly compactMinFiles: number;
  readonly format: FileFormat;
  readonly malformed: 'fail' | 'dead-letter';
  readonly storage: FileSinkStorage<FileCommittable>;
  readonly policy: RollingPolicy;

  /** The job's dead letters go beside a local output, in <dir>.dead-letters (S3: in the job's log). */
  get outputDir(): string | undefined {
    return isS3Reference(this.dir) ? undefined : this.dir;
  }

  constructor(readonly dir: string, options: ExactlyOnceFileSinkOptions = {}) {
    if (typeof dir !== 'string' || dir === '') throw new TypeError('the exactly-once file sink needs a directory path');
    this.name = `exactly-once files ${dir}`;
    this.maxPartSize = options.maxPartSize ?? 128 * 2 ** 20;
    if (!(Number.isInteger(this.maxPartSize) && this.maxPartSize > 0)) throw new RangeError(`maxPartSize must be a positive integer, got ${String(options.maxPartSize)}`);
    this.rolloverMs = toMillis(options.rolloverInterval ?? 60_000, 'rolloverInterval');
    this.inactivityMs = toMillis(options.inactivityInterval ?? 60_000, 'inactivityInterval');
    this.compactBelow = options.compactBelow ?? 4 * 2 ** 20;
    if (!(Number.isInteger(this.compactBelow) && this.compactBelow >= 0)) throw new RangeError(`compactBelow must be a non-negative integer, got ${String(options.compactBelow)}`);
    this.compactMinFiles = options.compactMinFiles ?? 8;
    if (!(Number.isInteger(this.compactMinFiles) && this.compactMinFiles >= 2)) throw new RangeError(`compactMinFiles must be an integer >= 2, got ${String(options.compactMinFiles)}`);
    this.format = toFileFormat(options.format);
    this.malformed = options.malformed ?? 'fail';
    if (this.malformed !== 'fail' && this.malformed !== 'dead-letter') throw new RangeError(`malformed must be "fail" or "dead-letter", got ${JSON.stringify(options.malformed)}`);
    this.storage = isS3Reference(dir)
      ? new S3SinkStorage(dir, options.s3, this.format, { compactBelow: options.compactBelow ?? 0, compactMinFiles: this.compactMinFiles })
      : new LocalDirectoryStorage(dir, { compactBelow: this.compactBelow, compactMinFiles: this.compactMinFiles }, this.format);
    this.policy = { maxPartSize: this.maxPartSize, rolloverMs: this.rolloverMs, inactivityMs: this.inactivityMs, onCheckpoint: !this.storage.keepsPartsOpen };
  }

  createWriter(ctx: SinkContext): SinkWriter<T, FileCommittable> {
    return new FileWriter<T>(this, this.taskStorage(ctx).openWriter(ctx), ctx);
  }

  createCommitter(ctx: SinkContext): SinkCommitter<FileCommittable> {
    const storage = this.taskStorage(ctx);
    return new FileCommitter(storage, storage.openCommitter(ctx), ctx);
  }

  private taskStorage(ctx: SinkContext): FileSinkStorage<FileCommittable> {
    return this.storage.forTask?.(ctx) ?? this.storage;
  }

  /** Only one job writes a local output directory at a time (core/dir-lease.ts). */
  lease(owner: string): { release(): void } {
    return this.storage.lease(owner);
  }

  /** The highest checkpoint whose output a committer of this output committed (or began to). */
  lastCommittedCheckpoint(): number | undefined | Promise<number | undefined> {
    return this.storage.readCommitRecords();
  }

  /** Whether a fresh start would destroy open parts a completed checkpoint holds (S3 only; see the storage's). */
  freshStartRefusal(): Promise<string | undefined> | undefined {
    return this.storage.freshStartRefusal?.().then((why) => (why === undefined ? undefined : `sink "${this.name}": ${why}`));
  }

  /** After a restore: clean up what the interrupted attempt left (see the storage's recover). */
  recover(ctx: SinkContext, restoredId: number, committables: readonly FileCommittable[] = [], referenced: readonly FileCommittable[] = []): void | Promise<void> {
    return this.taskStorage(ctx).recover(ctx, restoredId, committables, referenced);
  }
}

/** A record as dead-letter text: JSON (bigints as decimal text), else String(). */
function rawOf(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)) ?? String(v);
  } catch {
    return String(v);
  }
}

class FileWriter<T> implements SinkWriter<T, FileCommittable> {
  private readonly run = randomBytes(4).toString('hex');
  private counter = 0;
  private current: OpenPart<FileCommittable> | undefined;
  private encoder: PartEncoder | undefined;
  private readonly reject: RejectRecord;
  /** Records of the current write that did not fit the format (malformed: 'dead-letter'). */
  private letters: MalformedRecord[] = [];
  /** Dead letters shown in the log (a context without the job's dead letters: one made by hand). */
  private logged = 0;
  private openedAt = 0;
  private lastWriteAt = 0;
  /** Closed parts waiting for the next barrier (rolled by size, age or inactivity). */
  private closed: OpenPart<FileCommittable>[] = [];

  constructor(private readonly sink: ExactlyOnceFileSink<T>, private readonly session: WriterSession<FileCommittable>, private readonly ctx: SinkContext) {
    this.reject = sink.malformed === 'fail'
      ? (_v, error) => {
        throw new WeirError('MALFORMED_RECORD', `exactly-once file sink ${sink.dir} (${sink.format.name}): a record does not fit the format: ${error}; set malformed: 'dead-letter' on the sink to leave such records out`);
      }
      : (v, error) => this.letters.push({ source: this.sink.name, location: `${this.sink.name} (subtask ${this.ctx.subtaskIndex + 1})`, error, raw: rawOf(v) });
  }

  /** A write's dead letters, handed to the job's as one batch (counted, kept in its dead-letter directory or logged). */
  private flushLetters(): void {
    const letters = this.letters;
    this.letters = [];
    if (letters.length === 0) return;
    if (this.ctx.deadLetters !== undefined) {
      this.ctx.deadLetters(letters);
      return;
    }
    for (const l of letters) {
      if (this.logged < 10) this.ctx.log(`weir: dead letter at ${l.location}: ${l.error} (raw: ${quoteRaw(l.raw)})`);
      else if (this.logged === 10) this.ctx.log(`weir: more dead letters at ${l.location} are left out but not shown`);
      this.logged++;
    }
  }

  private progress() {
    // A bulk format's buffered rows count toward the part's size (maxPartSize), flushed or not.
    return { size: this.current!.size + (this.encoder?.bufferedBytes ?? 0), openedAt: this.openedAt, lastWriteAt: this.lastWriteAt };
  }

  /** Why a write failed part-way (encodeInto threw): no write or barrier succeeds after it. */
  private broken: unknown;

  private checkBroken(): void {
    if (this.broken !== undefined) throw new WeirError('CONNECTOR', `exactly-once file sink ${this.sink.dir}: an earlier write failed part-way (${(this.broken as Error)?.message ?? String(this.broken)}); the writer cannot go on`, { cause: this.broken });
  }

  write(values: readonly T[]): void {
    this.checkBroken();
    this.session.check?.();
    if (values.length === 0) return;
    const now = this.ctx.now();
    if (this.current !== undefined && (rollBeforeWrite(this.progress(), now, this.sink.policy) !== undefined || this.encoder!.isFull?.() === true)) this.roll();
    if (this.current === undefined) {
      this.current = this.session.openPart(`part-${this.ctx.subtaskIndex}-${this.run}-${this.counter++}`);
      this.encoder = this.sink.format.open(this.sink.name);
      this.openedAt = now;
    }
    const encoder = this.encoder!;
    const out = this.current.out;
    if (out !== undefined && encoder.encodeInto !== undefined) {
      // Straight into the part's buffer. A throw (a format function failing, a record rejected
      // with malformed: 'fail') may leave part of the batch written: the writer is unusable
      // from then on (its task fails; nothing after the last checkpoint is ever committed).
      try {
        encoder.encodeInto(values, this.reject, out);
      } catch (e) {
        this.broken = e;
        throw e;
      }
    } else {
      const bytes = encoder.encode(values, this.reject);
      if (bytes !== undefined && bytes.byteLength > 0) this.current.append(bytes as Buffer);
    }
    if (this.letters.length > 0) this.flushLetters();
    this.lastWriteAt = now;
    if (rollAfterWrite(this.progress(), this.sink.policy) !== undefined) this.roll();
  }

  /** Hands the encoder's buffered rows (a bulk format's row group) to the part. */
  private flush(): void {
    const bytes = this.encoder?.flush();
    if (bytes !== undefined && bytes.byteLength > 0) this.current!.append(bytes as Buffer);
  }

  /** Closes the current part (its format's closing bytes written) and queues it for the next barrier. */
  private roll(): void {
    const part = this.current;
    if (part === undefined) return;
    this.flush();
    if (part.size > 0) {
      const closing = this.encoder!.closing();
      if (closing !== undefined) part.append(closing as Buffer);
    }
    this.current = undefined;
    this.encoder = undefined;
    if (part.close()) this.closed.push(part);
  }

  prepareCommit(checkpointId: number, options?: PrepareCommitOptions): FileCommittable[] {
    this.checkBroken();
    this.session.check?.();
    // A stop-with-savepoint rolls the open part (S3: its upload completes at the stop's commit),
    // as a local directory's part rolls at every barrier: left open, the stop's commit made
    // nothing visible and its records lived only in the upload and the savepoint's tail.
    if (this.current !== undefined && (options?.stop === true || rollAtBarrier(this.progress(), this.ctx.now(), this.sink.policy) !== undefined || this.encoder!.isFull?.() === true)) this.roll();
    const out: FileCommittable[] = [];
    for (const part of this.closed) out.push(part.seal(checkpointId, options?.savepoint === true));
    this.closed = [];
    if (this.current !== undefined) {
      // A bulk format's rows become a row group now: what the checkpoint records is a valid prefix, closed by closing().
      this.flush();
      if (this.current.size > 0 && this.current.snapshot !== undefined) out.push(this.current.snapshot(checkpointId, this.encoder!.closing() as Buffer | undefined));
    }
    if (options?.savepoint === true && options.stop !== true) this.session.noteSavepoint?.(checkpointId, out);
    return out;
  }

  whenPrepared(checkpointId: number): Promise<void> | undefined {
    return this.session.whenPrepared?.(checkpointId);
  }

  /** The task takes no input while the storage's uploads are behind (S3: parts waiting). */
  isAvailable(): boolean {
    return this.session.isAvailable?.() ?? true;
  }

  /** End of input: the open part is closed, so the final checkpoint commits it. */
  finish(): void {
    this.roll();
  }

  close(): void | Promise<void> {
    return this.session.close();
  }
}

/**
 * The commit protocol: the record first, then every file made visible (idempotently), then
 * what the storage does after (local: fsync of the directory, compaction).
 */
class FileCommitter implements SinkCommitter<FileCommittable> {
  constructor(private readonly storage: FileSinkStorage<FileCommittable>, private readonly session: CommitterSession, private readonly ctx: SinkContext) {}

  commit(list: readonly FileCommittable[], checkpointId = 0): void | Promise<void> {
    const visible = list.filter((c) => this.storage.publishes(c));
    // Recorded before the files appear: the record may run one checkpoint ahead of the visible output, never behind.
    const recorded = visible.length > 0 ? this.storage.writeCommitRecord(this.ctx.subtaskIndex, checkpointId) : undefined;
    // The parts the completed checkpoint holds open (S3): a fresh start must not abort them.
    // After the record: a marker that shrinks (a part rolled) no longer guards that part, and
    // between its removal and a first record a fresh start would have aborted the upload.
    const noted = andThen(recorded, () => this.session.noteOpen?.(checkpointId, [...new Set(list.filter((c) => !this.storage.publishes(c)).map((c) => c.final))]));
    let chain = noted;
    for (const c of visible) chain = andThen(chain, () => this.storage.publish(c, this.ctx));
    return andThen(chain, () => this.session.afterCommit(visible.length));
  }

  settle(): Promise<void> {
    return this.session.settle?.() ?? Promise.resolve();
  }

  close(): void | Promise<void> {
    return this.session.close();
  }
}
