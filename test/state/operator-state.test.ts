/**
 * Operator state restored into several subtasks: each gets its own copy of union-list and
 * broadcast values (the restore plan shares them by reference within a thread).
 */
import { describe, expect, it } from 'vitest';
import { BroadcastStateDescriptor, ListStateDescriptor } from '../../src/core/state.ts';
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
