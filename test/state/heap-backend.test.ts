/**
 * The heap backend: the KeyedStateBackend contract (backend-contract.ts), its copy-on-write by
 * freezing, and backends chosen by name.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { keyedStateBackendFactory } from '../../src/state/backends.ts';
import { HeapKeyedStateBackend, heapBackendFactory } from '../../src/state/heap/backend.ts';
import { normalizeKey } from '../../src/state/key-groups.ts';
import { backendContract, d, FULL, kgOf, MAXP, MemoryStreams, TTL, writeSnapshot } from './backend-contract.ts';

backendContract(heapBackendFactory);

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
});
