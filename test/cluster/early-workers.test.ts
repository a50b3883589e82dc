/**
 * The worker threads bin/weir.js starts before the CLI loads (early-workers.js) start only for a
 * line the CLI will likely run: -w written as plain digits, at most 4 per core, and a job file
 * that exists. Before, -w 256 booted 256 threads (34 s, 3.2 GB) before "job file not found",
 * and -w 1e2 / -w 0x10 booted 100 / 16 before the CLI refused the value.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';

// Plain JavaScript without declarations (it runs before tsx is registered).
const early: string = '../../src/cluster/early-workers.js';
const { startEarlyWorkers } = (await import(early)) as { startEarlyWorkers: (argv: string[]) => void };

const EARLY = Symbol.for('weir.early-workers');
const started = (): { worker: Worker }[] => ((globalThis as Record<symbol, unknown>)[EARLY] as { worker: Worker }[] | undefined) ?? [];

afterEach(async () => {
  await Promise.all(started().map((e) => e.worker.terminate()));
  delete (globalThis as Record<symbol, unknown>)[EARLY];
});

describe('early workers', () => {
  it('start for a plain -w and an existing job file', () => {
    startEarlyWorkers(['run', 'examples/word-count.ts', '-w', '3']);
    expect(started()).toHaveLength(3);
  });

  it('none for a -w the CLI refuses (0x3, 3.0, +3, 1e2)', () => {
    for (const w of ['0x3', '3.0', '+3', '1e2']) {
      startEarlyWorkers(['run', 'examples/word-count.ts', '-w', w]);
      expect(started(), w).toHaveLength(0);
    }
  });

  it('none when the job file does not exist', () => {
    startEarlyWorkers(['run', '/nonexistent.ts', '-w', '3']);
    expect(started()).toHaveLength(0);
    startEarlyWorkers(['run', '/nonexistent.ts']);
    expect(started()).toHaveLength(0);
  });

  it('at most 4 per core, however large -w is', () => {
    const cap = availableParallelism() * 4;
    startEarlyWorkers(['run', 'examples/word-count.ts', `--workers=${cap + 2}`]);
    expect(started()).toHaveLength(cap);
  });
});
