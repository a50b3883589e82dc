/**
 * A sink's jobId must stay the same across restarts: the Redis Streams sink records its progress
 * under it, so a restore under a new jobId would not see that checkpoint N's entries were added
 * already and would add them again. The job (test/fixtures/jobs/redis-job-id.ts) fails once
 * after its first completed checkpoint; with a fixed jobId the restart commits every record
 * exactly once, with a jobId generated per run the restore is refused with a message saying
 * why, and the stream still holds no record twice.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob, type JobResult } from '../../../src/index.ts';
import { uniqueName } from '../postgres/helpers.ts';

const JOB = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'jobs', 'redis-job-id.ts');
const N = 400;
const PREFIX = 'weir:test-identity-progress';

let r: Redis;
let work: string;
const streams: string[] = [];
beforeAll(() => {
  r = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: false });
  work = mkdtempSync(join(tmpdir(), 'weir-sink-identity-'));
});
afterAll(async () => {
  if (streams.length > 0) await r.del(...streams);
  const progress = await r.keys(`${PREFIX}:*`);
  if (progress.length > 0) await r.del(...progress);
  r.disconnect();
  rmSync(work, { recursive: true, force: true });
});

async function run(jobId: string, workers: number): Promise<{ result: JobResult; logs: string[]; indexes: number[] }> {
  const stream = uniqueName('weir:test:identity');
  streams.push(stream);
  const logs: string[] = [];
  const result = await runJob(JOB, {
    workers, parallelism: workers, stdout: () => {}, log: (l) => logs.push(l),
    // 200 records/s (2 s of input): on a loaded machine, at a faster rate every record could be
    // read before the first checkpoint completes, and the failure the test is about never comes.
    args: [stream, jobId, PREFIX, String(N), '200'],
    checkpoint: { interval: 20, dir: join(work, `chk-${streams.length}`) },
    restartStrategy: { type: 'fixed-delay', attempts: 2, delay: 0 },
  });
  const indexes = (await r.xrange(stream, '-', '+')).map(([, f]) => (JSON.parse(f[1]!) as { i: number }).i);
  return { result, logs, indexes };
}

describe('a sink whose jobId changes between attempts', () => {
  it('a stable jobId: the restart from the checkpoint commits every record exactly once', async () => {
    const { result, indexes } = await run(uniqueName('stable').replace(/:/g, '-'), 1);
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(result.attempts).toBe(2);
    expect(indexes.sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
  });

  for (const workers of [1, 2]) {
    it(`a jobId generated per run is refused at the restore, naming both ids, and nothing is written twice (${workers} worker(s))`, async () => {
      const { result, logs, indexes } = await run('per-run', workers);
      expect(result.status).toBe('FAILED');
      const text = [result.error?.message ?? '', ...logs].join('\n');
      expect(text).toMatch(/sink "[^"]*" was checkpointed with jobId run-[0-9a-f-]+ and now has jobId run-[0-9a-f-]+: .*keep the sink's jobId the same across restarts/);
      expect(new Set(indexes).size).toBe(indexes.length);
      expect(indexes.length).toBeLessThan(N); // it stopped at the refused restore
    });
  }
});
