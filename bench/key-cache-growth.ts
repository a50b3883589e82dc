/**
 * The key column cache of a growing key space, alone (src/state/key-column-cache.ts): 128 key
 * groups of 60 K keys of 8 characters (7.7 M keys) filled once, then grown by 1.5 % per
 * checkpoint for 20 checkpoints, as a job whose key space grows appends to each group's cache
 * at every full snapshot:
 *   node --import tsx bench/key-cache-growth.ts [groups=128] [keysPerGroup=60000] [steps=20] [growth=0.015]
 * Prints the time of the first fill, of all growth steps and of each, and the bytes the caches
 * hold; the caches must hold every key at the end, or it stops. For iterating on the cache's
 * buffer growth; the checkpoints suite measures snapshots inside jobs.
 */
import { appendColumns, KeyColumnCache } from '../src/state/key-column-cache.ts';

const [groups = 128, start = 60_000, steps = 20, growth = 0.015] = process.argv.slice(2).map(Number);
const KEY_CHARS = 8;
const caches = Array.from({ length: groups }, () => new KeyColumnCache());
const most = Math.ceil(start * (1 + growth) ** steps) + 1;
const chars = new Uint8Array(most * KEY_CHARS).fill(0x61);
const lens = new Uint32Array(most).fill(KEY_CHARS);

let t0 = performance.now();
for (const c of caches) appendColumns(c, 0, chars, start * KEY_CHARS, lens, start, KEY_CHARS);
const firstMs = performance.now() - t0;
t0 = performance.now();
const stepMs: number[] = [];
let expected = start;
for (let s = 0; s < steps; s++) {
  const t = performance.now();
  const n = Math.ceil(expected * growth);
  for (const c of caches) appendColumns(c, c.count, chars, n * KEY_CHARS, lens, n, KEY_CHARS);
  expected += n;
  stepMs.push(Math.round(performance.now() - t));
}
const growMs = performance.now() - t0;
for (const c of caches) {
  if (c.count !== expected || c.charCount !== expected * KEY_CHARS) throw new Error(`a cache holds ${c.count} keys, ${expected} expected`);
}
const mb = caches.reduce((a, c) => a + c.bytes, 0) / 1e6;
console.log(`first fill ${firstMs.toFixed(0)} ms; ${steps} growth steps ${growMs.toFixed(0)} ms (${stepMs.join(' ')}); ${groups * expected} keys, caches ${mb.toFixed(0)} MB`);
