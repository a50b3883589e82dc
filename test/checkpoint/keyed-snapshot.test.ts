/**
 * Keyed state snapshots of the heap and the disk backend as the runtime takes them (synchronous freeze,
 * asynchronous serialization as scheduler steps through runAsyncPhase, timers as key-group
 * blocks, state streams from checkpoint storage's worker view over a local directory) and
 * their restore with loadKeyedState (state files opened through the same view):
 * - every state kind (value, list, map, reducing, aggregating, with and without TTL) and
 *   both timer domains come back equal;
 * - copy-on-write: in-place mutations right after the synchronous phase never reach the
 *   snapshot, and the live backend keeps them;
 * - rescaling: a snapshot restored into 2 or 3 backends with split key-group ranges gives
 *   each exactly its own keys (and 2 files restored into 3 backends too);
 * - serializer checks: a name or version mismatch fails naming the state (StateRestoreError);
 *   decode(data, writtenVersion) migrates.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, ValueStateDescriptor,
  type StateSerializer, type StateTtlConfig,
} from '../../src/core/state.ts';
import { runAsyncPhase } from '../../src/runtime/checkpointing/async-phase.ts';
import { loadKeyedState } from '../../src/runtime/checkpointing/restore.ts';
import { timerBlocks } from '../../src/runtime/checkpointing/timer-blocks.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import type { KeyedStateHandle, KeyedStateSnapshot } from '../../src/state/backend.ts';
import { Scheduler } from '../../src/runtime/scheduler.ts';
import { InternalTimerService, type Timer } from '../../src/runtime/timers.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { HeapKeyedStateBackend, heapBackendFactory } from '../../src/state/heap/backend.ts';
import { diskBackendFactory } from '../../src/state/disk/backend.ts';
import type { KeyedStateBackend, KeyedStateBackendFactory } from '../../src/state/backend.ts';
import { keyGroupOf, keyGroupRangeForSubtask, normalizeKey } from '../../src/state/key-groups.ts';
import { StateRestoreError } from '../../src/state/state-codec.ts';
import { ManualScheduler, TrackedIo } from '../helpers/stepping.ts';
import type { KeyGroupRange } from '../../src/core/checkpoint-format.ts';

const MAXP = 128;
const FULL: KeyGroupRange = { start: 0, end: MAXP - 1 };

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'weir-keyed-snapshot-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const nextPath = () => join(dir, `snap-${n++}.state`);

interface Counter { count: number; tags: string[] }
const TTL: StateTtlConfig = { ttlMs: 1000 };

const d = {
  value: new ValueStateDescriptor<Counter>('value'),
  list: new ListStateDescriptor<number>('list'),
  map: new MapStateDescriptor<string, { n: number }>('map'),
  reducing: new ReducingStateDescriptor<number>('reducing', (a, b) => a + b),
  aggregating: new AggregatingStateDescriptor<number, { sum: number; count: number }, number>('aggregating', {
    createAccumulator: () => ({ sum: 0, count: 0 }),
    add: (v, acc) => {
      acc.sum += v; // mutates the accumulator in place, as user code may
      acc.count++;
      return acc;
    },
    getResult: (acc) => acc.sum / acc.count,
  }),
  ttlValue: new ValueStateDescriptor<string>('ttl-value', { ttl: TTL }),
  ttlList: new ListStateDescriptor<string>('ttl-list', { ttl: TTL }),
  ttlMap: new MapStateDescriptor<string, number>('ttl-map', { ttl: TTL }),
};

/** The backends every test but the heap's copy-on-write ones runs on (the disk one with a small cache: most reads go to its store). */
const BACKENDS: readonly KeyedStateBackendFactory[] = [heapBackendFactory, diskBackendFactory({ cacheEntries: 16 })];
let factory: KeyedStateBackendFactory = heapBackendFactory;

function backend(range: KeyGroupRange, clock: ManualClock, where = 'test operator', maxParallelism = MAXP): KeyedStateBackend {
  return factory.create({ keyGroupRange: range, maxParallelism, clock, where });
}

function heapBackend(range: KeyGroupRange, clock: ManualClock, where = 'test operator'): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend(range, MAXP, clock, where);
}

/** Registers `body`'s tests once per backend. */
function onEveryBackend(title: string, body: () => void): void {
  for (const f of BACKENDS) {
    describe(`${title} (${f.name})`, () => {
      beforeAll(() => {
        factory = f;
      });
      afterAll(() => {
        factory = heapBackendFactory;
      });
      body();
    });
  }
}

function timerService(b: KeyedStateBackend, clock: ManualClock): InternalTimerService {
  return new InternalTimerService(b, { onEventTime() {}, onProcessingTime() {} }, () => clock.now(), (at, fn) => clock.schedule(at, fn));
}

const KEYS = Array.from({ length: 60 }, (_, i) => `key-${i}`);

/** Fills every state kind for every key; returns what each key's state must read back as. */
function fill(b: KeyedStateBackend, timers: InternalTimerService | undefined, keys: readonly unknown[] = KEYS): void {
  keys.forEach((k, i) => {
    b.setCurrentKey(k);
    b.getValueState(d.value).update({ count: i, tags: [`t${i}`] });
    for (let j = 0; j <= i % 4; j++) b.getListState(d.list).add(i * 10 + j);
    b.getMapState(d.map).put('a', { n: i });
    if (i % 3 === 0) b.getMapState(d.map).put('b', { n: -i - 1 });
    b.getReducingState(d.reducing).add(i);
    b.getReducingState(d.reducing).add(1);
    b.getAggregatingState(d.aggregating).add(i);
    b.getAggregatingState(d.aggregating).add(i + 2);
    b.getValueState(d.ttlValue).update(`v${i}`);
    b.getListState(d.ttlList).add(`l${i}`);
    b.getMapState(d.ttlMap).put('m', i);
    if (timers) {
      timers.registerEventTimeTimer('', 1000 + i);
      timers.registerProcessingTimeTimer(i % 2 === 0 ? 'w1' : 7, 5000 + i);
    }
  });
}

/** Everything a key's states read as, through the public handles. */
function read(b: KeyedStateBackend, k: unknown): unknown {
  b.setCurrentKey(k);
  return {
    value: b.getValueState(d.value).value(),
    list: [...b.getListState(d.list).get()],
    map: [...b.getMapState(d.map).entries()].sort(),
    reducing: b.getReducingState(d.reducing).get(),
    aggregating: b.getAggregatingState(d.aggregating).get(),
    ttlValue: b.getValueState(d.ttlValue).value(),
    ttlList: [...b.getListState(d.ttlList).get()],
    ttlMap: [...b.getMapState(d.ttlMap).entries()],
  };
}

function expected(i: number): unknown {
  return {
    value: { count: i, tags: [`t${i}`] },
    list: Array.from({ length: (i % 4) + 1 }, (_, j) => i * 10 + j),
    map: i % 3 === 0 ? [['a', { n: i }], ['b', { n: -i - 1 }]] : [['a', { n: i }]],
    reducing: i + 1,
    aggregating: i + 1,
    ttlValue: `v${i}`,
    ttlList: [`l${i}`],
    ttlMap: [['m', i]],
  };
}

/** The task side of checkpoint storage for local paths: where snapshots write and restores read. */
const storage = storageResolver().workerView;

/** Starts the asynchronous phase of a snapshot into a fresh file of `dir`. */
function writeAsync(s: KeyedStateSnapshot, path: string, scheduler = new Scheduler()): Promise<KeyedStateHandle> {
  return runAsyncPhase(s, storage.resolveLocation(dir), basename(path), scheduler);
}

/** Runs a snapshot to the end; `between` runs right after the synchronous phase. */
async function snapshot(b: KeyedStateBackend, timers: InternalTimerService | undefined, between: () => void = () => {}): Promise<{ path: string; size: number; keys: number }> {
  const path = nextPath();
  const s = b.snapshot(timers === undefined ? undefined : timerBlocks(timers));
  between();
  const h = await writeAsync(s, path);
  expect(h.streams.map((x) => x.name)).toEqual([basename(path)]);
  return { path, size: h.streams[0]!.size, keys: h.entries };
}

function timerView(t: readonly Pick<Timer, 'timestamp' | 'key' | 'keyGroup' | 'namespace'>[]): string[] {
  return t.map((x) => `${x.timestamp}|${String(x.key)}|${x.keyGroup}|${String(x.namespace)}`).sort();
}

onEveryBackend('keyed snapshot round trip', () => {
  it('restores value, list, map, reducing, aggregating (with and without TTL) and timers equal', async () => {
    const clock = new ManualClock(100);
    const b = backend(FULL, clock);
    const timers = timerService(b, clock);
    fill(b, timers);
    const snap = await snapshot(b, timers);
    // (key, state) entries written: every one of the 60 keys has all 8 states.
    expect(snap.keys).toBe(KEYS.length * Object.keys(d).length);
    expect(snap.keys).toBe(480);

    const clock2 = new ManualClock(600); // within the TTL of values written at 100
    const r = backend(FULL, clock2);
    const restoredTimers = await loadKeyedState(r, [snap], storage);
    KEYS.forEach((k, i) => expect(read(r, k), k).toEqual(expected(i)));
    // Nothing else appeared.
    expect([...r.keys('value')].map((x) => x.key).sort()).toEqual([...KEYS].sort());

    const evt = restoredTimers.filter((t) => t.domain === 'event');
    const proc = restoredTimers.filter((t) => t.domain === 'processing');
    expect(timerView(evt)).toEqual(timerView(timers.eventTimersList()));
    expect(timerView(proc)).toEqual(timerView(timers.processingTimersList()));
    // Restored in firing order (timestamp, then registration order) with the user's key.
    expect(restoredTimers.map((t) => t.timestamp)).toEqual([...restoredTimers.map((t) => t.timestamp)].sort((x, y) => x - y));
    for (const t of restoredTimers) expect(t.originalKey).toBe(t.key);
  });

  it('keeps TTL timestamps: restored values expire when they would have without the restore', async () => {
    const clock = new ManualClock(100);
    const b = backend(FULL, clock);
    fill(b, undefined, ['x']);
    const snap = await snapshot(b, undefined);
    const later = new ManualClock(1100); // written at 100, ttl 1000: expired at 1100
    const r = backend(FULL, later);
    await loadKeyedState(r, [snap], storage);
    r.setCurrentKey('x');
    expect(r.getValueState(d.ttlValue).value()).toBeUndefined();
    expect(r.getListState(d.ttlList).get()).toEqual([]);
    expect([...r.getMapState(d.ttlMap).entries()]).toEqual([]);
    expect(r.getValueState(d.value).value()).toEqual({ count: 0, tags: ['t0'] }); // no TTL: still there
  });

  it('composite, numeric and boolean keys come back as the same keys', async () => {
    const clock = new ManualClock(0);
    const b = backend(FULL, clock);
    const keys: unknown[] = [42, -7.5, true, ['a', 1], { user: 'u', n: 2 }, '\u0000odd', 10n];
    keys.forEach((k, i) => {
      b.setCurrentKey(k);
      b.getValueState(d.value).update({ count: i, tags: [] });
    });
    const timers = timerService(b, clock);
    b.setCurrentKey(['a', 1]);
    timers.registerEventTimeTimer('', 5);
    const snap = await snapshot(b, timers);
    const r = backend(FULL, clock);
    const restoredTimers = await loadKeyedState(r, [snap], storage);
    keys.forEach((k, i) => {
      r.setCurrentKey(k);
      expect(r.getValueState(d.value).value()).toEqual({ count: i, tags: [] });
    });
    expect(restoredTimers).toHaveLength(1);
    expect(restoredTimers[0]!.originalKey).toEqual(['a', 1]);
  });

  it('an empty backend with no timers writes a valid, empty snapshot', async () => {
    const clock = new ManualClock(0);
    const b = backend(FULL, clock);
    b.getValueState(d.value); // registered, never written
    const snap = await snapshot(b, undefined);
    const r = backend(FULL, clock);
    expect(await loadKeyedState(r, [snap], storage)).toEqual([]);
    expect([...r.keys('value')]).toEqual([]);
  });
});

describe('heap copy-on-write: the snapshot is the state at the synchronous phase', () => {
  it('in-place mutations after the freeze (through handles that read, then mutate) stay out of the snapshot', async () => {
    const clock = new ManualClock(100);
    const b = heapBackend(FULL, clock);
    const timers = timerService(b, clock);
    fill(b, timers);
    const snap = await snapshot(b, timers, () => {
      // Right after the synchronous phase, before any asynchronous step ran.
      KEYS.forEach((k, i) => {
        b.setCurrentKey(k);
        const v = b.getValueState(d.value).value()!; // read, then mutate the returned object in place
        v.count = -1;
        v.tags.push('mutated');
        (b.getListState(d.list).get() as number[]).push(999); // mutate the returned list in place
        b.getListState(d.list).add(1000);
        b.getMapState(d.map).get('a')!.n = -100; // mutate a map value in place
        b.getMapState(d.map).put('new', { n: 1 });
        b.getReducingState(d.reducing).add(1000);
        b.getAggregatingState(d.aggregating).add(1_000_000); // the aggregate mutates its accumulator in place
        b.getValueState(d.ttlValue).update('changed');
        if (i % 2 === 0) b.getMapState(d.ttlMap).clear();
        timers.registerEventTimeTimer('', 99_999); // registered after the barrier: not in this snapshot
      });
      b.setCurrentKey('brand-new');
      b.getValueState(d.value).update({ count: 1, tags: [] });
    });

    const r = heapBackend(FULL, new ManualClock(600));
    const restoredTimers = await loadKeyedState(r, [snap], storage);
    KEYS.forEach((k, i) => expect(read(r, k), k).toEqual(expected(i)));
    r.setCurrentKey('brand-new');
    expect(r.getValueState(d.value).value()).toBeUndefined();
    expect(restoredTimers.some((t) => t.timestamp === 99_999)).toBe(false);
    expect(restoredTimers.filter((t) => t.domain === 'event')).toHaveLength(KEYS.length);

    // The live backend has the new state.
    KEYS.forEach((k, i) => {
      b.setCurrentKey(k);
      expect(b.getValueState(d.value).value()).toEqual({ count: -1, tags: [`t${i}`, 'mutated'] });
      expect(b.getListState(d.list).get()).toEqual([...(expected(i) as { list: number[] }).list, 999, 1000]);
      expect(b.getMapState(d.map).get('a')).toEqual({ n: -100 });
      expect(b.getMapState(d.map).get('new')).toEqual({ n: 1 });
      expect(b.getReducingState(d.reducing).get()).toBe(i + 1 + 1000);
      expect(b.getValueState(d.ttlValue).value()).toBe('changed');
      expect(b.getMapState(d.ttlMap).isEmpty()).toBe(i % 2 === 0);
    });
  });

  it('mutations between asynchronous steps do not leak into groups not yet written', async () => {
    // Many keys in all key groups: the asynchronous phase takes 32 steps of 4 groups each. The
    // test runs them one at a time and, between steps, changes a key of a group not written yet.
    const clock = new ManualClock(0);
    const b = heapBackend(FULL, clock);
    const keys = Array.from({ length: 2000 }, (_, i) => `k${i}`);
    keys.forEach((k, i) => {
      b.setCurrentKey(k);
      b.getValueState(d.value).update({ count: i, tags: [] });
    });
    const groups = new Set(keys.map((k) => keyGroupOf(normalizeKey(k), MAXP)));
    expect(groups.size).toBe(MAXP);
    const path = nextPath();
    const scheduler = new ManualScheduler();
    const io = new TrackedIo();
    const s = b.snapshot();
    expect(b.frozenGroups()).toBe(MAXP); // the synchronous phase froze every non-empty group
    const result = runAsyncPhase(s, io.resolveLocation(dir), basename(path), scheduler);
    await io.waitFor(() => !scheduler.idle); // the stream is open, its header written: the snapshot is runnable
    const groupOf = (k: string) => keyGroupOf(normalizeKey(k), MAXP);
    // The expectation, step by step: groups are written in ascending order, the same number per
    // step (what the first step wrote: 4 today); a group touched before its turn is written right
    // then, and its turn later writes nothing.
    const stillFrozen = new Set(Array.from({ length: MAXP }, (_, g) => g));
    let perStep = 0;
    let nextInTurn = 0;
    let steps = 0;
    let mutatedWhileFrozen = 0;
    while (!scheduler.idle) {
      expect(scheduler.runOne()).toBe(true);
      steps++;
      if (steps === 1) perStep = MAXP - b.frozenGroups();
      for (let n = 0; n < perStep && nextInTurn < MAXP; n++) stillFrozen.delete(nextInTurn++);
      expect(b.frozenGroups(), `after step ${steps}`).toBe(stillFrozen.size);
      // Change a key of the highest group not written yet, in place through the value read.
      const k = keys.find((x) => groupOf(x) === Math.max(...stillFrozen));
      if (k === undefined) continue;
      b.setCurrentKey(k);
      b.getValueState(d.value).value()!.count += 1_000_000;
      mutatedWhileFrozen++;
      stillFrozen.delete(groupOf(k));
      expect(b.isGroupFrozen('value', groupOf(k))).toBe(false);
      expect(b.frozenGroups(), `after the change following step ${steps}`).toBe(stillFrozen.size);
    }
    // One step per perStep groups of the todo list, touched or not: with 4 per step, 32 steps;
    // after each of the first 25 a still-frozen group was changed (groups 127 down to 103).
    // (The test needs the asynchronous phase to take many steps, so that changes interleave with writing.)
    expect(perStep).toBeLessThanOrEqual(MAXP / 8);
    expect(steps).toBe(Math.ceil(MAXP / perStep));
    // Each round (a step, then a change) releases perStep + 1 groups; the round whose step
    // leaves no frozen group changes nothing.
    expect(mutatedWhileFrozen).toBe(Math.ceil(MAXP / (perStep + 1)) - (MAXP % (perStep + 1) === 0 ? 0 : 1));
    expect(b.frozenGroups()).toBe(0);
    const res = await result;
    const r = heapBackend(FULL, clock);
    await loadKeyedState(r, [{ path, size: res.streams[0]!.size }], storage);
    keys.forEach((k, i) => {
      r.setCurrentKey(k);
      expect(r.getValueState(d.value).value()!.count, k).toBe(i);
    });
    // The live backend has the changes.
    const live = keys.filter((k) => {
      b.setCurrentKey(k);
      return b.getValueState(d.value).value()!.count >= 1_000_000;
    });
    expect(live).toHaveLength(mutatedWhileFrozen);
  });

  it('an aborted snapshot releases its frozen groups: the next snapshot can freeze again', async () => {
    const clock = new ManualClock(0);
    const b = heapBackend(FULL, clock);
    fill(b, undefined, KEYS.slice(0, 10));
    const path = nextPath();
    const scheduler = new ManualScheduler();
    const io = new TrackedIo();
    const s = b.snapshot();
    expect(b.frozenGroups()).toBeGreaterThan(0);
    const result = runAsyncPhase(s, io.resolveLocation(dir), basename(path), scheduler);
    s.abort();
    await expect(result).rejects.toThrow(/aborted/);
    expect(b.frozenGroups()).toBe(0);
    // What was written of it is removed (the stream is abandoned once it has opened): once the
    // stream's creation, header write and abort are done, nothing is left.
    await io.quiesce(scheduler);
    expect(io.opened).toEqual([path]);
    expect(existsSync(path)).toBe(false);
    b.setCurrentKey(KEYS[0]);
    b.getValueState(d.value).update({ count: 77, tags: [] });
    const snap = await snapshot(b, undefined);
    const r = heapBackend(FULL, clock);
    await loadKeyedState(r, [snap], storage);
    r.setCurrentKey(KEYS[0]);
    expect(r.getValueState(d.value).value()).toEqual({ count: 77, tags: [] });
  });
});

onEveryBackend('rescaling: split key-group ranges', () => {
  const manyKeys = Array.from({ length: 500 }, (_, i) => `user-${i}`);

  async function fullSnapshot(): Promise<{ path: string; size: number }> {
    const clock = new ManualClock(0);
    const b = backend(FULL, clock);
    const timers = timerService(b, clock);
    manyKeys.forEach((k, i) => {
      b.setCurrentKey(k);
      b.getValueState(d.value).update({ count: i, tags: [] });
      b.getListState(d.list).add(i);
      timers.registerEventTimeTimer('', i);
    });
    return snapshot(b, timers);
  }

  function ownerOf(k: string, ranges: KeyGroupRange[]): number {
    const kg = keyGroupOf(normalizeKey(k), MAXP);
    return ranges.findIndex((r) => kg >= r.start && kg <= r.end);
  }

  for (const p of [2, 3]) {
    it(`restoring into ${p} backends gives each exactly the keys of its key groups`, async () => {
      const snap = await fullSnapshot();
      const ranges = Array.from({ length: p }, (_, i) => keyGroupRangeForSubtask(MAXP, p, i));
      const seen = new Set<string>();
      for (let i = 0; i < p; i++) {
        const r = backend(ranges[i]!, new ManualClock(0));
        const timers = await loadKeyedState(r, [snap], storage);
        r.getValueState(d.value);
        r.getListState(d.list);
        const mine = manyKeys.filter((k) => ownerOf(k, ranges) === i);
        expect(mine.length).toBeGreaterThan(0);
        expect([...r.keys('value')].map((x) => String(x.key)).sort()).toEqual([...mine].sort());
        expect([...r.keys('list')].map((x) => String(x.key)).sort()).toEqual([...mine].sort());
        for (const k of mine) {
          r.setCurrentKey(k);
          const idx = manyKeys.indexOf(k);
          expect(r.getValueState(d.value).value()).toEqual({ count: idx, tags: [] });
          expect(r.getListState(d.list).get()).toEqual([idx]);
          seen.add(k);
        }
        expect(timers.map((t) => String(t.key)).sort()).toEqual([...mine].sort());
        for (const t of timers) expect(t.keyGroup >= ranges[i]!.start && t.keyGroup <= ranges[i]!.end).toBe(true);
      }
      expect(seen.size).toBe(manyKeys.length);
    });
  }

  it('two snapshots of a parallelism-2 operator restored into 3 backends: every key once, in the right place', async () => {
    const old = [0, 1].map((i) => keyGroupRangeForSubtask(MAXP, 2, i));
    const files: { path: string; size: number }[] = [];
    for (let i = 0; i < 2; i++) {
      const b = backend(old[i]!, new ManualClock(0));
      for (const k of manyKeys.filter((k) => ownerOf(k, old) === i)) {
        b.setCurrentKey(k);
        b.getValueState(d.value).update({ count: manyKeys.indexOf(k), tags: ['from', String(i)] });
      }
      files.push(await snapshot(b, undefined));
    }
    const now = [0, 1, 2].map((i) => keyGroupRangeForSubtask(MAXP, 3, i));
    let total = 0;
    for (let i = 0; i < 3; i++) {
      const r = backend(now[i]!, new ManualClock(0));
      await loadKeyedState(r, files, storage);
      r.getValueState(d.value);
      const keys = [...r.keys('value')].map((x) => String(x.key)).sort();
      expect(keys).toEqual(manyKeys.filter((k) => ownerOf(k, now) === i).sort());
      for (const k of keys) {
        r.setCurrentKey(k);
        expect(r.getValueState(d.value).value()).toEqual({ count: manyKeys.indexOf(k), tags: ['from', String(ownerOf(k, old))] });
      }
      total += keys.length;
    }
    expect(total).toBe(manyKeys.length);
  });

  it('a different max parallelism is refused', async () => {
    const snap = await fullSnapshot();
    const r = backend({ start: 0, end: 255 }, new ManualClock(0), 'op', 256);
    await expect(loadKeyedState(r, [snap], storage)).rejects.toThrow(/max parallelism 128, the operator now has 256/);
  });

  it('state not claimed by the new job version is carried into the next snapshot unchanged', async () => {
    const snap = await fullSnapshot();
    const r = backend(FULL, new ManualClock(0));
    await loadKeyedState(r, [snap], storage);
    r.getValueState(d.value); // only "value" is claimed; "list" stays encoded
    const again = await snapshot(r, undefined);
    const r2 = backend(FULL, new ManualClock(0));
    await loadKeyedState(r2, [again], storage);
    r2.setCurrentKey('user-3');
    expect(r2.getListState(d.list).get()).toEqual([3]);
    expect(r2.getValueState(d.value).value()).toEqual({ count: 3, tags: [] });
  });
});

onEveryBackend('serializers at restore', () => {
  interface V1 { name: string }
  interface V2 { first: string; last: string }
  const v1: StateSerializer<V1> = { name: 'person', version: 1, encode: (v) => [v.name] };

  async function writtenWithV1(): Promise<{ path: string; size: number }> {
    const b = backend(FULL, new ManualClock(0));
    b.setCurrentKey('k');
    b.getValueState(new ValueStateDescriptor<V1>('person', { serializer: v1 })).update({ name: 'Ada Lovelace' });
    b.getListState(new ListStateDescriptor<V1>('people', { serializer: v1 })).add({ name: 'Alan Turing' });
    return snapshot(b, undefined);
  }

  async function restoreError(desc: ValueStateDescriptor<unknown>): Promise<StateRestoreError> {
    const r = backend(FULL, new ManualClock(0), 'operator "People" (subtask 1/1)');
    await loadKeyedState(r, [await writtenWithV1()], storage);
    try {
      r.getValueState(desc);
    } catch (e) {
      expect(e).toBeInstanceOf(StateRestoreError);
      return e as StateRestoreError;
    }
    throw new Error('expected the restore to be refused');
  }

  it('a different serializer name is refused, naming the operator, the state and both serializers', async () => {
    const e = await restoreError(new ValueStateDescriptor('person', { serializer: { name: 'json-person', version: 1 } }));
    expect(e.message).toContain('operator "People" (subtask 1/1)');
    expect(e.message).toContain('state "person"');
    expect(e.message).toContain('"person" v1');
    expect(e.message).toContain('"json-person" v1');
  });

  it('data written by a newer serializer version is refused', async () => {
    const b = backend(FULL, new ManualClock(0));
    b.setCurrentKey('k');
    b.getValueState(new ValueStateDescriptor('person', { serializer: { name: 'person', version: 3 } })).update({ name: 'x' });
    const snap = await snapshot(b, undefined);
    const r = backend(FULL, new ManualClock(0));
    await loadKeyedState(r, [snap], storage);
    expect(() => r.getValueState(new ValueStateDescriptor('person', { serializer: v1 }))).toThrow(StateRestoreError);
    expect(() => r.getValueState(new ValueStateDescriptor('person', { serializer: v1 }))).toThrow(/state "person".*v3, newer than this job's v1/);
  });

  it('an older version without decode() is refused', async () => {
    const e = await restoreError(new ValueStateDescriptor('person', { serializer: { name: 'person', version: 2 } }));
    expect(e.message).toMatch(/state "person" was written by serializer "person" v1; v2 declares no decode/);
  });

  it('a changed state kind is refused', async () => {
    const r = backend(FULL, new ManualClock(0));
    await loadKeyedState(r, [await writtenWithV1()], storage);
    expect(() => r.getListState(new ListStateDescriptor('person', { serializer: v1 }))).toThrow(/state "person" was written as value state and is now declared as list state/);
  });

  it('decode(data, writtenVersion) migrates v1 data to v2, for values and list elements', async () => {
    const versions: number[] = [];
    const v2: StateSerializer<V2> = {
      name: 'person',
      version: 2,
      encode: (v) => ({ f: v.first, l: v.last }),
      decode(data, written) {
        versions.push(written);
        if (written === 1) {
          const [name] = data as [string];
          const [first, ...rest] = name.split(' ');
          return { first: first!, last: rest.join(' ') };
        }
        const o = data as { f: string; l: string };
        return { first: o.f, last: o.l };
      },
    };
    const r = backend(FULL, new ManualClock(0));
    await loadKeyedState(r, [await writtenWithV1()], storage);
    r.setCurrentKey('k');
    expect(r.getValueState(new ValueStateDescriptor<V2>('person', { serializer: v2 })).value()).toEqual({ first: 'Ada', last: 'Lovelace' });
    expect(r.getListState(new ListStateDescriptor<V2>('people', { serializer: v2 })).get()).toEqual([{ first: 'Alan', last: 'Turing' }]);
    // Each v1 datum is migrated once (the disk backend then reads its v2 form back through decode(_, 2)).
    expect(versions.filter((v) => v === 1)).toEqual([1, 1]);
    const before = versions.length;

    // Written again, it is v2 data now, and reads back through decode(_, 2).
    const again = await snapshot(r, undefined);
    const r2 = backend(FULL, new ManualClock(0));
    await loadKeyedState(r2, [again], storage);
    r2.setCurrentKey('k');
    expect(r2.getValueState(new ValueStateDescriptor<V2>('person', { serializer: v2 })).value()).toEqual({ first: 'Ada', last: 'Lovelace' });
    expect(versions.slice(before)).toContain(2);
    expect(versions.slice(before)).not.toContain(1);
  });

  it('TTL turned on at restore stamps values with the backend clock\'s time', async () => {
    const b = backend(FULL, new ManualClock(0));
    b.setCurrentKey('k');
    b.getValueState(new ValueStateDescriptor<string>('plain')).update('v');
    const snap = await snapshot(b, undefined);
    const clock = new ManualClock(5000);
    const r = backend(FULL, clock);
    await loadKeyedState(r, [snap], storage);
    r.setCurrentKey('k');
    const withTtl = r.getValueState(new ValueStateDescriptor<string>('plain', { ttl: { ttlMs: 1000 } }));
    clock.advanceTo(5999);
    expect(withTtl.value()).toBe('v');
    clock.advanceTo(6000);
    expect(withTtl.value()).toBeUndefined();
  });

  it('TTL turned off at restore unwraps the values', async () => {
    const b = backend(FULL, new ManualClock(0));
    b.setCurrentKey('k');
    b.getValueState(new ValueStateDescriptor<string>('stamped', { ttl: TTL })).update('v');
    b.getListState(new ListStateDescriptor<string>('stamped-list', { ttl: TTL })).add('l');
    const snap = await snapshot(b, undefined);
    const r = backend(FULL, new ManualClock(1_000_000));
    await loadKeyedState(r, [snap], storage);
    r.setCurrentKey('k');
    expect(r.getValueState(new ValueStateDescriptor<string>('stamped')).value()).toBe('v');
    expect(r.getListState(new ListStateDescriptor<string>('stamped-list')).get()).toEqual(['l']);
  });
});
