/**
 * A keyed lookup, alone: a V8 Map against the KeyTable that holds keyed state
 * (src/state/key-table.ts), both filled with N keys 'w0'..'w{N-1}' (values { n }), then looked
 * up with key strings made fresh per lookup from a seeded generator, as a record's key is:
 *   node --import tsx bench/key-table.ts [keys=1000000] [lookups=2000000] [runs=5]
 * Prints, per size, the time per insert of filling each (once, making the key strings
 * included), the median ns per lookup of each (the cost of making the key string is measured
 * alone and subtracted) and their ratio; every run's sum of the values found must be
 * the same for both, or it stops. For iterating on the table; the throughput and state suites
 * measure it inside jobs.
 */
import { KeyTable } from '../src/state/key-table.ts';
import type { NormKey } from '../src/state/key-groups.ts';

const sizes = process.argv[2] !== undefined ? [Number(process.argv[2])] : [10_000, 100_000, 1_000_000];
const lookups = Number(process.argv[3] ?? 2_000_000);
const runs = Number(process.argv[4] ?? 5);

interface Lookup {
  get(k: NormKey): { n: number } | undefined;
}

/** The same pseudo-random key sequence for every pass (an LCG: its cost is in the baseline). */
function pass(size: number, look: Lookup | undefined): { ms: number; sum: number } {
  let x = 12345;
  let sum = 0;
  const t0 = performance.now();
  for (let i = 0; i < lookups; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const k = 'w' + (x % size);
    if (look === undefined) sum += k.length;
    else sum += look.get(k)?.n ?? -1;
  }
  return { ms: performance.now() - t0, sum };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

for (const size of sizes) {
  const map = new Map<NormKey, { n: number }>();
  const table = new KeyTable<{ n: number }>();
  // Filling (inserts, with the table's rebuilds as it grows), each timed alone.
  const fillStart = performance.now();
  for (let i = 0; i < size; i++) map.set('w' + i, { n: i });
  const fillMap = performance.now() - fillStart;
  for (let i = 0; i < size; i++) table.set('w' + i, { n: i });
  const fillTable = performance.now() - fillStart - fillMap;
  const base: number[] = [];
  const viaMap: number[] = [];
  const viaTable: number[] = [];
  for (let r = 0; r < runs; r++) {
    base.push(pass(size, undefined).ms);
    const m = pass(size, map);
    const t = pass(size, table);
    if (m.sum !== t.sum) throw new Error(`size ${size}, run ${r}: Map found ${m.sum}, KeyTable ${t.sum}`);
    viaMap.push(m.ms);
    viaTable.push(t.ms);
  }
  const ns = (ms: number): number => ((ms - median(base)) * 1e6) / lookups;
  const m = ns(median(viaMap));
  const t = ns(median(viaTable));
  console.log(`${size.toLocaleString('en')} keys: Map ${m.toFixed(0)} ns, KeyTable ${t.toFixed(0)} ns per lookup (${(m / t).toFixed(2)}x), medians of ${runs}; filling: Map ${((fillMap * 1e6) / size).toFixed(0)} ns, KeyTable ${((fillTable * 1e6) / size).toFixed(0)} ns per insert (once)`);
}
