/**
 * Chaos for the replayable-log sources (issue 9): `weir run` reading Redis Streams or NATS
 * JetStream (bounded at the end each stream had at the first start) into the exactly-once file
 * sink on 2 workers, killed with SIGKILL right after checkpoint completions (seeded) and resumed
 * with --from latest-or-empty at parallelism 2 and 3 in turn (a rescale at every restore). The committed output must equal the failure-free run's exactly,
 * and the windows must hold every record (nothing dropped as late). Prints the seed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { connect, type NatsConnection } from 'nats';
import { Rng } from '../../src/core/random.ts';
import { chaosSeed, committedLines, killAfterCompletions, runWeir } from './harness.ts';

const PER_SPLIT = 30_000;
const SPLITS = 3;
const RATE = '25000';
const JOB = 'test/fixtures/jobs/stream-window-totals.ts';
let work: string;
const tag = `${process.pid}_${Date.now()}`;
const redisKeys = Array.from({ length: SPLITS }, (_, k) => `weir-chaos:${tag}:s${k}`);
const natsStream = `weirchaos_${tag}`;
const natsSubjects = Array.from({ length: SPLITS }, (_, k) => `${natsStream}.s${k}`);
let redis: Redis;
let nc: NatsConnection;

/** Events {key, ts, value} per split, out of order by up to 1.5 s (the job allows 2 s). */
function events(seed: number, split: number): string[] {
  const rng = new Rng(seed * 31 + split);
  const t0 = 1_700_000_000_000;
  return Array.from({ length: PER_SPLIT }, (_, i) => JSON.stringify({ key: `k${rng.int(20)}`, ts: t0 + i * 5 - rng.int(1500), value: rng.int(100) }));
}

const seed = chaosSeed('sources-data');

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'weir-src-chaos-'));
  redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, commandTimeout: 20_000 });
  await redis.connect();
  nc = await connect({ servers: '127.0.0.1:4222', timeout: 5000 });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: natsStream, subjects: [`${natsStream}.>`] });
  const js = nc.jetstream();
  for (let s = 0; s < SPLITS; s++) {
    const evs = events(seed, s);
    for (let i = 0; i < evs.length; i += 1000) {
      const p = redis.pipeline();
      for (const e of evs.slice(i, i + 1000)) p.xadd(redisKeys[s]!, '*', 'data', e);
      await p.exec();
      await Promise.all(evs.slice(i, i + 1000).map((e) => js.publish(natsSubjects[s]!, e)));
    }
  }
}, 180_000);

afterAll(async () => {
  await redis.del(...redisKeys).catch(() => {});
  redis.disconnect();
  const jsm = await nc.jetstreamManager();
  await jsm.streams.delete(natsStream).catch(() => {});
  await nc.close();
  if (!process.env.KEEP_CHAOS) rmSync(work, { recursive: true, force: true });
});

function resumedFromCheckpoint(stderr: string): boolean {
  return / running; control API/.test(stderr) && !stderr.includes('starting fresh');
}

const cases = [
  ['redis', () => ['redis', 'redis://127.0.0.1:6379', redisKeys.join(',')]],
  ['jetstream', () => ['nats', '127.0.0.1:4222', natsStream]],
] as const;

describe('chaos: SIGKILL and resume, replayable-log sources into the exactly-once file sink', () => {
  for (const [name, source] of cases) {
    it(`${name}: committed output equals the failure-free run after 5 kills right after checkpoints, rescaling 2 -> 3 -> 2 (2 workers)`, async () => {
      const extra = name === 'jetstream' ? [natsSubjects.join(',')] : [];
      const expectedDir = join(work, `expected-${name}`);
      const ref = await runWeir(['run', JOB, '-p', '2', '-w', '2', '--', ...source(), expectedDir, '', ...extra]);
      expect(ref.code, ref.stderr).toBe(0);
      expect(ref.stderr).not.toContain('dropped as late');
      const expected = committedLines(expectedDir);
      // Independent of weir: the windows count every event exactly once.
      const counted = expected.map((l) => JSON.parse(l) as { count: number }).reduce((a, w) => a + w.count, 0);
      expect(counted).toBe(PER_SPLIT * SPLITS);

      const rng = new Rng(chaosSeed(`sources-${name}`));
      const out = join(work, `out-${name}`);
      const chk = join(work, `chk-${name}`);
      // Every other run restores at parallelism 3: the splits of 2 readers are dealt out to 3, and back.
      const args = (attempt: number) => ['run', JOB, '-p', attempt % 2 === 0 ? '2' : '3', '-w', '2', '--checkpoint-dir', chk, '--checkpoint-interval', '150ms', '--from', 'latest-or-empty',
        '--', ...source(), out, RATE, ...extra];
      // Kills land right after the 1st to 3rd new checkpoint completion of a run (seeded), so every
      // run after the first resumes from a checkpoint, mid-stream, however slowly the machine starts.
      const { killed, stderr } = await killAfterCompletions(args, 5, rng, chk, 120_000, (s) => console.log(`[chaos ${name}] ${s}`));
      const restored = stderr.filter(resumedFromCheckpoint).length;
      console.log(`[chaos ${name}] ${killed} runs killed after a completion, ${restored} runs resumed from a checkpoint`);
      const got = committedLines(out);
      expect(got.length).toBe(expected.length);
      expect(got).toEqual(expected);
      expect(killed).toBeGreaterThanOrEqual(3);
      expect(restored).toBeGreaterThanOrEqual(3);
    }, 400_000);
  }
});
