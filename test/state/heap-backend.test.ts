/**
 * The heap backend: the KeyedStateBackend contract (backend-contract.ts), its copy-on-write by
 * freezing, and backends chosen by name.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { keyedStateBackendFactory } from '../../src/state/backends.ts';
import { HeapKeyedStateBackend, heapBackendFactory } from '../../src/state/heap/backend.ts';
import { normalizeKey } from '../../src/state/key-groups.ts';
import { ValueStateDescriptor } from '../../src/core/state.ts';
import { MAX_PENDING_BYTES } from '../../src/state/state-file-write.ts';
import { backendContract, d, FULL, kgOf, MAXP, MemoryStreams, TTL, writeSnapshot } from './backend-contract.ts';

backendContract(heapBackendFactory);

describe('heap backend: a snapshot waits for a slow disk', () => {
  it('encodes no further than MAX_PENDING_BYTES ahead of what the stream has taken (before: writes drained into the queue were not counted, and every value was encoded while the stream took none)', async () => {
    const keys = 300_000;
    let encoded = 0;
    const desc = new ValueStateDescriptor<string>('wide', { serializer: { name: 'counting', version: 1, encode: (v) => (encoded++, v) } });
    const b = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    const v = b.getValueState(desc);
    const value = 'x'.repeat(100);
    for (let i = 0; i < keys; i++) {
      b.setCurrentKey('k' + i);
      v.update(value);
    }
    // A stream that takes nothing until released (a disk far slower than the encoding).
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inner = new MemoryStreams();
    const slow = {
      async createStateStream(name: string) {
        const s = await inner.createStateStream(name);
        let first = true;
        return { ...s, write: async (cs: readonly Uint8Array[]) => (first ? (first = false) : await gate, s.write(cs)) };
      },
    };
    const s = b.snapshot();
    let woken = false;
    const result = s.write({ streams: slow, streamName: 'op-0.state', wake: () => (woken = true) });
    for (let idle = 0; idle < 5; ) {
      const before = encoded;
      if (woken) {
        woken = false;
        while (s.step());
      }
      await new Promise((r) => setTimeout(r, 10));
      idle = encoded === before ? idle + 1 : 0;
    }
    // ~110 bytes a value: the bound holds ~150 K of them, plus one step's.
    const bound = Math.ceil(MAX_PENDING_BYTES / 100) + 40_000;
    console.log(`encoded while the stream took nothing: ${encoded} of ${keys} values (bound ${bound})`);
    expect(encoded).toBeGreaterThan(0);
    expect(encoded).toBeLessThan(bound);
    release();
    let settled = false;
    result.then(() => (settled = true), () => (settled = true));
    while (!settled) {
      if (woken) {
        woken = false;
        while (s.step());
      }
      await new Promise((r) => setImmediate(r));
    }
    const h = await result;
    expect(encoded).toBe(keys);
    const r = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    await r.restore([inner.input(h.streams[0]!.name)]);
    r.setCurrentKey('k' + (keys - 1));
    expect(r.getValueState(desc).value()).toBe(value);
  });
});

describe('heap backend: copy-on-write by freezing', () => {
  it('the synchronous phase freezes the non-empty groups; a record touching one serializes it and releases it', async () => {
    const b = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    const v = b.getValueState(d.value);
    b.setCurrentKey('a');
    v.update({ n: 1, tags: [] });
    b.setCurrentKey(7);
    v.update({ n: 2, tags: [] });
    const groups = new Set([kgOf('a'), kgOf(7)]).size;
    const s = b.snapshot();
    expect(b.frozenGroups()).toBe(groups);
    b.setCurrentKey('a');
    v.value()!.n = 100; // the read serialized the group before the mutation
    expect(b.frozenGroups()).toBe(groups - 1);
    const streams = new MemoryStreams();
    const h = await writeSnapshot(s, streams);
    expect(b.frozenGroups()).toBe(0);
    const r = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    await r.restore([streams.input(h.streams[0]!.name)]);
    r.setCurrentKey('a');
    expect(r.getValueState(d.value).value()).toEqual({ n: 1, tags: [] });
  });

  it('is the default backend, chosen by name; an unknown name fails listing the known ones', () => {
    expect(keyedStateBackendFactory()).toBe(heapBackendFactory);
    expect(keyedStateBackendFactory('heap')).toBe(heapBackendFactory);
    expect(keyedStateBackendFactory('disk').name).toBe('disk');
    expect(() => keyedStateBackendFactory('rocksdb')).toThrow(/unknown state backend "rocksdb"; available: heap, disk/);
  });
});

describe('heap backend: incremental TTL cleanup (ttl-sweep.ts)', () => {
  it('memory stays near what the TTL keeps alive over an ever-growing key space, also while a snapshot holds frozen groups', async () => {
    const clock = new ManualClock(0);
    const b = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op');
    const write = (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        clock.advance(1);
        b.setCurrentKey(`session-${i}`);
        b.getValueState(d.ttlValue).update(`v${i}`);
      }
    };
    write(0, 20_000);
    const live = () => [...b.keys(d.ttlValue.name)].length;
    expect(live()).toBeGreaterThanOrEqual(1000);
    expect(live()).toBeLessThan(5000); // 20,000 without the cleanup
    // A snapshot in progress: the cleanup serializes a frozen group before removing from it,
    // so the snapshot keeps the group as it was at its synchronous phase.
    const before = live();
    const s = b.snapshot();
    write(20_000, 40_000);
    expect(live()).toBeLessThan(5000);
    const streams = new MemoryStreams();
    const h = await writeSnapshot(s, streams);
    // What was alive at its synchronous phase (t = 20,000 ms): the keys written in the last TTL
    // (1 s, one key per ms); expired ones not swept yet are left out, as the disk backend does.
    expect(before).toBeGreaterThan(TTL.ttlMs);
    expect(h.entries).toBe(TTL.ttlMs);
  });

  it('a burst of writes and clears between two records (timers) that renumbers a group\'s table several times: the sweep starts the group over', () => {
    // All keys in one key group; timers set keys without a sweep step (setCurrentNormalizedKey).
    // Before: "KeyTable: renumbered 6 times during one iteration" failed the next record.
    const clock = new ManualClock(0);
    const b = new HeapKeyedStateBackend({ start: 0, end: 0 }, 1, clock, 'op');
    const st = b.getValueState(d.ttlValue);
    for (let i = 0; i < 50; i++) {
      b.setCurrentKey(`a${i}`);
      st.update(`v${i}`);
    }
    for (let i = 0; i < 5000; i++) {
      b.setCurrentNormalizedKey(normalizeKey(`b${i}`), 0, `b${i}`);
      st.update(`w${i}`);
      if (i % 2 === 1) {
        b.setCurrentNormalizedKey(normalizeKey(`b${i - 1}`), 0, `b${i - 1}`);
        st.clear();
      }
    }
    clock.advance(TTL.ttlMs); // everything expires; the sweep goes on removing
    for (let i = 0; i < 3000; i++) b.setCurrentKey(`next-${i}`);
    expect([...b.keys(d.ttlValue.name)].length).toBe(0);
  });

  it('the key of the record before is kept without normalising it again, also after a timer or a firing set another key', () => {
    const b = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    const v = b.getValueState(new ValueStateDescriptor<string>('v'));
    b.setCurrentKey('a');
    v.update('A');
    b.setCurrentKey(7);
    v.update('seven');
    // A timer or a window firing sets a key through its normalised form, with or without the original.
    b.setCurrentNormalizedKey(normalizeKey(7), kgOf(7), undefined);
    expect(v.value()).toBe('seven');
    expect(b.setCurrentKey('a')).toBe(kgOf('a'));
    expect(v.value()).toBe('A');
    b.setCurrentNormalizedKey(normalizeKey(7), kgOf(7), 7);
    b.setCurrentKeyInGroup('a', kgOf('a'));
    expect(v.value()).toBe('A');
    expect(b.setCurrentKey('a')).toBe(kgOf('a'));
    expect(b.ctx.keyGroup).toBe(kgOf('a'));
    // 0 and -0 stay one key, as before the shortcut.
    b.setCurrentKey(0);
    v.update('zero');
    b.setCurrentKey(-0);
    expect(v.value()).toBe('zero');
    b.setCurrentKey(1);
    b.setCurrentKey(-0);
    expect(v.value()).toBe('zero');
  });

  it('visitGroup reads a group\'s stored values without a current key; a state with TTL is left to the per-key path', () => {
    const b = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    const v = b.getValueState(new ValueStateDescriptor<number>('counts'));
    const t = b.getValueState(d.ttlValue);
    const keys = Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? i : `k${i}`));
    for (const k of keys) {
      b.setCurrentKey(k);
      v.update(keys.indexOf(k));
      t.update('x');
    }
    b.setCurrentKey(4);
    v.clear();
    const seen = new Map<unknown, unknown>();
    for (let kg = 0; kg < MAXP; kg++) {
      expect(b.visitGroup('counts', kg, (value, key) => {
        expect(kgOf(key)).toBe(kg);
        seen.set(key, value);
      })).toBe(true);
      expect(b.visitGroup(d.ttlValue.name, kg, () => expect.unreachable())).toBe(false);
    }
    expect(seen.size).toBe(keys.length - 1);
    for (const k of keys) expect(seen.get(k)).toBe(k === 4 ? undefined : keys.indexOf(k));
    expect(b.visitGroup('never registered', 0, () => expect.unreachable())).toBe(true);
  });
});

describe('heap backend: presizeLike', () => {
  /** The index slots of the map of `key`'s group in state `name` (internal: the tables are private). */
  function slotsOf(b: HeapKeyedStateBackend, name: string, key: string): number {
    const table = (b as unknown as { tables: Map<string, { tableOf(i: number): { indexSlots: number } | undefined }> }).tables.get(name)!;
    return table.tableOf(kgOf(key) - FULL.start)!.indexSlots;
  }

  it('makes a new state\'s maps at the sizes the other state\'s groups have, capped, and changes no value', () => {
    const b = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    const before = b.getValueState(new ValueStateDescriptor<number>('__w0'));
    const keys = Array.from({ length: 20_000 }, (_, i) => 'k' + i);
    for (const k of keys) {
      b.setCurrentKey(k);
      before.update(1);
    }
    const after = b.getValueState(new ValueStateDescriptor<number>('__w1000'));
    b.presizeLike('__w1000', '__w0');
    const plain = b.getValueState(new ValueStateDescriptor<number>('unhinted'));
    b.setCurrentKey('k0');
    after.update(2);
    plain.update(3);
    // k0's group holds ~156 keys of the 20,000 (128 groups): sized for them at once, the
    // smallest power of two whose 3/4 takes them all.
    let n = 0;
    b.visitGroup('__w0', kgOf('k0'), () => n++);
    expect(n).toBeGreaterThan(100);
    let slots = 16;
    while (Math.floor(slots * 0.75) < n + 1) slots *= 2;
    expect(slotsOf(b, '__w1000', 'k0')).toBe(slots);
    expect(slotsOf(b, 'unhinted', 'k0')).toBe(16);
    for (const k of keys) {
      b.setCurrentKey(k);
      after.update((after.value() ?? 0) + 5);
    }
    for (const k of keys) {
      b.setCurrentKey(k);
      expect(after.value()).toBe(k === 'k0' ? 7 : 5);
      expect(before.value()).toBe(1);
    }
    // A hint names only registered states; anything else is ignored.
    b.presizeLike('nope', '__w0');
    b.presizeLike('__w1000', 'nope');
  });

  it('caps each group\'s hint, so a sparse window after a dense one reserves a bounded index', () => {
    const b = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    const dense = b.getValueState(new ValueStateDescriptor<number>('dense'));
    for (let i = 0; i < 400_000; i++) {
      b.setCurrentKey('k' + i);
      dense.update(i);
    }
    const sparse = b.getValueState(new ValueStateDescriptor<number>('sparse'));
    b.presizeLike('sparse', 'dense');
    b.setCurrentKey('k1');
    sparse.update(1);
    expect(slotsOf(b, 'dense', 'k1')).toBeGreaterThanOrEqual(4096); // ~3,100 keys a group
    expect(slotsOf(b, 'sparse', 'k1')).toBe(2048); // 1,024 entries at most
  });
});
