/**
 * A job checkpointing to S3 (s3rver on loopback), killed with SIGKILL once a checkpoint is on
 * S3 and resumed with --from latest-or-empty, at p = 1 and p = 2 (worker threads, each with its
 * own S3 client from the settings in its deploy message): the committed output equals the
 * failure-free run's, and the resumed run continued the same job on S3. The endpoint comes
 * once from the SDK's own AWS_ENDPOINT_URL_S3 and once from --s3-endpoint. Seeded; prints the seed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3CheckpointStorage } from '../../src/checkpoint/s3/s3-storage.ts';
import { resolveS3Config } from '../../src/checkpoint/s3/settings.ts';
import { Rng } from '../../src/core/random.ts';
import { chaosSeed, committedLines, hiddenFiles, ROOT, runWeir, startWeir } from '../chaos/harness.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';

const EVENTS = 150_000;
const RATE = '50000';
let work: string;
let input: string;
let expected: string[];
let server: S3TestServer;

beforeAll(async () => {
  server = await startS3Server();
  work = mkdtempSync(join(tmpdir(), 'weir-s3-kill-'));
  input = join(work, 'events.jsonl');
  const gen = await new Promise<number | null>((res) =>
    spawn(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', String(EVENTS), input, '300', '11'], { cwd: ROOT, stdio: 'ignore' }).on('exit', res));
  expect(gen).toBe(0);
  const r = await runWeir(['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--', input, join(work, 'expected')]);
  expect(r.code, r.stderr).toBe(0);
  expected = committedLines(join(work, 'expected'));
  expect(expected.length).toBeGreaterThan(100);
}, 120_000);

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await server?.close();
});

async function weirStdout(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/weir.js'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((res) => child.on('exit', res));
  return { code, stdout, stderr };
}

/** Checkpoint metadata objects s3rver holds under `prefix` (its store is a directory tree). */
function metadataObjects(prefix: string): number {
  const dir = join(server.directory, server.bucket, prefix);
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('_metadata._S3rver_object')).length;
}

describe('checkpoints on S3: killed and resumed', () => {
  for (const [parallelism, endpointFrom] of [[1, 'AWS_ENDPOINT_URL_S3'], [2, '--s3-endpoint']] as const) {
    it(`p=${parallelism} (${parallelism} worker(s), endpoint from ${endpointFrom}): committed output equals the failure-free run`, async () => {
      const name = `s3-p${parallelism}`;
      const rng = new Rng(chaosSeed(name));
      const prefix = `kill-p${parallelism}`;
      const out = join(work, `out-${parallelism}`);
      const endpointArgs = endpointFrom === '--s3-endpoint' ? ['--s3-endpoint', server.endpoint] : [];
      const args = ['run', 'examples/exactly-once.ts', '-p', String(parallelism), '-w', String(parallelism),
        '--checkpoint-dir', `s3://${server.bucket}/${prefix}`, '--checkpoint-interval', '200ms', '--s3-path-style', ...endpointArgs,
        '--from', 'latest-or-empty', '--', input, out, RATE];
      const saved = process.env.AWS_ENDPOINT_URL_S3;
      if (endpointFrom === 'AWS_ENDPOINT_URL_S3') process.env.AWS_ENDPOINT_URL_S3 = server.endpoint;
      try {
        // Killed once a checkpoint is on S3, plus a seeded 0-300 ms.
        const { child, done } = startWeir(args);
        const extraMs = rng.int(300);
        let fired = false;
        const poll = setInterval(() => {
          if (fired || metadataObjects(prefix) === 0) return;
          fired = true;
          setTimeout(() => child.kill('SIGKILL'), extraMs);
        }, 20);
        const fallback = setTimeout(() => child.kill('SIGKILL'), 60_000);
        const first = await done;
        clearInterval(poll);
        clearTimeout(fallback);
        expect(first.signal, `the first run was not killed: ${first.stderr}`).toBe('SIGKILL');
        expect(fired).toBe(true);
        console.log(`[${name}] killed ${extraMs} ms after the first checkpoint reached S3`);
        const second = await runWeir(args, 120_000);
        expect(second.code, second.stderr).toBe(0);
        expect(second.stderr).not.toMatch(/S3RVER/);
      } finally {
        if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_S3;
        else process.env.AWS_ENDPOINT_URL_S3 = saved;
      }
      expect(committedLines(out)).toEqual(expected);
      expect(hiddenFiles(out)).toEqual([]);
      // One job on S3: the second run resumed the first one's job (and appended to its history).
      const storage = S3CheckpointStorage.create(`s3://${server.bucket}/${prefix}`, resolveS3Config(server.settings));
      try {
        const jobs = await storage.jobs();
        expect(jobs.length).toBe(1);
        const history = await storage.readHistory(jobs[0]!);
        expect(history.entries.length).toBeGreaterThanOrEqual(2);
      } finally {
        await storage.close();
      }
      // Garbage: the job finished (retention none), so no checkpoint of either run is left on S3,
      // not even those of the killed run or a half-written one it left behind.
      const left = readdirSync(join(server.directory, server.bucket, prefix), { recursive: true }).map(String).filter((f) => /(^|\/)chk-\d+(\/|$)/.test(f));
      expect(left).toEqual([]);
      // weir checkpoints reads the same history from S3.
      const cli = await weirStdout(['checkpoints', `s3://${server.bucket}/${prefix}`, '--s3-endpoint', server.endpoint, '--s3-path-style', '--json']);
      expect(cli.code, cli.stderr).toBe(0);
      const listed = JSON.parse(cli.stdout) as { jobs: { jobId: string; history: { status: string }[] }[] };
      expect(listed.jobs.length).toBe(1);
      expect(listed.jobs[0]!.history.filter((h) => h.status === 'COMPLETED').length).toBeGreaterThanOrEqual(1);
    }, 300_000);
  }
});
