/**
 * Exactly-once JSON-lines file sink. Readers only ever see committed files: everything else
 * has a name starting with "." (hidden), as tools reading a directory conventionally skip.
 *
 *   .part-<sub>-<run>-<n>.inprogress        being written
 *   .part-<sub>-<run>-<n>.chk-<id>.pending  closed at the barrier of checkpoint <id>
 *   part-<sub>-<run>-<n>.jsonl              committed when checkpoint <id> completed
 *   part-<sub>-<run>-c<k>.jsonl             compaction of small committed files
 *   .weir-committed-<sub>                   the last checkpoint the subtask committed (commit-record.ts)
 *
 * Rolling: at every checkpoint (so each checkpoint's output is one unit of commit), and
 * earlier when a part reaches maxPartSize bytes or is older than rolloverInterval.
 * Commit is an atomic rename and idempotent: after a restore, a committable whose pending
 * file is gone was already committed (and possibly compacted since).
 * Compaction runs in the background after commits: when enough small committed files of a
 * subtask accumulate, they are concatenated into one, through an intent file that makes the
 * swap crash-safe (after a crash it is completed or undone, never half done). Between the
 * rename of the merged file and the deletion of its sources a reader listing the directory
 * could see those records twice for a moment; the final state never has duplicates.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { toMillis, type Duration } from '../../core/duration.ts';
import type { SinkCommitter, SinkContext, SinkWriter, TwoPhaseCommitSink } from '../../core/sink.ts';
import { readCommitRecords, writeCommitRecord } from './commit-record.ts';

export interface ExactlyOnceFileSinkOptions {
  /** Roll a part when it reaches this many bytes (default 128 MiB). */
  readonly maxPartSize?: number;
  /** Roll a part when it has been open this long (default 60 s). */
  readonly rolloverInterval?: Duration;
  /** Compaction: merge committed files smaller than this (default 4 MiB); 0 turns compaction off. */
  readonly compactBelow?: number;
  /** Compaction: start once this many small committed files of a subtask exist (default 8). */
  readonly compactMinFiles?: number;
  /** Format of a record as a line (default JSON.stringify). */
  readonly format?: (value: unknown) => string;
}

export interface FileCommittable {
  /** Pending (hidden) file name. */
  readonly pending: string;
  /** Final (visible) file name. */
  readonly final: string;
}

const PENDING_RE = /^\.part-(\d+)-([0-9a-f]+)-(\d+)\.chk-(\d+)\.pending$/;
const INPROGRESS_RE = /^\.part-(\d+)-([0-9a-f]+)-(\d+)\.inprogress$/;
const COMMITTED_RE = /^part-(\d+)-([0-9a-f]+)-(c?\d+)\.jsonl$/;
const INTENT_RE = /^\.compact-(\d+)-([0-9a-f]+)-(\d+)\.intent$/;
const COMPACT_TMP_RE = /^\.compact-(\d+)-([0-9a-f]+)-(\d+)\.tmp$/;

export class ExactlyOnceFileSink<T> implements TwoPhaseCommitSink<T, FileCommittable> {
  readonly name: string;
  readonly maxPartSize: number;
  readonly rolloverMs: number;
  readonly compactBelow: number;
  readonly compactMinFiles: number;
  readonly format: (value: unknown) => string;

  constructor(readonly dir: string, options: ExactlyOnceFileSinkOptions = {}) {
    if (typeof dir !== 'string' || dir === '') throw new TypeError('the exactly-once file sink needs a directory path');
    this.name = `exactly-once files ${dir}`;
    this.maxPartSize = options.maxPartSize ?? 128 * 2 ** 20;
    if (!(Number.isInteger(this.maxPartSize) && this.maxPartSize > 0)) throw new RangeError(`maxPartSize must be a positive integer, got ${String(options.maxPartSize)}`);
    this.rolloverMs = toMillis(options.rolloverInterval ?? 60_000, 'rolloverInterval');
    this.compactBelow = options.compactBelow ?? 4 * 2 ** 20;
    if (!(Number.isInteger(this.compactBelow) && this.compactBelow >= 0)) throw new RangeError(`compactBelow must be a non-negative integer, got ${String(options.compactBelow)}`);
    this.compactMinFiles = options.compactMinFiles ?? 8;
    if (!(Number.isInteger(this.compactMinFiles) && this.compactMinFiles >= 2)) throw new RangeError(`compactMinFiles must be an integer >= 2, got ${String(options.compactMinFiles)}`);
    this.format = options.format ?? ((v) => JSON.stringify(v));
  }

  createWriter(ctx: SinkContext): SinkWriter<T, FileCommittable> {
    mkdirSync(this.dir, { recursive: true });
    // A restart with no checkpoint to restore (no checkpoint of the job has completed yet) gets
    // no recover() call, yet what earlier attempts left is garbage all the same: in-progress parts
    // and pending files of checkpoints that never completed (nothing refers to them; recover()
    // after a restore deletes the pending files of every checkpoint after the restored one on the
    // same grounds). Left alone they stayed behind as hidden files for good: a later restore from
    // a checkpoint with a higher id keeps pending files with lower ids.
    if (ctx.attemptNumber > 0 && ctx.restoredCheckpointId === undefined) {
      const mine = (sub: number) => sub === ctx.subtaskIndex || (ctx.subtaskIndex === 0 && sub >= ctx.parallelism);
      for (const name of readdirSync(this.dir)) {
        const m = INPROGRESS_RE.exec(name) ?? PENDING_RE.exec(name);
        if (m && mine(Number(m[1]))) rmSync(join(this.dir, name), { force: true });
      }
    }
    return new FileWriter<T>(this, ctx);
  }

  createCommitter(ctx: SinkContext): SinkCommitter<FileCommittable> {
    return new FileCommitter(this, ctx);
  }

  /** The highest checkpoint whose output a committer of this directory committed (or began to). */
  lastCommittedCheckpoint(): number | undefined {
    return readCommitRecords(this.dir);
  }

  /**
   * After a restore from checkpoint `restoredId`: delete what no completed checkpoint refers to
   * (this subtask's in-progress files, and pending files of checkpoints after the restored one:
   * they never completed), and finish or undo interrupted compactions. Subtask 0 also cleans up
   * after subtask indices that no longer exist (the job was rescaled down). Returns a promise
   * only when it has to wait for a compaction still running in this process.
   *
   * A pending file of a checkpoint at or below the restored one that the restored checkpoint
   * does not refer to (`referenced`: its committables over all subtasks) is output a completed
   * checkpoint promised and nobody will commit: it is reported in one log line and left where it
   * is, for the user to inspect (deleting it would hide the loss; committing it could duplicate).
   */
  recover(ctx: SinkContext, restoredId: number, _committables: readonly FileCommittable[] = [], referenced: readonly FileCommittable[] = []): void | Promise<void> {
    if (!existsSync(this.dir)) return;
    const mine = (sub: number) => sub === ctx.subtaskIndex || (ctx.subtaskIndex === 0 && sub >= ctx.parallelism);
    const known = new Set(referenced.map((c) => c.pending));
    const unreferenced: string[] = [];
    // Files of the interrupted attempt's writer: deleted now, before this attempt's writer starts.
    for (const name of readdirSync(this.dir)) {
      let m = INPROGRESS_RE.exec(name);
      if (m && mine(Number(m[1]))) {
        rmSync(join(this.dir, name), { force: true });
        continue;
      }
      m = PENDING_RE.exec(name);
      if (!m || !mine(Number(m[1]))) continue;
      if (Number(m[4]) > restoredId) rmSync(join(this.dir, name), { force: true });
      else if (!known.has(name)) unreferenced.push(name);
    }
    if (unreferenced.length > 0) ctx.log(unreferencedLine(this.dir, restoredId, unreferenced.sort()));
    // Compactions: a compaction of the failed attempt may still be running in this process (a
    // restart in the same thread, workers: 1: its async I/O goes on after the task is cancelled).
    // Its temp file is not garbage yet, so resolve compaction leftovers only once it has ended,
    // and before this attempt's committer compacts (it queues behind this on the same lock).
    const running = runningCompactions(this.dir, mine);
    if (running.length === 0) {
      resolveCompactionsSync(this.dir, mine);
      return;
    }
    return exclusive(compactionKey(this.dir, ctx.subtaskIndex), async () => {
      await Promise.all(running);
      resolveCompactionsSync(this.dir, mine);
    });
  }
}

/** The one log line for pending files nobody will commit (at most a few names, then a count). */
function unreferencedLine(dir: string, restoredId: number, names: readonly string[]): string {
  const shown = names.slice(0, 3).join(', ') + (names.length > 3 ? `, and ${names.length - 3} more` : '');
  return `weir: exactly-once file sink ${dir}: ${names.length} pending file(s) of checkpoints up to ${restoredId} (restored) are in no retained checkpoint and will never be committed; their output was lost or they belong to another run: ${shown} (left in place)`;
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

class FileWriter<T> implements SinkWriter<T, FileCommittable> {
  private readonly run = randomBytes(4).toString('hex');
  private counter = 0;
  private fd = -1;
  private current = '';
  private currentSize = 0;
  private openedAt = 0;
  /** Closed parts waiting for the next barrier (rolled by size or time). */
  private closed: string[] = [];

  constructor(private readonly sink: ExactlyOnceFileSink<T>, private readonly ctx: SinkContext) {}

  private openPart(): void {
    this.current = `.part-${this.ctx.subtaskIndex}-${this.run}-${this.counter++}`;
    this.fd = openSync(join(this.sink.dir, this.current + '.inprogress'), 'wx');
    this.currentSize = 0;
    this.openedAt = this.ctx.now();
  }

  write(values: readonly T[]): void {
    if (values.length === 0) return;
    if (this.fd >= 0 && this.ctx.now() - this.openedAt >= this.sink.rolloverMs) this.roll();
    if (this.fd < 0) this.openPart();
    const fmt = this.sink.format;
    let text = '';
    for (let i = 0; i < values.length; i++) text += fmt(values[i]) + '\n';
    const buf = Buffer.from(text);
    let off = 0;
    while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
    this.currentSize += buf.length;
    if (this.currentSize >= this.sink.maxPartSize) this.roll();
  }

  /** Closes the current part (made durable) and queues it for the next barrier. */
  private roll(): void {
    if (this.fd < 0) return;
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = -1;
    if (this.currentSize === 0) {
      rmSync(join(this.sink.dir, this.current + '.inprogress'), { force: true });
      return;
    }
    this.closed.push(this.current);
  }

  prepareCommit(checkpointId: number): FileCommittable[] {
    this.roll();
    const out: FileCommittable[] = [];
    for (const base of this.closed) {
      const pending = `${base}.chk-${checkpointId}.pending`;
      renameSync(join(this.sink.dir, base + '.inprogress'), join(this.sink.dir, pending));
      out.push({ pending, final: base.slice(1) + '.jsonl' });
    }
    this.closed = [];
    return out;
  }

  close(): void {
    if (this.fd >= 0) {
      closeSync(this.fd);
      this.fd = -1;
    }
  }
}

class FileCommitter implements SinkCommitter<FileCommittable> {
  private compacting: Promise<void> | undefined;
  private compactions = 0;
  private readonly run = randomBytes(4).toString('hex');

  constructor(private readonly sink: ExactlyOnceFileSink<unknown>, private readonly ctx: SinkContext) {}

  commit(list: readonly FileCommittable[], checkpointId = 0): void | Promise<void> {
    const dir = this.sink.dir;
    // Recorded before the renames: the record may run one checkpoint ahead of the visible output, never behind.
    if (list.length > 0) writeCommitRecord(dir, this.ctx.subtaskIndex, checkpointId);
    for (const c of list) {
      const from = join(dir, c.pending);
      if (existsSync(from)) renameSync(from, join(dir, c.final));
      // Else: committed before (by the attempt that took the checkpoint), maybe compacted since.
    }
    if (list.length > 0) {
      const d = openSync(dir, 'r');
      try {
        fsyncSync(d);
      } finally {
        closeSync(d);
      }
    }
    // Compaction runs on async I/O, off the record path; the next commit waits for it, and so
    // does the end of the job, so a finished job never leaves a half-done compaction behind.
    if (this.sink.compactBelow > 0 && this.compacting === undefined) {
      // Taking turns with other committers of this subtask in this process (see compactionLocks).
      this.compacting = exclusive(compactionKey(dir, this.ctx.subtaskIndex), () => this.compact()).finally(() => (this.compacting = undefined));
      return this.compacting;
    }
  }

  /** Merges this subtask's small committed files, off the record path (async I/O). */
  private async compact(): Promise<void> {
    const dir = this.sink.dir;
    const sub = this.ctx.subtaskIndex;
    const small: string[] = [];
    for (const name of (await readdir(dir)).sort()) {
      const m = COMMITTED_RE.exec(name);
      if (!m || Number(m[1]) !== sub) continue;
      const size = (await stat(join(dir, name)).catch(() => undefined))?.size;
      if (size !== undefined && size < this.sink.compactBelow) small.push(name);
    }
    if (small.length < this.sink.compactMinFiles) return;
    const k = this.compactions++;
    const tmp = `.compact-${sub}-${this.run}-${k}.tmp`;
    const target = `part-${sub}-${this.run}-c${k}.jsonl`;
    const intent = `.compact-${sub}-${this.run}-${k}.intent`;
    const fh = await open(join(dir, tmp), 'wx');
    try {
      for (const s of small) await fh.writeFile(await readFile(join(dir, s))); // writeFile: the whole buffer, however short single writes are
      await fh.sync();
    } finally {
      await fh.close();
    }
    const ih = await open(join(dir, intent), 'wx');
    try {
      await ih.writeFile(JSON.stringify({ target, tmp, sources: small }));
      await ih.sync();
    } finally {
      await ih.close();
    }
    await rename(join(dir, tmp), join(dir, target));
    for (const s of small) await rm(join(dir, s), { force: true });
    await rm(join(dir, intent), { force: true });
  }

  async close(): Promise<void> {
    await this.compacting?.catch(() => {});
  }
}

