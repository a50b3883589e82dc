/**
 * Chaos for the Kinesis source (issue 9): `weir run` on 2 workers reading a 2-shard kinesalite
 * stream (in this process) while a producer keeps writing and the stream is resharded (a split
 * after the first run, a merge after the second), per-key counts in keyed state into the
 * exactly-once file sink; SIGKILLed right after checkpoint completions (seeded) and resumed with
 * --from latest-or-empty at parallelism 2 and 3 in turn. Once the producer is done, a last run
 * reads until the committed output holds every record. Every record must be there exactly once,
 * and each key's counts must be exactly 1..(its records): not a record lost or counted twice.
 * (Not the counts' order: a child shard may be read by another subtask than its parent, and
 * records of one key then reach the count through two channels.) Prints the seed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { chaosSeed, committedLines, completedCheckpoints, startWeir } from './harness.ts';
import { createStream, mergeShards, putJson, splitShard, startKinesalite, type Kinesalite } from '../helpers/kinesalite.ts';

const N = 4000;
const KEYS = 8;
const JOB = 'test/fixtures/jobs/kinesis-counts.ts';
let k: Kinesalite;
let work: string;

beforeAll(async () => {
  k = await startKinesalite();
  work = mkdtempSync(join(tmpdir(), 'weir-kinesis-chaos-'));
});
afterAll(async () => {
  await k.close();
  if (!process.env.KEEP_CHAOS) rmSync(work, { recursive: true, force: true });
});

describe('chaos: SIGKILL and resume, Kinesis source into the exactly-once file sink', () => {
  it('every record committed once after 2 kills right after checkpoints, with a producer writing and a split and a merge during the run', async () => {
    const stream = `weir-chaos-${process.pid}`;
    await createStream(k.client, stream, 2);
    const rng = new Rng(chaosSeed('kinesis'));
    const out = join(work, 'out');
    const chk = join(work, 'chk');
    // The producer: batches of 100 in increasing i, so each key's records are in order in its shard.
    let written = 0;
    const producer = (async () => {
      while (written < N) {
        const n = Math.min(100, N - written);
        await putJson(k.client, stream, Array.from({ length: n }, (_, j) => ({ key: `k${(written + j) % KEYS}`, value: { i: written + j, key: `k${(written + j) % KEYS}` } })));
        written += n;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const args = (attempt: number) => ['run', JOB, '-p', attempt % 2 === 0 ? '2' : '3', '-w', '2', '--checkpoint-dir', chk, '--checkpoint-interval', '150ms',
      '--from', 'latest-or-empty', '--', k.endpoint, stream, out, '1500'];
    let killed = 0;
    for (let run = 0; run < 4 && killed < 2; run++) {
      const target = 3 + rng.int(8);
      const before = completedCheckpoints(chk);
      const { child, done } = startWeir(args(run));
      let seen = 0;
      const poll = setInterval(() => {
        for (const c of completedCheckpoints(chk)) if (!before.has(c)) { before.add(c); seen++; }
        if (seen >= target) child.kill('SIGKILL');
      }, 5);
      const fallback = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const r = await done;
      clearInterval(poll);
      clearTimeout(fallback);
      if (r.signal !== 'SIGKILL') throw new Error(`run ${run} ended by itself (code ${r.code}):\n${r.stderr}`);
      if (seen >= target) killed++;
      if (run === 0) await splitShard(k.client, stream, 'shardId-000000000000');
      if (run === 1) await mergeShards(k.client, stream, 'shardId-000000000003', 'shardId-000000000001');
      console.log(`[chaos kinesis] run ${run}: killed ${seen >= target ? `after completion ${target}` : 'at the fallback'}; ${written} records written, ${committedLines(out).length} committed so far`);
    }
    await producer;
    // The last run: until every record is committed, then stopped (the source never ends).
    const last = startWeir(args(4));
    const deadline = Date.now() + 120_000;
    while (committedLines(out).length < N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    last.child.kill('SIGKILL');
    const lr = await last.done;
    const got = committedLines(out).map((l) => JSON.parse(l) as { i: number; key: string; n: number });
    expect(got.length, lr.stderr.slice(-3000)).toBe(N);
    expect(got.map((r) => r.i).sort((a, b) => a - b)).toEqual([...Array(N).keys()]);
    const counts = new Map<string, number[]>();
    for (const r of got) {
      expect(r.key).toBe(`k${r.i % KEYS}`);
      counts.set(r.key, [...(counts.get(r.key) ?? []), r.n]);
    }
    for (const [key, ns] of counts) expect(ns.sort((a, b) => a - b), `counts of ${key}`).toEqual(Array.from({ length: N / KEYS }, (_, j) => j + 1));
    expect(killed).toBeGreaterThanOrEqual(2);
  }, 300_000);
});
