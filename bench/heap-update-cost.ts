/**
 * CPU time of ValueState updates on the heap backend (the hot path the key column cache's
 * GroupMap adds to):
 *   node --import tsx bench/heap-update-cost.ts [keys=100000] [updates=5000000] [newKeyShare=0.01]
 * `updates` updates spread over `keys` keys, a share of them to new keys (inserts).
 */
import { systemClock } from '../src/core/clock.ts';
import { ValueStateDescriptor } from '../src/core/state.ts';
import { HeapKeyedStateBackend } from '../src/state/heap/backend.ts';

const keys = Number(process.argv[2] ?? 100_000);
const updates = Number(process.argv[3] ?? 5_000_000);
const newShare = Number(process.argv[4] ?? 0.01);
const backend = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, systemClock, 'bench');
const state = backend.getValueState(new ValueStateDescriptor<number>('value'));
const names = Array.from({ length: keys }, (_, i) => 'w' + i);
for (const k of names) {
  backend.setCurrentKey(k);
  state.update(1);
}
let next = keys;
const cpu0 = process.cpuUsage();
let x = 12345;
for (let i = 0; i < updates; i++) {
  x = (x * 1103515245 + 12345) & 0x7fffffff;
  if ((x & 0xffff) / 0x10000 < newShare) backend.setCurrentKey('n' + next++);
  else backend.setCurrentKey(names[x % keys]!);
  state.update((state.value() ?? 0) + 1);
}
const cpu = process.cpuUsage(cpu0);
console.log(`${updates} updates over ${keys} keys (${next - keys} inserted): cpu ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms, ${(((cpu.user + cpu.system) * 1000) / updates).toFixed(1)} ns/update`);
