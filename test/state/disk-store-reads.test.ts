/**
 * The disk store's reads after write-behind batches: `drain()` must let reads see every batch
 * the write thread committed, including one that had already committed when drain() was called
 * (not busy). lmdb-js renews its read transaction once per event-loop turn, so within one turn a
 * read after a batch's commit saw the value from before it unless the store renewed its reads:
 * the backend's TTL removals (sent during a snapshot) then stayed visible to keys() in the same
 * turn (a clean-clone run failed "TTL: a snapshot ... removes them from the store" this way).
 * Everything below runs in one synchronous stretch, so the outcome does not depend on timing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DiskStore } from '../../src/state/disk/store.ts';
import { BatchWriter } from '../../src/state/disk/write-thread.ts';
import { encodeStoreKey } from '../../src/state/disk/keys.ts';

const base = mkdtempSync(join(tmpdir(), 'weir-disk-store-reads-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** Spins (bounded) until the write thread has committed batch `seq`, without yielding to the event loop. */
function spinUntilCommitted(store: DiskStore, seq: number): void {
  const until = Date.now() + 10_000;
  while (store.committedBehind() < seq) {
    if (Date.now() > until) throw new Error(`batch ${seq} not committed within 10 s`);
  }
}

describe('disk store reads after write-behind batches', () => {
  it('a removal committed before drain() is seen by the next read in the same turn', () => {
    const store = new DiskStore(base, 'test', false);
    const key = encodeStoreKey(3, 1, 'k');
    store.write((w) => w.put(key, Buffer.from('v')));
    store.renewReads();
    expect(store.get(key)).toBeDefined(); // a read: the turn's read transaction now holds 'v'
    const w = new BatchWriter(1024);
    w.remove(3, 1, 'k');
    const seq = store.writeBehind(w.take());
    spinUntilCommitted(store, seq); // committed: drain() finds the thread idle
    store.drain();
    expect(store.get(key)).toBeUndefined();
    store.dispose();
  });
});
