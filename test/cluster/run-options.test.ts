/**
 * runJob's numeric options are checked before anything runs, each refusal naming the option and
 * the value. `credits` was not: 0, a negative number or NaN left every batch in the backlog and
 * the job hung without a word (found by a read-only audit).
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob } from '../../src/index.ts';

const job = defineJob((env) => void env.fromElements(1, 2, 3).map((x) => x * 2).collect());

describe('runJob options', () => {
  it.each([0, -1, Number.NaN, 1.5])('credits %s is refused, naming it', async (credits) => {
    await expect(runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, credits })).rejects.toThrow(`credits must be a positive integer, got ${String(credits)}`);
  });

  it.each([['workers', 0], ['parallelism', -2], ['maxChannels', 0]] as const)('%s %s is refused, naming it', async (name, v) => {
    await expect(runJob(job, { workers: 1, parallelism: 1, stdout: () => {}, [name]: v })).rejects.toThrow(`${name} must be a positive integer, got ${v}`);
  });

  it('a positive credits value runs the job', async () => {
    const r = await runJob(job, { workers: 1, parallelism: 2, stdout: () => {}, credits: 1 });
    expect(r.status).toBe('FINISHED');
    expect(r.collected<number>().sort((a, b) => a - b)).toEqual([2, 4, 6]);
  });
});
