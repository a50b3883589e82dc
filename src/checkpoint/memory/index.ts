/** In-memory checkpoint storage with injectable faults, for deterministic tests. */
export { MemoryCheckpointStorage, type MemoryStorageOptions } from './memory-storage.ts';
export { StorageFaults, type FaultKind, type FaultRule, type InjectedFault } from './faults.ts';
export { MemoryFileSystem, memoryReference } from './memory-file-system.ts';
