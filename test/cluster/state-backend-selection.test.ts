/** The keyed state backend is a configuration value (state.backend.type), resolved by name. */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob } from '../../src/index.ts';
import { keyedStateBackendFactory } from '../../src/state/backends.ts';

const job = defineJob((env) => {
  env.fromElements('a', 'b', 'a').keyBy((w) => w).reduce((x, y) => x + y).collect();
});

describe('state backend selection', () => {
  it('heap is the default and the only backend so far; a job runs on it by name', async () => {
    expect(keyedStateBackendFactory().name).toBe('heap');
    const r = await runJob(job, { workers: 1, stateBackend: 'heap', stdout: () => {} });
    expect(r.status).toBe('FINISHED');
    expect(r.collected<string>().sort()).toEqual(['a', 'aa', 'b']);
  });

  it('an unknown backend fails the run before it starts, naming the ones there are', async () => {
    await expect(runJob(job, { workers: 1, stateBackend: 'rocksdb', stdout: () => {} })).rejects.toThrow('unknown state backend "rocksdb"; available: heap');
  });
});
