/**
 * Operator state restored into several subtasks: each gets its own copy of union-list and
 * broadcast values (the restore plan shares them by reference within a thread). Lists and
 * broadcast states are snapshotted through their descriptor's serializer, which is recorded,
 * checked and migrated on restore as keyed state's is.
 */
import { describe, expect, it } from 'vitest';
import { BroadcastStateDescriptor, ListStateDescriptor, type StateSerializer } from '../../src/core/state.ts';
import { StateRestoreError } from '../../src/state/state-codec.ts';
import { OperatorStateStore } from '../../src/state/operator-state.ts';

describe('restored operator state is private to each subtask', () => {
  it('a union list value changed in place in one subtask is unchanged in another', () => {
    const shared = [{ n: 1 }, { n: 2 }];
    const a = new OperatorStateStore('a');
    const b = new OperatorStateStore('b');
    a.restoreList('l', 'union', shared);
    b.restoreList('l', 'union', shared);
    const la = a.getListState(new ListStateDescriptor<{ n: number }>('l'), 'union');
    const lb = b.getListState(new ListStateDescriptor<{ n: number }>('l'), 'union');
    [...la.get()][0]!.n = 99;
    expect([...lb.get()]).toEqual([{ n: 1 }, { n: 2 }]);
    expect(shared).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('a broadcast value changed in place in one subtask is unchanged in another', () => {
    const shared: [unknown, unknown][] = [['k', { rules: ['x'] }]];
    const a = new OperatorStateStore('a');
    const b = new OperatorStateStore('b');
    a.restoreBroadcast('r', shared);
    b.restoreBroadcast('r', shared);
    const d = new BroadcastStateDescriptor<string, { rules: string[] }>('r');
    a.getBroadcastState(d).get('k')!.rules.push('y');
    expect(b.getBroadcastState(d).get('k')).toEqual({ rules: ['x'] });
  });
});

describe('a list restored under the other distribution mode', () => {
  const desc = new ListStateDescriptor<string>('buf');
  it('union -> split: the items stay on subtask 0 only, so the next snapshot holds each once (before: every subtask kept all, p copies)', () => {
    const stores = [0, 1, 2].map((i) => new OperatorStateStore(`s${i}`, i));
    for (const s of stores) s.restoreList('buf', 'union', ['a', 'b']);
    const lists = stores.map((s) => [...s.getListState(desc, 'split').get()]);
    expect(lists).toEqual([['a', 'b'], [], []]);
  });

  it('split -> union: each subtask keeps its own share (the next union holds each item once)', () => {
    const stores = [0, 1].map((i) => new OperatorStateStore(`s${i}`, i));
    stores[0]!.restoreList('buf', 'split', ['a']);
    stores[1]!.restoreList('buf', 'split', ['b']);
    expect(stores.map((s) => [...s.getListState(desc, 'union').get()])).toEqual([['a'], ['b']]);
  });
});

describe('operator state through its descriptor\'s serializer (as keyed state)', () => {
  // v1 keeps a count n, encoded as {n}; v2 keeps {count, since} and migrates v1's data.
  const s1: StateSerializer<number> = { name: 'app.count', version: 1, encode: (n) => ({ n }), decode: (d) => (d as { n: number }).n };
  interface C { count: number; since: string }
  const s2: StateSerializer<C> = { name: 'app.count', version: 2, encode: (c) => c, decode: (d, w) => (w === 1 ? { count: (d as { n: number }).n, since: 'migrated' } : (d as C)) };
  const WHERE = 'operator "ops" (uid "ops", subtask 1/1)';

  /** A v1 subtask's snapshot: list [3, 4], union list [7], broadcast a -> 5. */
  function v1Snapshot() {
    const st = new OperatorStateStore(WHERE);
    st.getListState(new ListStateDescriptor('counts', { serializer: s1 }), 'split').update([3, 4]);
    st.getListState(new ListStateDescriptor('all', { serializer: s1 }), 'union').add(7);
    st.getBroadcastState(new BroadcastStateDescriptor<string, number>('cfg', { serializer: s1 })).put('a', 5);
    return st.snapshot()!;
  }
  function restore(snap: ReturnType<typeof v1Snapshot>, subtask = 0): OperatorStateStore {
    const st = new OperatorStateStore(WHERE, subtask);
    for (const [name, l] of Object.entries(snap.lists ?? {})) st.restoreList(name, l.distribution, l.items, snap.serializers?.[`list:${name}`]);
    for (const [name, e] of Object.entries(snap.broadcast ?? {})) st.restoreBroadcast(name, e, snap.serializers?.[`broadcast:${name}`]);
    return st;
  }

  it('a snapshot holds values in the serializer\'s encoding and records its name and version per state (before: raw values, nothing recorded)', () => {
    expect(v1Snapshot()).toEqual({
      lists: { counts: { distribution: 'split', items: [{ n: 3 }, { n: 4 }] }, all: { distribution: 'union', items: [{ n: 7 }] } },
      broadcast: { cfg: [['a', { n: 5 }]] },
      serializers: { 'list:counts': { name: 'app.count', version: 1 }, 'list:all': { name: 'app.count', version: 1 }, 'broadcast:cfg': { name: 'app.count', version: 1 } },
    });
  });

  it('v2 with a decode migration reads v1\'s state migrated; the same version reads it back decoded (before: raw {n} objects, no migration)', () => {
    const st = restore(v1Snapshot());
    expect(st.getListState(new ListStateDescriptor('counts', { serializer: s2 }), 'split').get()).toEqual([{ count: 3, since: 'migrated' }, { count: 4, since: 'migrated' }]);
    expect(st.getListState(new ListStateDescriptor('all', { serializer: s2 }), 'union').get()).toEqual([{ count: 7, since: 'migrated' }]);
    expect(st.getBroadcastState(new BroadcastStateDescriptor<string, C>('cfg', { serializer: s2 })).get('a')).toEqual({ count: 5, since: 'migrated' });
    expect(st.snapshot()!.serializers).toEqual({ 'list:counts': { name: 'app.count', version: 2 }, 'list:all': { name: 'app.count', version: 2 }, 'broadcast:cfg': { name: 'app.count', version: 2 } });
    const same = restore(v1Snapshot());
    expect(same.getListState(new ListStateDescriptor('counts', { serializer: s1 }), 'split').get()).toEqual([3, 4]);
    expect(same.getBroadcastState(new BroadcastStateDescriptor<string, number>('cfg', { serializer: s1 })).get('a')).toBe(5);
  });

  it('each subtask decodes its own copy of union list and broadcast values', () => {
    const snap = v1Snapshot();
    const keep: StateSerializer<{ n: number }> = { name: 'app.count', version: 1 }; // no decode: the encoded object as it is
    const [a, b] = [restore(snap, 0), restore(snap, 1)];
    const d = new ListStateDescriptor('all', { serializer: keep });
    [...a.getListState(d, 'union').get()][0]!.n = 99;
    expect(b.getListState(d, 'union').get()).toEqual([{ n: 7 }]);
    const bd = new BroadcastStateDescriptor<string, { n: number }>('cfg', { serializer: keep });
    a.getBroadcastState(bd).get('a')!.n = 99;
    expect(b.getBroadcastState(bd).get('a')).toEqual({ n: 5 });
    expect(snap.lists!.all!.items).toEqual([{ n: 7 }]);
  });

  const refused: [string, StateSerializer<any>, string][] = [
    ['renamed', { name: 'other.count', version: 1 }, 'was written by serializer "app.count" v1 and the job now uses "other.count" v1; they are incompatible'],
    ['older job', { name: 'app.count', version: 0 }, 'was written by serializer "app.count" v1, newer than this job\'s v0; restore with the newer job version'],
    ['v2 without decode', { name: 'app.count', version: 2 }, 'was written by serializer "app.count" v1; v2 declares no decode(data, writtenVersion) to migrate it'],
  ];
  for (const [what, s, message] of refused) {
    it(`refuses a restored list and broadcast state it cannot read (${what}), naming operator and state (before: taken as it was)`, () => {
      const st = restore(v1Snapshot());
      expect(() => st.getListState(new ListStateDescriptor('counts', { serializer: s }), 'split')).toThrow(`${WHERE}: state "counts" ${message}`);
      expect(() => st.getBroadcastState(new BroadcastStateDescriptor('cfg', { serializer: s }))).toThrow(`${WHERE}: state "cfg" ${message}`);
      try {
        st.getListState(new ListStateDescriptor('all', { serializer: s }), 'union');
        expect.unreachable();
      } catch (e) {
        expect((e as StateRestoreError).code).toBe('STATE_RESTORE');
      }
    });
  }

  it('state the job has not claimed yet goes into the next snapshot as it was restored, with its serializer record', () => {
    const snap = v1Snapshot();
    expect(restore(snap).snapshot()).toEqual(snap);
    const st = restore(snap);
    st.getListState(new ListStateDescriptor('counts', { serializer: s2 }), 'split');
    const next = st.snapshot()!;
    expect(next.lists!.all).toEqual({ distribution: 'union', items: [{ n: 7 }] });
    expect(next.broadcast!.cfg).toEqual([['a', { n: 5 }]]);
    expect(next.serializers).toEqual({ 'list:counts': { name: 'app.count', version: 2 }, 'list:all': { name: 'app.count', version: 1 }, 'broadcast:cfg': { name: 'app.count', version: 1 } });
  });

  it('a snapshot of an earlier version (no serializer recorded) restores its raw values as they are, whatever the serializer now', () => {
    const st = new OperatorStateStore(WHERE);
    st.restoreList('counts', 'split', [3, 4]);
    st.restoreBroadcast('cfg', [['a', 5]]);
    expect(st.snapshot()).toEqual({ lists: { counts: { distribution: 'split', items: [3, 4] } }, broadcast: { cfg: [['a', 5]] } });
    expect(st.getListState(new ListStateDescriptor('counts', { serializer: s2 as StateSerializer<unknown> }), 'split').get()).toEqual([3, 4]);
    expect(st.getBroadcastState(new BroadcastStateDescriptor('cfg', { serializer: { name: 'other', version: 3 } })).get('a')).toBe(5);
  });
});
