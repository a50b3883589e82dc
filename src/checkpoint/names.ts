/**
 * Every name checkpoint storage gives to a place, in one module: the layout of a checkpoint
 * root, of one checkpoint or savepoint, and the names of the blocks inside a state file.
 * Writers build these names here and readers parse them here, so a change of layout is one
 * edit, and existing checkpoints (and the golden savepoint under test/fixtures) keep reading.
 *
 *   <root>/<job-id>/chk-<n>/_metadata          written last; a checkpoint exists iff it verifies
 *   <root>/<job-id>/chk-<n>/<op16>-<i>.state   keyed state and timers of one operator subtask
 *   <root>/<job-id>/chk-<n>/<op16>-<i>.channels.state  in-flight data of one subtask (unaligned)
 *   <root>/<job-id>/shared/<op16>-<i>-<n>.state a file of an incremental chain (base or delta), written
 *                                              by checkpoint n; named in metadata by its plain name,
 *                                              reference-counted by the job manager (shared-state-registry.ts)
 *   <root>/<job-id>/taskowned/                 reserved for task-owned state
 *   <root>/<job-id>/checkpoint-history.jsonl   one line of statistics per ended checkpoint
 *   <root>/<job-id>/last-checkpoint-id         highest id ever triggered (ids are never reused)
 *   <target>/savepoint-<job6>-<hex>/           a savepoint: self-contained, relative names inside
 *
 *   blocks of a state file: k/<state>/<kg>     one state's entries of key group kg
 *                           t/<kg>             the timers of key group kg
 *                           d/<state>/<kg>     keys removed from one state in key group kg (delta files only)
 *
 * References: a place is named by a reference string that travels between the job manager and
 * tasks (in trigger requests and barriers) and into metadata-independent messages. A local
 * reference is an absolute path; any other is a URL (`memory://store/...`, later `s3://...`).
 * Metadata itself only ever holds names relative to its own directory, so snapshots move.
 */
import { basename, dirname, join, resolve } from 'node:path';

export const METADATA_FILE = '_metadata';
/** Suffix of the file a metadata (or id record) is written to before it is published. */
export const TEMP_SUFFIX = '.tmp';
export const SHARED_DIR = 'shared';
export const TASK_OWNED_DIR = 'taskowned';
export const HISTORY_FILE = 'checkpoint-history.jsonl';
export const ID_RECORD_FILE = 'last-checkpoint-id';
/**
 * On an object store (no append), a file that is appended to is a folder of segment objects,
 * `<file>.segments/<ms15>-<seq6>-<hex>`, read back in name order.
 */
export const APPEND_SEGMENTS_SUFFIX = '.segments';
/** An object standing for an empty directory on an object store: the directory's key plus '/'. */
export const DIRECTORY_MARKER_SUFFIX = '/';

const CHECKPOINT_DIR = /^chk-(\d+)$/;
const STATE_FILE_SUFFIX = '.state';
const CHANNEL_STATE_SUFFIX = '.channels.state';
/** Characters of an operator id kept in a state file name (ids are hex hashes or uids' hashes). */
const OPERATOR_ID_CHARS = 16;
const SAVEPOINT_JOB_CHARS = 6;

// ---- checkpoints and savepoints

export function checkpointDirName(checkpointId: number): string {
  assertId(checkpointId);
  return `chk-${checkpointId}`;
}

/** The checkpoint id of a `chk-<n>` name, or undefined for any other name. */
export function parseCheckpointDirName(name: string): number | undefined {
  const m = CHECKPOINT_DIR.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** `savepoint-<first 6 of the job id>-<random hex>`: unique per attempt, readable by a person. */
export function savepointDirName(jobId: string, randomHex: string): string {
  if (!/^[0-9a-f]+$/.test(randomHex)) throw new RangeError(`savepoint name suffix must be hex, got ${JSON.stringify(randomHex)}`);
  return `savepoint-${jobId.slice(0, SAVEPOINT_JOB_CHARS)}-${randomHex}`;
}

/** The state file of one operator subtask inside a checkpoint or savepoint. */
export function stateFileName(operatorId: string, subtaskIndex: number): string {
  if (!Number.isInteger(subtaskIndex) || subtaskIndex < 0) throw new RangeError(`subtask index must be an integer >= 0, got ${subtaskIndex}`);
  return `${operatorId.slice(0, OPERATOR_ID_CHARS)}-${subtaskIndex}${STATE_FILE_SUFFIX}`;
}

/**
 * A file of an incremental chain in the job's shared/ directory: written by checkpoint
 * `checkpointId` for one operator subtask (ids are never reused, so the name is unique).
 */
export function sharedStateFileName(operatorId: string, subtaskIndex: number, checkpointId: number): string {
  assertId(checkpointId);
  return `${stateFileName(operatorId, subtaskIndex).slice(0, -STATE_FILE_SUFFIX.length)}-${checkpointId}${STATE_FILE_SUFFIX}`;
}

/** The checkpoint id that wrote a shared state file (sharedStateFileName), or undefined for any other name. */
export function parseSharedStateFileName(name: string): number | undefined {
  const m = /^[^/]+-\d+-(\d+)\.state$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** The channel state (unaligned checkpoints: in-flight data) of one subtask, named after its chain's head operator. */
export function channelStateFileName(headOperatorId: string, subtaskIndex: number): string {
  return stateFileName(headOperatorId, subtaskIndex).slice(0, -STATE_FILE_SUFFIX.length) + CHANNEL_STATE_SUFFIX;
}

export function isStateFileName(name: string): boolean {
  return name.endsWith(STATE_FILE_SUFFIX) && !name.includes('/');
}

// ---- blocks inside a state file

export type BlockName =
  | { readonly kind: 'keyed'; readonly state: string; readonly keyGroup: number }
  | { readonly kind: 'timers'; readonly keyGroup: number }
  | { readonly kind: 'tombstones'; readonly state: string; readonly keyGroup: number }
  | { readonly kind: 'unknown' };

export function keyedBlockName(state: string, keyGroup: number): string {
  return `k/${state}/${keyGroup}`;
}

/** Keys removed from `state` in key group `keyGroup` since the chain's previous file (delta files only). */
export function tombstoneBlockName(state: string, keyGroup: number): string {
  return `d/${state}/${keyGroup}`;
}

export function timerBlockName(keyGroup: number): string {
  return `t/${keyGroup}`;
}

/** Parses a block name; state names may contain slashes (the key group is after the last one). */
export function parseBlockName(name: string): BlockName {
  if (name.startsWith('t/')) return { kind: 'timers', keyGroup: Number(name.slice(2)) };
  if (name.startsWith('k/') || name.startsWith('d/')) {
    const i = name.lastIndexOf('/');
    if (i <= 1) return { kind: 'unknown' };
    return { kind: name[0] === 'k' ? 'keyed' : 'tombstones', state: name.slice(2, i), keyGroup: Number(name.slice(i + 1)) };
  }
  return { kind: 'unknown' };
}

// ---- object-store segments of appended files

/**
 * Suffix of a folded segment: the concatenation of every segment up to the one it is named
 * after (`<segment>~folded` sorts after that segment and before any later one), which makes
 * them garbage; readers take the newest folded segment and the segments after it.
 */
export const FOLDED_SEGMENT_SUFFIX = '~folded';

/** The name of one appended segment: sortable by time, then by a per-process sequence. */
export function appendSegmentName(timeMs: number, sequence: number, randomHex: string): string {
  return `${String(Math.max(0, Math.floor(timeMs))).padStart(15, '0')}-${String(sequence % 1_000_000).padStart(6, '0')}-${randomHex}`;
}

// ---- references

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//;

/** The URL scheme of a reference ('memory', 's3'), or undefined for a local path. */
export function schemeOf(reference: string): string | undefined {
  return SCHEME.exec(reference)?.[1];
}

/** A local path made absolute; URLs are returned without trailing slashes. */
export function normalizeReference(reference: string): string {
  if (schemeOf(reference) === undefined) return resolve(reference);
  return reference.replace(/\/+$/, '');
}

/** Whether `name` is one plain name (no path separator, not . or ..): what a stream factory accepts. */
export function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\\');
}

/** `name` inside `parent` (a directory, a key prefix); `name` may have several segments. */
export function childReference(parent: string, name: string): string {
  if (name === '' || name.startsWith('/') || name.split('/').includes('..')) throw new RangeError(`not a relative name inside its parent: ${JSON.stringify(name)}`);
  if (schemeOf(parent) === undefined) return join(parent, name);
  return `${parent.replace(/\/+$/, '')}/${name}`;
}

export function parentReference(reference: string): string {
  if (schemeOf(reference) === undefined) return dirname(reference);
  const r = reference.replace(/\/+$/, '');
  const i = r.lastIndexOf('/');
  // Never above the scheme's authority (memory://store): its parent is itself.
  return i <= r.indexOf('://') + 2 ? r : r.slice(0, i);
}

export function baseNameOf(reference: string): string {
  if (schemeOf(reference) === undefined) return basename(reference);
  const r = reference.replace(/\/+$/, '');
  return r.slice(r.lastIndexOf('/') + 1);
}

export function jobDirReference(root: string, jobId: string): string {
  return childReference(root, jobId);
}

export function checkpointReference(root: string, jobId: string, checkpointId: number): string {
  return childReference(jobDirReference(root, jobId), checkpointDirName(checkpointId));
}

export function metadataReference(snapshot: string): string {
  return childReference(snapshot, METADATA_FILE);
}

export function tempReference(file: string): string {
  return `${file}${TEMP_SUFFIX}`;
}

/** A state file named in metadata (relative to the snapshot) as a reference a task can open. */
export function stateFileReference(snapshot: string, fileName: string): string {
  return childReference(snapshot, fileName);
}

/** The job's shared/ directory, from one of its checkpoint directories (`<root>/<job-id>/chk-<n>`). */
export function sharedDirOfCheckpoint(checkpoint: string): string {
  return childReference(parentReference(checkpoint), SHARED_DIR);
}

/** A shared state file named in a checkpoint's metadata (a plain name) as a reference a task can open. */
export function sharedStateReference(checkpoint: string, name: string): string {
  if (!isPlainName(name)) throw new RangeError(`a shared state file is named by a plain name, got ${JSON.stringify(name)}`);
  return childReference(sharedDirOfCheckpoint(checkpoint), name);
}

/** The job id and checkpoint id of `<root>/<job-id>/chk-<n>`, or undefined if `reference` is not one. */
export function parseCheckpointReference(root: string, reference: string): { jobId: string; checkpointId: number } | undefined {
  const checkpointId = parseCheckpointDirName(baseNameOf(reference));
  if (checkpointId === undefined) return undefined;
  const jobDir = parentReference(reference);
  if (parentReference(jobDir) !== normalizeReference(root)) return undefined;
  return { jobId: baseNameOf(jobDir), checkpointId };
}

function assertId(id: number): void {
  if (!Number.isSafeInteger(id) || id < 1) throw new RangeError(`checkpoint id must be an integer >= 1, got ${id}`);
}
