/**
 * Checkpoint storage on a local directory (the embedded default):
 *
 *   <dir>/<job-id>/chk-<n>/_metadata        written last: temp file, fsync, rename, fsync dir
 *   <dir>/<job-id>/chk-<n>/<op>-<i>.state   one state file per keyed operator subtask
 *   <dir>/<job-id>/shared/, taskowned/      reserved for incremental and task-owned state
 *   <dir>/<job-id>/checkpoint-history.jsonl statistics of completed and failed checkpoints
 *
 * A chk-<n> without verifying metadata is garbage from an aborted or interrupted attempt.
 */
import { mkdirSync, existsSync, statSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, appendFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { METADATA_FILE, parseMetadata, serializeMetadata, type CheckpointMetadata } from './metadata.ts';

export interface CompletedCheckpointRef {
  readonly path: string;
  readonly metadata: CheckpointMetadata;
}

export type StorageLog = (line: string) => void;

export class LocalCheckpointStorage {
  readonly root: string;
  constructor(root: string) {
    this.root = resolve(root);
  }

  jobDir(jobId: string): string {
    return join(this.root, jobId);
  }

  checkpointDir(jobId: string, id: number): string {
    return join(this.jobDir(jobId), `chk-${id}`);
  }

  /** Creates the job's layout; fails clearly when the directory cannot be used. */
  initJob(jobId: string): void {
    try {
      mkdirSync(join(this.jobDir(jobId), 'shared'), { recursive: true });
      mkdirSync(join(this.jobDir(jobId), 'taskowned'), { recursive: true });
    } catch (e) {
      throw new Error(`checkpoint directory ${this.root} is not usable: ${(e as Error).message}`);
    }
  }

  async initCheckpoint(jobId: string, id: number): Promise<string> {
    const dir = this.checkpointDir(jobId, id);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /** Writes metadata atomically: nothing, or the whole verified file. */
  async finalize(dir: string, m: CheckpointMetadata): Promise<void> {
    await finalizeMetadata(dir, m);
  }

  async discard(dir: string): Promise<void> {
    // The metadata goes first: a checkpoint exists iff its metadata does, so a concurrent
    // listing (a restart looking for the latest checkpoint) sees it either whole or gone,
    // never with state files missing (which it would report as a corrupt checkpoint).
    await rm(join(dir, METADATA_FILE), { force: true });
    await rm(dir, { recursive: true, force: true });
  }

  async appendHistory(jobId: string, entry: unknown): Promise<void> {
    await appendFile(join(this.jobDir(jobId), 'checkpoint-history.jsonl'), JSON.stringify(entry) + '\n');
  }

  /**
   * Records that checkpoint `id` was triggered, so the id is never used again even after its
   * directory (an interrupted attempt's) is collected as garbage. Sinks name their pending
   * files by checkpoint id; a reused id would confuse what a restore cleans up.
   */
  async recordTriggered(jobId: string, id: number): Promise<void> {
    // Triggers overlap (a periodic one and a savepoint or the final checkpoint), so writes are
    // chained per job (never two on the temp file at once), and an older id never overwrites a newer.
    const prev = this.recording.get(jobId) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(async () => {
      if (id <= (this.recorded.get(jobId) ?? 0)) return;
      const f = join(this.jobDir(jobId), 'last-checkpoint-id');
      const tmp = `${f}.tmp`;
      await writeFile(tmp, String(id));
      await rename(tmp, f);
      this.recorded.set(jobId, id);
    });
    this.recording.set(jobId, next);
    await next;
  }

  private readonly recording = new Map<string, Promise<void>>();
  private readonly recorded = new Map<string, number>();

  /** Highest checkpoint number ever used under the job (ids are never reused). */
  async highestId(jobId: string): Promise<number> {
    const dir = this.jobDir(jobId);
    if (!existsSync(dir)) return 0;
    let max = 0;
    try {
      const recorded = Number(await readFile(join(dir, 'last-checkpoint-id'), 'utf8'));
      if (Number.isSafeInteger(recorded)) max = recorded;
    } catch {
      // none recorded yet
    }
    for (const name of await readdir(dir)) {
      const m = /^chk-(\d+)$/.exec(name);
      if (m) max = Math.max(max, Number(m[1]));
    }
    return max;
  }

  /** Job ids with a directory under the root. */
  async jobs(): Promise<string[]> {
    if (!existsSync(this.root)) return [];
    const out: string[] = [];
    for (const e of await readdir(this.root, { withFileTypes: true })) if (e.isDirectory()) out.push(e.name);
    return out.sort();
  }

  /** Every verifying checkpoint of a job, oldest first; the rest is reported through `log`. */
  async completed(jobId: string, log: StorageLog = () => {}): Promise<CompletedCheckpointRef[]> {
    const dir = this.jobDir(jobId);
    if (!existsSync(dir)) return [];
    const out: CompletedCheckpointRef[] = [];
    for (const name of await readdir(dir)) {
      if (!/^chk-\d+$/.test(name)) continue;
      const path = join(dir, name);
      const r = await verifyCheckpoint(path);
      if (r.ok) out.push({ path, metadata: r.metadata });
      else if (r.reason !== 'no metadata') log(`weir: skipping checkpoint ${path}: ${r.reason}`);
    }
    return out.sort((a, b) => a.metadata.checkpointId - b.metadata.checkpointId);
  }

  /** The newest verifying checkpoint over every job under the root. */
  async latest(log: StorageLog = () => {}): Promise<CompletedCheckpointRef | undefined> {
    let best: CompletedCheckpointRef | undefined;
    for (const job of await this.jobs()) {
      const all = await this.completed(job, log);
      for (const c of all) if (best === undefined || c.metadata.completedAt > best.metadata.completedAt) best = c;
    }
    return best;
  }

  /** Removes chk-<n> directories without metadata (interrupted or aborted attempts). */
  async collectGarbage(jobId: string, keep: ReadonlySet<number> = new Set()): Promise<number> {
    const dir = this.jobDir(jobId);
    if (!existsSync(dir)) return 0;
    let n = 0;
    for (const name of await readdir(dir)) {
      const m = /^chk-(\d+)$/.exec(name);
      if (!m || keep.has(Number(m[1]))) continue;
      if (!existsSync(join(dir, name, METADATA_FILE))) {
        await rm(join(dir, name), { recursive: true, force: true });
        n++;
      }
    }
    return n;
  }
}

export type VerifyResult = { ok: true; metadata: CheckpointMetadata } | { ok: false; reason: string };

/**
 * Checks a checkpoint or savepoint directory: metadata present, parses, checksum matches, and
 * every state file it names exists with its recorded size. Block checksums are verified when
 * the state is read.
 */
export async function verifyCheckpoint(dir: string): Promise<VerifyResult> {
  const metaPath = join(dir, METADATA_FILE);
  let text: string;
  try {
    text = await readFile(metaPath, 'utf8');
  } catch {
    return { ok: false, reason: 'no metadata' };
  }
  let metadata: CheckpointMetadata;
  try {
    metadata = parseMetadata(text, metaPath);
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  for (const op of metadata.operators) {
    for (const s of op.subtasks) {
      if (s.file === undefined) continue;
      const p = join(dir, s.file);
      let size: number | undefined;
      try {
        size = (await stat(p)).size;
      } catch {
        size = undefined;
      }
      if (size !== s.fileSize) {
        // The checkpoint may have been discarded while we looked (discard() removes the metadata
        // first): then it simply no longer exists, which is not corruption.
        if (!existsSync(metaPath)) return { ok: false, reason: 'no metadata' };
        if (size === undefined) return { ok: false, reason: `state file ${s.file} of operator "${op.name}" is missing` };
        return { ok: false, reason: `state file ${s.file} of operator "${op.name}" has ${size} bytes, expected ${s.fileSize} (truncated)` };
      }
    }
  }
  return { ok: true, metadata };
}

export function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Writes a checkpoint's or savepoint's metadata atomically: temp file, fsync, rename, fsync dir. */
export async function finalizeMetadata(dir: string, m: CheckpointMetadata): Promise<void> {
  const tmp = join(dir, `${METADATA_FILE}.tmp`);
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(serializeMetadata(m));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, join(dir, METADATA_FILE));
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
