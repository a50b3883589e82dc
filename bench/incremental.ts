/**
 * Full vs incremental checkpoints at N keys with 1 % of them changed per checkpoint interval
 * (1 s): each variant runs bench/jobs/incremental-counts.ts once in this process (1 worker,
 * p=1, local checkpoint directory) and reads every checkpoint's duration and sizes from the
 * job's checkpoint-history.jsonl. Checkpoints taken while the fill source still runs are
 * left out (they see the whole key space change); the rest are the steady state.
 *
 *   node --import tsx bench/incremental.ts [keys=1000000] [seconds=20] [heap|disk]
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runJob } from '../src/index.ts';

const JOB = join(import.meta.dirname, 'jobs', 'incremental-counts.ts');
const keys = Number(process.argv[2] ?? 1_000_000);
const seconds = Number(process.argv[3] ?? 20);
const perSecond = Math.round(keys / 100);
const stateBackend = process.argv[4] ?? 'heap';

interface Entry { id: number; status: string; endToEndDurationMs: number; stateSize: number; checkpointedSize: number; subtasks: Record<string, { syncMs: number; asyncMs: number }> }

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function variant(incremental: boolean): Promise<Entry[]> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-incr-'));
  try {
    const r = await runJob(JOB, {
      workers: 1, parallelism: 1, stateBackend, stdout: () => {}, log: () => {}, args: [String(keys), String(perSecond), String(seconds)],
      checkpoint: { interval: 1000, dir, incremental, retention: 'retain-on-cancel' },
    });
    if (r.status !== 'FINISHED') throw new Error(`${incremental ? 'incremental' : 'full'} run ${r.status}: ${r.error?.message}`);
    const jobDir = join(dir, readdirSync(dir)[0]!);
    return readFileSync(join(jobDir, 'checkpoint-history.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Entry).filter((e) => e.status === 'COMPLETED');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const mb = (b: number) => `${(b / 1e6).toFixed(2)} MB`;
console.log(`${stateBackend} backend, keys ${keys}, ${perSecond} changes/s (1 %), checkpoint every 1 s, ${seconds} s, 1 worker p=1`);
for (const incremental of [false, true]) {
  const all = await variant(incremental);
  // Steady state: from the third completed checkpoint on (the fill source is done by then at 1 M keys), the final one excluded.
  const steady = all.slice(2, -1);
  const dur = steady.map((e) => e.endToEndDurationMs);
  const async = steady.map((e) => Object.values(e.subtasks).reduce((a, s) => Math.max(a, s.asyncMs), 0));
  console.log(
    `${incremental ? 'incremental' : 'full       '}: ${steady.length} checkpoints; median duration ${median(dur).toFixed(0)} ms (max ${Math.max(...dur).toFixed(0)}), ` +
    `async ${median(async).toFixed(0)} ms; median written ${mb(median(steady.map((e) => e.checkpointedSize)))} (max ${mb(Math.max(...steady.map((e) => e.checkpointedSize)))}), ` +
    `full state ${mb(median(steady.map((e) => e.stateSize)))}; written per checkpoint (MB) ${steady.map((e) => (e.checkpointedSize / 1e6).toFixed(2)).join(' ')}; ` +
    `durations (ms) ${steady.map((e) => e.endToEndDurationMs.toFixed(0)).join(' ')}`,
  );
}
