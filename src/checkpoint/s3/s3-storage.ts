/**
 * Checkpoint storage on S3: the layout of names.ts under `s3://bucket/prefix`, the same code as
 * the local directory (storage-on-fs.ts) over S3FileSystem. The metadata is one PUT, written
 * after every state file; a checkpoint exists iff it verifies. One state object per keyed
 * operator subtask, so PUTs per checkpoint grow with the tasks, not with key groups.
 */
import { FsCheckpointStorage, FsSnapshotStorage, type RandomHex } from '../storage-on-fs.ts';
import { S3FileSystem } from './s3-file-system.ts';
import { parseS3Reference, type S3Config } from './settings.ts';

export class S3CheckpointStorage extends FsCheckpointStorage {
  constructor(root: string, readonly files: S3FileSystem, randomHex?: RandomHex) {
    parseS3Reference(root);
    super(root, files, randomHex);
  }

  static create(root: string, config: S3Config): S3CheckpointStorage {
    return new S3CheckpointStorage(root, new S3FileSystem(config));
  }

  close(): Promise<void> {
    return this.files.close();
  }
}

/** Savepoints and `--from` references on S3, for jobs whose checkpoints are elsewhere (or nowhere). */
export function s3Snapshots(config: S3Config, files: S3FileSystem = new S3FileSystem(config)): FsSnapshotStorage {
  return new FsSnapshotStorage(files);
}
