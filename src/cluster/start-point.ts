/**
 * Where a job's first attempt starts (--from): fresh, the newest checkpoint in the checkpoint
 * storage, or a snapshot the user names by path (with Flink's claim modes). A snapshot that
 * cannot work is refused here, before anything is created or announced.
 */
import { existsSync } from 'node:fs';
import { METADATA_FILE, schemeOf } from '../checkpoint/names.ts';
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
  /** The job's name: `--from latest` resumes the job of this name (a checkpoint directory may hold several jobs). */
  readonly jobName?: string;
}

/** What a user who gave a path probably wanted: the newest checkpoint of the checkpoint directory. */
const LATEST_HINT = 'give a checkpoint or savepoint directory (one with a _metadata file), or --from latest to resume from the newest checkpoint in --checkpoint-dir';

const FRESH: StartPoint = { snapshot: undefined, own: false, claimedExternal: undefined, explicit: undefined };

export async function resolveStartPoint(req: StartRequest, storage: CheckpointStorage | undefined, snapshots: StorageResolver, log: StorageLog): Promise<StartPoint> {
  const from = req.from;
  if (from === undefined) return FRESH;
  if (from === 'latest' || from === 'latest-or-empty') return latestIn(from, storage, log, req.jobName);
  let reference: string;
  let v;
  try {
    const s = snapshots.forReference(from);
    reference = s.normalize(from);
    v = await s.verify(reference);
  } catch (e) {
    throw new StartError(`cannot restore from ${from}: ${(e as Error).message}`);
  }
  if (!v.ok) {
    if (v.reason !== NO_METADATA) throw new StartError(`cannot restore from ${from}: ${v.reason}`);
    // A mistyped path is the common case: say it is missing rather than that it lacks metadata.
    if (schemeOf(from) === undefined && !existsSync(reference)) throw new StartError(`${from} does not exist; ${LATEST_HINT}`);
    throw new StartError(`${from} is not a checkpoint or savepoint (no ${METADATA_FILE} file); ${LATEST_HINT}`);
  }
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
async function latestIn(from: 'latest' | 'latest-or-empty', storage: CheckpointStorage | undefined, log: StorageLog, jobName: string | undefined): Promise<StartPoint> {
  if (storage === undefined) throw new StartError(`--from ${from} needs a checkpoint directory (--checkpoint-dir DIR)`);
  const lasts: CompletedCheckpointRef[] = [];
  for (const job of await storage.jobs()) {
    const last = (await storage.completed(job, log)).at(-1);
    if (last !== undefined) lasts.push(last);
  }
  const choice = chooseLatest(lasts, jobName, storage.root);
  if ('error' in choice) throw new StartError(choice.error);
  if (choice.note !== undefined) log(choice.note);
  const latest = choice.pick;
  if (latest !== undefined) return { snapshot: latest, own: true, claimedExternal: undefined, explicit: undefined };
  if (from === 'latest') throw new StartError(`no completed checkpoint in ${storage.root}; use --from latest-or-empty to start fresh when there is none`);
  log(`weir: no completed checkpoint in ${storage.root}; starting fresh`);
  return FRESH;
}

/**
 * Which job `--from latest` resumes, from each job's newest checkpoint in the directory: the one
 * job of this name. Several jobs share a checkpoint directory (one job file run per tenant):
 * taking the newest of any job restored another job's state under its id, and its next
 * checkpoint replaced that job's. A directory of one job resumes it whatever its name (a job
 * renamed since), with a log line; otherwise no match, or several, is refused naming them.
 */
export function chooseLatest(
  lasts: readonly CompletedCheckpointRef[],
  jobName: string | undefined,
  root: string,
): { pick: CompletedCheckpointRef | undefined; note?: string } | { error: string } {
  const newest = (xs: readonly CompletedCheckpointRef[]) => xs.reduce<CompletedCheckpointRef | undefined>((b, x) => (b === undefined || x.metadata.completedAt > b.metadata.completedAt ? x : b), undefined);
  if (jobName === undefined || lasts.length <= 1) {
    const only = lasts[0];
    const renamed = jobName !== undefined && only !== undefined && only.metadata.jobName !== jobName;
    return renamed ? { pick: only, note: `weir: --from latest: the only job in ${root} is named ${JSON.stringify(only.metadata.jobName)}, not ${JSON.stringify(jobName)}; resuming it (job ${only.metadata.jobId})` } : { pick: newest(lasts) };
  }
  const named = lasts.filter((c) => c.metadata.jobName === jobName);
  const list = (xs: readonly CompletedCheckpointRef[]) => xs.map((c) => `${JSON.stringify(c.metadata.jobName)} (job ${c.metadata.jobId})`).join(', ');
  if (named.length === 1) return { pick: named[0] };
  if (named.length > 1) return { error: `--from latest: ${named.length} jobs named ${JSON.stringify(jobName)} have checkpoints in ${root}: ${list(named)}; name one with --from <its checkpoint directory>` };
  return { error: `--from latest: no job named ${JSON.stringify(jobName)} has a checkpoint in ${root} (it holds ${list(lasts)}); name one with --from <its checkpoint directory>, or set the job's name` };
}
