/**
 * S3 gone mid-job: a job checkpointing to s3rver every 200 ms, the server stopped for a few
 * seconds once a checkpoint's metadata is on S3, then started again on the same port with the
 * same objects. Checkpoints in the outage fail with a reason (not silently, not hanging past
 * their timeout), the job goes on (failures tolerated by the settings), checkpoints complete
 * again once S3 is back, and the committed output equals the failure-free run's.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runJob } from '../../src/index.ts';
import { committedLines, hiddenFiles, ROOT, runWeir } from '../chaos/harness.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';

const EVENTS = 100_000;
let work: string;
let input: string;
let expected: string[];
let server: S3TestServer;

beforeAll(async () => {
  server = await startS3Server();
  work = mkdtempSync(join(tmpdir(), 'weir-s3-outage-'));
  input = join(work, 'events.jsonl');
  const gen = await new Promise<number | null>((res) =>
    spawn(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', String(EVENTS), input, '200', '5'], { cwd: ROOT, stdio: 'ignore' }).on('exit', res));
  expect(gen).toBe(0);
  const r = await runWeir(['run', 'examples/exactly-once.ts', '-p', '1', '-w', '1', '--', input, join(work, 'expected')]);
  expect(r.code, r.stderr).toBe(0);
  expected = committedLines(join(work, 'expected'));
}, 120_000);

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await server?.close();
});

function metadataObjects(prefix: string): number {
  const dir = join(server.directory, server.bucket, prefix);
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('_metadata._S3rver_object')).length;
}

it('checkpoints fail with a reason while S3 is down, the job goes on, and checkpoints complete again once it is back', async () => {
  const out = join(work, 'out');
  const logs: string[] = [];
  let outage = 'before' as 'before' | 'down' | 'after';
  const completedAfter: number[] = [];
  const poll = setInterval(() => {
    if (outage !== 'before' || metadataObjects('outage') === 0) return;
    outage = 'down';
    void server.stop().then(() => setTimeout(() => void server.start().then(() => (outage = 'after')), 4000));
  }, 20);
  try {
    const result = await runJob(join(ROOT, 'examples/exactly-once.ts'), {
      workers: 1, parallelism: 1, args: [input, out, '15000'], stdout: () => {}, log: (l) => logs.push(l),
      checkpoint: { dir: `s3://${server.bucket}/outage`, interval: 200, timeout: 3000, tolerableFailures: 1000 },
      s3: { ...server.settings, requestTimeout: 1000, retryMaxAttempts: 2 },
      jobManager: { progressInterval: 50 },
      onProgress: (p) => {
        const c = p.lastCheckpoint;
        if (c !== undefined && outage === 'after' && !completedAfter.includes(c.id)) completedAfter.push(c.id);
      },
    });
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(outage).toBe('after');
    const failed = result.checkpoints.lastFailed;
    console.log(`[s3 outage] ${result.checkpoints.counts.failed} failed checkpoint(s), the last: ${failed?.id} ${failed?.failureReason}: ${failed?.failureMessage}`);
    expect(result.checkpoints.counts.failed).toBeGreaterThan(0);
    expect(failed?.failureReason).toBeDefined();
    // Either S3's refusal, named with the object, or the checkpoint's own timeout.
    expect(failed?.failureMessage ?? '').toMatch(/s3 \w+( \w+)? s3:\/\/weir-test\/outage\/.* failed|expired|timeout|timed out/i);
    expect(failed?.failureMessage ?? '').not.toMatch(/S3RVER/);
    expect(completedAfter.length, 'a checkpoint completed after S3 came back').toBeGreaterThan(0);
    expect(result.checkpoints.lastCompleted!.id).toBeGreaterThan(failed!.id);
    expect(committedLines(out)).toEqual(expected);
    expect(hiddenFiles(out)).toEqual([]);
    expect(logs.join('\n')).not.toMatch(/S3RVER/);
  } finally {
    clearInterval(poll);
    if (outage === 'down') await server.start();
  }
}, 300_000);
