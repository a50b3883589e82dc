/**
 * The commit ledger of two-phase-commit sinks, as a pure protocol: seeded random schedules of
 * barriers (prepare + snapshot), completions (in any order, some lost), commits finishing one
 * at a time, and restores from any completed checkpoint. Invariants checked after every step.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { CommitLedger, type CommitBatch } from '../../src/runtime/operators/commit-ledger.ts';

describe('commit ledger', () => {
  it('hands committables out once, in checkpoint order, and keeps them until committed', () => {
    const l = new CommitLedger<string>();
    l.prepared(1, ['a'], 0);
    l.prepared(2, ['b', 'c'], 0);
    l.prepared(4, ['d'], 0);
    expect(l.snapshot()).toEqual(['a', 'b', 'c', 'd']);
    const b1 = l.completed(2)!;
    expect(b1.committables).toEqual(['a', 'b', 'c']);
    expect(b1.upToCheckpointId).toBe(2);
    expect(l.completed(2)).toBeUndefined(); // a repeated notification hands out nothing twice
    expect(l.snapshot()).toEqual(['a', 'b', 'c', 'd']); // handed out is not committed
    const b2 = l.completed(5)!;
    expect(b2.committables).toEqual(['d']);
    l.committed(b1);
    expect(l.snapshot()).toEqual(['d']);
    expect(l.outstanding).toBe(1);
    l.committed(b2);
    expect(l.snapshot()).toEqual([]);
  });

  it('keeps the subtask that prepared each committable beside it, restored ones included (a restore deals them by it)', () => {
    const l = new CommitLedger<string>();
    const due = l.restored(7, ['x', 'y'], [2, 0])!;
    l.prepared(8, ['z'], 0);
    expect(l.snapshot()).toEqual(['x', 'y', 'z']);
    expect(l.snapshotOwners()).toEqual([2, 0, 0]);
    l.committed(due);
    expect(l.snapshotOwners()).toEqual([0]);
    expect(() => new CommitLedger<string>().restored(1, ['a'], [])).toThrow('1 restored committables with 0 owners');
  });

  it('restored committables are due at once and stay until their commit has finished', () => {
    const l = new CommitLedger<string>();
    const due = l.restored(7, ['x', 'y'], [0, 0])!;
    expect(due.committables).toEqual(['x', 'y']);
    l.prepared(8, ['z'], 0);
    expect(l.snapshot()).toEqual(['x', 'y', 'z']);
    l.committed(due);
    expect(l.snapshot()).toEqual(['z']);
    expect(new CommitLedger<string>().restored(3, [], [])).toBeUndefined();
  });

  it('refuses checkpoints out of order', () => {
    const l = new CommitLedger<string>();
    l.prepared(3, ['a'], 0);
    expect(() => l.prepared(3, ['b'], 0)).toThrow(/checkpoint 3 prepared after checkpoint 3/);
    expect(() => l.prepared(2, ['b'], 0)).toThrow(/checkpoint 2 prepared after checkpoint 3/);
    l.prepared(5, [], 0); // nothing written since: no entry
    expect(l.outstanding).toBe(1);
  });

  it('a restore from any completed checkpoint recommits everything a completed checkpoint promised (seeded schedules)', () => {
    const base = Number(process.env.SEED ?? Math.floor(Math.random() * 1_000_000));
    console.log(`commit ledger schedules seed=${base} (replay with SEED=${base})`);
    for (let seed = base; seed < base + 300; seed++) {
      const rng = new Rng(seed);
      let ledger = new CommitLedger<string>();
      let id = 0;
      let n = 0;
      /** Committables whose commit has finished (the external system's view). */
      const committedSet = new Set<string>();
      /** Per checkpoint: its snapshot and what had been prepared up to its barrier. */
      const snaps = new Map<number, { state: string[]; promised: string[] }>();
      const completedIds: number[] = [];
      let inFlight: CommitBatch<string>[] = [];
      let prepared: string[] = [];
      for (let step = 0; step < 60; step++) {
        const r = rng.int(10);
        if (r < 4) {
          id++;
          const fresh = Array.from({ length: rng.int(3) }, () => `c${n++}`);
          ledger.prepared(id, fresh, 0);
          prepared = prepared.concat(fresh);
          snaps.set(id, { state: ledger.snapshot(), promised: prepared.slice() });
        } else if (r < 6 && snaps.size > 0) {
          const live = [...snaps.keys()];
          const c = live[rng.int(live.length)]!; // completions arrive late and out of order; some never
          if (!completedIds.includes(c)) {
            completedIds.push(c);
            const b = ledger.completed(c);
            if (b) inFlight.push(b);
          }
        } else if (r < 8 && inFlight.length > 0) {
          const b = inFlight.shift()!; // commits finish one at a time, in order
          for (const c of b.committables) committedSet.add(c);
          ledger.committed(b);
        } else if (r < 9 && completedIds.length > 0) {
          // Killed; restored from a completed checkpoint (the latest, or an older retained one).
          const sorted = completedIds.slice().sort((a, b) => a - b);
          const from = sorted[sorted.length - 1 - rng.int(Math.min(2, sorted.length))]!;
          const s = snaps.get(from)!;
          // The invariant: everything promised up to that barrier is committed or in the state.
          for (const c of s.promised) {
            if (!committedSet.has(c) && !s.state.includes(c)) throw new Error(`seed ${seed}: ${c} lost (restore from ${from})`);
          }
          ledger = new CommitLedger<string>();
          inFlight = [];
          const due = ledger.restored(from, s.state, s.state.map(() => 0));
          if (due) inFlight.push(due);
          prepared = s.promised.slice();
          // Ids are never reused after a restore.
          for (const k of [...snaps.keys()]) if (k > from) snaps.delete(k);
          for (let i = completedIds.length - 1; i >= 0; i--) if (completedIds[i]! > from) completedIds.splice(i, 1);
        }
        // Every snapshot lists each committable once.
        const now = ledger.snapshot();
        expect(new Set(now).size, `seed ${seed}`).toBe(now.length);
      }
    }
  });
});
