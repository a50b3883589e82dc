/**
 * The worker pool boots worker threads ahead of their deploy: they import the job module
 * before anyone asks (so the boot overlaps the job manager's own loading, or a restart's
 * delay), are handed over once each, never keep the process alive while idle, and a worker
 * whose import failed is dropped for a fresh one (which then reports the failure as a deploy
 * always did). The module leaves a file per importing thread (test/fixtures/jobs/import-marker.ts).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WorkerPool } from '../../src/cluster/worker-pool.ts';
import { runJob } from '../../src/index.ts';

const MODULE = fileURLToPath(new URL('../fixtures/jobs/import-marker.ts', import.meta.url));
let work: string;
beforeAll(() => void (work = mkdtempSync(join(tmpdir(), 'weir-worker-pool-'))));
afterAll(() => rmSync(work, { recursive: true, force: true }));
afterEach(() => {
  delete process.env['WEIR_TEST_MARKER_DIR'];
  delete process.env['WEIR_TEST_MARKER_FAIL'];
});

/** A fresh marker directory, set for threads started from now on (workers copy the environment). */
function markers(): string {
  const dir = mkdtempSync(join(work, 'markers-'));
  process.env['WEIR_TEST_MARKER_DIR'] = dir;
  return dir;
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
}

describe('worker pool', () => {
  it('prewarm() boots its size of workers, each importing the job module before any deploy; take() hands each over once', async () => {
    const dir = markers();
    const pool = new WorkerPool(MODULE, 2);
    try {
      pool.prewarm();
      pool.prewarm(); // idempotent: still two
      await until('two workers to import the module', () => readdirSync(dir).length >= 2);
      await new Promise((r) => setTimeout(r, 200));
      expect(readdirSync(dir)).toHaveLength(2);
      const a = pool.take();
      const b = pool.take();
      expect(a).not.toBe(b);
      expect(readdirSync(dir).sort()).toEqual([`thread-${a.threadId}`, `thread-${b.threadId}`].sort());
      // Empty now: a third is a fresh worker, booting; it is told the job module as every pooled
      // worker is (its deploy waits for that message: worker-main.ts), and imports it at once.
      const c = pool.take();
      await until('the fresh worker to import the module', () => existsSync(join(dir, `thread-${c.threadId}`)));
      await Promise.all([a.terminate(), b.terminate(), c.terminate()]);
    } finally {
      await pool.close();
    }
  });

  it('a worker whose import failed is dropped (terminated) and take() gives a fresh one', async () => {
    markers();
    process.env['WEIR_TEST_MARKER_FAIL'] = '1';
    const pool = new WorkerPool(MODULE, 1);
    try {
      pool.prewarm();
      const booted = (pool as unknown as { idle: { worker: { threadId: number }; ok: boolean | undefined }[] }).idle[0]!;
      await until('the preload to fail', () => booted.ok === false);
      const fresh = pool.take();
      expect(fresh.threadId).not.toBe(booted.worker.threadId);
      await fresh.terminate();
    } finally {
      await pool.close();
    }
  });

  it('close() ends idle workers, and prewarm() after it boots nothing', async () => {
    const dir = markers();
    const pool = new WorkerPool(MODULE, 2);
    pool.prewarm();
    await until('the workers to boot', () => readdirSync(dir).length >= 2);
    await pool.close();
    pool.prewarm();
    expect((pool as unknown as { idle: unknown[] }).idle).toHaveLength(0);
  });

  it('runJob on 2 workers deploys to the threads its pool booted: the module is imported once per thread (main and two workers), no thread started for nothing', async () => {
    const dir = markers();
    const r = await runJob(MODULE, { workers: 2, parallelism: 2, stdout: () => {} });
    expect(r.status, r.error?.message).toBe('FINISHED');
    expect(r.collected<number>().sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    // Main thread (0) and the two workers: no thread imported the module twice, none was started for nothing.
    const threads = readdirSync(dir).sort();
    expect(threads).toHaveLength(3);
    expect(threads).toContain('thread-0');
  });
});
