/**
 * A completed checkpoint's (or savepoint's) metadata: which operator subtask state lives
 * where, plus what a restore needs to redistribute it. Written last and atomically; a
 * checkpoint exists if and only if its metadata exists and its checksum verifies. Paths in it
 * are relative to the checkpoint's own directory, so savepoints can be moved.
 */
import { createHash } from 'node:crypto';
import type { ChainFileRef, ChannelStateHandle, CheckpointType, SubtaskCheckpointStats, KeyGroupRange } from '../core/checkpoint-format.ts';
import { WeirError } from '../core/errors.ts';
import { UPPER_BOUND_MAX_PARALLELISM } from '../state/key-groups.ts';

/** The metadata file's name (names.ts owns every name; re-exported for existing readers). */
export { METADATA_FILE } from './names.ts';
export const METADATA_FORMAT = 'weir-checkpoint';
/** Bumped on incompatible changes; readers refuse newer versions with a clear error. */
export const METADATA_VERSION = 2;
/**
 * Version written when no subtask has an incremental chain: such metadata is exactly what
 * version 1 readers read. Chains (version 2) would look like empty state to them, so they refuse it.
 */
export const METADATA_VERSION_WITHOUT_CHAINS = 1;

export interface SubtaskStateMeta {
  readonly subtask: number;
  readonly file?: string;
  readonly fileSize?: number;
  /** The state file's bytes (base64) when it was below the memory threshold: no file exists then. */
  readonly fileInline?: string;
  /**
   * Incremental checkpoints: the files (in the job's shared/ directory, by plain name) that
   * restore this subtask's keyed state, base first, with their sizes; `file` is then absent.
   */
  readonly chain?: readonly ChainFileRef[];
  readonly keyGroupRange?: KeyGroupRange;
  readonly inline?: string;
  readonly stateSize: number;
  /** Keyed operators: the subtask's event time at the snapshot (OperatorStateHandle.watermark). */
  readonly watermark?: number;
  /** Unaligned checkpoints, head operator of a chain: the subtask's in-flight data (OperatorStateHandle.channelState). */
  readonly channelState?: ChannelStateHandle;
}

export interface OperatorStateMeta {
  readonly id: string;
  readonly name: string;
  readonly uid: string | undefined;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly keyed: boolean;
  readonly subtasks: readonly SubtaskStateMeta[];
}

export interface CheckpointMetadata {
  readonly format: typeof METADATA_FORMAT;
  readonly version: number;
  readonly jobId: string;
  readonly jobName: string;
  readonly checkpointId: number;
  readonly type: CheckpointType;
  readonly timestamp: number;
  readonly completedAt: number;
  readonly operators: readonly OperatorStateMeta[];
  /** Split enumerator state per source operator id: splits not assigned to any reader. */
  readonly enumerators: Readonly<Record<string, readonly unknown[]>>;
  /**
   * With in-flight data (an unaligned checkpoint): the job's edges by index, as
   * restore-plan.ts channelEdgesOf describes them. Output channel state is stored per edge
   * index and replayed into the edge of that index; a restore checks they still mean the same.
   */
  readonly channelEdges?: readonly string[];
  readonly stats: {
    readonly stateSize: number;
    readonly subtasks: Readonly<Record<string, SubtaskCheckpointStats>>;
  };
}

function digest(body: string): string {
  return createHash('sha256').update(body).digest('hex');
}

export function serializeMetadata(m: CheckpointMetadata): string {
  const body = JSON.stringify(m);
  return JSON.stringify({ sha256: digest(body), body: m }, null, 1) + '\n';
}

export class MetadataError extends WeirError {
  constructor(readonly path: string, message: string) {
    super('METADATA', `${path}: ${message}`);
  }
}

/** In the refusal of metadata of a later format: not corrupt, readable by a newer weir (see latestIn in start-point.ts). */
export const NEWER_WEIR = 'written by a newer weir';

export function parseMetadata(text: string, path: string): CheckpointMetadata {
  let outer: { sha256?: unknown; body?: unknown };
  try {
    outer = JSON.parse(text);
  } catch {
    throw new MetadataError(path, 'metadata is not valid JSON (torn or corrupt write)');
  }
  const body = outer?.body as CheckpointMetadata | undefined;
  if (typeof outer?.sha256 !== 'string' || body === undefined || typeof body !== 'object') throw new MetadataError(path, 'not a weir checkpoint or savepoint metadata file');
  if (body.format !== METADATA_FORMAT) throw new MetadataError(path, `unknown format ${JSON.stringify(body.format)}; not a weir checkpoint or savepoint`);
  if (typeof body.version !== 'number' || body.version > METADATA_VERSION) {
    throw new MetadataError(path, `${NEWER_WEIR} (metadata version ${String(body.version)}, this weir reads up to ${METADATA_VERSION})`);
  }
  if (digest(JSON.stringify(body)) !== outer.sha256) throw new MetadataError(path, 'metadata checksum mismatch (corrupt)');
  checkShape(body, path);
  return body;
}

/**
 * The fields a restore and the storage walk read, checked for their types: a metadata file
 * whose checksum matches can still have been written by something else, or by hand. Before,
 * `operators` that was not an array failed every listing of the directory (so --from latest
 * and restarts) with "metadata.operators is not iterable", instead of that checkpoint being
 * skipped for the one before.
 */
function checkShape(m: CheckpointMetadata, path: string): void {
  const bad = (what: string): never => {
    throw new MetadataError(path, `${what} (not a checkpoint weir wrote)`);
  };
  const isCount = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (typeof m.jobId !== 'string' || typeof m.jobName !== 'string') bad('jobId and jobName must be strings');
  if (!isCount(m.checkpointId) || typeof m.type !== 'string') bad('checkpointId must be a count and type a string');
  const isTime = (v: unknown) => typeof v === 'number' && Math.abs(v) <= 8.64e15;
  if (!isTime(m.timestamp) || !isTime(m.completedAt)) bad('timestamp and completedAt must be times (ms since the epoch)');
  if (m.stats === null || typeof m.stats !== 'object' || !isCount(m.stats.stateSize)) bad('stats.stateSize must be a count');
  if (m.enumerators === null || typeof m.enumerators !== 'object') bad('enumerators must be an object');
  if (!Array.isArray(m.operators)) bad('operators must be an array');
  for (const [i, op] of m.operators.entries()) {
    const where = `operators[${i}]`;
    if (op === null || typeof op !== 'object' || typeof op.id !== 'string' || typeof op.name !== 'string') bad(`${where} must have a string id and name`);
    if (!isCount(op.parallelism) || !isCount(op.maxParallelism) || !Array.isArray(op.subtasks)) bad(`${where} must have counts parallelism and maxParallelism and an array subtasks`);
    for (const [j, st] of op.subtasks.entries()) {
      const at = `${where}.subtasks[${j}]`;
      if (st === null || typeof st !== 'object' || !isCount(st.subtask)) bad(`${at} must have a subtask index`);
      if (st.file !== undefined && (typeof st.file !== 'string' || !isCount(st.fileSize))) bad(`${at}: file must be a string with a fileSize`);
      if (st.fileInline !== undefined && typeof st.fileInline !== 'string') bad(`${at}: fileInline must be a string`);
      if (st.chain !== undefined && (!Array.isArray(st.chain) || !st.chain.every((c) => c !== null && typeof c === 'object' && typeof c.name === 'string' && isCount(c.size)))) bad(`${at}: chain must be a list of {name, size}`);
      const cs = st.channelState;
      if (cs !== undefined && (cs === null || typeof cs !== 'object' || typeof cs.file !== 'string' || !isCount(cs.fileSize))) bad(`${at}: channelState must have a file and a fileSize`);
      if (m.type === 'savepoint' && st.chain !== undefined) bad(`${at}: a savepoint is self-contained and names no incremental chain`);
    }
    checkKeyGroups(op, where, bad);
  }
}

/**
 * Key groups the metadata says each subtask's keyed state holds: within the operator's max
 * parallelism and disjoint. Restore and inspect filter state by them, so swapped or missing
 * ranges in a metadata file whose checksum matches (written by hand or by something else)
 * dropped keyed state without a word, and `state inspect --key` called present keys absent.
 */
function checkKeyGroups(op: CheckpointMetadata['operators'][number], where: string, bad: (what: string) => never): void {
  const ranges: { start: number; end: number; at: string }[] = [];
  for (const [j, st] of op.subtasks.entries()) {
    const at = `${where}.subtasks[${j}]`;
    const r = st.keyGroupRange;
    if (r === undefined) {
      if (op.keyed === true && (st.file !== undefined || st.chain !== undefined)) bad(`${at}: keyed state without a keyGroupRange`);
      continue;
    }
    if (r === null || typeof r !== 'object' || !Number.isSafeInteger(r.start) || !Number.isSafeInteger(r.end) || r.start < 0 || r.end < r.start || r.end >= op.maxParallelism) {
      bad(`${at}: keyGroupRange ${JSON.stringify(r)} is not a range of key groups 0..${op.maxParallelism - 1}`);
    }
    ranges.push({ start: r.start, end: r.end, at });
  }
  if (ranges.length > 0 && (op.maxParallelism < 1 || op.maxParallelism > UPPER_BOUND_MAX_PARALLELISM)) bad(`${where}: maxParallelism ${op.maxParallelism} is not between 1 and ${UPPER_BOUND_MAX_PARALLELISM}`);
  ranges.sort((a, b) => a.start - b.start);
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i]!.start <= ranges[i - 1]!.end) bad(`${ranges[i]!.at}: keyGroupRange overlaps that of ${ranges[i - 1]!.at}`);
  }
}

/** Every file of the job's shared directory the snapshot's incremental chains name. */
export function sharedFilesOf(m: CheckpointMetadata): string[] {
  const out: string[] = [];
  for (const op of m.operators) for (const s of op.subtasks) for (const c of s.chain ?? []) out.push(c.name);
  return out;
}
