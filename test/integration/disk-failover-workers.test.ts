/**
 * A job on the disk backend in worker threads fails over in its process, again and again, and
 * ends with exactly its output. Before, the attempt's end terminated each worker thread right
 * after telling it to cancel: a worker stopped inside LMDB's native code (its cancel closing a
 * store, or its snapshot reader thread opening one for a checkpoint of the failing attempt)
 * aborted the whole process with "FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw",
 * so the restart strategy never ran (a standalone driver with 20 failovers: 4 runs of 4 died at
 * their 1st or 2nd failover). Now a
 * cancelled worker ends its reader thread, which closes its stores, and then ends by itself
 * (deployment.ts waits for that, bounded, before it would terminate it).
 *
 * The job (test/fixtures/jobs/restore-mix.ts, "to": inactivity timeouts on event-time timers,
 * string and object keys) fails at 16 records, each once (marker files), restarting from its
 * latest checkpoint each time (checkpoints every 250 ms, incremental: a failure often meets the
 * first snapshot of the restored stores), and its committed output must equal a run without
 * failures. Before the fix this test died with the FATAL ERROR in 2 runs of 2.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { committedLines, runWeir } from '../chaos/harness.ts';

const JOB = 'test/fixtures/jobs/restore-mix.ts';
const EVENTS = 20_000;
const FAILS = Array.from({ length: 16 }, (_, j) => Math.floor(((j + 0.5) * EVENTS) / 16));

const work = mkdtempSync(join(tmpdir(), 'weir-disk-failover-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('disk backend in worker threads: in-process failovers', () => {
  it('16 failovers at parallelism 3 on 2 workers: the process survives each, the output is exact', async () => {
    const ref = join(work, 'ref');
    const plain = await runWeir(['run', JOB, '-p', '1', '-w', '1', '--', 'to', String(EVENTS), ref]);
    expect(plain.code, plain.stderr).toBe(0);
    const out = join(work, 'out');
    const markers = join(work, 'markers');
    mkdirSync(markers);
    const r = await runWeir([
      'run', JOB, '-p', '3', '-w', '2', '--state-backend', 'disk',
      '--checkpoint-dir', join(work, 'chk'), '--checkpoint-interval', '250ms', '--incremental-checkpoints', 'on',
      '--restart-strategy', 'fixed-delay', '--restart-attempts', String(FAILS.length + 2), '--restart-delay', '0ms',
      '--', 'to', String(EVENTS), out, '8000', '40', FAILS.join(','), markers,
    ], 180_000);
    expect(r.stderr).not.toContain('FATAL ERROR');
    expect(r.code, r.stderr).toBe(0);
    expect((r.stderr.match(/injected failure at record/g) ?? []).length).toBeGreaterThanOrEqual(FAILS.length);
    expect(committedLines(out).sort()).toEqual(committedLines(ref).sort());
  }, 200_000);
});
