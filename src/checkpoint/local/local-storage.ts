/**
 * Checkpoint storage on a local directory (the embedded default); layout in names.ts:
 *
 *   <dir>/<job-id>/chk-<n>/_metadata        written last: temp file, fsync, rename, fsync dir
 *   <dir>/<job-id>/chk-<n>/<op>-<i>.state   one state file per keyed operator subtask
 *   <dir>/<job-id>/shared/, taskowned/      reserved for incremental and task-owned state
 *   <dir>/<job-id>/checkpoint-history.jsonl statistics of completed and failed checkpoints
 *
 * A chk-<n> without verifying metadata is garbage from an aborted or interrupted attempt.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { FsCheckpointStorage, FsSnapshotStorage, type RandomHex } from '../storage-on-fs.ts';
import { verifySnapshot } from '../storage-verify.ts';
import type { VerifyResult } from '../storage.ts';
import { localFileSystem } from './local-file-system.ts';

export class LocalCheckpointStorage extends FsCheckpointStorage {
  constructor(root: string, randomHex?: RandomHex) {
    super(resolve(root), localFileSystem, randomHex);
  }
}

/** Savepoints and `--from` paths on the local file system, for jobs with or without a checkpoint directory. */
export const localSnapshots = new FsSnapshotStorage(localFileSystem);

/** Checks a local checkpoint or savepoint directory (see storage-verify.ts). */
export function verifyCheckpoint(dir: string): Promise<VerifyResult> {
  return verifySnapshot(localFileSystem, dir);
}

export function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
