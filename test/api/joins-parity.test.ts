/**
 * The joins fixture (window join, coGroup, interval join, windowAll, count window) gives the
 * results a plain TypeScript computation gives on the same seeded events, in one thread at
 * parallelism 1 and on two worker threads at parallelism 2 (records cross threads as bytes).
 */
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../src/index.ts';
import { runModule, sorted } from '../helpers/run.ts';
import { event, SEED, type Bid, type Ev, type Person } from '../fixtures/jobs/joins.ts';

const job = fileURLToPath(new URL('../fixtures/jobs/joins.ts', import.meta.url));
const N = 4000;

/** What the fixture must produce, computed directly. */
function expected(): Record<string, string[]> {
  const evs: Ev[] = [];
  for (let i = 0; i < N; i++) evs.push(event(i, new Rng(SEED, i)));
  const persons = evs.filter((e): e is Person => e.kind === 'person');
  const bids = evs.filter((e): e is Bid => e.kind === 'bid');
  const floor = (ts: number, size: number) => Math.floor(ts / size) * size;

  const join: string[] = [];
  for (const p of persons) for (const b of bids) {
    if (p.id === b.bidder && floor(p.ts, 1000) === floor(b.ts, 1000)) join.push(`${floor(p.ts, 1000)}:${p.id}:${p.ts}:${b.ts}:${b.price}`);
  }

  const groups = new Map<string, { ps: number; bs: number; sum: number }>();
  const group = (start: number, key: number) => {
    const id = `${start}:${key}`;
    let g = groups.get(id);
    if (g === undefined) groups.set(id, (g = { ps: 0, bs: 0, sum: 0 }));
    return g;
  };
  for (const p of persons) for (const s of [floor(p.ts, 1000), floor(p.ts, 1000) - 1000]) group(s, p.id).ps++;
  for (const b of bids) {
    for (const s of [floor(b.ts, 1000), floor(b.ts, 1000) - 1000]) {
      const g = group(s, b.bidder);
      g.bs++;
      g.sum += b.price;
    }
  }
  const cogroup = [...groups].map(([id, g]) => `${id}:${g.ps}:${g.bs}:${g.sum}`);

  const interval: string[] = [];
  for (const p of persons) for (const b of bids) {
    if (p.id === b.bidder && b.ts >= p.ts - 500 && b.ts <= p.ts + 300) interval.push(`${p.id}:${p.ts}:${b.ts}:${b.price}:${Math.max(p.ts, b.ts)}`);
  }

  const maxes = new Map<number, number>();
  for (const b of bids) maxes.set(floor(b.ts, 1000), Math.max(maxes.get(floor(b.ts, 1000)) ?? -1, b.price));
  const all = [...maxes].map(([s, m]) => `${s}:${m}`);

  const perAuction = new Map<number, number>();
  for (const b of bids) perAuction.set(b.auction, (perAuction.get(b.auction) ?? 0) + 1);
  const count: string[] = [];
  for (const [a, n] of perAuction) for (let k = 0; k < Math.floor(n / 3); k++) count.push(`${a}:3`);

  return { join, cogroup, interval, all, count };
}

describe('joins and windows against a plain computation', () => {
  const want = expected();

  it('the reference itself has work in it (pairs, groups and windows)', () => {
    for (const [name, xs] of Object.entries(want)) expect(xs.length, name).toBeGreaterThan(30);
  });

  it.each([
    { parallelism: 1, workers: 1 },
    { parallelism: 2, workers: 2 },
  ])('parallelism $parallelism on $workers worker(s)', async (config) => {
    const r = await runModule(job, { ...config, args: [String(N)] });
    for (const [name, xs] of Object.entries(want)) expect(sorted(r.collected(name)), name).toEqual(sorted(xs));
  }, 120_000);
});
