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

  it('a problem found while translating the job names where the operator was declared', async () => {
    const build = () => runJob(
      defineJob((env) => {
        env.fromElements(1).map((x: number) => x).uid('twice').print();
        env.fromElements(2).map((x: number) => x).uid('twice').print(); // line 42
      }),
      { workers: 1, parallelism: 1, stdout: () => {} },
    );
    await expect(build()).rejects.toThrow(/^uid "twice" is used by two operators \("Map" and "Map"\); uids must be unique \(at test\/api\/error-location\.test\.ts:42:\d+\)$/);
  });

  it('an exception while building a job defined inline names this file and line', async () => {
    const build = () => runJob(
      defineJob((env) => {
        env.fromElements(1).filter(undefined as never).print(); // line 52
      }),
      { workers: 1, parallelism: 1, stdout: () => {} },
    );
    await expect(build()).rejects.toThrow(/^invalid job definition: filter needs a function, got undefined \(at test\/api\/error-location\.test\.ts:52:\d+\)$/);
  });
});

// Kept at the end: the tests above assert line numbers of this file.
describe('error locations across threads', () => {
  it('a record that cannot cross threads fails as an encoding failure, never as the key selector\'s on another record', async () => {
    const job = new URL('../fixtures/jobs/unencodable-record.ts', import.meta.url).pathname;
    const r = await runJob(job, { workers: 2, parallelism: 2, stdout: () => {}, log: () => {}, restartStrategy: { type: 'none' } });
    expect(r.status).toBe('FAILED');
    expect(r.error?.message).toMatch(/cannot be encoded: .*symbol/);
    expect(r.error?.message).not.toMatch(/key selector/);
  });
});
