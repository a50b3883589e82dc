/**
 * Errors say where: an exception while building the job names the place in the job's code,
 * and an operator's failure names the operator's uid beside its name (the uid is what a user
 * greps the job for; names are often left at their defaults).
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob } from '../../src/index.ts';

describe('error locations', () => {
  it('an operator failure names the operator, its uid and the subtask', async () => {
    const r = await runJob(
      defineJob((env) => {
        env.fromElements(1, 2, 3)
          .map((x: number) => {
            if (x === 2) throw new Error('two is not allowed');
            return x;
          })
          .name('Validate')
          .uid('validate-v1')
          .print();
      }),
      { workers: 1, parallelism: 1, stdout: () => {} },
    );
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toBe('operator "Validate" (uid "validate-v1", subtask 1/1) failed in map on record 2: two is not allowed');
  });

  it('an operator without a uid is named as before', async () => {
    const r = await runJob(
      defineJob((env) => {
        env.fromElements(1).map((): number => { throw new Error('no'); }).name('Plain').print();
      }),
      { workers: 1, parallelism: 1, stdout: () => {} },
    );
    expect(r.error?.message).toBe('operator "Plain" (subtask 1/1) failed in map on record 1: no');
  });

  it('an exception while building a job defined inline names this file and line', async () => {
    const build = () => runJob(
      defineJob((env) => {
        env.fromElements(1).filter(undefined as never).print(); // line 41
      }),
      { workers: 1, parallelism: 1, stdout: () => {} },
    );
    await expect(build()).rejects.toThrow(/^invalid job definition: filter needs a function, got undefined \(at test\/api\/error-location\.test\.ts:41:\d+\)$/);
  });
});
