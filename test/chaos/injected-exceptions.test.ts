/**
 * Chaos (a): exceptions injected at random records. The job restarts from its latest
 * completed checkpoint every time (fixed-delay restart strategy) and the committed output of
 * the exactly-once sink equals the failure-free run's. Seeded; prints the seed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/index.ts';
import { chaosSeed, committedLines, hiddenFiles, ROOT } from './harness.ts';
import { spawnSync } from 'node:child_process';

const job = fileURLToPath(new URL('../fixtures/jobs/flaky-totals.ts', import.meta.url));
let work: string;
let input: string;
let expected: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-chaos-exc-'));
  input = join(work, 'events.jsonl');
  const g = spawnSync(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', '200000', input, '300', '3'], { cwd: ROOT, encoding: 'utf8' });
  expect(g.status, g.stderr).toBe(0);
  const r = await runJob(job, { workers: 2, parallelism: 2, args: [input, join(work, 'expected'), '0', '0'], log: () => {} });
  expect(r.status).toBe('FINISHED');
  expected = committedLines(join(work, 'expected'));
  expect(expected.length).toBeGreaterThan(500);
}, 120_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('chaos: exceptions at random records', () => {
  for (const workers of [1, 2]) {
    it(`restarts from the latest checkpoint and commits exactly the failure-free output (${workers} worker(s), p=2)`, async () => {
      const seed = chaosSeed(`exceptions-w${workers}`);
      const out = join(work, `out-${workers}-${seed}`);
      const logs: string[] = [];
      const r = await runJob(job, {
        workers, parallelism: 2, args: [input, out, String(seed), '12'],
        checkpoint: { dir: join(work, `chk-${workers}-${seed}`), interval: '100ms' },
        restartStrategy: { type: 'fixed-delay', attempts: 200, delay: 0 },
        log: (l) => logs.push(l),
      });
      const restarts = logs.filter((l) => l.includes('restarting')).length;
      console.log(`[chaos exceptions-w${workers}] ${restarts} restarts; status ${r.status}`);
      expect(r.status, r.error?.message).toBe('FINISHED');
      expect(restarts).toBeGreaterThanOrEqual(3);
      expect(logs.every((l) => !l.includes('restarting') || /injected failure/.test(l))).toBe(true);
      const got = committedLines(out);
      expect(got.length).toBe(expected.length);
      expect(got).toEqual(expected);
      expect(hiddenFiles(out)).toEqual([]);
    }, 240_000);
  }
});

describe('chaos: a worker thread dies', () => {
  it('the job restarts on new worker threads from the latest checkpoint; output is exactly the failure-free one', async () => {
    const crash = fileURLToPath(new URL('../fixtures/jobs/crashing-worker.ts', import.meta.url));
    const clean = await runJob(crash, { workers: 2, parallelism: 2, args: ['60000', '0', join(work, 'crash-expected')], log: () => {} });
    expect(clean.status).toBe('FINISHED');
    const logs: string[] = [];
    const r = await runJob(crash, {
      workers: 2, parallelism: 2, args: ['60000', '20000', join(work, 'crash-out')],
      checkpoint: { dir: join(work, 'crash-chk'), interval: '100ms' },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: '10ms' },
      log: (l) => logs.push(l),
    });
    expect(r.status, r.error?.message).toBe('FINISHED');
    expect(r.attempts).toBe(2);
    expect(logs.some((l) => /worker thread \d \(.*\(\d+\/\d+\).*\) exited unexpectedly \(code 3\)/.test(l) && /from checkpoint \d+/.test(l)), logs.join("\n")).toBe(true);
    const want = committedLines(join(work, 'crash-expected'));
    expect(want.length).toBe(97 * 300); // 60000 records, 5 ms apart: 300 windows of 1 s, every key in each
    expect(committedLines(join(work, 'crash-out'))).toEqual(want);
  }, 120_000);
});
