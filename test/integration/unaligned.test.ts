/**
 * Unaligned checkpoints end to end (runJob, worker threads), on a job under heavy backpressure:
 * a generator at full speed feeding keyed counts and a sink that takes ~10 K records/s per
 * subtask (test/fixtures/jobs/unaligned-counts.ts), more than 100x slower than the source.
 * - aligned, with a checkpoint timeout shorter than a barrier's wait behind the queued data,
 *   checkpoints expire; unaligned, with the same timeout, they complete (counts, not timings);
 * - an injected failure restores an unaligned checkpoint that holds in-flight data, at the same
 *   parallelism (restart) and at a new one (--from the retained checkpoint): every record is
 *   committed exactly once and every key's count is exact.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetadata, type CheckpointMetadata } from '../../src/checkpoint/metadata.ts';
import { CheckpointFailureReason as R } from '../../src/checkpoint/failure-reason.ts';
import { runJob, type JobResult, type RunOptions } from '../../src/index.ts';
import { keyGroupOf, normalizeKey, operatorIndexForKeyGroup } from '../../src/state/key-groups.ts';

const JOB = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'jobs', 'unaligned-counts.ts');
const KEYS = 8;
/** Records: more than the channels hold, so the sources stay back-pressured for most of the run. */
const N = 60_000;
const N_EXPIRY = 40_000;

let work: string;
let k = 0;
const fresh = (name: string): string => join(work, `${name}-${k++}`);
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-unaligned-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Out { i: number; key: string; n: number }

async function run(out: string, chk: string, args: string[], options: RunOptions, onLog?: (line: string) => void): Promise<{ result: JobResult; logs: string[] }> {
  const logs: string[] = [];
  const log = (l: string): void => {
    logs.push(l);
    onLog?.(l);
  };
  const result = await runJob(JOB, {
    workers: 2, parallelism: 2, stdout: () => {}, log, args: [out, ...args], ...options,
    checkpoint: { dir: chk, interval: 100, tolerableFailures: 1000, ...options.checkpoint },
  });
  return { result, logs };
}

function committed(out: string): Out[] {
  if (!existsSync(out)) return [];
  return readdirSync(out).filter((f) => !f.startsWith('.')).flatMap((f) => JSON.parse(readFileSync(join(out, f), 'utf8')) as Out[]);
}

/** Every record once, and per key the counts 1..(its records): nothing lost, nothing repeated, state exact. */
function expectExactlyOnce(got: readonly Out[], n: number): void {
  const is = got.map((r) => r.i).sort((a, b) => a - b);
  expect(is.length).toBe(n);
  expect(is).toEqual(Array.from({ length: n }, (_, i) => i));
  for (let key = 0; key < KEYS; key++) {
    const ns = got.filter((r) => r.key === `k${key}`).map((r) => r.n).sort((a, b) => a - b);
    const records = Math.floor((n - 1 - key) / KEYS) + 1;
    expect(ns, `counts of k${key}`).toEqual(Array.from({ length: records }, (_, j) => j + 1));
  }
}

function metadataOf(chk: string, jobId: string, checkpointId: number): CheckpointMetadata {
  const path = join(chk, jobId, `chk-${checkpointId}`, '_metadata');
  return parseMetadata(readFileSync(path, 'utf8'), path);
}

/** Bytes of in-flight records the checkpoint stored as channel state, over all subtasks. */
function persistedInFlight(m: CheckpointMetadata): number {
  let n = 0;
  for (const o of m.operators) for (const s of o.subtasks) n += s.channelState?.persistedBytes ?? 0;
  return n;
}

describe('unaligned checkpoints under heavy backpressure', () => {
  it('aligned checkpoints expire behind the queued data; unaligned ones complete with the same timeout', async () => {
    // A slower sink here (4 K records/s per subtask): an aligned barrier waits ~2 s behind the queues.
    const slow = [String(N_EXPIRY), 'never', '20'];
    const aligned = await run(fresh('out'), fresh('chk'), slow, { checkpoint: { timeout: 1500 } });
    expect(aligned.result.status, aligned.result.error?.message).toBe('FINISHED');
    const a = aligned.result.checkpoints;
    const unaligned = await run(fresh('out'), fresh('chk'), slow, { checkpoint: { timeout: 1500, unaligned: true } });
    expect(unaligned.result.status, unaligned.result.error?.message).toBe('FINISHED');
    const u = unaligned.result.checkpoints;
    console.log(`[unaligned] aligned: ${a.counts.completed} completed, ${a.counts.failed} failed (${aligned.result.durationMs} ms); unaligned: ${u.counts.completed} completed, ${u.counts.failed} failed (${unaligned.result.durationMs} ms)`);
    expect(a.counts.failed).toBeGreaterThanOrEqual(2);
    expect(a.entries().filter((e) => e.status === 'FAILED').every((e) => e.failureReason === R.CHECKPOINT_EXPIRED)).toBe(true);
    expect(u.counts.failed).toBe(0);
    expect(u.counts.completed).toBeGreaterThanOrEqual(5);
    expect(u.counts.completed).toBeGreaterThan(a.counts.completed);
    // Completed unaligned checkpoints stored in-flight data.
    expect(u.entries().some((e) => Object.values(e.subtasks).some((s) => (s as { persistedInFlightBytes?: number }).persistedInFlightBytes! > 0))).toBe(true);
  }, 120_000);
});

describe('restoring unaligned checkpoints: in-flight data neither lost nor duplicated', () => {
  it('same parallelism: a failure restarts from an unaligned checkpoint with in-flight data; exactly once', async () => {
    const out = fresh('out');
    const chk = fresh('chk');
    // The premise: the checkpoint restarted from held records in flight (read when the restart is
    // announced: a finished job deletes its checkpoints).
    let restoredInFlight = -1;
    const r = await run(out, chk, [String(N), 'once@3'], { checkpoint: { unaligned: true }, restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 } }, (l) => {
      const m = /restarting in .* from checkpoint (\d+)/.exec(l);
      if (m === null) return;
      const [jobId] = readdirSync(chk);
      restoredInFlight = persistedInFlight(metadataOf(chk, jobId!, Number(m[1])));
    });
    expect(r.result.status, r.result.error?.message).toBe('FINISHED');
    expect(r.result.attempts).toBe(2);
    expect(r.logs.some((l) => /injected failure/.test(l) && /restarting in/.test(l)), r.logs.join('\n')).toBe(true);
    expect(restoredInFlight).toBeGreaterThan(0);
    expectExactlyOnce(committed(out), N);
  }, 120_000);

  it('new parallelism: an unaligned checkpoint with in-flight data taken at p=2 restores at p=3 (and back at p=1); exactly once', async () => {
    const out = fresh('out');
    const chk = fresh('chk');
    const first = await run(out, chk, [String(N), 'always@3'], { checkpoint: { unaligned: true, retention: 'retain-on-cancel' }, restartStrategy: { type: 'none' } });
    expect(first.result.status).toBe('FAILED');
    const latest = first.result.checkpoints.lastCompleted!;
    expect(latest).toBeDefined();
    const m = metadataOf(chk, first.result.jobId, latest.id);
    expect(persistedInFlight(m)).toBeGreaterThan(0);
    const from = join(chk, first.result.jobId, `chk-${latest.id}`);
    const second = await run(out, fresh('chk'), [String(N), 'always@3'], { parallelism: 3, from, checkpoint: { unaligned: true }, restartStrategy: { type: 'none' } });
    expect(second.result.status).toBe('FAILED');
    const latest2 = second.result.checkpoints.lastCompleted!;
    expect(latest2).toBeDefined();
    const from2 = second.result.checkpoints.lastCompleted!.externalPath!;
    expect(persistedInFlight(parseMetadata(readFileSync(join(from2, '_metadata'), 'utf8'), from2))).toBeGreaterThan(0);
    const third = await run(out, fresh('chk'), [String(N), 'never'], { parallelism: 1, workers: 1, from: from2, checkpoint: { unaligned: true } });
    expect(third.result.status, third.result.error?.message).toBe('FINISHED');
    expectExactlyOnce(committed(out), N);
  }, 180_000);

  it('new parallelism, keyBy into a function without keyed state (keyBy(k).map(f)): in-flight data goes to the subtask owning its key group now, as live records do (before: to new subtask old index mod p)', async () => {
    const out = fresh('out');
    const chk = fresh('chk');
    const first = await run(out, chk, [String(N), 'always@3', '50', '5', 'map'], { checkpoint: { unaligned: true, retention: 'retain-on-cancel' }, restartStrategy: { type: 'none' } });
    expect(first.result.status).toBe('FAILED');
    const latest = first.result.checkpoints.lastCompleted!;
    expect(persistedInFlight(metadataOf(chk, first.result.jobId, latest.id))).toBeGreaterThan(0);
    const from = join(chk, first.result.jobId, `chk-${latest.id}`);
    const second = await run(out, fresh('chk'), [String(N), 'never', '50', '5', 'map'], { parallelism: 3, from, checkpoint: { unaligned: true } });
    expect(second.result.status, second.result.error?.message).toBe('FINISHED');
    const got = committed(out) as unknown as { i: number; key: string; n: string }[];
    expect(got.map((r) => r.i).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    for (let key = 0; key < KEYS; key++) {
      const at = [...new Set(got.filter((r) => r.key === `k${key}` && r.n.startsWith('3/')).map((r) => r.n))];
      const owner = `3/${operatorIndexForKeyGroup(128, 3, keyGroupOf(normalizeKey(`k${key}`), 128))}`;
      expect(at.filter((t) => t !== owner), `subtasks that saw k${key} at p = 3 (its owner: ${owner})`).toEqual([]);
    }
  }, 180_000);
});
