/**
 * A full checkpoint of the disk backend, measured on its own (not a suite of bench/run.ts):
 *
 *   node --import tsx bench/disk-snapshot.ts [--keys 1000000] [--runs 3] [--dir DIR]
 *
 * Fills one disk backend (one keyed subtask owning all 128 key groups) with `keys` string keys
 * and numeric values (a word count's state), then takes full snapshots to a local file with
 * the snapshot reader thread on and off (state.backend.disk.snapshot-thread), alternated, each
 * in a child process of its own. The asynchronous phase's steps run as the task scheduler runs
 * them (slices of 8 ms between event-loop turns), with a stand-in for record processing between
 * slices (`--work-ms`, default 0: updates of random keys; 0 keeps the task thread's CPU the snapshot's alone).
 *
 * Per snapshot: the task thread's time in the synchronous phase and in step() (hrtime), the
 * task thread's CPU over the asynchronous phase (/proc/self/task/<pid>/stat, 10 ms ticks), the
 * process's CPU (all threads), and the asynchronous phase's wall time. The file's size and
 * entries are checked to be the same both ways.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../src/core/clock.ts';
import { ValueStateDescriptor } from '../src/core/state.ts';
import type { CheckpointStreamFactory } from '../src/core/state-streams.ts';
import { LocalStateOutputStream } from '../src/checkpoint/local/local-streams.ts';
import { diskBackendFactory } from '../src/state/disk/backend.ts';
import { snapshotReaderReady } from '../src/state/disk/reader-thread.ts';

const { values: opt } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' }, runs: { type: 'string', default: '3' }, dir: { type: 'string' },
    'work-ms': { type: 'string', default: '0' }, child: { type: 'string' },
  },
});

interface Figures { variant: string; syncMs: number; stepMs: number; taskCpuMs: number; processCpuMs: number; asyncWallMs: number; bytes: number; entries: number }

/** utime + stime of this process's main thread, ms (Linux). */
function mainThreadCpuMs(): number {
  const f = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return ((Number(rest[11]) + Number(rest[12])) * 1000) / 100; // fields 14, 15 (USER_HZ 100)
}

async function child(variant: 'thread' | 'task'): Promise<Figures> {
  const dir = mkdtempSync(join(opt.dir ?? tmpdir(), 'weir-disk-snap-bench-'));
  try {
    const keys = Number(opt.keys);
    const workMs = Number(opt['work-ms']);
    const b = diskBackendFactory({ dir, snapshotThread: variant === 'thread' }).create({
      keyGroupRange: { start: 0, end: 127 }, maxParallelism: 128, clock: new ManualClock(0), where: 'bench',
    });
    const v = b.getValueState(new ValueStateDescriptor<number>('count'));
    for (let i = 0; i < keys; i++) {
      b.setCurrentKey(`word-${i}`);
      v.update(i % 1000);
    }
    if (variant === 'thread' && !(await snapshotReaderReady(60_000))) throw new Error('the snapshot reader thread did not start');
    await new Promise((r) => setTimeout(r, 200));
    const t0 = performance.now();
    const snap = b.snapshot();
    const syncMs = performance.now() - t0;
    const name = snap.constructor.name;
    if (name !== (variant === 'thread' ? 'ThreadedDiskSnapshot' : 'DiskSnapshot')) throw new Error(`variant ${variant} took ${name}`);
    const path = join(dir, 'snapshot.state');
    const streams = { createStateStream: () => LocalStateOutputStream.create(path) } as unknown as CheckpointStreamFactory;
    let stepMs = 0;
    let queued = false;
    let n = 0;
    const slice = (): void => {
      queued = false;
      const end = performance.now() + 8;
      for (;;) {
        const s = performance.now();
        const more = snap.step();
        stepMs += performance.now() - s;
        if (!more) break;
        if (performance.now() >= end) {
          wake();
          break;
        }
      }
      // Records between slices: updates of random keys (they reach the store meanwhile).
      const until = performance.now() + workMs;
      while (performance.now() < until) {
        b.setCurrentKey(`word-${(n = (n * 1103515245 + 12345) % keys)}`);
        v.update(n % 1000);
      }
    };
    const wake = (): void => {
      if (queued) return;
      queued = true;
      setImmediate(slice);
    };
    const cpu0 = process.cpuUsage();
    const task0 = mainThreadCpuMs();
    const w0 = performance.now();
    const h = await snap.write({ streams, streamName: 'snapshot.state', wake });
    const asyncWallMs = performance.now() - w0;
    const taskCpuMs = mainThreadCpuMs() - task0;
    const cpu = process.cpuUsage(cpu0);
    const bytes = statSync(path).size;
    b.dispose();
    return { variant, syncMs, stepMs, taskCpuMs, processCpuMs: (cpu.user + cpu.system) / 1000, asyncWallMs, bytes, entries: h.entries ?? -1 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

if (opt.child !== undefined) {
  process.stdout.write(JSON.stringify(await child(opt.child as 'thread' | 'task')) + '\n');
} else {
  const self = fileURLToPath(import.meta.url);
  const all: Figures[] = [];
  const runs = Number(opt.runs);
  console.log(`disk full snapshot, ${Number(opt.keys).toLocaleString('en')} keys, ${runs} runs each, alternated; load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  for (let r = 0; r < runs; r++) {
    for (const variant of r % 2 === 0 ? ['task', 'thread'] : ['thread', 'task']) {
      const args = ['--import', 'tsx', self, '--child', variant, '--keys', opt.keys!, '--work-ms', opt['work-ms']!, ...(opt.dir ? ['--dir', opt.dir] : [])];
      const f = JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 20 }).trim().split('\n').pop()!) as Figures;
      all.push(f);
      console.log(`  ${f.variant.padEnd(6)} sync ${f.syncMs.toFixed(1)} ms, steps ${f.stepMs.toFixed(0)} ms, task CPU ${f.taskCpuMs.toFixed(0)} ms, process CPU ${f.processCpuMs.toFixed(0)} ms, async wall ${f.asyncWallMs.toFixed(0)} ms, ${f.bytes} bytes, ${f.entries} entries; load ${loadavg()[0]!.toFixed(2)}`);
    }
  }
  for (const variant of ['task', 'thread']) {
    const fs = all.filter((f) => f.variant === variant);
    const m = (k: keyof Figures) => median(fs.map((f) => f[k] as number)).toFixed(k === 'syncMs' ? 1 : 0);
    console.log(`median ${variant.padEnd(6)} sync ${m('syncMs')} ms, steps ${m('stepMs')} ms, task CPU ${m('taskCpuMs')} ms, process CPU ${m('processCpuMs')} ms, async wall ${m('asyncWallMs')} ms`);
  }
  const sizes = new Set(all.map((f) => `${f.bytes}/${f.entries}`));
  if (sizes.size !== 1) throw new Error(`the variants wrote different files: ${[...sizes].join(', ')}`);
}
