/**
 * The asynchronous phase of one full heap snapshot, alone (no job, no threads):
 *   node --import tsx bench/snapshot-encode.ts [keys=1000000] [dir=os.tmpdir()] [runs=3]
 * Builds a heap backend whose ValueState holds `keys` keys 'w0' .. (value 1, as
 * bench/jobs/keyed-state.ts at parallelism 1), then writes full snapshots to a local state
 * file, driving step() as the task's scheduler would (one step per setImmediate). Prints per
 * run: wall and CPU time of the asynchronous phase, the longest step (how long records
 * would wait), steps, bytes and MB/s. For iterating on snapshot encoding (snapshot.ts,
 * state-codec.ts, columnar-block.ts); the checkpoint suite measures it inside a job.
 * SNAPENC_PROF=<file.cpuprofile> writes a CPU profile of the runs (not of the build).
 *
 * Run 0 is the first full snapshot; before each later run (the steady state of a job with a
 * stable key space) 1 % of the keys get a new value and 0.1 % new keys are added, untimed.
 * SNAPENC_KEY_CACHE=off turns the heap backend's key column cache off (key-column-cache.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/core/clock.ts';
import { ValueStateDescriptor } from '../src/core/state.ts';
import { LocalStateOutputStream } from '../src/checkpoint/local/local-streams.ts';
import { HeapKeyedStateBackend } from '../src/state/heap/backend.ts';
import type { KeyedStateSnapshot } from '../src/state/backend.ts';

const keys = Number(process.argv[2] ?? 1_000_000);
const dir = mkdtempSync(join(process.argv[3] ?? tmpdir(), 'weir-snapenc-'));
const runs = Number(process.argv[4] ?? 3);

const keyCache = process.env['SNAPENC_KEY_CACHE'] !== 'off';
const backend = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, systemClock, 'bench', { snapshotKeyCache: keyCache });
const state = backend.getValueState(new ValueStateDescriptor<number>('value'));
const t0 = performance.now();
for (let i = 0; i < keys; i++) {
  backend.setCurrentKey('w' + i);
  state.update(1);
}
console.log(`built ${keys} keys in ${(performance.now() - t0).toFixed(0)} ms, heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB, key cache ${keyCache ? 'on' : 'off'}`);

/** Between snapshots: 1 % of the keys updated (spread over the key space), 0.1 % new keys. */
let nextKey = keys;
function churn(run: number): void {
  const step = 100;
  for (let i = run % step; i < keys; i += step) {
    backend.setCurrentKey('w' + i);
    state.update(1 + run);
  }
  const added = Math.max(1, Math.floor(keys / 1000));
  for (let i = 0; i < added; i++) {
    backend.setCurrentKey('w' + nextKey++);
    state.update(1);
  }
}

async function once(run: number): Promise<void> {
  if (run > 0) churn(run);
  const snap: KeyedStateSnapshot = backend.snapshot();
  const path = join(dir, `run-${run}`);
  let steps = 0;
  let maxStepMs = 0;
  let queued = false;
  const startCpu = process.cpuUsage();
  const start = performance.now();
  const wake = (): void => {
    if (queued) return;
    queued = true;
    setImmediate(loop);
  };
  const loop = (): void => {
    queued = false;
    const s = performance.now();
    const more = snap.step();
    const d = performance.now() - s;
    steps++;
    if (d > maxStepMs) maxStepMs = d;
    if (more) wake();
  };
  const handle = await snap.write({ streams: { createStateStream: () => LocalStateOutputStream.create(path) }, streamName: 'state', wake });
  const ms = performance.now() - start;
  const cpu = process.cpuUsage(startCpu);
  const bytes = handle.streams[0]!.size;
  console.log(
    `run ${run}${run === 0 ? ' (first)' : ' (after 1 % updated, 0.1 % added)'}: async ${ms.toFixed(0)} ms, cpu ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms (user ${(cpu.user / 1000).toFixed(0)}), ` +
      `${steps} steps, longest ${maxStepMs.toFixed(1)} ms, ${(bytes / 1e6).toFixed(1)} MB, ${(bytes / 1e6 / (ms / 1000)).toFixed(1)} MB/s, entries ${handle.entries}` +
      (keyCache ? `, key cache ${(backend.snapshotKeyCacheBytes() / 1e6).toFixed(0)} MB` : ''),
  );
  rmSync(path);
}

// SNAPENC_PROF=<file>: a CPU profile of the runs only (not of building the state).
const profile = process.env['SNAPENC_PROF'];
const session = profile !== undefined ? new Session() : undefined;
if (session !== undefined) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
try {
  for (let r = 0; r < runs; r++) await once(r);
  if (session !== undefined) writeFileSync(profile!, JSON.stringify((await session.post('Profiler.stop')).profile));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
