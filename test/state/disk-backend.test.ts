/**
 * The disk backend: the KeyedStateBackend contract (backend-contract.ts) with a write-back
 * cache big enough to hold everything, and again with a tiny one (every access goes through
 * the store: eviction, flushes and misses); then what only the disk backend has: state far
 * beyond the cache, checkpoints that restore across backends (heap -> disk -> heap),
 * snapshot isolation against the store itself, TTL cleanup on snapshot, and its directory.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { MapStateDescriptor, ValueStateDescriptor } from '../../src/core/state.ts';
import type { KeyedStateBackend, KeyedStateBackendFactory, KeyedStateHandle } from '../../src/state/backend.ts';
import { DiskKeyedStateBackend, diskBackendFactory } from '../../src/state/disk/backend.ts';
import { heapBackendFactory } from '../../src/state/heap/backend.ts';
import { snapshotReaderReady } from '../../src/state/disk/reader-thread.ts';
import { keyGroupRangeForSubtask } from '../../src/state/key-groups.ts';
import { keyedStateBackendFactory } from '../../src/state/backends.ts';
import type { KeyGroupRange } from '../../src/core/checkpoint-format.ts';
import {
  backendContract, d, expected, fill, FULL, KEYS, kgOf, MAXP, MemoryStreams, read, TTL, writeSnapshot,
} from './backend-contract.ts';

const base = mkdtempSync(join(tmpdir(), 'weir-disk-test-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

// Full snapshots go through the snapshot reader thread once it is up (reader-thread.ts): up
// before any test here, so each run below takes the path it names.
beforeAll(async () => {
  const warm = diskBackendFactory({ dir: base }).create({ keyGroupRange: FULL, maxParallelism: MAXP, clock: new ManualClock(0), where: 'warm-up' });
  warm.getValueState(new ValueStateDescriptor<number>('x'));
  expect(await snapshotReaderReady(60_000)).toBe(true);
  warm.dispose();
}, 70_000);

backendContract(diskBackendFactory({ dir: base }));
backendContract({ ...diskBackendFactory({ dir: base, cacheEntries: 7 }), name: 'disk (cache of 7 entries)' });
backendContract({ ...diskBackendFactory({ dir: base, snapshotThread: false }), name: 'disk (snapshots on the task thread)' });

function make(factory: KeyedStateBackendFactory, range: KeyGroupRange = FULL, clock = new ManualClock(100)): KeyedStateBackend {
  return factory.create({ keyGroupRange: range, maxParallelism: MAXP, clock, where: 'operator "t" (subtask 1/1)' });
}

async function roundTrip(from: KeyedStateBackend, to: KeyedStateBackendFactory, range = FULL, clock = new ManualClock(600)): Promise<KeyedStateBackend> {
  const streams = new MemoryStreams();
  const h = await writeSnapshot(from.snapshot(), streams);
  const r = make(to, range, clock);
  await r.restore(h.streams.map((s) => streams.input(s.name)));
  return r;
}

describe('disk backend', () => {
  const small = diskBackendFactory({ dir: base, cacheEntries: 50 });

  it('a key too long for the store fails at its own write; a flush that cannot encode an entry leaves every entry queued (before: later keys stayed dirty but unlisted, their changes never written)', async () => {
    const b = make(diskBackendFactory({ dir: base, cacheEntries: 40 }));
    const v = b.getValueState(new ValueStateDescriptor<unknown>('v'));
    b.setCurrentKey('a');
    v.update(1);
    b.setCurrentKey('x'.repeat(3000));
    expect(() => v.update(2)).toThrow(/too long for the disk state backend/);
    // A value msgpack cannot encode fails a flush (of whichever record fills the batch); caught,
    // and the value replaced, every other key still reaches the store.
    b.setCurrentKey('bad');
    v.update({ s: Symbol('not encodable') });
    let failed = 0;
    const expected = new Map<string, number>([['a', 1]]);
    for (let i = 0; i < 60; i++) {
      b.setCurrentKey(`z${i}`);
      try {
        v.update(i);
      } catch {
        failed++;
      }
      expected.set(`z${i}`, i);
    }
    expect(failed).toBeGreaterThan(0);
    b.setCurrentKey('bad');
    v.update(7);
    expected.set('bad', 7);
    const r = await roundTrip(b, heapBackendFactory);
    const rv = r.getValueState(new ValueStateDescriptor<unknown>('v'));
    const got = new Map<string, unknown>();
    for (const k of expected.keys()) {
      r.setCurrentKey(k);
      got.set(k, rv.value());
    }
    expect(got).toEqual(expected);
  });

  it('ids of dropped states are given again: a window state per window runs for good (before: 65,535 windows, then every record failed), and a snapshot taken before a reuse keeps the dropped state', async () => {
    const b = make(diskBackendFactory({ dir: base, cacheEntries: 7 }), { start: 0, end: 0 });
    const key = Array.from({ length: 1000 }, (_, i) => `k${i}`).find((k) => kgOf(k) === 0)!;
    for (let w = 0; w < 70_000; w++) {
      const st = b.getValueState(new ValueStateDescriptor<number>(`__w${w}`));
      if (w % 1000 === 0) {
        b.setCurrentKey(key);
        expect(st.value()).toBeUndefined(); // nothing of an earlier state under a reused id
        st.update(w);
      }
      b.dropState(`__w${w}`);
    }
    // A snapshot while a state holds values; then the state is dropped and its id reused.
    const kept = b.getValueState(new ValueStateDescriptor<number>('kept'));
    b.setCurrentKey(key);
    kept.update(42);
    const streams = new MemoryStreams();
    const snap = b.snapshot();
    b.dropState('kept');
    const next = b.getValueState(new ValueStateDescriptor<number>('next'));
    next.update(7);
    const h = await writeSnapshot(snap, streams);
    const r = make(heapBackendFactory, { start: 0, end: 0 });
    await r.restore(h.streams.map((x) => streams.input(x.name)));
    r.setCurrentKey(key);
    expect(r.getValueState(new ValueStateDescriptor<number>('kept')).value()).toBe(42);
    expect(r.getValueState(new ValueStateDescriptor<number>('next')).value()).toBeUndefined();
    b.dispose();
    r.dispose?.();
  }, 120_000);

  it('holds far more entries than its cache, every one readable, and the cache stays bounded', () => {
    const b = make(small) as DiskKeyedStateBackend;
    const v = b.getValueState(new ValueStateDescriptor<string>('v'));
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      b.setCurrentKey(`k${i}`);
      v.update(`value ${i} `.repeat(3));
      expect(b.cachedEntries()).toBeLessThanOrEqual(50);
    }
    for (let i = n - 1; i >= 0; i -= 7) {
      b.setCurrentKey(`k${i}`);
      expect(v.value()).toBe(`value ${i} `.repeat(3));
    }
    expect([...b.keys('v')].length).toBe(n);
    b.dispose();
  });

  it('heap -> disk -> heap: a checkpoint of either backend restores into the other, every kind and key equal', async () => {
    const heap = make(heapBackendFactory);
    fill(heap);
    const disk = await roundTrip(heap, small);
    KEYS.forEach((k, i) => expect(read(disk, k), String(k)).toEqual(expected(i)));
    // Changed on disk, then back to the heap.
    disk.setCurrentKey(KEYS[5]);
    disk.getValueState(d.value).update({ n: 555, tags: ['disk'] });
    const back = await roundTrip(disk, heapBackendFactory);
    KEYS.forEach((k, i) => {
      if (i !== 5) expect(read(back, k), String(k)).toEqual(expected(i));
    });
    back.setCurrentKey(KEYS[5]);
    expect(back.getValueState(d.value).value()).toEqual({ n: 555, tags: ['disk'] });
    disk.dispose();
  });

  it('rescale 2 -> 3 and 3 -> 1 across backends: every key once, in the right range', async () => {
    const subsets: unknown[][] = [];
    const parts2 = [0, 1].map((i) => {
      const range = keyGroupRangeForSubtask(MAXP, 2, i);
      const b = make(i === 0 ? small : heapBackendFactory, range);
      subsets.push(KEYS.filter((k) => kgOf(k) >= range.start && kgOf(k) <= range.end));
      fill(b, subsets[i]);
      return b;
    });
    const snaps: { s: MemoryStreams; h: KeyedStateHandle }[] = [];
    for (const b of parts2) {
      const s = new MemoryStreams();
      snaps.push({ s, h: await writeSnapshot(b.snapshot(), s) });
    }
    const inputs = () => snaps.flatMap(({ s, h }) => h.streams.map((x) => s.input(x.name)));
    const three: KeyedStateBackend[] = [];
    for (let i = 0; i < 3; i++) {
      const range = keyGroupRangeForSubtask(MAXP, 3, i);
      const b = make(small, range, new ManualClock(600));
      await b.restore(inputs());
      const mine = KEYS.filter((k) => kgOf(k) >= range.start && kgOf(k) <= range.end);
      b.getValueState(d.value);
      expect([...b.keys(d.value.name)].length).toBe(mine.length);
      three.push(b);
    }
    const s3: { s: MemoryStreams; h: KeyedStateHandle }[] = [];
    for (const b of three) {
      const s = new MemoryStreams();
      s3.push({ s, h: await writeSnapshot(b.snapshot(), s) });
    }
    const one = make(small, FULL, new ManualClock(600));
    await one.restore(s3.flatMap(({ s, h }) => h.streams.map((x) => s.input(x.name))));
    for (const subset of subsets) subset.forEach((k, i) => expect(read(one, k), String(k)).toEqual(expected(i)));
    expect([...one.keys(d.value.name)].length).toBe(KEYS.length);
  });

  it('the snapshot is the store at the synchronous phase, even when changes are flushed and evicted meanwhile', async () => {
    const b = make(small);
    const v = b.getValueState(new ValueStateDescriptor<number>('n'));
    for (let i = 0; i < 2000; i++) {
      b.setCurrentKey(i);
      v.update(i);
    }
    const streams = new MemoryStreams();
    const h = await writeSnapshot(b.snapshot(), streams, 'op-0.state', (step) => {
      // Far more writes than the cache holds: they reach the store while the snapshot reads it.
      for (let i = 0; i < 2000; i++) {
        b.setCurrentKey(i);
        if (i % 3 === 0) v.clear();
        else v.update(-step - 1);
      }
      b.setCurrentKey(`new-${step}`);
      v.update(7);
    });
    const r = make(heapBackendFactory);
    await r.restore([streams.input(h.streams[0]!.name)]);
    const rv = r.getValueState(new ValueStateDescriptor<number>('n'));
    for (let i = 0; i < 2000; i++) {
      r.setCurrentKey(i);
      expect(rv.value()).toBe(i);
    }
    expect([...r.keys('n')].length).toBe(2000);
  });

  it('TTL: a snapshot leaves expired entries out and removes them from the store; live ones stay', async () => {
    const clock = new ManualClock(0);
    const b = make(small, FULL, clock);
    const tv = b.getValueState(new ValueStateDescriptor<string>('tv', { ttl: TTL }));
    const tm = b.getMapState(new MapStateDescriptor<string, number>('tm', { ttl: TTL }));
    const write = (i: number): void => {
      b.setCurrentKey(i);
      tv.update(`x${i}`);
      tm.put('a', i);
    };
    for (let i = 0; i < 200; i++) write(i);
    clock.advanceTo(900);
    for (let i = 200; i < 300; i++) write(i);
    for (let i = 0; i < 200; i += 2) {
      b.setCurrentKey(i);
      tm.put('b', i); // a map entry written later: the key stays, with 'b' only
    }
    clock.advanceTo(1500); // written at 0: expired; at 900: live
    const streams = new MemoryStreams();
    const h = await writeSnapshot(b.snapshot(), streams);
    expect(h.entries).toBe(100 + 200);
    expect([...b.keys('tv')].length).toBe(100); // expired values removed by the snapshot
    expect([...b.keys('tm')].length).toBe(200);
    const r = make(heapBackendFactory, FULL, new ManualClock(1500));
    await r.restore([streams.input(h.streams[0]!.name)]);
    const rv = r.getValueState(new ValueStateDescriptor<string>('tv', { ttl: TTL }));
    const rm = r.getMapState(new MapStateDescriptor<string, number>('tm', { ttl: TTL }));
    expect([...r.keys('tv')].length).toBe(100);
    r.setCurrentKey(250);
    expect(rv.value()).toBe('x250');
    r.setCurrentKey(10);
    expect([...rm.entries()]).toEqual([['b', 10]]);
    r.setCurrentKey(11);
    expect([...rm.entries()]).toEqual([]);
    // Never returned once expired, whether read from the cache or the store.
    clock.advanceTo(1900);
    for (let i = 0; i < 300; i++) {
      b.setCurrentKey(i);
      expect(tv.value()).toBeUndefined();
    }
  });

  it('TTL: expired entries leave the store by the incremental cleanup, without reads or snapshots', () => {
    const clock = new ManualClock(0);
    const b = make(diskBackendFactory({ dir: base, cacheEntries: 40 }), FULL, clock) as DiskKeyedStateBackend;
    const tv = b.getValueState(new ValueStateDescriptor<number>('tv', { ttl: TTL }));
    const other = b.getValueState(new ValueStateDescriptor<number>('other'));
    for (let i = 0; i < 3000; i++) {
      b.setCurrentKey(i);
      tv.update(i);
    }
    expect([...b.keys('tv')].length).toBe(3000);
    clock.advanceTo(1000); // every tv entry expired
    b.setCurrentKey(5);
    tv.update(5); // one live again
    // Unrelated writes: each flush of the cache (every 10 dirty entries) looks at 20 stored entries.
    for (let i = 0; i < 2000; i++) {
      b.setCurrentKey(`o${i}`);
      other.update(i);
    }
    expect([...b.keys('tv')].map((x) => x.key)).toEqual([5]);
    expect([...b.keys('other')].length).toBe(2000);
    b.setCurrentKey(5);
    expect(tv.value()).toBe(5);
  });

  it('makes its store in a directory of its own under the configured one, removed on dispose', () => {
    const dir = join(base, 'nested', 'place');
    const b = make(diskBackendFactory({ dir })) as DiskKeyedStateBackend;
    expect(b.storeDir()).toBeUndefined(); // nothing made before state is used
    b.getValueState(new ValueStateDescriptor<number>('x'));
    const own = b.storeDir()!;
    expect(own.startsWith(dir)).toBe(true);
    expect(existsSync(join(own, 'data.mdb'))).toBe(true);
    b.dispose();
    expect(existsSync(own)).toBe(false);
  });

  it('refuses bad settings and keys too long for the store', () => {
    expect(() => diskBackendFactory({ cacheEntries: 0 })).toThrow(/cache-entries must be a positive integer/);
    expect(() => diskBackendFactory({ dir: '' })).toThrow(/must be a non-empty path/);
    expect(() => diskBackendFactory({ snapshotThread: 'yes' as never })).toThrow(/snapshot-thread must be on or off/);
    expect(keyedStateBackendFactory('disk', { disk: { dir: base } }).name).toBe('disk');
    const b = make(small);
    const v = b.getValueState(new ValueStateDescriptor<number>('x'));
    b.setCurrentKey('k'.repeat(5000));
    expect(() => v.value()).toThrow(/too long for the disk state backend/);
    b.dispose();
  });
});
