/**
 * The disk backend's write-back cache against a Map: random reads, writes and clears over
 * many more keys than a tiny cache holds (dirty entries are evicted, pending, before the flush
 * writes them, and stay readable until the write thread commits their batch), with snapshots restored midway into a new backend (whose
 * restored state has no key filter), string and number keys (0 and -0 are one key). Seeded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { ListStateDescriptor, ValueStateDescriptor } from '../../src/core/state.ts';
import type { KeyedStateBackend } from '../../src/state/backend.ts';
import { diskBackendFactory, type DiskKeyedStateBackend } from '../../src/state/disk/backend.ts';
import { KeyFilter } from '../../src/state/disk/key-filter.ts';
import { keyHash } from '../../src/state/key-table.ts';
import { Rng } from '../../src/index.ts';
import { testSeed } from '../api/util.ts';
import { FULL, MAXP, MemoryStreams, writeSnapshot } from './backend-contract.ts';

const base = mkdtempSync(join(tmpdir(), 'weir-disk-cache-test-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const factory = diskBackendFactory({ dir: base, cacheEntries: 16 });
const count = new ValueStateDescriptor<number>('count');
const log = new ListStateDescriptor<string>('log');

function make(): KeyedStateBackend {
  return factory.create({ keyGroupRange: FULL, maxParallelism: MAXP, clock: new ManualClock(100), where: 'operator "t" (subtask 1/1)' });
}

describe('disk backend write-back cache', () => {
  it('reads back every write, evicted or not, across restores (seeded)', async () => {
    const rng = new Rng(testSeed('disk-cache'));
    const keys: (string | number)[] = [];
    for (let i = 0; i < 150; i++) keys.push(i % 3 === 0 ? i / 3 - 20 : `k${i}`);
    keys.push(0, -0, 0.5);
    const model = new Map<string | number, { n: number | undefined; l: string[] }>();
    const at = (k: string | number) => model.get(k === 0 ? 0 : k) ?? { n: undefined, l: [] };
    let b = make();
    for (let round = 0; round < 4; round++) {
      let c = b.getValueState(count);
      let l = b.getListState(log);
      for (let i = 0; i < 6000; i++) {
        const k = keys[rng.int(keys.length)]!;
        b.setCurrentKey(k);
        const m = at(k);
        expect(c.value()).toBe(m.n);
        expect([...l.get()]).toEqual(m.l);
        // Mostly reads: many misses per write, so dirty entries are evicted before a flush.
        const op = rng.int(40);
        if (op < 4) m.n = (m.n ?? 0) + 1, c.update(m.n);
        else if (op < 5) m.n = undefined, c.clear();
        else if (op < 7) m.l.push(`${i}`), l.add(`${i}`);
        else if (op < 8) m.l = [], l.clear();
        model.set(k === 0 ? 0 : k, m);
        expect((b as DiskKeyedStateBackend).cachedEntries()).toBeLessThanOrEqual(16);
      }
      const streams = new MemoryStreams();
      const h = await writeSnapshot(b.snapshot(), streams);
      b.dispose();
      b = make();
      await b.restore(h.streams.map((s) => streams.input(s.name)));
      c = b.getValueState(count);
      l = b.getListState(log);
      for (const k of keys) {
        b.setCurrentKey(k);
        expect(c.value()).toBe(at(k).n);
        expect([...l.get()]).toEqual(at(k).l);
      }
    }
    b.dispose();
  });

  it('the key filter never says no for a key added, and rarely yes for one not added', () => {
    const f = new KeyFilter(16);
    const rng = new Rng(7);
    const added: (string | number)[] = [];
    for (let i = 0; i < 5000; i++) {
      const k = rng.bool() ? `key-${rng.int(1e6)}-é` : rng.int(1e6) / 7;
      f.add(keyHash(k));
      added.push(k);
    }
    f.add(keyHash(0));
    for (const k of added) expect(f.mayHave(keyHash(k))).toBe(true);
    expect(f.mayHave(keyHash(-0))).toBe(true);
    expect(new KeyFilter(16).mayHave(keyHash('x'))).toBe(false);

    // Sized for a cache of 100 k entries (1 MiB): 200 k keys added set ~5 % of its bits.
    const big = new KeyFilter(100_000);
    for (let i = 0; i < 200_000; i++) big.add(keyHash(`k${i}`));
    let yes = 0;
    for (let i = 200_000; i < 400_000; i++) if (big.mayHave(keyHash(`k${i}`))) yes++;
    expect(yes / 200_000).toBeLessThan(0.01);
  });
});
