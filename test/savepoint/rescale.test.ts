/**
 * Rescaling through savepoints (issue point 4): a job with keyed value, list and map state,
 * operator list state (split and union), a generator source whose lanes are splits with
 * positions, and keyed event-time timers is stopped with a savepoint at parallelism 2,
 * restored at 3, stopped again, restored at 1, stopped again, and restored at 4, where it runs
 * to the end. At every savepoint every key's state is read back (inspect library) and
 * compared with the state computed from the source positions recorded in that same
 * savepoint; split list state must be cut as declared and union list state handed whole to
 * every subtask; source lanes are dealt out again k mod p. Across the round trip no record is
 * lost or repeated, and every key's timer fires exactly once at the end with its full state.
 * A changed max parallelism is refused with a clear message and the savepoint is untouched.
 *
 * Fixture: test/fixtures/jobs/savepoint-rescale.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { lookupValue, summarize } from '../../src/checkpoint/inspect.ts';
import { runJob, type JobResult } from '../../src/index.ts';
import type { GeneratorSplit } from '../../src/connectors/generator/generator-source.ts';
import { keyGroupOf, keyGroupRangeForSubtask, normalizeKey } from '../../src/state/key-groups.ts';
import { KEYS, LANES, TIMER_BASE, type Entry, type Final, type Restored } from '../fixtures/jobs/savepoint-rescale.ts';
import { decodeSnapshot, fingerprint, fixture, sleep, start, stopWithSavepoint, tempDir, waitRunning } from './helpers.ts';

const JOB = fixture('savepoint-rescale.ts');
const N = 3000;
const RATE = 400;
const MAXP = 128;
const tmp = tempDir('rescale');
afterAll(() => tmp.cleanup());

const keyOf = (i: number) => `k${i % KEYS}`;

/** Indices a lane split at position `next` has produced. */
function produced(splits: readonly GeneratorSplit[]): Set<number> {
  const out = new Set<number>();
  for (const s of splits) for (let i = s.lane; i < s.next; i += s.lanes) out.add(i);
  return out;
}

interface KeyState { count: number; sum: number; seen: number[]; byLane: [number, number][] }

function expectedStates(processed: ReadonlySet<number>): Map<string, KeyState> {
  const m = new Map<string, KeyState>();
  for (const i of [...processed].sort((a, b) => a - b)) {
    const k = keyOf(i);
    let s = m.get(k);
    if (s === undefined) m.set(k, (s = { count: 0, sum: 0, seen: [], byLane: [] }));
    s.count++;
    s.sum += i;
    s.seen.push(i);
    const lane = i % LANES;
    const e = s.byLane.find(([l]) => l === lane);
    if (e) e[1]++;
    else s.byLane.push([lane, 1]);
  }
  for (const s of m.values()) s.byLane.sort((a, b) => a[0] - b[0]);
  return m;
}

/** Stops a run of the fixture at parallelism p with a savepoint (from `from`, if given). */
async function stoppedRun(gen: string, p: number, workers: number, from: string | undefined): Promise<{ result: JobResult; savepoint: string }> {
  const h = await start(JOB, { workers, parallelism: p, args: [gen, String(N), String(RATE)], ...(from ? { from } : {}) });
  await waitRunning(h);
  await sleep(400); // let records flow (rate-limited source)
  const savepoint = await stopWithSavepoint(h, tmp.fresh(`sp-${gen}`));
  const result = await h.result;
  expect(result.status, result.error?.message).toBe('FINISHED');
  // A stop without drain does not advance event time: no timer fired.
  expect(result.collected<Final>('final')).toEqual([]);
  return { result, savepoint };
}

interface Checked { processed: Set<number>; splitsInOrder: GeneratorSplit[]; tally: Entry[][]; roster: Entry[][] }

/** Everything about one savepoint, compared exactly with what its source positions imply. */
async function checkSavepoint(path: string, p: number, gen: string): Promise<Checked> {
  const snap = await decodeSnapshot(path);
  expect(snap.metadata.type).toBe('savepoint');
  const src = snap.inline('src');
  expect(src).toHaveLength(p);
  const splitsInOrder = src.flatMap((s) => (s.splits ?? []) as GeneratorSplit[]);
  expect(splitsInOrder.map((s) => s.lane).sort((a, b) => a - b)).toEqual([...Array(LANES).keys()]);
  const processed = produced(splitsInOrder);

  // Operator list state: one tally entry per (gen, subtask) so far, counts summing to what was read.
  const ops = snap.inline('ops');
  expect(ops).toHaveLength(p);
  const tally = ops.map((o) => o.lists!['tally']!.items as Entry[]);
  const roster = ops.map((o) => o.lists!['roster']!.items as Entry[]);
  for (const o of ops) {
    expect(o.lists!['tally']!.distribution).toBe('split');
    expect(o.lists!['roster']!.distribution).toBe('union');
  }
  expect(tally.flat().reduce((a, e) => a + e.count, 0)).toBe(processed.size);
  expect(roster.map((r) => r.map((e) => [e.gen, e.sub]))).toEqual(Array.from({ length: p }, (_, j) => [[gen, j]]));

  // Keyed state: every key, every state, exactly.
  const keyed = snap.operator('keyed');
  expect(keyed.maxParallelism).toBe(MAXP);
  const expected = expectedStates(processed);
  for (let k = 0; k < KEYS; k++) {
    const key = `k${k}`;
    const want = expected.get(key);
    const count = await lookupValue(path, 'keyed', 'count', key);
    const sum = await lookupValue(path, 'keyed', 'sum', key);
    const seen = await lookupValue(path, 'keyed', 'seen', key);
    const byLane = await lookupValue(path, 'keyed', 'byLane', key);
    if (want === undefined) {
      expect([count.found, sum.found, seen.found, byLane.found]).toEqual([false, false, false, false]);
      continue;
    }
    expect(count.value, `count of ${key}`).toBe(want.count);
    expect(sum.value, `sum of ${key}`).toBe(want.sum);
    expect([...(seen.value as number[])].sort((a, b) => a - b), `seen of ${key}`).toEqual(want.seen);
    expect([...(byLane.value as [number, number][])].sort((a, b) => a[0] - b[0]), `byLane of ${key}`).toEqual(want.byLane);
  }

  // Per key-group range: the subtask's range, its keys and its timers (one per key seen).
  const summary = await summarize(path);
  const op = summary.operators.find((o) => o.uid === 'keyed')!;
  expect(op.states.map((s) => [s.name, s.kind, s.keys]).sort()).toEqual(
    [['byLane', 'map', expected.size], ['count', 'value', expected.size], ['seen', 'list', expected.size], ['sum', 'value', expected.size]],
  );
  expect(op.ranges.map((r) => r.subtask)).toEqual([...Array(p).keys()]);
  for (const r of op.ranges) {
    expect(r.keyGroupRange).toEqual(keyGroupRangeForSubtask(MAXP, p, r.subtask));
    const inRange = [...expected.keys()].filter((key) => {
      const kg = keyGroupOf(normalizeKey(key), MAXP);
      return kg >= r.keyGroupRange.start && kg <= r.keyGroupRange.end;
    });
    expect(r.timers, `timers of subtask ${r.subtask}`).toBe(inRange.length);
    expect(r.keys, `entries of subtask ${r.subtask}`).toBe(4 * inRange.length);
  }
  return { processed, splitsInOrder, tally, roster };
}

/** What a restore at p from `prev` must have handed each subtask. */
function checkRedistribution(prev: Checked, p: number, restored: Restored[], gen: string, nextSplits: readonly GeneratorSplit[][] | undefined): void {
  expect(restored.map((r) => r.sub).sort((a, b) => a - b), 'every subtask reports what it restored').toEqual([...Array(p).keys()]);
  const allTally = prev.tally.flat();
  const allRoster = prev.roster.flat();
  for (const r of restored) {
    expect(r.gen).toBe(gen);
    expect(r.parallelism).toBe(p);
    // Split: the concatenation in old subtask order, cut into p contiguous parts.
    const from = Math.floor((r.sub * allTally.length) / p);
    const to = Math.floor(((r.sub + 1) * allTally.length) / p);
    expect(r.tally, `split list state of subtask ${r.sub}`).toEqual(allTally.slice(from, to));
    // Union: everything, to everyone.
    expect(r.roster, `union list state of subtask ${r.sub}`).toEqual(allRoster);
  }
  // Source lanes: split k of the old order goes to subtask k mod p, with its position.
  if (nextSplits !== undefined) {
    for (let j = 0; j < p; j++) {
      const want = prev.splitsInOrder.filter((_, k) => k % p === j).map((s) => s.lane);
      expect(nextSplits[j]!.map((s) => s.lane), `lanes of source subtask ${j}`).toEqual(want);
    }
  }
}

describe('rescaling: 2 -> 3 -> 1 -> 4 through savepoints', () => {
  let sp0 = '';

  it('preserves every key\'s state, redistributes list state and source positions as declared, and loses or repeats nothing', async () => {
    // p = 2
    const g0 = await stoppedRun('g0', 2, 1, undefined);
    sp0 = g0.savepoint;
    const c0 = await checkSavepoint(g0.savepoint, 2, 'g0');
    const r0 = g0.result.collected<Restored>('restored');
    expect(r0.map((r) => [r.sub, r.tally, r.roster]).sort()).toEqual([[0, [], []], [1, [], []]]);
    const out0 = g0.result.collected<number>('out');
    expect(out0.slice().sort((a, b) => a - b)).toEqual([...c0.processed].sort((a, b) => a - b));

    // p = 3 (two worker threads)
    const g1 = await stoppedRun('g1', 3, 2, g0.savepoint);
    const c1 = await checkSavepoint(g1.savepoint, 3, 'g1');
    checkRedistribution(c0, 3, g1.result.collected<Restored>('restored'), 'g1', (await decodeSnapshot(g1.savepoint)).inline('src').map((s) => s.splits as GeneratorSplit[]));
    const out1 = g1.result.collected<number>('out');
    expect(out1.slice().sort((a, b) => a - b)).toEqual([...c1.processed].filter((i) => !c0.processed.has(i)).sort((a, b) => a - b));
    for (const i of c0.processed) expect(c1.processed.has(i)).toBe(true);

    // p = 1
    const g2 = await stoppedRun('g2', 1, 1, g1.savepoint);
    const c2 = await checkSavepoint(g2.savepoint, 1, 'g2');
    checkRedistribution(c1, 1, g2.result.collected<Restored>('restored'), 'g2', (await decodeSnapshot(g2.savepoint)).inline('src').map((s) => s.splits as GeneratorSplit[]));
    const out2 = g2.result.collected<number>('out');
    expect(out2.slice().sort((a, b) => a - b)).toEqual([...c2.processed].filter((i) => !c1.processed.has(i)).sort((a, b) => a - b));
    expect(c2.processed.size).toBeGreaterThan(0);
    expect(c2.processed.size).toBeLessThan(N);

    // p = 4 (two worker threads), unthrottled to the end of the input.
    const g3 = await runJob(JOB, { workers: 2, parallelism: 4, args: ['g3', String(N), '0'], from: g2.savepoint, stdout: () => {}, log: () => {} });
    expect(g3.status, g3.error?.message).toBe('FINISHED');
    checkRedistribution(c2, 4, g3.collected<Restored>('restored'), 'g3', undefined);
    const out3 = g3.collected<number>('out');

    // Across the round trip every record reached the keyed operator exactly once.
    const all = [...out0, ...out1, ...out2, ...out3].sort((a, b) => a - b);
    expect(all).toEqual([...Array(N).keys()]);

    // Every key's timer (registered at its first record, at p = 2 or later) fired once, with the whole state.
    const finals = g3.collected<Final>('final').sort((a, b) => a.timer - b.timer);
    const want = expectedStates(new Set(Array.from({ length: N }, (_, i) => i)));
    expect(finals).toEqual(
      Array.from({ length: KEYS }, (_, k) => ({ key: `k${k}`, ...want.get(`k${k}`)!, timer: TIMER_BASE + k })),
    );
  }, 30_000);

  it('refuses a restore with a changed max parallelism, naming it, and leaves the savepoint untouched', async () => {
    expect(sp0, 'the round trip test ran first').not.toBe('');
    const before = fingerprint(sp0);
    await expect(runJob(JOB, { workers: 1, parallelism: 3, args: ['g9', String(N), '0', '64'], from: sp0, stdout: () => {}, log: () => {} })).rejects.toThrow(
      'operator "keyed" was checkpointed with max parallelism 128 and now has 64; the number of key groups is fixed once state exists (set setMaxParallelism(128))',
    );
    expect(fingerprint(sp0)).toEqual(before);
  });
});

describe('rescaling when the job leaves max parallelism to the default', () => {
  it('takes the savepoint\'s number of key groups (as Flink), so p = 2 -> 86 restores although the default at 86 is 256; every count goes on', async () => {
    const job = new URL('../fixtures/jobs/default-max-parallelism.ts', import.meta.url).pathname;
    const tmp = tempDir('weir-default-maxp');
    try {
      const h = await start(job, { workers: 1, parallelism: 2, args: ['20000', '4000'] });
      await waitRunning(h);
      await sleep(300);
      const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
      const first = await h.result;
      expect((await decodeSnapshot(sp)).operator('keyed').maxParallelism).toBe(128);
      // Before: refused, "checkpointed with max parallelism 128 and now has 256".
      const r = await runJob(job, { workers: 2, parallelism: 86, args: ['20000'], from: sp, stdout: () => {}, log: () => {} });
      expect(r.status, r.error?.message).toBe('FINISHED');
      const counts = [...first.collected<[number, number]>('out'), ...r.collected<[number, number]>('out')];
      expect(counts).toHaveLength(20_000);
      // Each key counted 400 records, 1..400 once each, across both runs.
      const byKey = new Map<number, number[]>();
      for (const [k, n] of counts) byKey.set(k, [...(byKey.get(k) ?? []), n]);
      expect(byKey.size).toBe(50);
      for (const [k, ns] of byKey) expect(ns.sort((a, b) => a - b), `key ${k}`).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    } finally {
      tmp.cleanup();
    }
  }, 60_000);
});
