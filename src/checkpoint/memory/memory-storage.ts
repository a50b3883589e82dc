/**
 * Checkpoint storage in memory, with injectable faults: the fake for deterministic tests (a
 * manual clock, seeded faults, one thread). It runs the same storage code as the local
 * directory (storage-on-fs.ts) over MemoryFileSystem, so what a test sees is what local
 * storage does, minus the disk. Savepoint targets are references in the same store
 * (`memory://<store>/savepoints`).
 */
import { FsCheckpointStorage, type RandomHex } from '../storage-on-fs.ts';
import { StorageFaults } from './faults.ts';
import { MemoryFileSystem } from './memory-file-system.ts';

export interface MemoryStorageOptions {
  /** The store's name: references are memory://<store>/... (default "weir"). */
  readonly store?: string;
  readonly faults?: StorageFaults;
  readonly randomHex?: RandomHex;
}

export class MemoryCheckpointStorage extends FsCheckpointStorage {
  readonly files: MemoryFileSystem;
  readonly faults: StorageFaults;

  constructor(options: MemoryStorageOptions = {}) {
    const faults = options.faults ?? new StorageFaults();
    const fs = new MemoryFileSystem(options.store ?? 'weir', faults);
    super(fs.base, fs, options.randomHex);
    this.files = fs;
    this.faults = faults;
  }
}
