/**
 * Full disk snapshots read and encoded on the snapshot reader thread (reader-thread.ts):
 * - the state file is byte for byte the one the task's thread writes (seeded state of every
 *   kind, TTL, string and number keys, many key groups), so savepoints, rescaling and heap
 *   restores read it as before;
 * - writes after the synchronous phase (flushed and evicted meanwhile) are not in it;
 * - TTL entries expired at the synchronous phase are left out and reported (then removed);
 * - an abort in the middle releases the thread's read: the next snapshot works, the store's
 *   reader table holds no transaction, and a process with a snapshot in the middle exits.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor } from '../../src/core/state.ts';
import { Rng } from '../../src/core/random.ts';
import type { KeyedStateBackend, KeyedStateBackendFactory } from '../../src/state/backend.ts';
import { diskBackendFactory, type DiskKeyedStateBackend } from '../../src/state/disk/backend.ts';
import { snapshotReaderReady, terminateSnapshotReader } from '../../src/state/disk/reader-thread.ts';
import { ThreadedDiskSnapshot } from '../../src/state/disk/threaded-snapshot.ts';
import { DiskSnapshot } from '../../src/state/disk/snapshot.ts';
import { heapBackendFactory } from '../../src/state/heap/backend.ts';
import { FULL, MAXP, MemoryStreams, TTL, writeSnapshot } from './backend-contract.ts';
import { testSeed } from '../api/util.ts';

const base = mkdtempSync(join(tmpdir(), 'weir-disk-thread-test-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
// The thread starts with the first store; snapshots use it once it is up.
beforeAll(async () => {
  const warm = make(diskBackendFactory({ dir: base }));
  warm.getValueState(new ValueStateDescriptor<number>('x'));
  expect(await snapshotReaderReady(60_000)).toBe(true);
  warm.dispose();
}, 70_000);

const onThread = diskBackendFactory({ dir: base, cacheEntries: 300 });
const onTask = diskBackendFactory({ dir: base, cacheEntries: 300, snapshotThread: false });

function make(factory: KeyedStateBackendFactory, clock = new ManualClock(100)): KeyedStateBackend {
  return factory.create({ keyGroupRange: FULL, maxParallelism: MAXP, clock, where: 'operator "t" (subtask 1/1)' });
}

const dv = new ValueStateDescriptor<number>('v');
const ds = new ValueStateDescriptor<{ s: string; n: number[] }>('obj');
const dl = new ListStateDescriptor<string>('list');
const dm = new MapStateDescriptor<string, number>('map');
const dt = new ValueStateDescriptor<string>('ttl', { ttl: TTL });
const dtm = new MapStateDescriptor<string, number>('ttl-map', { ttl: TTL });

/** The same seeded writes into `b`: every kind, string and number keys, some TTL entries expired by `expireAt`. */
function seeded(b: KeyedStateBackend, seed: number, clock: ManualClock): void {
  const rng = new Rng(seed);
  for (let i = 0; i < 6000; i++) {
    const key = rng.bool(0.7) ? `user-${rng.int(4000)}-\u00e9${i % 3 === 0 ? '\u4e2d' : ''}` : rng.int(100_000) - 50_000;
    b.setCurrentKey(key);
    switch (rng.int(6)) {
      case 0: b.getValueState(dv).update(rng.bool() ? rng.int(300) : rng.next() * 1e6); break;
      case 1: b.getValueState(ds).update({ s: `s${rng.int(99)}`, n: [rng.int(9), i] }); break;
      case 2: b.getListState(dl).add(`e${i}`); break;
      case 3: b.getMapState(dm).put(`m${rng.int(5)}`, i); break;
      case 4: b.getValueState(dt).update(`t${i}`); break;
      default: b.getMapState(dtm).put(`k${rng.int(3)}`, i);
    }
    if (i === 3000) clock.advanceTo(800); // the first half's TTL entries expire at 1100, the second half's at 1800
  }
  clock.advanceTo(1500);
}

async function fileOf(b: KeyedStateBackend): Promise<{ bytes: Buffer; entries: number; kind: string }> {
  const snap = b.snapshot();
  const kind = snap instanceof ThreadedDiskSnapshot ? 'thread' : snap instanceof DiskSnapshot ? 'task' : 'other';
  const streams = new MemoryStreams();
  const h = await writeSnapshot(snap, streams);
  return { bytes: streams.files.get(h.streams[0]!.name)!, entries: h.entries ?? -1, kind };
}

describe('disk snapshots on the reader thread', () => {
  it('write the same bytes as the task thread does (seeded state of every kind, TTL, many key groups)', async () => {
    const seed = testSeed('disk-snapshot-thread');
    const c1 = new ManualClock(100);
    const c2 = new ManualClock(100);
    const a = make(onTask, c1);
    const b = make(onThread, c2);
    seeded(a, seed, c1);
    seeded(b, seed, c2);
    const fa = await fileOf(a);
    const fb = await fileOf(b);
    expect([fa.kind, fb.kind]).toEqual(['task', 'thread']);
    expect(fb.entries).toBe(fa.entries);
    expect(fb.bytes.length).toBe(fa.bytes.length);
    expect(fb.bytes.equals(fa.bytes)).toBe(true);
    // And the heap backend restores it: one key of each state.
    a.dispose();
    b.dispose();
  });

  it('leave out what is written after the synchronous phase, though it is flushed and evicted meanwhile', async () => {
    const b = make(onThread);
    const v = b.getValueState(dv);
    for (let i = 0; i < 5000; i++) {
      b.setCurrentKey(i);
      v.update(i);
    }
    const snap = b.snapshot();
    expect(snap).toBeInstanceOf(ThreadedDiskSnapshot);
    const streams = new MemoryStreams();
    const h = await writeSnapshot(snap, streams, 'op-0.state', (step) => {
      for (let i = 0; i < 5000; i += 3) {
        b.setCurrentKey(i);
        if (i % 2 === 0) v.clear();
        else v.update(-step - 1);
      }
      b.setCurrentKey(`new-${step}`);
      v.update(7);
    });
    // Also when the steps come only after the writes: the thread's view was fixed at the barrier.
    const r = make(heapBackendFactory);
    await r.restore([streams.input(h.streams[0]!.name)]);
    const rv = r.getValueState(dv);
    for (let i = 0; i < 5000; i++) {
      r.setCurrentKey(i);
      expect(rv.value()).toBe(i);
    }
    expect([...r.keys('v')].length).toBe(5000);
    b.dispose();
  });

  it('a view fixed at the barrier even when the task writes everything before the first step', async () => {
    const b = make(onThread);
    const v = b.getValueState(dv);
    for (let i = 0; i < 3000; i++) {
      b.setCurrentKey(i);
      v.update(i);
    }
    const snap = b.snapshot();
    for (let i = 0; i < 3000; i++) {
      b.setCurrentKey(i);
      v.update(i + 1_000_000);
    }
    (b as DiskKeyedStateBackend).keysInGroup('v', 0); // flushes every change to the store now
    const streams = new MemoryStreams();
    const h = await writeSnapshot(snap, streams);
    const r = make(heapBackendFactory);
    await r.restore([streams.input(h.streams[0]!.name)]);
    for (let i = 0; i < 3000; i += 7) {
      r.setCurrentKey(i);
      expect(r.getValueState(dv).value()).toBe(i);
    }
    b.dispose();
  });

  it('leave out TTL entries expired at the synchronous phase, and report them: the backend removes them', async () => {
    const clock = new ManualClock(0);
    const b = make(onThread, clock);
    const tv = b.getValueState(dt);
    const tm = b.getMapState(dtm);
    for (let i = 0; i < 400; i++) {
      if (i === 200) clock.advanceTo(900);
      b.setCurrentKey(i);
      tv.update(`x${i}`);
      tm.put('a', i);
    }
    clock.advanceTo(1500); // written at 0: expired; at 900: live
    const snap = b.snapshot();
    expect(snap).toBeInstanceOf(ThreadedDiskSnapshot);
    const streams = new MemoryStreams();
    const h = await writeSnapshot(snap, streams);
    expect(h.entries).toBe(200 + 200);
    expect([...b.keys('ttl')].length).toBe(200);
    expect([...b.keys('ttl-map')].length).toBe(200);
    const r = make(heapBackendFactory, new ManualClock(1500));
    await r.restore([streams.input(h.streams[0]!.name)]);
    r.setCurrentKey(10);
    expect(r.getValueState(dt).value()).toBeUndefined();
    r.setCurrentKey(300);
    expect(r.getValueState(dt).value()).toBe('x300');
    b.dispose();
  });

  it('an abort in the middle releases the read: no reader transaction left, and the next snapshot works', async () => {
    const b = bigState();
    const first = b.snapshot();
    expect(first).toBeInstanceOf(ThreadedDiskSnapshot);
    const streams = new MemoryStreams();
    let woken = 0;
    const result = first.write({ streams, streamName: 'a.state', wake: () => void woken++ });
    result.catch(() => {});
    // Some blocks taken, then the checkpoint is aborted.
    for (let i = 0; i < 200 && woken < 3; i++) {
      first.step();
      await new Promise((r) => setTimeout(r, 5));
    }
    first.abort();
    await expect(result).rejects.toThrow(/aborted/);
    // The thread lets go of its transaction: the store's reader table shows none held.
    const env = await openEnv(b.storeDir()!);
    let held = '';
    for (let i = 0; i < 200; i++) {
      held = heldReaders(env.readerList());
      if (held === '') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(held).toBe('');
    void env.close();
    const second = await fileOf(b);
    expect(second.kind).toBe('thread');
    expect(second.entries).toBe(BIG_KEYS);
    b.dispose();
  });

  it('a reader thread that dies mid-snapshot fails that snapshot with a coded error; the next ones work', async () => {
    const b = bigState();
    const snap = b.snapshot();
    expect(snap).toBeInstanceOf(ThreadedDiskSnapshot);
    // Nothing taken yet: the thread stops at its in-flight bound, in the middle of the store.
    await new Promise((r) => setTimeout(r, 50));
    await terminateSnapshotReader();
    const streams = new MemoryStreams();
    const result = writeSnapshot(snap, streams, 'a.state');
    await expect(result).rejects.toMatchObject({ code: 'STATE_BACKEND', message: expect.stringMatching(/reader thread went away/) });
    // The next snapshot reads on the task's thread (the new thread is not up yet), then on the new thread.
    const next = await fileOf(b);
    expect(next.entries).toBe(BIG_KEYS);
    expect(await snapshotReaderReady(60_000)).toBe(true);
    const after = await fileOf(b);
    expect(after.kind).toBe('thread');
    expect(after.bytes.equals(next.bytes)).toBe(true);
    b.dispose();
  }, 70_000);

  it('a process with a snapshot in the middle on the thread exits by itself, and so does a worker thread terminated with one', () => {
    const dir = mkdtempSync(join(base, 'exit-'));
    const script = join(dir, 'run.mts');
    const src = (p: string) => JSON.stringify(fileURLToPath(new URL(`../../src/${p}`, import.meta.url)));
    // tsx's ESM API (its "import" export; require.resolve would give the CommonJS one).
    const tsxDir = dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
    const tsxExports = (JSON.parse(readFileSync(join(tsxDir, 'package.json'), 'utf8')) as { exports: Record<string, { import: { default: string } }> }).exports;
    const tsxApi = pathToFileURL(join(tsxDir, tsxExports['./esm/api']!.import.default)).href;
    writeFileSync(script, `
      import { isMainThread, parentPort, Worker } from 'node:worker_threads';
      import { ManualClock } from ${src('core/clock.ts')};
      import { ValueStateDescriptor } from ${src('core/state.ts')};
      import { diskBackendFactory } from ${src('state/disk/backend.ts')};
      import { snapshotReaderReady } from ${src('state/disk/reader-thread.ts')};
      async function leaveOneOpen() {
        const b = diskBackendFactory({ dir: ${JSON.stringify(dir)} }).create({ keyGroupRange: { start: 0, end: 127 }, maxParallelism: 128, clock: new ManualClock(0), where: 'exit test' });
        const v = b.getValueState(new ValueStateDescriptor('v'));
        for (let i = 0; i < 50000; i++) { b.setCurrentKey(i); v.update(String(i).padEnd(250, 'x')); }
        if (!(await snapshotReaderReady(60000))) throw new Error('reader not ready');
        const s = b.snapshot();
        if (s.constructor.name !== 'ThreadedDiskSnapshot') throw new Error('not on the thread: ' + s.constructor.name);
        // Never written nor aborted: the read stays open on the thread (stopped at its in-flight bound).
      }
      if (isMainThread) {
        // A task's worker thread: tsx registered in it as weir's worker bootstrap does.
        const boot = 'const { register } = await import(' + JSON.stringify(${JSON.stringify(tsxApi)}) + '); register(); await import(' + JSON.stringify(import.meta.url) + ');';
        const w = new Worker(new URL('data:text/javascript,' + encodeURIComponent(boot)));
        const open = await new Promise((res, rej) => { w.once('message', res); w.once('error', rej); });
        await w.terminate();
        console.log('worker ' + open + ', terminated');
        await leaveOneOpen();
        console.log('left open');
      } else {
        await leaveOneOpen();
        parentPort.postMessage('left open');
        setInterval(() => {}, 1000); // a task thread stays alive until terminated
      }
    `);
    const r = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.error, r.stderr).toBeUndefined();
    expect(r.stdout, r.stderr).toContain('worker left open, terminated');
    expect(r.stdout, r.stderr).toContain('left open');
    expect(r.status).toBe(0);
  }, 70_000);
});

const BIG_KEYS = 50_000;
const dbig = new ValueStateDescriptor<string>('big');

/** More block bytes (~13 MB) than the thread sends ahead of the task (MAX_IN_FLIGHT_BYTES): it cannot finish alone. */
function bigState(): DiskKeyedStateBackend {
  const b = make(onThread) as DiskKeyedStateBackend;
  const v = b.getValueState(dbig);
  for (let i = 0; i < BIG_KEYS; i++) {
    b.setCurrentKey(`key-${i}`);
    v.update(`${i}:`.padEnd(250, 'x'));
  }
  return b;
}

async function openEnv(path: string): Promise<{ readerList(): string; close(): Promise<void> }> {
  const { createRequire } = await import('node:module');
  const lmdb = createRequire(import.meta.url)('lmdb') as typeof import('lmdb');
  return lmdb.open({ path, keyEncoding: 'binary', encoding: 'binary', noSync: true, compression: false, cache: false }) as never;
}

/** Lines of LMDB's reader table that hold a transaction (a txnid, not "-"). */
function heldReaders(list: string): string {
  return list.split('\n').filter((l) => /^\s*\d+\s+\S+\s+\d+\s*$/.test(l)).join('\n');
}
