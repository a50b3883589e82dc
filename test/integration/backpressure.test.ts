/**
 * Backpressure: a fast source in front of a slow sink must slow down to the sink's pace,
 * with a bounded number of records in flight, instead of queueing everything in memory.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runJob } from '../../src/index.ts';
import { runInline } from '../helpers/run.ts';

function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* slow sink */ }
}

describe('backpressure', () => {
  it('bounds records in flight between a fast generator and a slow sink (one thread)', async () => {
    let produced = 0;
    let consumed = 0;
    let maxInFlight = 0;
    const heapBefore = process.memoryUsage().heapUsed;
    let maxHeap = heapBefore;
    await runInline((env) => {
      env
        .fromGenerator((i) => { produced++; return { i, pad: 'x'.repeat(200) }; }, { count: 300_000 })
        .rebalance()
        .addSink({
          invoke(r) {
            consumed++;
            maxInFlight = Math.max(maxInFlight, produced - consumed);
            if (r.i % 1024 === 0) {
              busyWait(2);
              maxHeap = Math.max(maxHeap, process.memoryUsage().heapUsed);
            }
          },
        })
        .disableChaining();
    });
    expect(consumed).toBe(300_000);
    // Credits (4 buffers) + one step's overdraft + the batch being processed, 1024 records each.
    expect(maxInFlight).toBeLessThanOrEqual(8 * 1024);
    expect(maxInFlight).toBeGreaterThan(0);
    // 300k records of ~250 bytes queued would be ~75 MB; bounded flow stays far below.
    expect(maxHeap - heapBefore).toBeLessThan(40 * 2 ** 20);
  });

  it('slows a source on another worker thread to the sink\'s pace', async () => {
    const job = fileURLToPath(new URL('../fixtures/jobs/slow-sink.ts', import.meta.url));
    const samples: { in: number; out: number }[] = [];
    const run = runJob(job, { workers: 2, parallelism: 2, args: ['500000'], stdout: () => {}, onProgress: (p) => samples.push({ in: p.recordsIn, out: p.recordsOut }) });
    // Sink pace: ~1000 records per 10 ms per subtask; the generator alone does millions per second.
    const result = await run;
    expect(result.status).toBe('FINISHED');
    expect(samples.length).toBeGreaterThan(2);
    for (const s of samples) {
      if (s.in === 0) continue;
      // Metrics are sampled per worker about once a second, so allow a second's worth of skew.
      expect(s.in - s.out).toBeLessThan(150_000);
    }
  });
});
