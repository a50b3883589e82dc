/**
 * Which storage serves a reference, by its scheme and place: the job's configured checkpoint
 * storage first, then the local file system for plain paths. Savepoint targets, `--from`
 * pointers and the locations tasks receive are all resolved here, so a job can checkpoint to
 * one storage and take savepoints to another (as Flink's FileSystem lookup by scheme).
 */
import type { CheckpointStreamFactory, StateInputHandle } from '../core/state-streams.ts';
import { localSnapshots } from './local/local-storage.ts';
import { s3Snapshots } from './s3/s3-storage.ts';
import { DEFAULT_S3_CONFIG, type S3Config } from './s3/settings.ts';
import { schemeOf } from './names.ts';
import { StorageError } from './storage-error.ts';
import type { CheckpointStorage, CheckpointStorageWorkerView, SnapshotStorage, StorageResolver } from './storage.ts';

export class SchemeStorageResolver implements StorageResolver {
  readonly workerView: CheckpointStorageWorkerView;

  constructor(private readonly storages: readonly SnapshotStorage[]) {
    const forRef = (ref: string) => this.forReference(ref).workerView;
    // resolveLocation throws for a reference no storage serves; the asynchronous operations reject.
    this.workerView = {
      resolveLocation: (reference: string): CheckpointStreamFactory => forRef(reference).resolveLocation(reference),
      openState: async (reference: string): Promise<StateInputHandle> => forRef(reference).openState(reference),
      discardState: async (location: string, name: string): Promise<void> => forRef(location).discardState(location, name),
    };
  }

  forReference(reference: string): SnapshotStorage {
    const s = this.storages.find((x) => x.handles(reference));
    if (s !== undefined) return s;
    const scheme = schemeOf(reference);
    throw new StorageError(`no checkpoint storage here serves ${reference}` + (scheme === 'memory' ? ' (in-memory storage lives in the thread that created it: run with workers: 1)' : ''));
  }
}

/**
 * The configured checkpoint storage (if any) before local paths and S3 (s3:// references with
 * the job's S3 settings; the SDK loads on the first s3:// request, so a job that never names
 * one does not load it).
 */
export function storageResolver(configured?: CheckpointStorage, s3: S3Config = DEFAULT_S3_CONFIG): StorageResolver {
  const rest = [localSnapshots, s3Snapshots(s3)];
  return new SchemeStorageResolver(configured !== undefined ? [configured, ...rest] : rest);
}
