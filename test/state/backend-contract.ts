/**
 * The KeyedStateBackend contract, run against every backend (heap-backend.test.ts, disk-backend.test.ts call backendContract
 * with their factory). Snapshots go through an in-memory
 * CheckpointStreamFactory (a Map of name -> bytes) and come back through in-memory
 * StateInputHandles; the asynchronous phase is driven by hand, as the runtime's scheduler
 * would, with record-like work between its steps:
 * - every state kind (value, list, map, reducing, aggregating; with and without TTL) and every
 *   key come back equal in a fresh backend;
 * - a restore keeps only the key groups of its range, for state and timer blocks;
 * - TTL deadlines survive a restore, on the restoring backend's clock;
 * - records that touch, mutate in place, add, clear and drop state during the asynchronous
 *   phase leave the snapshot as it was at the synchronous phase;
 * - an aborted snapshot leaves nothing behind and the next one works; unclaimed restored
 *   state is carried forward; wrong uses fail clearly.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import {
  AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, ValueStateDescriptor,
  type StateTtlConfig,
} from '../../src/core/state.ts';
import type { CheckpointStreamFactory } from '../../src/core/state-streams.ts';
import type { KeyGroupRange } from '../../src/core/checkpoint-format.ts';
import type {
  KeyedStateBackend, KeyedStateBackendFactory, KeyedStateHandle, KeyGroupBlock, KeyGroupBlockSource,
} from '../../src/state/backend.ts';
import { keyGroupOf, keyGroupRangeForSubtask, normalizeKey } from '../../src/state/key-groups.ts';
import { StateFileWriter } from '../../src/checkpoint/state-file.ts';
import { keyedBlockName } from '../../src/checkpoint/names.ts';
import { encodeValue } from '../../src/core/codec.ts';
import { MemoryStreams, writeSnapshot } from '../helpers/memory-streams.ts';

export const MAXP = 128;
export const FULL: KeyGroupRange = { start: 0, end: MAXP - 1 };
export const TTL: StateTtlConfig = { ttlMs: 1000 };

// In a module of their own (no vitest), so that benchmarks use them too.
export { MemoryStreams, writeSnapshot };

export const d = {
  value: new ValueStateDescriptor<{ n: number; tags: string[] }>('value'),
  list: new ListStateDescriptor<number>('list'),
  map: new MapStateDescriptor<string, { n: number }>('map'),
  reducing: new ReducingStateDescriptor<number>('reducing', (a, b) => a + b),
  aggregating: new AggregatingStateDescriptor<number, { sum: number; count: number }, number>('aggregating', {
    createAccumulator: () => ({ sum: 0, count: 0 }),
    add: (v, acc) => {
      acc.sum += v; // in place, as user code may
      acc.count++;
      return acc;
    },
    getResult: (acc) => acc.sum / acc.count,
  }),
  ttlValue: new ValueStateDescriptor<string>('ttl-value', { ttl: TTL }),
  ttlList: new ListStateDescriptor<string>('ttl-list', { ttl: TTL }),
  ttlMap: new MapStateDescriptor<string, number>('ttl-map', { ttl: TTL }),
};

/** Keys of every kind a key selector may return, many of them: every key group gets some. */
export const KEYS: unknown[] = [
  ...Array.from({ length: 1500 }, (_, i) => `user-${i}`),
  ...Array.from({ length: 200 }, (_, i) => i * 7 - 300),
  2.5, true, false, 10n, ['a', 1], { user: 'u', n: 2 }, '\u0000odd', '',
];

export function fill(b: KeyedStateBackend, keys: readonly unknown[] = KEYS): void {
  keys.forEach((k, i) => {
    b.setCurrentKey(k);
    b.getValueState(d.value).update({ n: i, tags: [`t${i}`] });
    for (let j = 0; j <= i % 3; j++) b.getListState(d.list).add(i * 10 + j);
    b.getMapState(d.map).put('a', { n: i });
    if (i % 4 === 0) b.getMapState(d.map).put('b', { n: -i - 1 });
    b.getReducingState(d.reducing).add(i);
    b.getReducingState(d.reducing).add(1);
    b.getAggregatingState(d.aggregating).add(i);
    b.getAggregatingState(d.aggregating).add(i + 2);
    b.getValueState(d.ttlValue).update(`v${i}`);
    b.getListState(d.ttlList).add(`l${i}`);
    b.getMapState(d.ttlMap).put('m', i);
  });
}

/** What every state of the i-th key reads as after fill(). */
export function expected(i: number): unknown {
  return {
    value: { n: i, tags: [`t${i}`] },
    list: Array.from({ length: (i % 3) + 1 }, (_, j) => i * 10 + j),
    map: i % 4 === 0 ? [['a', { n: i }], ['b', { n: -i - 1 }]] : [['a', { n: i }]],
    reducing: i + 1,
    aggregating: i + 1,
    ttlValue: `v${i}`,
    ttlList: [`l${i}`],
    ttlMap: [['m', i]],
  };
}

export function read(b: KeyedStateBackend, k: unknown): unknown {
  b.setCurrentKey(k);
  return {
    value: b.getValueState(d.value).value(),
    list: [...b.getListState(d.list).get()],
    map: [...b.getMapState(d.map).entries()].sort((x, y) => x[0].localeCompare(y[0])),
    reducing: b.getReducingState(d.reducing).get(),
    aggregating: b.getAggregatingState(d.aggregating).get(),
    ttlValue: b.getValueState(d.ttlValue).value(),
    ttlList: [...b.getListState(d.ttlList).get()],
    ttlMap: [...b.getMapState(d.ttlMap).entries()],
  };
}

export function kgOf(k: unknown): number {
  return keyGroupOf(normalizeKey(k), MAXP);
}

/** Timer-like blocks: one per key group listed, its bytes naming the group. */
export function blocksFor(groups: readonly number[]): KeyGroupBlockSource & { encoded: number } {
  const src = {
    encoded: 0,
    *encode(): Iterable<KeyGroupBlock> {
      src.encoded++;
      for (const kg of groups) yield { keyGroup: kg, bytes: new TextEncoder().encode(`timers of ${kg}`) };
    },
  };
  return src;
}

export function backendContract(factory: KeyedStateBackendFactory): void {
  const make = (range: KeyGroupRange = FULL, clock = new ManualClock(100), where = 'operator "test" (subtask 1/1)') =>
    factory.create({ keyGroupRange: range, maxParallelism: MAXP, clock, where });

  async function snapshotOf(b: KeyedStateBackend, timers?: KeyGroupBlockSource): Promise<{ streams: MemoryStreams; handle: KeyedStateHandle }> {
    const streams = new MemoryStreams();
    const handle = await writeSnapshot(b.snapshot(timers), streams);
    return { streams, handle };
  }

  async function restored(from: { streams: MemoryStreams; handle: KeyedStateHandle }[], range = FULL, clock = new ManualClock(600)): Promise<{ b: KeyedStateBackend; blocks: KeyGroupBlock[] }> {
    const b = make(range, clock);
    const inputs = from.flatMap(({ streams, handle }) => handle.streams.map((s) => streams.input(s.name)));
    const blocks = await b.restore(inputs);
    return { b, blocks };
  }

  describe(`KeyedStateBackend contract: ${factory.name}`, () => {
    it('every state kind and every key comes back equal in a fresh backend; the handle describes what was written', async () => {
      const b = make();
      fill(b);
      const snap = await snapshotOf(b);
      const h = snap.handle;
      expect(h.keyGroupRange).toEqual(FULL);
      expect(h.streams.map((s) => [s.name, s.size])).toEqual([...snap.streams.files].map(([n, bytes]) => [n, bytes.length]));
      expect(h.stateSize).toBeGreaterThan(0);
      expect(h.stateSize).toBeLessThan(h.streams[0]!.size);
      expect(h.entries).toBe(8 * KEYS.length);

      const { b: r, blocks } = await restored([snap]);
      expect(blocks).toEqual([]);
      KEYS.forEach((k, i) => expect(read(r, k), String(k)).toEqual(expected(i)));
      for (const name of Object.values(d).map((x) => x.name)) {
        expect([...r.keys(name)].length, name).toBe(KEYS.length);
      }
      // The live backend is untouched by its snapshot.
      KEYS.forEach((k, i) => expect(read(b, k), String(k)).toEqual(expected(i)));
    });

    it('a restore keeps only the key groups of its range, for keyed state and timer blocks', async () => {
      const b = make();
      fill(b);
      const groups = [0, 5, 63, 64, 100, 127];
      const timers = blocksFor(groups);
      const snapshot = b.snapshot(timers);
      expect(timers.encoded).toBe(0); // nothing encoded in the synchronous phase
      const streams = new MemoryStreams();
      const handle = await writeSnapshot(snapshot, streams);
      expect(timers.encoded).toBe(1);
      for (let p = 1; p <= 3; p++) {
        const seen = new Set<unknown>();
        for (let i = 0; i < p; i++) {
          const range = keyGroupRangeForSubtask(MAXP, p, i);
          const { b: r, blocks } = await restored([{ streams, handle }], range);
          expect(blocks.map((x) => x.keyGroup)).toEqual(groups.filter((kg) => kg >= range.start && kg <= range.end));
          for (const x of blocks) expect(new TextDecoder().decode(x.bytes)).toBe(`timers of ${x.keyGroup}`);
          r.getValueState(d.value);
          const mine = KEYS.filter((k) => kgOf(k) >= range.start && kgOf(k) <= range.end);
          expect([...r.keys(d.value.name)].length).toBe(mine.length);
          for (const k of mine) {
            expect(read(r, k)).toEqual(expected(KEYS.indexOf(k)));
            seen.add(k);
          }
          for (const { keyGroup } of r.keys(d.value.name)) expect(keyGroup >= range.start && keyGroup <= range.end).toBe(true);
        }
        expect(seen.size).toBe(KEYS.length);
      }
    });

    it('snapshots of split ranges restore into one backend (scale in)', async () => {
      const parts = [];
      const subsets: unknown[][] = [];
      for (let i = 0; i < 3; i++) {
        const range = keyGroupRangeForSubtask(MAXP, 3, i);
        const b = make(range);
        subsets.push(KEYS.filter((k) => kgOf(k) >= range.start && kgOf(k) <= range.end));
        fill(b, subsets[i]);
        const s = new MemoryStreams();
        parts.push({ streams: s, handle: await writeSnapshot(b.snapshot(), s, `op-${i}.state`) });
        expect(parts[i]!.handle.keyGroupRange).toEqual(range);
      }
      const { b: r } = await restored(parts);
      for (const subset of subsets) subset.forEach((k, i) => expect(read(r, k), String(k)).toEqual(expected(i)));
      expect([...r.keys(d.value.name)].length).toBe(KEYS.length);
    });

    it('TTL: restored values expire when they would have, on the restoring backend\'s clock', async () => {
      const b = make(FULL, new ManualClock(100));
      fill(b, ['x']);
      const snap = await snapshotOf(b);
      const clock = new ManualClock(1099);
      const { b: r } = await restored([snap], FULL, clock);
      r.setCurrentKey('x');
      expect(r.getValueState(d.ttlValue).value()).toBe('v0'); // written at 100, ttl 1000
      clock.advanceTo(1100);
      expect(r.getValueState(d.ttlValue).value()).toBeUndefined();
      expect(r.getListState(d.ttlList).get()).toEqual([]);
      expect([...r.getMapState(d.ttlMap).entries()]).toEqual([]);
      expect(r.getValueState(d.value).value()).toEqual({ n: 0, tags: ['t0'] }); // no TTL
    });

    it('a list state refuses null and undefined elements, naming the call, and keeps what it held (as Flink)', () => {
      const b = make();
      b.setCurrentKey('a');
      for (const desc of [d.list, d.ttlList]) {
        const l = b.getListState(desc as ListStateDescriptor<unknown>);
        l.add('kept');
        expect(() => l.add(null)).toThrow('ListState.add: cannot add null (a list state holds no null or undefined elements)');
        expect(() => l.add(undefined)).toThrow('ListState.add: cannot add undefined');
        expect(() => l.addAll(['x', null])).toThrow('ListState.addAll: cannot add null');
        expect(() => l.update(null as unknown as unknown[])).toThrow('ListState.update: expected an array of values, got null');
        expect(() => l.update([undefined])).toThrow('ListState.update: cannot add undefined');
        expect(l.get()).toEqual(['kept']);
      }
      b.dispose();
    });

    it('map state keys are compared by value: object and array keys are refused, naming the call; primitives of every kind work', () => {
      const b = make();
      b.setCurrentKey('a');
      for (const desc of [d.map, d.ttlMap]) {
        const m = b.getMapState(desc as MapStateDescriptor<unknown, unknown>);
        // Before: put(['page', 7]) from three records made three entries, none found after a restore.
        expect(() => m.put(['page', 7], 1)).toThrow('MapState.put: a map key must be a string, number, bigint, boolean or null (compared by value), got an array');
        expect(() => m.get({ page: 7 })).toThrow('MapState.get: a map key must be a string, number, bigint, boolean or null (compared by value), got an object');
        expect(() => m.putAll([['ok', 1], [{}, 2]])).toThrow('MapState.putAll');
        expect(() => m.contains(undefined)).toThrow('got undefined');
        expect(m.isEmpty()).toBe(true); // the refused putAll put nothing
        for (const k of ['1', 1, 10n, true, null]) m.put(k, `${String(k)}:${typeof k}`);
        expect([...m.keys()]).toEqual(['1', 1, 10n, true, null]);
        expect(m.get(1)).toBe('1:number');
        expect(m.get('1')).toBe('1:string');
        m.clear();
      }
      b.dispose();
    });

    it('list addAll of its own contents, putAll of nothing, and reducing or aggregating add(null) (as Flink: clears)', () => {
      const b = make();
      b.setCurrentKey('a');
      const l = b.getListState(d.list);
      l.update([1, 2]);
      l.addAll(l.get()); // before: never returned (the live array grew as it was read)
      expect(l.get()).toEqual([1, 2, 1, 2]);
      const m = b.getMapState(d.map);
      m.putAll([]);
      expect(m.isEmpty()).toBe(true);
      expect([...b.keys(d.map.name)]).toEqual([]); // before, on the heap backend: an empty map stored and snapshotted
      m.put('x', { n: 1 });
      m.putAll(m.entries()); // its own entries: read before it changes
      expect([...m.entries()]).toEqual([['x', { n: 1 }]]);
      const r = b.getReducingState(d.reducing);
      r.add(3);
      r.add(null as unknown as number); // before: reduce(3, null)
      expect(r.get()).toBeUndefined();
      const agg = b.getAggregatingState(d.aggregating);
      agg.add(4);
      agg.add(undefined as unknown as number);
      expect(agg.get()).toBeUndefined();
      b.dispose();
    });

    it('TTL map state: an entry removed while iterating is not yielded, one replaced is read anew (as without TTL)', () => {
      const b = make();
      b.setCurrentKey('a');
      for (const desc of [d.map, d.ttlMap]) {
        const m = b.getMapState(desc as MapStateDescriptor<string, unknown>);
        m.put('a', 1);
        m.put('b', 2);
        m.put('c', 3);
        const seen: [string, unknown][] = [];
        for (const [k, v] of m.entries()) {
          seen.push([k, v]);
          if (k === 'a') {
            m.remove('c');
            m.put('b', 20);
          }
        }
        expect(seen.filter(([k]) => k !== 'd'), desc.name).toEqual([['a', 1], ['b', 20]]);
        m.clear();
      }
      b.dispose();
    });

    it('a value state\'s object default is a fresh copy at every read, and update(null) clears the value (as Flink)', () => {
      const b = make();
      for (const ttl of [undefined, TTL]) {
        const v = b.getValueState(new ValueStateDescriptor<{ n: number } | null>(`counter${ttl ? '-ttl' : ''}`, { defaultValue: { n: 0 }, ...(ttl ? { ttl } : {}) }));
        for (const k of ['a', 'b', 'c', 'a']) {
          b.setCurrentKey(k);
          const x = v.value()!;
          x.n++;
          v.update(x);
        }
        const seen = ['a', 'b', 'c'].map((k) => (b.setCurrentKey(k), v.value()!.n));
        expect(seen).toEqual([2, 1, 1]);
        b.setCurrentKey('a');
        v.update(null);
        expect(v.value()).toEqual({ n: 0 });
        expect([...b.keys(`counter${ttl ? '-ttl' : ''}`)].map((e) => e.key).sort()).toEqual(['b', 'c']);
      }
      b.dispose();
    });

    it('keyed state used before any key is current fails, naming why; nothing is written where no key reads it', () => {
      const b = make();
      const v = b.getValueState(d.value);
      const l = b.getListState(d.list as ListStateDescriptor<unknown>);
      const m = b.getMapState(d.map as MapStateDescriptor<string, unknown>);
      for (const use of [() => v.update({ n: 42, tags: [] }), () => v.value(), () => l.add(1), () => m.put('x', 1)]) {
        expect(use).toThrow(/keyed state used outside a keyed context: no key is current/);
      }
      b.setCurrentKey('a');
      expect(v.value()).toBeUndefined();
      b.dispose();
    });

    it('TTL with onReadAndWrite: iterating a map state reads its entries and keeps them alive (as Flink\'s iterator restamps)', async () => {
      const clock = new ManualClock(0);
      const b = make(FULL, clock);
      const m = new MapStateDescriptor<string, string>('ttl-map-read', { ttl: { ttlMs: 100, updateType: 'onReadAndWrite' } });
      b.setCurrentKey('a');
      b.getMapState(m).put('x', 'v');
      for (const t of [90, 180, 270]) {
        clock.advanceTo(t);
        b.setCurrentKey('a');
        expect([...b.getMapState(m).entries()], `at ${t}`).toEqual([['x', 'v']]); // before: [] from 180 on
      }
      b.dispose();
    });

    it('TTL: an expired list element still visible is not brought back to life by a read, and a snapshot leaves it out', async () => {
      const clock = new ManualClock(0);
      const b = make(FULL, clock);
      const l = new ListStateDescriptor<string>('ttl-list-visible', { ttl: { ttlMs: 100, updateType: 'onReadAndWrite', visibility: 'returnExpiredIfNotCleanedUp' } });
      b.setCurrentKey('a');
      b.getListState(l).add('old');
      clock.advanceTo(150);
      // Still the current key (a new one lets the heap's incremental cleanup run first).
      expect(b.getListState(l).get()).toEqual(['old']); // expired, still visible: as configured
      clock.advanceTo(160);
      const snap = await snapshotOf(b);
      const { b: r } = await restored([snap], FULL, new ManualClock(170));
      r.setCurrentKey('a');
      expect(r.getListState(l).get()).toEqual([]); // before: ['old'], restamped at 150 by the read
      b.dispose();
      r.dispose();
    });

    it('TTL: a snapshot leaves out what has expired, so a restore with a longer TTL brings nothing back (heap and disk alike)', async () => {
      const clock = new ManualClock(1000);
      const b = make(FULL, clock);
      b.setCurrentKey('a');
      b.getValueState(new ValueStateDescriptor<string>('short-lived', { ttl: { ttlMs: 100 } })).update('secret');
      b.getListState(new ListStateDescriptor<string>('short-list', { ttl: { ttlMs: 100 } })).add('gone');
      clock.advanceTo(5000);
      const snap = await snapshotOf(b);
      const { b: r } = await restored([snap], FULL, new ManualClock(5001));
      r.setCurrentKey('a');
      expect(r.getValueState(new ValueStateDescriptor<string>('short-lived', { ttl: { ttlMs: 1_000_000 } })).value()).toBeUndefined(); // heap before: 'secret'
      expect(r.getListState(new ListStateDescriptor<string>('short-list', { ttl: { ttlMs: 1_000_000 } })).get()).toEqual([]);
      b.dispose();
      r.dispose();
    });

    it('TTL over an ever-growing key space: a snapshot holds about what the TTL keeps alive, not every key ever written', async () => {
      // A new key every ms, each written once and never read again, TTL 1 s: about 1,000 are alive at any time.
      const clock = new ManualClock(0);
      const b = make(FULL, clock);
      const written = 30_000;
      for (let i = 0; i < written; i++) {
        clock.advance(1);
        b.setCurrentKey(`session-${i}`);
        b.getValueState(d.ttlValue).update(`v${i}`);
        b.getListState(d.ttlList).add(`l${i}`);
        b.getMapState(d.ttlMap).put('m', i);
      }
      const s = new MemoryStreams();
      const h = await writeSnapshot(b.snapshot(), s);
      expect(h.entries).toBeGreaterThanOrEqual(3 * TTL.ttlMs); // the live ones stay
      expect(h.entries).toBeLessThan((3 * written) / 4); // every key ever written: 90,000 entries
      // And they are the live ones: the newest key is there, the oldest is not.
      const { b: r } = await restored([{ streams: s, handle: h }], FULL, clock);
      r.setCurrentKey(`session-${written - 1}`);
      expect(r.getValueState(d.ttlValue).value()).toBe(`v${written - 1}`);
      r.setCurrentKey('session-0');
      expect(r.getValueState(d.ttlValue).value()).toBeUndefined();
    });

    it('records during the asynchronous phase leave the snapshot as it was at the synchronous phase', async () => {
      const b = make();
      fill(b);
      const snapshot = b.snapshot();
      let touched = 0;
      const streams = new MemoryStreams();
      const handle = await writeSnapshot(snapshot, streams, 'op-0.state', (step) => {
        // A batch of records between two steps: mutate values in place through what handles
        // return, add and clear entries, add keys, on keys spread over every key group.
        for (let j = 0; j < 40; j++) {
          const i = (step * 97 + j * 31) % KEYS.length;
          b.setCurrentKey(KEYS[i]);
          const v = b.getValueState(d.value).value()!;
          v.n = -1;
          v.tags.push('changed');
          (b.getListState(d.list).get() as number[]).push(-5);
          b.getMapState(d.map).get('a')!.n = -100;
          b.getMapState(d.map).put('new', { n: 1 });
          b.getAggregatingState(d.aggregating).add(1e6);
          b.getValueState(d.ttlValue).clear();
          b.setCurrentKey(`new-${step}-${j}`);
          b.getValueState(d.value).update({ n: 0, tags: [] });
          touched++;
        }
      });
      expect(touched).toBeGreaterThan(0); // the phase took several steps
      // Dropping a state after its snapshot was written changes nothing in it either.
      b.dropState(d.list.name);
      const { b: r } = await restored([{ streams, handle }]);
      KEYS.forEach((k, i) => expect(read(r, k), String(k)).toEqual(expected(i)));
      expect([...r.keys(d.value.name)].length).toBe(KEYS.length);
    });

    it('a state dropped during the asynchronous phase is still in that snapshot', async () => {
      const b = make();
      fill(b);
      let dropped = false;
      const streams = new MemoryStreams();
      const handle = await writeSnapshot(b.snapshot(), streams, 'op-0.state', () => {
        if (dropped) return;
        b.dropState(d.list.name);
        dropped = true;
      });
      expect(dropped).toBe(true);
      expect([...b.keys(d.list.name)]).toEqual([]);
      const { b: r } = await restored([{ streams, handle }]);
      KEYS.forEach((k, i) => expect(read(r, k), String(k)).toEqual(expected(i)));
    });

    it('a snapshot taken while the previous one is still writing: both are exact', async () => {
      const b = make();
      fill(b);
      const first = b.snapshot();
      const s1 = new MemoryStreams();
      let second: Promise<KeyedStateHandle> | undefined;
      const s2 = new MemoryStreams();
      const h1 = await writeSnapshot(first, s1, 'op-0.state', (step) => {
        if (step !== 2) return;
        b.setCurrentKey(KEYS[0]);
        b.getValueState(d.value).update({ n: 1234, tags: [] });
        second = writeSnapshot(b.snapshot(), s2, 'op-0.state');
      });
      const h2 = await second!;
      const { b: r1 } = await restored([{ streams: s1, handle: h1 }]);
      KEYS.forEach((k, i) => expect(read(r1, k), String(k)).toEqual(expected(i)));
      const { b: r2 } = await restored([{ streams: s2, handle: h2 }]);
      r2.setCurrentKey(KEYS[0]);
      expect(r2.getValueState(d.value).value()).toEqual({ n: 1234, tags: [] });
      expect(read(r2, KEYS[1])).toEqual(expected(1));
    });

    it('an aborted snapshot rejects, abandons its stream, and the next snapshot works', async () => {
      const b = make();
      fill(b);
      const s = b.snapshot();
      const streams = new MemoryStreams();
      const result = writeSnapshot(s, streams, 'op-0.state', (step) => {
        if (step === 1) s.abort();
      });
      await expect(result).rejects.toThrow(/aborted/);
      await new Promise((r) => setTimeout(r, 10));
      expect(streams.aborted.has('op-0.state')).toBe(true);
      expect(streams.files.size).toBe(0);
      b.setCurrentKey(KEYS[3]);
      b.getValueState(d.value).update({ n: 77, tags: [] });
      const next = await snapshotOf(b);
      const { b: r } = await restored([next]);
      r.setCurrentKey(KEYS[3]);
      expect(r.getValueState(d.value).value()).toEqual({ n: 77, tags: [] });
      expect(read(r, KEYS[4])).toEqual(expected(4));
      // Aborting once written changes nothing.
      const done = b.snapshot();
      const doneStreams = new MemoryStreams();
      await writeSnapshot(done, doneStreams);
      done.abort();
      await new Promise((r) => setTimeout(r, 10));
      expect(doneStreams.aborted.size).toBe(0);
      expect(doneStreams.files.size).toBe(1);
    });

    it('state restored but not claimed by the job is carried into the next snapshot unchanged', async () => {
      const b = make();
      fill(b);
      const { b: r } = await restored([await snapshotOf(b)]);
      expect(r.restoredStateNames().sort()).toEqual(Object.values(d).map((x) => x.name).sort());
      expect(r.hasStates()).toBe(true);
      r.getValueState(d.value); // only "value" is claimed
      expect(r.restoredStateNames()).not.toContain(d.value.name);
      const again = await snapshotOf(r);
      const { b: r2 } = await restored([again]);
      KEYS.forEach((k, i) => expect(read(r2, k), String(k)).toEqual(expected(i)));
    });

    it('keys, keysInGroup, hasStates and dispose', () => {
      const b = make();
      expect(b.hasStates()).toBe(false);
      const v = b.getValueState(d.value);
      expect(b.hasStates()).toBe(true);
      const some = KEYS.slice(0, 300);
      some.forEach((k, i) => {
        b.setCurrentKey(k);
        v.update({ n: i, tags: [] });
      });
      const byGroup = new Map<number, unknown[]>();
      for (const { key, keyGroup } of b.keys(d.value.name)) {
        expect(keyGroup).toBe(kgOf(key));
        byGroup.set(keyGroup, [...(byGroup.get(keyGroup) ?? []), key]);
      }
      expect([...byGroup.values()].flat().length).toBe(some.length);
      for (let kg = 0; kg < MAXP; kg++) expect([...b.keysInGroup(d.value.name, kg)]).toEqual(byGroup.get(kg) ?? []);
      // Keys may be cleared while iterating.
      for (const { key, keyGroup } of b.keys(d.value.name)) {
        b.setCurrentNormalizedKey(key, keyGroup, key);
        v.clear();
      }
      expect([...b.keys(d.value.name)]).toEqual([]);
      expect([...b.keys('never-registered')]).toEqual([]);
      expect([...b.keysInGroup('never-registered', 3)]).toEqual([]);
      b.dispose();
      expect(b.hasStates()).toBe(false);
    });

    it('refuses a key outside its range, one name as two kinds, a restore after registration, another max parallelism', async () => {
      const range = keyGroupRangeForSubtask(MAXP, 2, 0);
      const b = make(range);
      const outside = KEYS.find((k) => kgOf(k) > range.end)!;
      expect(() => b.setCurrentKey(outside)).toThrow(/outside this subtask's range \[0, 63\]; the stream was not partitioned by this key/);
      b.getValueState(d.value);
      expect(() => b.getListState(new ListStateDescriptor<number>(d.value.name))).toThrow(/registered as value state and cannot be used as list state/);
      const full = make();
      fill(full, KEYS.slice(0, 10));
      const snap = await snapshotOf(full);
      await expect(b.restore([snap.streams.input('op-0.state')])).rejects.toThrow(/before any state is registered/);
      const other = factory.create({ keyGroupRange: { start: 0, end: 255 }, maxParallelism: 256, clock: new ManualClock(0), where: 'w' });
      await expect(other.restore([snap.streams.input('op-0.state')])).rejects.toThrow(/max parallelism 128, the operator now has 256/);
    });

    it('a rescale merging files that record a state differently (a TTL added, a serializer version) is refused naming both; files of different block layouts merge', async () => {
      const r0 = keyGroupRangeForSubtask(MAXP, 2, 0);
      const r1 = keyGroupRangeForSubtask(MAXP, 2, 1);
      const keysOf = (r: KeyGroupRange) => Array.from({ length: 60 }, (_, i) => `k${i}`).filter((k) => { const kg = keyGroupOf(normalizeKey(k), MAXP); return kg >= r.start && kg <= r.end; });
      // Subtask 0 used the state as now declared (with a TTL) before its snapshot; subtask 1 never
      // did since the restore that added the TTL, so its file still records the state without one.
      const plain = new ValueStateDescriptor<number>('s');
      const withTtl = new ValueStateDescriptor<number>('s', { ttl: TTL });
      const a = make(r0);
      const sa = a.getValueState(withTtl);
      for (const k of keysOf(r0)) { a.setCurrentKey(k); sa.update(1); }
      const b = make(r1);
      const sb = b.getValueState(plain);
      for (const k of keysOf(r1)) { b.setCurrentKey(k); sb.update(2); }
      const files = [await snapshotOf(a), await snapshotOf(b)];
      a.dispose?.();
      b.dispose?.();
      // Before: every file decoded with the first one's meta (values of the other read as absent, or as {v, t}).
      for (const order of [files, [...files].reverse()]) {
        await expect(restored(order)).rejects.toThrow(/state "s" is recorded as value state, serializer \S+ v1(, with TTL)? in memory:op-0\.state and as value state, serializer \S+ v1(, with TTL)? in memory:op-0\.state .*restore at the parallelism the snapshot was taken with/);
      }
      // The same state in an older weir's block layout (1: msgpack [[key, value], ...]) beside this one's: one backend holds both.
      const k1 = keysOf(r1)[0]!;
      const old = new MemoryStreams();
      const w = await StateFileWriter.create(await old.createStateStream('old-1.state'));
      w.addBlock(keyedBlockName('s', keyGroupOf(normalizeKey(k1), MAXP)), encodeValue([[k1, 7]]));
      const size = await w.close({ states: [{ name: 's', kind: 'value', serializer: { name: plain.serializer.name, version: plain.serializer.version }, ttl: false }], keyGroupRange: r1, maxParallelism: MAXP });
      const c = make(r0);
      const sc = c.getValueState(plain);
      const k0 = keysOf(r0)[0]!;
      c.setCurrentKey(k0);
      sc.update(5);
      const now = await snapshotOf(c);
      c.dispose?.();
      for (const inputs of [[now.streams.input('op-0.state'), old.input('old-1.state')], [old.input('old-1.state'), now.streams.input('op-0.state')]]) {
        expect(size).toBeGreaterThan(0);
        const m = make();
        await m.restore(inputs);
        const st = m.getValueState(plain);
        m.setCurrentKey(k0);
        expect(st.value()).toBe(5);
        m.setCurrentKey(k1);
        expect(st.value()).toBe(7);
        m.dispose?.();
      }
    });
  });
}

