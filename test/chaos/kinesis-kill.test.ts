/**
 * Chaos for the Kinesis source (issue 9): `weir run` reading a 2-shard kinesalite stream (in
 * this process) while a producer keeps writing, per-key counts in keyed state into the
 * exactly-once file sink; SIGKILLed right after checkpoint completions (seeded) and resumed with
 * --from latest-or-empty at parallelism 2 and 3 in turn. Once the producer is done, a last run
 * reads until the committed output holds every record; it must equal the oracle exactly (the
 * record's place among its key's records): not a record lost or emitted twice. Prints the seed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { chaosSeed, committedLines, completedCheckpoints, startWeir } from './harness.ts';
import { createStream, putJson, startKinesalite, type Kinesalite } from '../helpers/kinesalite.ts';

const N = 6000;
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
  it('committed output equals the oracle after 3 kills right after checkpoints, with a producer writing throughout', async () => {
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
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    const args = (attempt: number) => ['run', JOB, '-p', attempt % 2 === 0 ? '2' : '3', '-w', '1', '--checkpoint-dir', chk, '--checkpoint-interval', '150ms',
      '--from', 'latest-or-empty', '--', k.endpoint, stream, out, '1500'];
    let killed = 0;
    for (let run = 0; run < 6 && killed < 3; run++) {
      const target = 1 + rng.int(3);
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
      console.log(`[chaos kinesis] run ${run}: killed ${seen >= target ? `after completion ${target}` : 'at the fallback'}; ${written} records written, ${committedLines(out).length} committed so far`);
    }
    await producer;
    // The last run: until every record is committed, then stopped (the source never ends).
    const last = startWeir(args(6));
    const deadline = Date.now() + 120_000;
    while (committedLines(out).length < N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    last.child.kill('SIGKILL');
    const lr = await last.done;
    const got = committedLines(out);
    const expected = Array.from({ length: N }, (_, i) => JSON.stringify({ i, key: `k${i % KEYS}`, n: Math.floor(i / KEYS) + 1 })).sort();
    expect(got.length, lr.stderr.slice(-3000)).toBe(N);
    expect(got).toEqual(expected);
    expect(killed).toBeGreaterThanOrEqual(2);
  }, 300_000);
});
