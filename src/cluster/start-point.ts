/**
 * Where a job's first attempt starts (--from): fresh, the newest checkpoint in the checkpoint
 * storage, or a snapshot the user names by path (with Flink's claim modes). A snapshot that
 * cannot work is refused here, before anything is created or announced.
 */
import { METADATA_FILE } from '../checkpoint/names.ts';
import type { CheckpointStorage, CompletedCheckpointRef, StorageLog, StorageResolver } from '../checkpoint/storage.ts';
import { NO_METADATA } from '../checkpoint/storage-verify.ts';
import { StartError } from './errors.ts';

export interface StartPoint {
  readonly snapshot: CompletedCheckpointRef | undefined;
  /** One of this storage's own checkpoints: the same job continues (its id, its numbering), and may subsume it. */
  readonly own: boolean;
  /** Claim mode on a snapshot from elsewhere: deleted once the first checkpoint after the restore completes. */
  readonly claimedExternal: string | undefined;
  /** The snapshot the user named by path: never fallen back from. */
  readonly explicit: string | undefined;
}

export interface StartRequest {
  /** 'latest', 'latest-or-empty', a path or URL, or undefined (fresh). */
  readonly from: string | undefined;
  readonly claimMode: 'claim' | 'no-claim' | undefined;
}

const FRESH: StartPoint = { snapshot: undefined, own: false, claimedExternal: undefined, explicit: undefined };

export async function resolveStartPoint(req: StartRequest, storage: CheckpointStorage | undefined, snapshots: StorageResolver, log: StorageLog): Promise<StartPoint> {
  const from = req.from;
  if (from === undefined) return FRESH;
  if (from === 'latest' || from === 'latest-or-empty') return latestIn(from, storage, log);
  let reference: string;
  let v;
  try {
    const s = snapshots.forReference(from);
    reference = s.normalize(from);
    v = await s.verify(reference);
  } catch (e) {
    throw new StartError(`cannot restore from ${from}: ${(e as Error).message}`);
  }
  if (!v.ok) throw new StartError(v.reason === NO_METADATA ? `${from} is not a checkpoint or savepoint (no ${METADATA_FILE} file)` : `cannot restore from ${from}: ${v.reason}`);
  const claim = req.claimMode === 'claim';
  const inOwnStorage = storage !== undefined && v.metadata.type === 'checkpoint' && storage.checkpointOf(reference) !== undefined;
  return {
    snapshot: { path: reference, metadata: v.metadata },
    own: claim && inOwnStorage,
    claimedExternal: claim && !inOwnStorage ? reference : undefined,
    explicit: reference,
  };
}

/** `--from latest` always resumes (claims) the job it finds. */
async function latestIn(from: 'latest' | 'latest-or-empty', storage: CheckpointStorage | undefined, log: StorageLog): Promise<StartPoint> {
  if (storage === undefined) throw new StartError(`--from ${from} needs a checkpoint directory (--checkpoint-dir DIR)`);
  const latest = await storage.latest(log);
  if (latest !== undefined) return { snapshot: latest, own: true, claimedExternal: undefined, explicit: undefined };
  if (from === 'latest') throw new StartError(`no completed checkpoint in ${storage.root}; use --from latest-or-empty to start fresh when there is none`);
  log(`weir: no completed checkpoint in ${storage.root}; starting fresh`);
  return FRESH;
}
