/**
 * The key column cache of groups that lose a key between snapshots, alone
 * (src/state/key-column-cache.ts): 128 key groups of `keysPerGroup` keys, each losing one key and
 * gaining another per round, so every group's column is filled again at every snapshot (as TTL
 * cleanup or state cleared per key makes it), its blocks encoded in pieces and given back as a
 * state file gives them back once written:
 *   node --import tsx bench/key-cache-refill.ts [keysPerGroup=8000] [rounds=8] [reuse=on|off]
 * Prints each round's encoding time. `off` makes every fill take new segments, as before a26d780
 * (the reuse of segments whose views came back). Every round's blocks must equal the uncached
 * encoder's bytes, or it stops. For iterating on the cache's memory reuse; the checkpoints suite
 * measures snapshots inside jobs.
 */
import { encodeMapColumnParts, encodeMapColumns, joinParts } from '../src/state/columnar-map.ts';
import { GroupMap } from '../src/state/heap/group-map.ts';
import { KeyColumnCache, returnView } from '../src/state/key-column-cache.ts';

const GROUPS = 128;
const keysPerGroup = Number(process.argv[2] ?? 8000);
const rounds = Number(process.argv[3] ?? 8);
const reuse = (process.argv[4] ?? 'on') !== 'off';

const groups = Array.from({ length: GROUPS }, (_, g) => {
  const m = new GroupMap();
  for (let i = 0; i < keysPerGroup; i++) m.set(`key${g}-${i}`, i);
  return m;
});
const caches = groups.map(() => new KeyColumnCache());
const alloc = (n: number): Uint8Array => new Uint8Array(n);
const times: number[] = [];
for (let round = 0; round < rounds; round++) {
  for (const m of groups) {
    const k = m.keys().next().value!;
    m.delete(k);
    m.set(`${k}+${round}`, round);
  }
  const t0 = performance.now();
  const blocks = groups.map((m, i) => {
    // off: a views count that never comes back to zero, so no fill reuses its segments.
    if (!reuse) caches[i]!.views.out++;
    return encodeMapColumnParts(m, undefined, alloc, caches[i]);
  });
  times.push(performance.now() - t0);
  blocks.forEach((b, i) => {
    if (!Buffer.from(joinParts(b)).equals(Buffer.from(encodeMapColumns(groups[i]!)))) throw new Error(`round ${round}, group ${i}: the block differs from the uncached encoder's`);
    if (Array.isArray(b)) for (const piece of b) returnView(piece); // written
  });
}
console.log(`${GROUPS} groups of ${keysPerGroup} keys, a key lost and one gained per group per round, reuse ${reuse ? 'on' : 'off'}: rounds ${times.map((t) => t.toFixed(0)).join(' ')} ms`);
