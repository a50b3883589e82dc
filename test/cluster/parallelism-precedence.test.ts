/**
 * The parallelism given from outside (--parallelism, parallelism.default, runJob's parallelism)
 * is the default; the job's env.setParallelism wins over it, as in Flink, and the log says so
 * (the flag looked taken: nothing told the user it had no effect).
 */
import { describe, expect, it } from 'vitest';
import { defineJob, runJob } from '../../src/index.ts';

describe('parallelism precedence', () => {
  it('the job\'s setParallelism wins over runJob\'s parallelism, with a log line; none when they agree or the job sets none', async () => {
    const job = (own: number | undefined) => defineJob((env) => {
      if (own !== undefined) env.setParallelism(own);
      env.fromCollection([1, 2, 3]).map((n) => n).print();
    });
    const logs = async (own: number | undefined, parallelism: number) => {
      const lines: string[] = [];
      const r = await runJob(job(own), { workers: 1, parallelism, stdout: () => {}, log: (l) => void lines.push(l) });
      expect(r.status).toBe('FINISHED');
      return lines.filter((l) => /overridden by the job's env\.setParallelism/.test(l));
    };
    expect(await logs(1, 2)).toEqual(['weir: parallelism 2 (--parallelism, parallelism.default) is overridden by the job\'s env.setParallelism(1)']);
    expect(await logs(2, 2)).toEqual([]);
    expect(await logs(undefined, 2)).toEqual([]);
  });
});
