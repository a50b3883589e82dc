/**
 * Where a job's first attempt starts (--from): fresh, the newest checkpoint in the checkpoint
 * storage, or a snapshot the user names by path (with Flink's claim modes). A snapshot that
 * cannot work is refused here, before anything is created or announced.
 */
import { existsSync } from 'node:fs';
import { METADATA_FILE, schemeOf } from '../checkpoint/names.ts';
import type { CheckpointStorage, CompletedCheckpointRef, StorageLog, StorageResolver } from '../checkpoint/storage.ts';
import { NO_METADATA, SKIPPING_CHECKPOINT as SKIPPING } from '../checkpoint/storage-verify.ts';
import { NEWER_WEIR } from '../checkpoint/metadata.ts';
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
  // Per job directory: checkpoints a newer weir wrote (no corrupt ones to skip for older: that
  // restored older state, or started fresh, after a downgrade), and whether any were skipped.
  const newerIn = new Map<string, string>();
  const jobOf = new Map<CompletedCheckpointRef, string>();
  const skippedOnly: string[] = [];
  for (const job of await storage.jobs()) {
    let skipped = false;
    const noting: StorageLog = (line) => {
      if (line.startsWith(SKIPPING)) skipped = true;
      if (line.includes(NEWER_WEIR) && !newerIn.has(job)) newerIn.set(job, line.slice(SKIPPING.length));
      log(line);
    };
    // Another job's newest is only read (its name), not verified: it is never resumed here.
    const last = await storage.newestCompleted(job, noting, jobName);
    if (last !== undefined) {
      lasts.push(last);
      jobOf.set(last, job);
    } else if (skipped) {
      skippedOnly.push(job);
    }
  }
  const choice = chooseLatest(lasts, jobName, storage.root);
  if ('error' in choice) throw new StartError(choice.error);
  // Another tenant's checkpoints a newer weir wrote are not this job's business (before: they
  // refused every job of the directory); this job's, or any when none of this name is found, are.
  const newer = choice.pick !== undefined ? newerIn.get(jobOf.get(choice.pick)!) : newerIn.values().next().value;
  if (newer !== undefined) throw new StartError(`--from ${from}: ${newer}; run a weir that reads it, or name an older checkpoint with --from <its directory>`);
  if (choice.pick === undefined && skippedOnly.length > 0) {
    // A job whose every checkpoint fails its check looked like one with none: latest-or-empty
    // started it fresh, its input read and its output written again.
    throw new StartError(`--from ${from}: job ${skippedOnly.join(', ')} in ${storage.root} has checkpoints, none of which can be restored (see the lines above), and it may be this job; restore one by hand once repaired (--from <its directory>), or remove that job's directory to start fresh`);
  }
  if (choice.others !== undefined) {
    // Checkpoints of other jobs only: never theirs (restored under their id, the next checkpoints
    // replaced theirs). A job renamed since is named explicitly, its id kept with --claim-mode claim.
    const others = `no job named ${JSON.stringify(jobName)} has a checkpoint in ${storage.root} (it holds ${choice.others})`;
    if (from === 'latest') throw new StartError(`--from latest: ${others}; name one with --from <its checkpoint directory> (a job renamed since: with --claim-mode claim to keep its id), or set the job's name`);
    log(`weir: --from latest-or-empty: ${others}; starting fresh`);
    return FRESH;
  }
  const latest = choice.pick;
  if (latest !== undefined) return { snapshot: latest, own: true, claimedExternal: undefined, explicit: undefined };
  if (from === 'latest') throw new StartError(`no completed checkpoint in ${storage.root}; use --from latest-or-empty to start fresh when there is none`);
  log(`weir: no completed checkpoint in ${storage.root}; starting fresh`);
  return FRESH;
}

/**
 * Which job `--from latest` resumes, from each job's newest checkpoint in the directory: the one
 * job of this name. Several jobs share a checkpoint directory (one job file run per tenant):
 * taking another job's restored its state under its id, and its next checkpoints replaced that
 * job's, for good. So is a directory holding only another job (before: resumed as "renamed";
 * a new tenant's first start with latest-or-empty took over the one tenant there). Several of
 * this name are refused naming them; none: `others` lists what the directory holds.
 */
export function chooseLatest(
  lasts: readonly CompletedCheckpointRef[],
  jobName: string | undefined,
  root: string,
): { pick: CompletedCheckpointRef | undefined; others?: string } | { error: string } {
  const newest = (xs: readonly CompletedCheckpointRef[]) => xs.reduce<CompletedCheckpointRef | undefined>((b, x) => (b === undefined || x.metadata.completedAt > b.metadata.completedAt ? x : b), undefined);
  if (jobName === undefined) return { pick: newest(lasts) };
  const named = lasts.filter((c) => c.metadata.jobName === jobName);
  const list = (xs: readonly CompletedCheckpointRef[]) => xs.map((c) => `${JSON.stringify(c.metadata.jobName)} (job ${c.metadata.jobId})`).join(', ');
  // newestCompleted checks every file of a checkpoint of this name; only others' go unchecked.
  if (named.some((c) => c.filesUnchecked === true)) throw new Error(`chooseLatest: a checkpoint named ${JSON.stringify(jobName)} was not verified`);
  if (named.length === 1) return { pick: named[0] };
  if (named.length > 1) return { error: `--from latest: ${named.length} jobs named ${JSON.stringify(jobName)} have checkpoints in ${root}: ${list(named)}; name one with --from <its checkpoint directory>` };
  return lasts.length === 0 ? { pick: undefined } : { pick: undefined, others: list(lasts) };
}
