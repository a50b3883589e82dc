/**
 * Prefetch of large heap state (HeapKeyedStateBackend.prefetch, KeyTable.touchAll): a keyed
 * operator reads the memory of a whole batch's lookups before running the batch. It must
 * change nothing (values, key order, frozen groups of a snapshot in progress), turn on only
 * for large state, and leave a failing key selector to be reported at its record.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { ValueStateDescriptor } from '../../src/core/state.ts';
import { HeapKeyedStateBackend } from '../../src/state/heap/backend.ts';
import { keyGroupOf, normalizeKey, type NormKey } from '../../src/state/key-groups.ts';
import { keyHash } from '../../src/state/key-table.ts';
import type { Collector, KeyedContext } from '../../src/index.ts';
import { runInline } from '../helpers/run.ts';
import { failureOf } from '../api/util.ts';
import { FULL, MAXP, MemoryStreams, writeSnapshot } from './backend-contract.ts';

const count = new ValueStateDescriptor<number>('count');
/** Above the backend's threshold for prefetching (2^17 entries). */
const LARGE = 140_000;

function batchOf(keys: readonly NormKey[]): { keys: NormKey[]; groups: Int32Array; hashes: Int32Array } {
  return {
    keys: [...keys],
    groups: Int32Array.from(keys, (k) => keyGroupOf(normalizeKey(k), MAXP) - FULL.start),
    hashes: Int32Array.from(keys, (k) => keyHash(normalizeKey(k))),
  };
}

/** wantsPrefetch() over the backend's recheck period (it looks at the sizes every 64 batches). */
function wantsWithin(b: HeapKeyedStateBackend, batches: number): boolean {
  let wants = false;
  for (let i = 0; i < batches; i++) wants = b.wantsPrefetch();
  return wants;
}

describe('prefetch of large heap state', () => {
  it('turns on past the size, reads without changing values, key order or the frozen groups of a snapshot', async () => {
    const b = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    const v = b.getValueState(count);
    for (let i = 0; i < 1000; i++) {
      b.setCurrentKey(`k${i}`);
      v.update(i);
    }
    expect(wantsWithin(b, 64)).toBe(false);
    for (let i = 1000; i < LARGE; i++) {
      b.setCurrentKey(`k${i}`);
      v.update(i);
    }
    expect(wantsWithin(b, 64)).toBe(true);
    const order = [...b.keys('count')].map((e) => e.key);
    const s = b.snapshot();
    const frozen = b.frozenGroups();
    expect(frozen).toBe(MAXP);

    // Present keys, absent keys, numbers; fresh strings, as records make them.
    const keys: NormKey[] = [];
    for (let i = 0; i < 2048; i++) keys.push(i % 3 === 0 ? `k${(i * 7919) % LARGE}` : i % 3 === 1 ? `absent${i}` : i);
    const { keys: ks, groups, hashes } = batchOf(keys);
    expect(typeof b.prefetch(ks, groups, hashes, ks.length)).toBe('number');
    expect(b.frozenGroups()).toBe(frozen);

    const streams = new MemoryStreams();
    const h = await writeSnapshot(s, streams);
    const r = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(0), 'op');
    await r.restore([streams.input(h.streams[0]!.name)]);
    expect([...b.keys('count')].map((e) => e.key)).toEqual(order);
    const rv = r.getValueState(count);
    for (let i = 0; i < LARGE; i += 97) {
      b.setCurrentKey(`k${i}`);
      r.setCurrentKey(`k${i}`);
      expect(v.value()).toBe(i);
      expect(rv.value()).toBe(i);
    }
    b.setCurrentKey('absent1');
    expect(v.value()).toBeUndefined();
  });

  it('a keyed count over more keys than the threshold is exact, on the keyed process function and a rolling reduce', async () => {
    const n = 2 * LARGE;
    const keyOf = (i: number): string => `w${(i * 104_729) % LARGE}`;
    const r = await runInline((env) => {
      const words = env.fromGenerator((i) => keyOf(i), { count: n });
      words
        .keyBy((w) => w)
        .process({
          processElement(_w: string, ctx: KeyedContext<string>, out: Collector<number>) {
            const s = ctx.getState(count);
            const c = (s.value() ?? 0) + 1;
            s.update(c);
            if (c === 2) out.collect(1);
          },
        })
        .collect('twice');
      words.map((w) => ({ w, c: 1 })).keyBy((x) => x.w).reduce((a, b) => ({ w: a.w, c: a.c + b.c })).filter((x) => x.c === 2).collect('reduced');
    });
    expect(r.status, r.error?.message).toBe('FINISHED');
    // Every key comes exactly twice (104,729 is prime to LARGE): each reaches 2 once.
    expect(r.collected('twice').length).toBe(LARGE);
    expect(r.collected('reduced').length).toBe(LARGE);
  });

  it('a key selector failing once the state is large is reported at its record, as without prefetch', async () => {
    const n = 2 * LARGE;
    const msg = await failureOf((env) => {
      env
        .fromGenerator((i) => ({ i, w: i === n - 5 ? undefined : `w${i % LARGE}` }), { count: n })
        .keyBy((r: { w?: string }) => r.w)
        .reduce((a) => a)
        .collect();
    });
    expect(msg).toContain('failed in keyBy key selector');
    expect(msg).toContain(`{"i":${n - 5}}`);
    expect(msg).toContain('key selector returned undefined');
  });
});
