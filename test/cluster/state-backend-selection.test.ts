/** The keyed state backend is a configuration value (state.backend.type), resolved by name. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineJob, runJob } from '../../src/index.ts';
import { keyedStateBackendFactory } from '../../src/state/backends.ts';

const job = defineJob((env) => {
  env.fromElements('a', 'b', 'a').keyBy((w) => w).reduce((x, y) => x + y).collect();
});

describe('state backend selection', () => {
  it('heap is the default; a job runs on it by name', async () => {
    expect(keyedStateBackendFactory().name).toBe('heap');
    const r = await runJob(job, { workers: 1, stateBackend: 'heap', stdout: () => {} });
    expect(r.status).toBe('FINISHED');
    expect(r.collected<string>().sort()).toEqual(['a', 'aa', 'b']);
  });

  it('a job runs on the disk backend by name, its store in the configured directory, removed at the end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-selection-'));
    try {
      const seen: string[][] = [];
      const watching = defineJob((env) => {
        env.fromElements('a', 'b', 'a').keyBy((w) => w).reduce((x, y) => x + y).map((v) => {
          seen.push(readdirSync(dir));
          return v;
        }).collect();
      });
      const r = await runJob(watching, { workers: 1, stateBackend: 'disk', stateBackendOptions: { disk: { dir, cacheEntries: 10 } }, stdout: () => {} });
      expect(r.status, r.error?.message).toBe('FINISHED');
      expect(r.collected<string>().sort()).toEqual(['a', 'aa', 'b']);
      expect(seen.flat().some((d) => d.startsWith('weir-stores-'))).toBe(true); // the stores existed while the job ran
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an unknown backend or a bad setting fails the run before it starts', async () => {
    await expect(runJob(job, { workers: 1, stateBackend: 'rocksdb', stdout: () => {} })).rejects.toThrow('unknown state backend "rocksdb"; available: heap, disk');
    await expect(runJob(job, { workers: 1, stateBackend: 'disk', stateBackendOptions: { disk: { cacheEntries: -1 } }, stdout: () => {} })).rejects.toThrow(/cache-entries must be a positive integer/);
  });
});
