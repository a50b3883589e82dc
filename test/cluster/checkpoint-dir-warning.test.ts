/**
 * A checkpoint directory without a checkpoint interval takes no checkpoints: the run says so
 * at the start instead of leaving the user to find an empty directory after a crash.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defineJob, runJob } from '../../src/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-chkdir-warning-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const job = defineJob((env) => void env.fromElements(1, 2, 3).collect());

async function logOf(checkpoint: { dir: string; interval?: string }): Promise<string[]> {
  const lines: string[] = [];
  const r = await runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, log: (l) => lines.push(l), checkpoint });
  expect(r.status).toBe('FINISHED');
  expect(r.collected<number>()).toEqual([1, 2, 3]);
  return lines;
}

describe('a checkpoint directory without an interval', () => {
  it('warns that no checkpoints will be taken', async () => {
    const lines = await logOf({ dir: join(dir, 'a') });
    expect(lines.filter((l) => l.includes('warning'))).toEqual([
      `weir: warning: a checkpoint directory is set (${join(dir, 'a')}) but no checkpoint interval: no checkpoints will be taken; set --checkpoint-interval (or enableCheckpointing in the job)`,
    ]);
  });

  it('with an interval there is no warning', async () => {
    const lines = await logOf({ dir: join(dir, 'b'), interval: '1 s' });
    expect(lines.filter((l) => l.includes('warning'))).toEqual([]);
  });
});
