/**
 * What makes a checkpoint or savepoint exist: its metadata is there, parses, its checksum
 * matches, and every state file it names is there with the recorded size. Block checksums are
 * verified later, when the state is read. Written once over the file-system primitives, so
 * local, in-memory and object storage agree on it.
 */
import { metadataReference, sharedStateReference, stateFileReference } from './names.ts';
import { parseMetadata, type CheckpointMetadata } from './metadata.ts';
import { messageOf, StorageError } from './storage-error.ts';
import { NOT_A_SMALL_FILE, type SnapshotFileSystem } from './storage-fs.ts';
import type { VerifyResult } from './storage.ts';

/** The reason a snapshot without metadata gives: normal garbage, not corruption. */
export const NO_METADATA = 'no metadata';
/** How a listing's line about a checkpoint it skips (it fails its check) begins. */
export const SKIPPING_CHECKPOINT = 'weir: skipping checkpoint ';

/**
 * Whether `snapshot` is a complete checkpoint or savepoint. Only a metadata file that is not
 * there makes it "no metadata" (garbage to skip or collect); a storage that fails to answer
 * (a timeout, a 5xx after the retries, no permission) throws a StorageError instead: taken
 * for absent, it would make `--from latest` start the job fresh (its output written again)
 * or the garbage collector delete a good checkpoint. `checkFilesOf` false for the metadata: its
 * files are not looked at (`filesUnchecked`), for a snapshot that will only be listed.
 */
export async function verifySnapshot(fs: SnapshotFileSystem, snapshot: string, checkFilesOf: (m: CheckpointMetadata) => boolean = () => true): Promise<VerifyResult> {
  const metaRef = metadataReference(snapshot);
  let bytes: Uint8Array | undefined;
  try {
    bytes = await fs.readFile(metaRef);
  } catch (e) {
    // A directory in the metadata's place is not a snapshot; any other failure is the storage's.
    if ((e as NodeJS.ErrnoException | null)?.code === 'EISDIR') return { ok: false, reason: NO_METADATA };
    if ((e as NodeJS.ErrnoException | null)?.code === NOT_A_SMALL_FILE) return { ok: false, reason: messageOf(e) };
    throw new StorageError(`cannot read ${metaRef}: ${messageOf(e)}`, { cause: e });
  }
  if (bytes === undefined) return { ok: false, reason: NO_METADATA };
  let metadata: CheckpointMetadata;
  try {
    metadata = parseMetadata(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'), metaRef);
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  if (!checkFilesOf(metadata)) return { ok: true, metadata, filesUnchecked: true };
  for (const op of metadata.operators) {
    for (const s of op.subtasks) {
      for (const c of s.chain ?? []) {
        // An incremental chain's files live in the job's shared directory: every one is needed.
        const ref = referenceIn(() => sharedStateReference(snapshot, c.name), `chain file ${JSON.stringify(c.name)} of operator "${op.name}"`);
        if (typeof ref !== 'string') return ref;
        const size = await sizeOrUndefined(fs, ref);
        if (size === c.size) continue;
        if (!(await confirmed(fs, ref, size, metaRef))) return { ok: false, reason: NO_METADATA };
        if (size === undefined) return { ok: false, reason: `shared state file ${c.name} of operator "${op.name}" subtask ${s.subtask} (incremental chain) is missing` };
        return { ok: false, reason: `shared state file ${c.name} of operator "${op.name}" subtask ${s.subtask} has ${size} bytes, expected ${c.size} (truncated)` };
      }
    }
    // Keyed state files and channel state files (unaligned checkpoints) are checked alike.
    const files = op.subtasks.flatMap((s) => [
      ...(s.file !== undefined ? [{ file: s.file, fileSize: s.fileSize, fileInline: s.fileInline }] : []),
      ...(s.channelState !== undefined ? [s.channelState] : []),
    ]);
    for (const s of files) {
      if (s.fileInline !== undefined) {
        // Kept in the metadata (its checksum covers it): only its length is checked.
        if (Buffer.from(s.fileInline, 'base64').byteLength !== s.fileSize) return { ok: false, reason: `inline state ${s.file} of operator "${op.name}" does not have the recorded ${s.fileSize} bytes` };
        continue;
      }
      const ref = referenceIn(() => stateFileReference(snapshot, s.file), `state file ${JSON.stringify(s.file)} of operator "${op.name}"`);
      if (typeof ref !== 'string') return ref;
      const size = await sizeOrUndefined(fs, ref);
      if (size === s.fileSize) continue;
      if (!(await confirmed(fs, ref, size, metaRef))) return { ok: false, reason: NO_METADATA };
      if (size === undefined) return { ok: false, reason: `state file ${s.file} of operator "${op.name}" is missing` };
      return { ok: false, reason: `state file ${s.file} of operator "${op.name}" has ${size} bytes, expected ${s.fileSize} (truncated)` };
    }
  }
  return { ok: true, metadata };
}

/**
 * A file the metadata names, as a reference, or why the snapshot is bad: a name that leaves
 * its directory ("../..."). The snapshot is then skipped, never every listing failed.
 */
function referenceIn(make: () => string, what: string): string | VerifyResult {
  try {
    return make();
  } catch (e) {
    return { ok: false, reason: `${what}: ${(e as Error).message}` };
  }
}

/**
 * Whether a file's size that does not match the metadata stands, asked again (confirmSize):
 * false when the snapshot itself was discarded while we looked (discard removes the metadata
 * first: it simply no longer exists, which is not corruption). Two answers that disagree are
 * the storage's failure (a gateway's 404, a wrong Content-Length) and throw: taken as a
 * corrupt checkpoint, the newest good one was skipped for an older one at a restore, marked
 * abandoned and deleted first by retention.
 */
async function confirmed(fs: SnapshotFileSystem, file: string, first: number | undefined, metaRef: string): Promise<boolean> {
  const again = await confirmedSize(fs, file);
  if ((await sizeOrUndefined(fs, metaRef)) === undefined) return false;
  if (again !== first) throw new StorageError(`the storage gave two answers for the size of ${file}: ${first ?? 'no such file'}, then ${again ?? 'no such file'}`);
  return true;
}

/** The file's size by a second kind of request (SnapshotFileSystem.confirmSize), else size() again. */
export async function confirmedSize(fs: SnapshotFileSystem, file: string): Promise<number | undefined> {
  try {
    return await (fs.confirmSize !== undefined ? fs.confirmSize(file) : fs.size(file));
  } catch (e) {
    throw new StorageError(`cannot read the size of ${file}: ${messageOf(e)}`, { cause: e });
  }
}

/** The file's size, undefined when it does not exist; a storage failure throws (named). */
async function sizeOrUndefined(fs: SnapshotFileSystem, file: string): Promise<number | undefined> {
  try {
    return await fs.size(file);
  } catch (e) {
    throw new StorageError(`cannot read the size of ${file}: ${messageOf(e)}`, { cause: e });
  }
}
