/** Checkpoint storage on a local directory: the embedded default. */
export { LocalCheckpointStorage, localSnapshots, verifyCheckpoint, isDirectory } from './local-storage.ts';
export { localFileSystem } from './local-file-system.ts';
export { LocalStateInputHandle, LocalStateOutputStream } from './local-streams.ts';
