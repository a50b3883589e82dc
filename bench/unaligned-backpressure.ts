/**
 * Aligned vs unaligned checkpoint duration under heavy backpressure (issue 11): the job of
 * test/fixtures/jobs/unaligned-counts.ts (generator at full speed, keyed counts, a sink taking
 * 10 K records/s per subtask: over 100x slower), 2 workers, parallelism 2, a checkpoint every
 * 100 ms with a 10 min timeout (nothing expires), aligned then unaligned, `runs` times each.
 * Prints per mode the completed checkpoints and their end-to-end duration (median, p90, max) and
 * the in-flight data stored per unaligned checkpoint. A measurement, not a test.
 *
 *   node --import tsx bench/unaligned-backpressure.ts [records=60000] [runs=1]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runJob } from '../src/index.ts';

const JOB = join(import.meta.dirname, '..', 'test', 'fixtures', 'jobs', 'unaligned-counts.ts');
const records = Number(process.argv[2] ?? 60_000);
const runs = Number(process.argv[3] ?? 1);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length - 1) * p))] ?? NaN;
}

for (const unaligned of [false, true]) {
  const durations: number[] = [];
  const inFlight: number[] = [];
  let failed = 0;
  for (let r = 0; r < runs; r++) {
    const work = mkdtempSync(join(tmpdir(), 'weir-bench-unaligned-'));
    try {
      const result = await runJob(JOB, {
        workers: 2, parallelism: 2, stdout: () => {}, log: () => {}, args: [join(work, 'out'), String(records)],
        checkpoint: { dir: join(work, 'chk'), interval: 100, timeout: '10 min', unaligned },
      });
      if (result.status !== 'FINISHED') throw new Error(`job ${result.status}: ${result.error?.message}`);
      failed += result.checkpoints.counts.failed;
      // Every checkpoint's line of the job's history (the tracker in memory keeps the last 10).
      const lines = readFileSync(join(work, 'chk', result.jobId, 'checkpoint-history.jsonl'), 'utf8').trim().split('\n');
      for (const line of lines) {
        const e = JSON.parse(line) as { status: string; endToEndDurationMs?: number; subtasks?: Record<string, { persistedInFlightBytes?: number }> };
        if (e.status !== 'COMPLETED' || e.endToEndDurationMs === undefined) continue;
        durations.push(e.endToEndDurationMs);
        let bytes = 0;
        for (const s of Object.values(e.subtasks ?? {})) bytes += s.persistedInFlightBytes ?? 0;
        inFlight.push(bytes);
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  const mode = unaligned ? 'unaligned' : 'aligned  ';
  console.log(`${mode}: ${durations.length} completed, ${failed} failed; end-to-end ms median ${pct(durations, 0.5)}, p90 ${pct(durations, 0.9)}, max ${Math.max(...durations)}`
    + (unaligned ? `; in-flight data stored per checkpoint: median ${(pct(inFlight, 0.5) / 1024).toFixed(0)} KiB, max ${(Math.max(...inFlight) / 1024).toFixed(0)} KiB` : ''));
}
