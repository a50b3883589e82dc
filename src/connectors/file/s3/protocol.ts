/**
 * The S3 file sink's decisions, pure (the I/O shell in s3-storage.ts gathers their inputs and
 * carries them out). Each part file is one multipart upload to its final key, so it is either
 * in progress (invisible) or a complete object (visible); nothing is ever renamed.
 */

/** A part file's key: `<prefix>/part-<subtask>-<run>-<n>.<extension>` (jsonl, csv, parquet). */
const PART_RE = /^part-(\d+)-([0-9a-f]+)-(\d+)\.[a-z0-9]+$/;

export function partKey(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}/${name}`;
}

// ---- commit records ------------------------------------------------------------------

/**
 * A subtask's commit record: `<prefix>/.weir-committed-<sub>-<id>`, one object per checkpoint id
 * committed, the highest counting (the name holds the id, so reading needs no GET). Older
 * outputs have `<prefix>/.weir-committed-<sub>` holding {checkpointId}, read as before. One
 * object rewritten at each commit went back when a PUT whose client had given up on it (a
 * timeout, a lost answer) landed after a later commit's: a restore of a checkpoint before what
 * was committed then passed the committed-output check, and wrote that output again.
 */
const COMMIT_RECORD_RE = /^\.weir-committed-(\d+)(?:-(\d+))?$/;
export const COMMIT_RECORD_PREFIX = '.weir-committed-';

export function commitRecordName(subtask: number, checkpointId: number): string {
  return `${COMMIT_RECORD_PREFIX}${subtask}-${checkpointId}`;
}

/** The subtask and checkpoint id of a commit record's key (id undefined: an older record, its id in its content), or undefined for any other key. */
export function parseCommitRecordName(prefix: string, key: string): IdRecordName | undefined {
  return parseIdRecordName(prefix, key, COMMIT_RECORD_RE);
}

/**
 * After subtask `sub` recorded `checkpointId`: its records that can go, those of lower ids and
 * the older single record (at most the same id: it was written before). Never a higher one
 * (a restore's re-commit of an earlier checkpoint, duplicates accepted, records a lower id).
 */
export function staleCommitRecords(prefix: string, keys: readonly string[], sub: number, checkpointId: number): string[] {
  return staleIdRecords(prefix, keys, sub, checkpointId, COMMIT_RECORD_RE);
}

/**
 * A subtask's record of open part files: `<prefix>/.weir-open-<sub>-<id>` ({checkpointId, keys})
 * per change of the set, the subtask's lower ones deleted after it, all of them once nothing is
 * open (older outputs: one object `<prefix>/.weir-open-<sub>`, rewritten). A fresh start counts the
 * keys of every record: a lower one left over, or written again by a PUT that landed late, only
 * names older keys, whose uploads are either still open (and then named by the newest too) or
 * gone. One object rewritten lost the newest set when such a late PUT of an older one landed
 * after it: a fresh start then aborted the uploads a completed checkpoint holds.
 */
const OPEN_RECORD_RE = /^\.weir-open-(\d+)(?:-(\d+))?$/;
export const OPEN_RECORD_PREFIX = '.weir-open-';

export function openRecordName(subtask: number, checkpointId: number): string {
  return `${OPEN_RECORD_PREFIX}${subtask}-${checkpointId}`;
}

/** The subtask and checkpoint id of an open-parts record's key (id undefined: an older single record), or undefined for any other key. */
export function parseOpenRecordName(prefix: string, key: string): IdRecordName | undefined {
  return parseIdRecordName(prefix, key, OPEN_RECORD_RE);
}

/** After subtask `sub` recorded its open parts at `checkpointId` (undefined: none open, all go): its records that can go. */
export function staleOpenRecords(prefix: string, keys: readonly string[], sub: number, checkpointId: number | undefined): string[] {
  return staleIdRecords(prefix, keys, sub, checkpointId, OPEN_RECORD_RE);
}

// Records kept as one object per checkpoint id (`<name>-<sub>-<id>`; older outputs `<name>-<sub>`).

export interface IdRecordName {
  readonly subtask: number;
  /** Undefined: an older single record (its id, if any, in its content). */
  readonly checkpointId: number | undefined;
}

function parseIdRecordName(prefix: string, key: string, re: RegExp): IdRecordName | undefined {
  const head = prefix === '' ? '' : `${prefix}/`;
  if (!key.startsWith(head)) return undefined;
  const m = re.exec(key.slice(head.length));
  if (m === null) return undefined;
  return { subtask: Number(m[1]), checkpointId: m[2] === undefined ? undefined : Number(m[2]) };
}

/**
 * Subtask `sub`'s records among `keys` that a record at `checkpointId` makes stale: lower ids and
 * the older single record (written before any of these); all of them when `checkpointId` is
 * undefined. Never a higher one.
 */
function staleIdRecords(prefix: string, keys: readonly string[], sub: number, checkpointId: number | undefined, re: RegExp): string[] {
  return keys.filter((k) => {
    const r = parseIdRecordName(prefix, k, re);
    return r !== undefined && r.subtask === sub && (checkpointId === undefined || r.checkpointId === undefined || r.checkpointId < checkpointId);
  });
}

/** The subtask and writer run of a part file's key under `prefix`, or undefined for any other key. */
export function parsePartKey(prefix: string, key: string): { subtask: number; run: string } | undefined {
  const head = prefix === '' ? '' : `${prefix}/`;
  if (!key.startsWith(head)) return undefined;
  const m = PART_RE.exec(key.slice(head.length));
  return m ? { subtask: Number(m[1]), run: m[2]! } : undefined;
}

export interface CompletionInput {
  /** Parts the checkpoint recorded as uploaded (1..parts). */
  readonly parts: number;
  /** Bytes the checkpoint holds beyond them (an open part's tail; 0 for a closed part). */
  readonly tailBytes: number;
  /** Part numbers the upload has now (ListParts), or undefined when the upload is gone or was never found. */
  readonly listed: readonly number[] | undefined;
  /** Whether the final object exists. */
  readonly objectExists: boolean;
  /** Its size when it exists (or, compacted away, its size as the compaction recorded it), if known. */
  readonly objectBytes?: number;
  /** The size of the file completed from this state (S3PartState.bytes; absent in older checkpoints). */
  readonly expectedBytes?: number;
}

export type CompletionStep =
  /** Upload the tail (when there is one) as part parts + 1, then complete with parts 1..parts(+1). */
  | { readonly step: 'complete'; readonly uploadTail: boolean }
  /** Nothing was uploaded: the tail is the whole file, one PUT. */
  | { readonly step: 'put' }
  /** Completed before (the commit is being repeated after a restore). */
  | { readonly step: 'already' }
  /** An empty open part: no file. */
  | { readonly step: 'nothing' }
  /** The data is gone: logged, not retried for ever. */
  | { readonly step: 'lost'; readonly reason: string }
  /**
   * The object exists, shorter than this state's file: completed from an earlier state of the
   * same upload (a restore of an earlier checkpoint after this snapshot was taken). The records
   * after that state are gone; taken for 'already', they were lost without a word.
   */
  | { readonly step: 'overwritten'; readonly reason: string }
  /** The upload is there without a part the checkpoint recorded uploaded: the storage's answer is wrong; fail (retried by a restart), never abort it. */
  | { readonly step: 'fail'; readonly reason: string };

/**
 * How to make a recorded part file visible, idempotently: a commit repeated after a restore
 * finds the object already there. Parts the upload holds beyond the recorded ones (uploaded by
 * the attempt that failed after the checkpoint) are left out of the completion (S3 drops
 * parts a completion does not list) or overwritten by the tail.
 */
export function decideCompletion(i: CompletionInput): CompletionStep {
  if (i.objectExists) {
    const shorter = overwritten(i);
    if (shorter !== undefined) return shorter;
  }
  if (i.parts === 0) {
    if (i.objectExists) return { step: 'already' };
    return i.tailBytes > 0 ? { step: 'put' } : { step: 'nothing' };
  }
  if (i.listed === undefined) {
    return i.objectExists
      ? { step: 'already' }
      : { step: 'lost', reason: 'its multipart upload is gone and the object does not exist (aborted: by a restore of an earlier checkpoint after this snapshot was taken, a part of an intermediate savepoint; or by a bucket lifecycle rule for incomplete uploads)' };
  }
  const have = new Set(i.listed);
  for (let n = 1; n <= i.parts; n++) {
    // Every recorded part was uploaded before the checkpoint was acknowledged (whenPrepared):
    // an upload listed without one is a wrong answer (a proxy, a gateway), not data that is gone.
    if (!have.has(n)) return { step: 'fail', reason: `part ${n} of its multipart upload is missing from the listing of its parts` };
  }
  return { step: 'complete', uploadTail: i.tailBytes > 0 };
}

/**
 * A file completed before from the same state (a repeated commit) has its size; from a later
 * state of the same upload (a restore of a later snapshot, duplicates accepted) it is longer.
 * Shorter only when an earlier state was completed since this one was recorded.
 */
export function overwritten(i: Pick<CompletionInput, 'objectBytes' | 'expectedBytes'>): { readonly step: 'overwritten'; readonly reason: string } | undefined {
  if (i.expectedBytes === undefined || i.objectBytes === undefined || i.objectBytes >= i.expectedBytes) return undefined;
  return {
    step: 'overwritten',
    reason: `it was committed with ${i.objectBytes} bytes (the object, or the part a compaction merged since), fewer than the ${i.expectedBytes} this snapshot holds: it was completed from an earlier checkpoint's state after this snapshot was taken (a restore of an earlier checkpoint, after an intermediate savepoint), and the records written after that checkpoint are no longer in the store`,
  };
}

export interface OpenState {
  readonly key: string;
  readonly checkpointId: number;
}

/**
 * The open parts a restore completes: of each key the newest state (a snapshot may carry an
 * older checkpoint's state of the same part, not yet committed), and none whose key a
 * complete committable names (that part was closed by then: the committer completes it).
 */
export function opensToComplete<T extends OpenState>(opens: readonly T[], completeKeys: ReadonlySet<string>): T[] {
  const newest = new Map<string, T>();
  for (const o of opens) {
    if (completeKeys.has(o.key)) continue;
    const seen = newest.get(o.key);
    if (seen === undefined || o.checkpointId > seen.checkpointId) newest.set(o.key, o);
  }
  return [...newest.values()];
}

export interface ListedUpload {
  readonly key: string;
  readonly uploadId: string;
}

/**
 * The uploads to abort: part files of subtasks this one owns (`owns`), not written by a writer
 * alive in this process (`liveRuns`: a writer of this attempt may have started one already),
 * and not named by a committable of the restored checkpoint (`keep`: those are completed, by
 * the committer or by recovery). Uploads of other keys under the prefix are not the sink's.
 */
export function orphanUploads<U extends ListedUpload>(
  uploads: readonly U[], prefix: string, owns: (subtask: number) => boolean, liveRuns: ReadonlySet<string>, keep: ReadonlySet<string>,
): U[] {
  return uploads.filter((u) => {
    const p = parsePartKey(prefix, u.key);
    return p !== undefined && owns(p.subtask) && !liveRuns.has(p.run) && !keep.has(u.key);
  });
}

// ---- uploads an intermediate savepoint holds --------------------------------------------

/**
 * `<prefix>/.weir-savepoint-<sub>-<run>-<id>`: the part files with uploaded parts that writer
 * run `<run>` of subtask `<sub>` named at the barrier of savepoint `<id>` (one that does not
 * stop the job), {savepointId, keys}. Written before the savepoint is acknowledged, so it may
 * name a savepoint that never completed (its barrier's completion is not signalled to tasks).
 */
const SAVEPOINT_MARKER_RE = /^\.weir-savepoint-(\d+)-([0-9a-f]+)-(\d+)$/;
export const SAVEPOINT_MARKER_PREFIX = '.weir-savepoint-';

export function savepointMarkerName(sub: number, run: string, savepointId: number): string {
  return `${SAVEPOINT_MARKER_PREFIX}${sub}-${run}-${savepointId}`;
}

export function parseSavepointMarkerName(prefix: string, key: string): { subtask: number; run: string; savepointId: number } | undefined {
  const head = prefix === '' ? '' : `${prefix}/`;
  if (!key.startsWith(head)) return undefined;
  const m = SAVEPOINT_MARKER_RE.exec(key.slice(head.length));
  return m ? { subtask: Number(m[1]), run: m[2]!, savepointId: Number(m[3]) } : undefined;
}

/** The keys a savepoint marker records: the barrier's committables whose upload holds parts (a file held only as a tail is written from the savepoint itself). */
export function savepointHeldKeys(committables: readonly { readonly final: string; readonly s3?: { readonly parts: number } }[]): string[] {
  return [...new Set(committables.filter((c) => c.s3 !== undefined && c.s3.parts > 0).map((c) => c.final))].sort();
}

export interface SavepointMarker {
  /** The marker object's key. */
  readonly key: string;
  readonly subtask: number;
  readonly run: string;
  readonly savepointId: number;
  readonly keys: readonly string[];
}

/**
 * Orphan uploads (orphanUploads) split into those to abort and those a savepoint marker names
 * (kept: a restore from that savepoint completes them; aborted, it lost their records). Not
 * kept: other uploads of a key this restore just completed (`completed`: an open part of the
 * restored checkpoint; the savepoint's state of that file is gone with the completion, and a
 * restore from it is refused), a retried creation's extras.
 */
export function keptForSavepoints<U extends ListedUpload>(
  orphans: readonly U[], markers: readonly SavepointMarker[], completed: ReadonlySet<string> = new Set(),
): { abort: U[]; kept: U[]; savepoints: number[] } {
  const held = new Map<string, number[]>();
  for (const m of markers) for (const k of m.keys) if (!completed.has(k)) held.set(k, [...(held.get(k) ?? []), m.savepointId]);
  const abort: U[] = [];
  const kept: U[] = [];
  const savepoints = new Set<number>();
  for (const u of orphans) {
    const ids = held.get(u.key);
    if (ids === undefined) abort.push(u);
    else {
      kept.push(u);
      for (const id of ids) savepoints.add(id);
    }
  }
  return { abort, kept, savepoints: [...savepoints].sort((a, b) => a - b) };
}

/**
 * Markers that protect nothing any more, to delete: of subtasks this one owns, not of a writer
 * alive in this process (its uploads may not be created yet), and no upload left of any key
 * they name (each completed by a commit or a restore from the savepoint, or aborted by hand).
 */
export function staleSavepointMarkers(
  markers: readonly SavepointMarker[], uploadKeys: ReadonlySet<string>, owns: (subtask: number) => boolean, liveRuns: ReadonlySet<string>,
): SavepointMarker[] {
  return markers.filter((m) => owns(m.subtask) && !liveRuns.has(m.run) && !m.keys.some((k) => uploadKeys.has(k)));
}

// ---- compaction of small committed files --------------------------------------------------

/** A committed file's key, part file or compaction target: `<prefix>/part-<sub>-<run>-<n|c<k>>.<ext>`. */
const COMMITTED_RE = /^part-(\d+)-([0-9a-f]+)-(c?\d+)\.([a-z0-9]+)$/;

/**
 * A compaction's record, `<prefix>/.weir-compact-<sub>-<run>-<k>`, written before its target:
 * the target key and the source keys. `done` once the sources are deleted. Kept afterwards: a
 * commit repeated after a restore finds a source gone and learns here that it was committed
 * (and compacted), instead of calling it lost or writing it again.
 */
export interface CompactionRecord {
  readonly target: string;
  readonly sources: readonly string[];
  /** The sources' sizes, in order (absent in older records): a restore checks a compacted part was the whole file its snapshot holds. */
  readonly sizes?: readonly number[];
  readonly done?: boolean;
}

/**
 * The small committed files of subtask `sub` to merge, oldest names first: committed files
 * (part files or earlier targets) of the format's extension under `prefix`, smaller than
 * `below`; none unless at least `minFiles` of them.
 */
export function smallCommittedFiles(
  listed: readonly { readonly key: string; readonly size: number }[], prefix: string, sub: number, extension: string, below: number, minFiles: number,
): string[] {
  const head = prefix === '' ? '' : `${prefix}/`;
  const small = listed
    .filter((o) => {
      if (!o.key.startsWith(head)) return false;
      const m = COMMITTED_RE.exec(o.key.slice(head.length));
      return m !== null && Number(m[1]) === sub && m[4] === extension && o.size < below;
    })
    .map((o) => o.key)
    .sort();
  return small.length >= minFiles ? small : [];
}

export type IntentResolution =
  /** The target exists (written whole by one PUT): delete the sources, then mark the record done. */
  | { readonly step: 'finish' }
  /** The target was never written: drop the record; the sources are untouched and stay the committed files. */
  | { readonly step: 'undo' }
  | { readonly step: 'nothing' };

/** What to do with a compaction record found after a crash (or before the next compaction). */
export function resolveIntent(r: CompactionRecord, targetExists: boolean): IntentResolution {
  if (r.done === true) return { step: 'nothing' };
  return targetExists ? { step: 'finish' } : { step: 'undo' };
}

/**
 * Whether a part file whose object is absent was committed and then compacted: a record lists
 * it as a source and that record's target exists. (A record whose target does not exist never
 * let a source be deleted: sources go only after the target is there.)
 */
export function compactedAway(key: string, records: readonly { readonly record: CompactionRecord; readonly targetExists: boolean }[]): boolean {
  return records.some((r) => r.targetExists && r.record.sources.includes(key));
}

/** The size a compaction recorded for source `key` (of a record whose target exists), if any. */
export function compactedSize(key: string, records: readonly { readonly record: CompactionRecord; readonly targetExists: boolean }[]): number | undefined {
  for (const r of records) {
    const i = r.targetExists ? r.record.sources.indexOf(key) : -1;
    if (i >= 0 && r.record.sizes?.[i] !== undefined) return r.record.sizes[i];
  }
  return undefined;
}
