/**
 * Settings of the disk state backend (state.backend.disk.* in the option registry): where
 * each subtask's store goes and how many entries its write-back cache holds.
 */
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { WeirError } from '../../core/errors.ts';

export interface DiskBackendOptions {
  /** Directory under which each operator subtask makes its own store directory; default os.tmpdir(). */
  readonly dir?: string;
  /** Entries (over all states of a subtask) the write-back cache holds; default defaultCacheEntries(). */
  readonly cacheEntries?: number;
  /**
   * Whether full snapshots read and encode the store on the snapshot reader thread
   * (reader-thread.ts) rather than on the task's thread; default true.
   */
  readonly snapshotThread?: boolean;
}

export const DEFAULT_CACHE_ENTRIES = 100_000;
/** JS heap allowed per cached entry when the heap is small (a value, its entry and map slot take a few hundred bytes). */
const HEAP_BYTES_PER_ENTRY = 8 << 10;

/**
 * DEFAULT_CACHE_ENTRIES, or fewer in a small heap (node --max-old-space-size): a cache that
 * filled most of the heap would spend the job's time in the garbage collector.
 */
export function defaultCacheEntries(): number {
  return Math.max(1000, Math.min(DEFAULT_CACHE_ENTRIES, Math.floor(getHeapStatistics().heap_size_limit / HEAP_BYTES_PER_ENTRY)));
}
/**
 * Dirty entries written per store transaction, as a share of the cache (at least 1). Dirty
 * entries evicted wait for the flush outside the cache (cache.ts), so up to
 * cacheEntries * (1 + FLUSH_SHARE) entries are in memory. Measured: a share of 1 wrote 1 M
 * random keys a little faster, but doubled the live set and the GC time in a 64 MB heap.
 */
const FLUSH_SHARE = 0.25;

export interface ResolvedDiskOptions {
  readonly dir: string;
  readonly cacheEntries: number;
  readonly flushEvery: number;
  readonly snapshotThread: boolean;
}

export function resolveDiskOptions(o: DiskBackendOptions = {}): ResolvedDiskOptions {
  const dir = o.dir ?? tmpdir();
  if (typeof dir !== 'string' || dir === '') throw new WeirError('CONFIG', `state.backend.disk.dir must be a non-empty path, got ${JSON.stringify(o.dir)}`);
  const cacheEntries = o.cacheEntries ?? defaultCacheEntries();
  if (!Number.isInteger(cacheEntries) || cacheEntries < 1) {
    throw new WeirError('CONFIG', `state.backend.disk.cache-entries must be a positive integer, got ${String(o.cacheEntries)}`);
  }
  const snapshotThread = o.snapshotThread ?? true;
  if (typeof snapshotThread !== 'boolean') throw new WeirError('CONFIG', `state.backend.disk.snapshot-thread must be on or off, got ${String(o.snapshotThread)}`);
  return { dir: resolve(dir), cacheEntries, flushEvery: Math.max(1, Math.floor(cacheEntries * FLUSH_SHARE)), snapshotThread };
}
