/**
 * By hand: restoring heap state from a full snapshot against an incremental chain (a base and
 * deltas) of the same state, in this process, files in memory (no disk, no job):
 *   node --import tsx bench/restore-chain.ts [keys=1000000] [deltas=5] [runs=3]
 * Builds a heap backend whose ValueState holds `keys` keys 'w0' .. (number values), takes a base
 * checkpoint, then `deltas` incremental ones with 1 % of the keys changed before each (as
 * bench/incremental.ts changes them), and a full snapshot at the last barrier. Then, per run,
 * restores each into a new backend and registers the state (the tables are made then), timing
 * both: restore() (files read, chains merged) and the registration (blocks decoded into
 * tables). Checks that both restored backends hold every key with the value it had.
 */
import { systemClock } from '../src/core/clock.ts';
import { ValueStateDescriptor } from '../src/core/state.ts';
import { HeapKeyedStateBackend } from '../src/state/heap/backend.ts';
import type { KeyGroupRange } from '../src/core/checkpoint-format.ts';
import type { StateInputHandle } from '../src/core/state-streams.ts';
import { MemoryStreams, writeSnapshot } from '../test/helpers/memory-streams.ts';

const keys = Number(process.argv[2] ?? 1_000_000);
const deltas = Number(process.argv[3] ?? 5);
const runs = Number(process.argv[4] ?? 3);
const MAXP = 128;
const FULL: KeyGroupRange = { start: 0, end: MAXP - 1 };
const desc = new ValueStateDescriptor<number>('value');

const own = new MemoryStreams();
const shared = new MemoryStreams();
const b = new HeapKeyedStateBackend(FULL, MAXP, systemClock, 'bench');
const state = b.getValueState(desc);
const values = new Float64Array(keys);
for (let i = 0; i < keys; i++) {
  b.setCurrentKey('w' + i);
  state.update(1);
  values[i] = 1;
}
const settings = { maxDeltas: deltas + 1, maxDeltaRatio: 100 };
const chain: string[] = [];
for (let id = 1; id <= deltas + 1; id++) {
  if (id > 1) {
    for (let j = 0; j < keys / 100; j++) {
      const i = (j * 7919 + id * 104_729) % keys; // spread over the key space
      b.setCurrentKey('w' + i);
      state.update(id);
      values[i] = id;
    }
  }
  await writeSnapshot(b.snapshot(undefined, { checkpointId: id, incremental: settings }), own, `own-${id}`, undefined, { streams: shared, streamName: `chain-${id}` });
  b.notifyCheckpointComplete!(id);
  chain.push(`chain-${id}`);
}
await writeSnapshot(b.snapshot(undefined), own, 'full');
const sizeOf = (f: MemoryStreams, names: string[]) => names.reduce((n, x) => n + f.files.get(x)!.length, 0);
console.log(`${keys} keys; full snapshot ${(sizeOf(own, ['full']) / 1e6).toFixed(1)} MB; chain of ${chain.length} files ${(sizeOf(shared, chain) / 1e6).toFixed(1)} MB (base ${(sizeOf(shared, [chain[0]!]) / 1e6).toFixed(1)} MB)`);

async function restoreTimed(inputs: StateInputHandle[]): Promise<{ readMs: number; decodeMs: number }> {
  const r = new HeapKeyedStateBackend(FULL, MAXP, systemClock, 'restored');
  const t0 = performance.now();
  await r.restore(inputs);
  const t1 = performance.now();
  const s = r.getValueState(desc);
  const t2 = performance.now();
  for (let i = 0; i < keys; i += 997) {
    r.setCurrentKey('w' + i);
    if (s.value() !== values[i]) throw new Error(`key w${i}: ${s.value()} restored, ${values[i]} expected`);
  }
  let n = 0;
  for (const _ of r.keys(desc.name)) n++;
  if (n !== keys) throw new Error(`${n} keys restored, ${keys} expected`);
  return { readMs: t1 - t0, decodeMs: t2 - t1 };
}

for (let run = 0; run < runs; run++) {
  const full = await restoreTimed([own.input('full')]);
  const inc = await restoreTimed(chain.map((c) => shared.input(c)));
  const f = (x: { readMs: number; decodeMs: number }) => `${(x.readMs + x.decodeMs).toFixed(0)} ms (read and merge ${x.readMs.toFixed(0)}, tables ${x.decodeMs.toFixed(0)})`;
  console.log(`run ${run}: full ${f(full)}; chain ${f(inc)}`);
}
