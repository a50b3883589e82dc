/**
 * The exactly-once file sink's storage in a local directory. Readers only ever see committed
 * files: everything else has a name starting with "." (hidden), as tools reading a directory
 * conventionally skip.
 *
 *   .part-<sub>-<run>-<n>.inprogress        being written
 *   .part-<sub>-<run>-<n>.chk-<id>.pending  closed at the barrier of checkpoint <id>
 *   .part-<sub>-<run>-<n>.sp-<id>.pending   closed at the barrier of savepoint <id> (one that does not stop the job)
 *   part-<sub>-<run>-<n>.<ext>              committed when checkpoint <id> completed (ext: the format's, jsonl, csv, parquet)
 *   part-<sub>-<run>-c<k>.<ext>             compaction of small committed files
 *   .weir-committed-<sub>                   the last checkpoint the subtask committed (commit-record.ts)
 *   .weir-lease                             the running job that writes here (core/dir-lease.ts)
 *
 * A part cannot stay open across a checkpoint here (it is renamed to pending at the barrier),
 * so parts roll at every checkpoint. Commit is an atomic rename and idempotent: after a
 * restore, a committable whose pending file is gone was already committed (and possibly
 * compacted since).
 * Compaction runs in the background after commits: when enough small committed files of a
 * subtask accumulate, they are merged into one (row formats: concatenated, a CSV header kept
 * once; Parquet: row groups copied under one footer, parquet/parquet-format.ts; files of another
 * header or schema are left alone), through an intent file that makes the
 * swap crash-safe (after a crash it is completed or undone, never half done). Between the
 * rename of the merged file and the deletion of its sources a reader listing the directory
 * could see those records twice for a moment; the final state never has duplicates.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { acquireDirLease } from '../../../core/dir-lease.ts';
import { fsyncDirectory } from '../../../core/directory.ts';
import type { SinkContext } from '../../../core/sink.ts';
import { readCommitRecords, writeCommitRecord } from '../commit-record.ts';
import type { FileCommittable } from '../exactly-once-file-sink.ts';
import { jsonLines, MAX_MERGE_BYTES, mergedFile, type FileFormat } from '../formats.ts';
import { ownsSubtask, type CommitterSession, type FileSinkStorage, type OpenPart, type WriterSession } from '../sink-storage.ts';

const PENDING_RE = /^\.part-(\d+)-([0-9a-f]+)-(\d+)\.(?:chk|sp)-(\d+)\.pending$/;
const SAVEPOINT_PENDING_RE = /\.sp-\d+\.pending$/;
const INPROGRESS_RE = /^\.part-(\d+)-([0-9a-f]+)-(\d+)\.inprogress$/;
const COMMITTED_RE = /^part-(\d+)-([0-9a-f]+)-(c?\d+)\.([a-z0-9]+)$/;
const INTENT_RE = /^\.compact-(\d+)-([0-9a-f]+)-(\d+)\.intent$/;
const COMPACT_TMP_RE = /^\.compact-(\d+)-([0-9a-f]+)-(\d+)\.tmp$/;

export interface CompactionSettings {
  readonly compactBelow: number;
  readonly compactMinFiles: number;
}

export class LocalDirectoryStorage implements FileSinkStorage<FileCommittable> {
  readonly keepsPartsOpen = false;

  constructor(readonly location: string, private readonly compaction: CompactionSettings, private readonly format: FileFormat = jsonLines()) {}

  private get dir(): string {
    return this.location;
  }

  openWriter(ctx: SinkContext): WriterSession<FileCommittable> {
    mkdirSync(this.dir, { recursive: true });
    // A start with no checkpoint to restore gets no recover() call, yet what earlier runs left is
    // garbage all the same: in-progress parts, and pending files of checkpoints that never
    // completed. Earlier runs include other processes (a SIGKILLed run resumed with `--from
    // latest-or-empty` before its first checkpoint completed starts fresh as attempt 0), so this
    // does not wait for attemptNumber > 0: left alone such files stayed behind for good, as a later
    // restore from a checkpoint with a higher id keeps pending files with lower ids. Safe because
    // a fresh start proceeds only into a directory without committed output (the commit records;
    // cluster/committed-output.ts refuses it otherwise, unless the user gives up on the earlier
    // run with --allow-duplicate-output) and under the directory's lease: no checkpoint of any
    // run has committed here, and nobody else writes here now. The S3 storage aborts an earlier
    // run's uploads on the same grounds, with the same caveat (docs/checkpointing.md): a
    // retained checkpoint of an earlier run that completed and was never committed loses its
    // pending files to a fresh start, so such a checkpoint is to be restored, not started over.
    if (ctx.restoredCheckpointId === undefined) this.deleteEarlierRunsFiles(ctx);
    const dir = this.dir;
    const ext = this.format.extension;
    const parts: LocalPart[] = [];
    /** Parts renamed to .pending since the last checkpoint's whenPrepared. */
    const sealed = { count: 0 };
    return {
      openPart(name: string): OpenPart<FileCommittable> {
        const p = new LocalPart(dir, name, ext, sealed);
        parts.push(p);
        return p;
      },
      // A part's bytes are fsynced when it closes, but its rename to .pending at the barrier is
      // durable only once the directory is: after a power failure the file could come back
      // under its .inprogress name, which recovery deletes, while the checkpoint (acknowledged
      // meanwhile) names the pending file: its records lost. Off the record path, before the ack.
      whenPrepared(): Promise<void> | undefined {
        if (sealed.count === 0) return undefined;
        sealed.count = 0;
        return fsyncDirectory(dir);
      },
      close(): void {
        for (const p of parts) p.release();
        parts.length = 0;
      },
    };
  }

  /** A fresh start: deletes the in-progress parts and pending files of the subtasks `ctx` owns, with one log line. */
  private deleteEarlierRunsFiles(ctx: SinkContext): void {
    const deleted: string[] = [];
    for (const name of readdirSync(this.dir)) {
      const m = INPROGRESS_RE.exec(name) ?? PENDING_RE.exec(name);
      if (!m || !ownsSubtask(ctx, Number(m[1]))) continue;
      rmSync(join(this.dir, name), { force: true });
      deleted.push(name);
    }
    if (deleted.length > 0) {
      ctx.log(`weir: exactly-once file sink ${this.dir}: a fresh start deleted ${deleted.length} uncommitted file(s) earlier runs left (no checkpoint completed for them): ${shortList(deleted.sort())}`);
    }
  }

  openCommitter(ctx: SinkContext): CommitterSession {
    return new LocalCommitterSession(this.dir, this.compaction, ctx, this.format);
  }

  publishes(): boolean {
    return true;
  }

  publish(c: FileCommittable, ctx?: SinkContext): void {
    // Where the file was written: a restore under another output path committed nothing of the
    // restored checkpoint before (its pending files looked for in the new directory, not found,
    // their records left hidden in the old one). They are made visible where they are.
    const dir = c.dir ?? this.dir;
    const from = join(dir, c.pending);
    if (!existsSync(from)) return; // committed before (by the attempt that took the checkpoint), maybe compacted since
    renameSync(from, join(dir, c.final));
    if (resolve(dir) !== resolve(this.dir)) ctx?.log(`weir: exactly-once file sink ${this.dir}: ${c.final} of the restored checkpoint was written to ${dir} (the output path changed since): committed there`);
  }

  writeCommitRecord(subtask: number, checkpointId: number): void {
    writeCommitRecord(this.dir, subtask, checkpointId);
  }

  readCommitRecords(): number | undefined {
    return readCommitRecords(this.dir);
  }

  lease(owner: string): { release(): void } {
    return acquireDirLease(this.dir, 'output directory', owner);
  }

  /**
   * After a restore from checkpoint `restoredId`: delete what no completed checkpoint refers to
   * (this subtask's in-progress files, and pending files of checkpoints after the restored one:
   * they never completed), and finish or undo interrupted compactions. Subtask 0 also cleans up
   * after subtask indices that no longer exist (the job was rescaled down). Returns a promise
   * only when it has to wait for a compaction still running in this process.
   *
   * A pending file of a savepoint after the restored checkpoint (one that did not stop the job)
   * is kept, with one log line: that savepoint completed, and a restore from it commits the file
   * (deleted, the restore found the file gone, took it as committed, and lost its records without
   * a word). Nothing else will commit it; it is left for the user to delete otherwise.
   *
   * A pending file of a checkpoint at or below the restored one that the restored checkpoint
   * does not refer to (`referenced`: its committables over all subtasks) is output a completed
   * checkpoint promised and nobody will commit: it is reported in one log line and left where it
   * is, for the user to inspect (deleting it would hide the loss; committing it could duplicate).
   */
  recover(ctx: SinkContext, restoredId: number, committables: readonly FileCommittable[], referenced: readonly FileCommittable[]): void | Promise<void> {
    const dir = this.dir;
    reportMissingPending(ctx, dir, restoredId, committables);
    if (!existsSync(dir)) return;
    const mine = (sub: number) => ownsSubtask(ctx, sub);
    const known = new Set(referenced.map((c) => c.pending));
    const unreferenced: string[] = [];
    const kept: string[] = [];
    // Files of the interrupted attempt's writer: deleted now, before this attempt's writer starts.
    for (const name of readdirSync(dir)) {
      let m = INPROGRESS_RE.exec(name);
      if (m && mine(Number(m[1]))) {
        rmSync(join(dir, name), { force: true });
        continue;
      }
      m = PENDING_RE.exec(name);
      if (!m || !mine(Number(m[1]))) continue;
      if (Number(m[4]) <= restoredId) {
        if (!known.has(name)) unreferenced.push(name);
      } else if (SAVEPOINT_PENDING_RE.test(name)) {
        kept.push(name);
      } else {
        rmSync(join(dir, name), { force: true });
      }
    }
    if (unreferenced.length > 0) ctx.log(unreferencedLine(dir, restoredId, unreferenced.sort()));
    if (kept.length > 0) ctx.log(keptSavepointLine(dir, restoredId, kept.sort()));
    // Compactions: a compaction of the failed attempt may still be running in this process (a
    // restart in the same thread, workers: 1: its async I/O goes on after the task is cancelled).
    // Its temp file is not garbage yet, so resolve compaction leftovers only once it has ended,
    // and before this attempt's committer compacts (it queues behind this on the same lock).
    const running = runningCompactions(dir, mine);
    if (running.length === 0) {
      resolveCompactionsSync(dir, mine);
      return;
    }
    return exclusive(compactionKey(dir, ctx.subtaskIndex), async () => {
      await Promise.all(running);
      resolveCompactionsSync(dir, mine);
    });
  }
}

/**
 * A restored committable whose pending file is gone was committed by the attempt that took the
 * checkpoint (publish() then does nothing), which wrote the commit record first: a pending file
 * gone with no commit record in its directory means the directory was removed, emptied or replaced
 * while the job was down. Its records, and the files committed before, are not in the output, and
 * nothing else would say so: one warning line per subtask, naming the directory and the checkpoint.
 */
function reportMissingPending(ctx: SinkContext, home: string, restoredId: number, committables: readonly FileCommittable[]): void {
  const gone = new Map<string, string[]>();
  const records = new Map<string, number | undefined>();
  for (const c of committables) {
    const m = PENDING_RE.exec(c.pending);
    if (m === null) continue;
    const dir = c.dir ?? home;
    if (existsSync(join(dir, c.pending))) continue;
    if (!records.has(dir)) {
      let record: number | undefined;
      try {
        record = readCommitRecords(dir);
      } catch {
        record = Number.MAX_SAFE_INTEGER; // damaged: the start's check reports it; no guess here
      }
      records.set(dir, record);
    }
    // Committed before: the commit wrote a record first (its id is not compared: a committer
    // called without one records 0).
    if (records.get(dir) !== undefined) continue;
    gone.set(dir, [...(gone.get(dir) ?? []), c.pending]);
  }
  for (const [dir, names] of gone) {
    const what = existsSync(dir)
      ? `${names.length} pending file(s) of the restored checkpoint ${restoredId} are missing from the output directory, which holds no commit record (.weir-committed-*) either: it was emptied or replaced while the job was down?`
      : `the output directory is missing at the restore of checkpoint ${restoredId} (removed while the job was down?): ${names.length} pending file(s) of the checkpoint are gone with it, and the files committed before it`;
    ctx.log(`weir: warning: exactly-once file sink ${dir}: ${what}; their records are not in the output, which is partial from here on: ${shortList([...names].sort())}`);
  }
}

/** A part being written: `.part-...inprogress`, renamed to `.part-...chk-<id>.pending` at the barrier. */
class LocalPart implements OpenPart<FileCommittable> {
  private fd: number;
  size = 0;

  constructor(private readonly dir: string, private readonly name: string, private readonly ext: string, private readonly sealed: { count: number }) {
    this.fd = openSync(join(dir, `.${name}.inprogress`), 'wx');
  }

  append(buf: Buffer): void {
    let off = 0;
    while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
    this.size += buf.length;
  }

  close(): boolean {
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = -1;
    if (this.size === 0) {
      rmSync(join(this.dir, `.${this.name}.inprogress`), { force: true });
      return false;
    }
    return true;
  }

  seal(checkpointId: number, savepoint = false): FileCommittable {
    // A savepoint's pending file is told apart by its name: a restore from an older checkpoint keeps it (recover()).
    const pending = `.${this.name}.${savepoint ? 'sp' : 'chk'}-${checkpointId}.pending`;
    renameSync(join(this.dir, `.${this.name}.inprogress`), join(this.dir, pending));
    this.sealed.count++;
    return { pending, final: `${this.name}.${this.ext}`, dir: resolve(this.dir) };
  }

  /** The writer is closed (the attempt ends): the file stays for recovery to delete. */
  release(): void {
    if (this.fd >= 0) {
      closeSync(this.fd);
      this.fd = -1;
    }
  }
}

/** The one log line for pending files nobody will commit (at most a few names, then a count). */
/** At most three names, then a count: a log line stays one line however many files there are. */
function shortList(names: readonly string[]): string {
  return names.slice(0, 3).join(', ') + (names.length > 3 ? `, and ${names.length - 3} more` : '');
}

function keptSavepointLine(dir: string, restoredId: number, names: readonly string[]): string {
  return `weir: exactly-once file sink ${dir}: kept ${names.length} pending file(s) of savepoints taken after checkpoint ${restoredId} (restored): a restore from such a savepoint commits them, nothing else will; delete them if it will not be restored: ${shortList(names)}`;
}

function unreferencedLine(dir: string, restoredId: number, names: readonly string[]): string {
  return `weir: exactly-once file sink ${dir}: ${names.length} pending file(s) of checkpoints up to ${restoredId} (restored) are in no retained checkpoint and will never be committed; their output was lost or they belong to another run: ${shortList(names)} (left in place)`;
}

/**
 * Compactions in flight in this process, by directory and subtask. Two committers of one
 * subtask can be alive at once: after a restart in the same thread the failed attempt's
 * committer may still be compacting while the new one commits. Without taking turns both
 * would merge the same small files (every record of them twice), and recover() could delete a
 * temp file still being written. Compactions and recovery of a subtask take turns here.
 */
const compactionLocks = new Map<string, Promise<void>>();

function compactionKey(dir: string, sub: number): string {
  return `${resolve(dir)}\u0000${sub}`;
}

/** Runs fn after everything queued on `key` before it (failures included) has ended. */
function exclusive(key: string, fn: () => Promise<void>): Promise<void> {
  const run = (compactionLocks.get(key) ?? Promise.resolve()).then(fn);
  const tail = run.catch(() => {});
  compactionLocks.set(key, tail);
  void tail.then(() => {
    if (compactionLocks.get(key) === tail) compactionLocks.delete(key);
  });
  return run;
}

function runningCompactions(dir: string, mine: (sub: number) => boolean): Promise<void>[] {
  const prefix = `${resolve(dir)}\u0000`;
  const out: Promise<void>[] = [];
  for (const [key, p] of compactionLocks) if (key.startsWith(prefix) && mine(Number(key.slice(prefix.length)))) out.push(p);
  return out;
}

/** Intents first (they decide the fate of their temp files), then temp files without an intent. */
function resolveCompactionsSync(dir: string, mine: (sub: number) => boolean): void {
  for (const name of readdirSync(dir)) {
    const m = INTENT_RE.exec(name);
    if (m && mine(Number(m[1]))) resolveIntentSync(dir, name);
  }
  for (const name of readdirSync(dir)) {
    const m = COMPACT_TMP_RE.exec(name);
    if (m && mine(Number(m[1]))) rmSync(join(dir, name), { force: true }); // merged data that never got an intent
  }
}

/** Completes a compaction whose merged file is visible, or undoes one whose file is not. */
function resolveIntentSync(dir: string, intentName: string): void {
  const path = join(dir, intentName);
  let intent: { target: string; tmp: string; sources: string[] };
  try {
    intent = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    // A torn intent file: its compaction never reached the rename (the intent is fsynced first).
    rmSync(path, { force: true });
    return;
  }
  if (existsSync(join(dir, intent.target))) {
    for (const s of intent.sources) rmSync(join(dir, s), { force: true });
  } else {
    rmSync(join(dir, intent.tmp), { force: true });
  }
  rmSync(path, { force: true });
}

/** After commits: the directory's fsync, then compaction in the background (off the record path). */
class LocalCommitterSession implements CommitterSession {
  private compacting: Promise<void> | undefined;
  private compactions = 0;
  private readonly run = randomBytes(4).toString('hex');

  constructor(private readonly dir: string, private readonly settings: CompactionSettings, private readonly ctx: SinkContext, private readonly format: FileFormat) {}

  afterCommit(published: number): void | Promise<void> {
    if (published > 0) {
      const d = openSync(this.dir, 'r');
      try {
        fsyncSync(d);
      } finally {
        closeSync(d);
      }
    }
    // Compaction runs on async I/O, off the record path; the next commit waits for it, and so
    // does the end of the job, so a finished job never leaves a half-done compaction behind.
    if (this.settings.compactBelow > 0 && this.compacting === undefined) {
      // Taking turns with other committers of this subtask in this process (see compactionLocks).
      this.compacting = exclusive(compactionKey(this.dir, this.ctx.subtaskIndex), () => this.compact()).finally(() => (this.compacting = undefined));
      return this.compacting;
    }
  }

  /** Merges this subtask's small committed files, off the record path (async I/O). */
  private async compact(): Promise<void> {
    const dir = this.dir;
    const sub = this.ctx.subtaskIndex;
    const small: string[] = [];
    for (const name of (await readdir(dir)).sort()) {
      const m = COMMITTED_RE.exec(name);
      if (!m || Number(m[1]) !== sub || m[4] !== this.format.extension) continue;
      const size = (await stat(join(dir, name)).catch(() => undefined))?.size;
      if (size !== undefined && size < this.settings.compactBelow) small.push(name);
    }
    if (small.length < this.settings.compactMinFiles) return;
    // The files to merge: those of this format as written now (same header or schema), up to MAX_MERGE_BYTES.
    const sources: string[] = [];
    const contents: Buffer[] = [];
    let total = 0;
    for (const s of small) {
      if (total >= MAX_MERGE_BYTES) break;
      const bytes = await readFile(join(dir, s)).catch(() => undefined);
      if (bytes === undefined || !(this.format.mergeable?.(bytes) ?? true)) continue;
      sources.push(s);
      contents.push(bytes);
      total += bytes.byteLength;
    }
    if (sources.length < this.settings.compactMinFiles) return;
    const k = this.compactions++;
    const tmp = `.compact-${sub}-${this.run}-${k}.tmp`;
    const target = `part-${sub}-${this.run}-c${k}.${this.format.extension}`;
    const intent = `.compact-${sub}-${this.run}-${k}.intent`;
    const merged = mergedFile(this.format, contents);
    const fh = await open(join(dir, tmp), 'wx');
    try {
      for (const bytes of merged) await fh.writeFile(bytes); // writeFile: the whole buffer, however short single writes are
      await fh.sync();
    } finally {
      await fh.close();
    }
    const ih = await open(join(dir, intent), 'wx');
    try {
      await ih.writeFile(JSON.stringify({ target, tmp, sources }));
      await ih.sync();
    } finally {
      await ih.close();
    }
    await rename(join(dir, tmp), join(dir, target));
    for (const s of sources) await rm(join(dir, s), { force: true });
    await rm(join(dir, intent), { force: true });
  }

  async close(): Promise<void> {
    await this.compacting?.catch(() => {});
  }
}
