/**
 * One file read in byte ranges by parallel subtasks, end to end on worker threads: the same
 * multiset of records at parallelism 3 on 2 workers as at parallelism 1; and a job reading the
 * ranges that fails mid-file, restarted from a checkpoint at the same parallelism and resumed at
 * another one (2 -> 3), commits every record exactly once through the exactly-once file sink.
 *
 * Exactly once with ranges read in parallel: a key's records no longer arrive in increasing i,
 * so the fixture's per-key running count n is not floor(i/4) + 1; instead every i is committed
 * once, and per key the n values are exactly 1..count (a record read twice, or counted twice by
 * the restored state, gives a duplicate i or an n beyond the count; a lost one a missing i).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { committedLines } from '../helpers/output.ts';
import { runUntilFailedAfterCheckpoint } from '../helpers/paced-failure.ts';
import { runModule } from '../helpers/run.ts';
import { runJob, type RunOptions } from '../../src/index.ts';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'jobs');
const COUNTS = join(FIXTURES, 'recoverable-counts.ts');
const READ = join(FIXTURES, 'file-read.ts');

let work: string;
let k = 0;
const fresh = (name: string) => join(work, `${name}-${k++}`);
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-file-splits-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Every i in 0..n-1 committed once, with key k(i mod 4), and per key n running 1..count exactly. */
function expectExactlyOnce(lines: string[], n: number): void {
  const rows = lines.map((l) => JSON.parse(l) as { i: number; key: string; n: number });
  expect(rows.map((r) => r.i).sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
  for (let key = 0; key < 4; key++) {
    const ns = rows.filter((r) => r.key === `k${key}`).map((r) => r.n).sort((a, b) => a - b);
    expect(rows.filter((r) => r.key === `k${key}`).every((r) => r.i % 4 === key)).toBe(true);
    expect(ns, `key k${key}`).toEqual(Array.from({ length: ns.length }, (_, j) => j + 1));
  }
}

async function counts(input: string, n: number, o: RunOptions & { out: string; chk: string; fail: string; splitSize?: number; spinMicros?: number }) {
  const logs: string[] = [];
  const { out, chk, fail, splitSize, spinMicros = 100, ...rest } = o;
  const result = await runJob(COUNTS, {
    stdout: () => {},
    log: (l) => logs.push(l),
    args: [out, String(n), '0', fail, input, String(spinMicros), '128', ...(splitSize !== undefined ? [String(splitSize)] : [])],
    ...rest,
    checkpoint: { interval: 20, dir: chk, ...rest.checkpoint },
  });
  return { result, logs };
}

describe('one file in byte ranges on worker threads', () => {
  it('parallelism 3 on 2 workers reads the same multiset of records as parallelism 1, in 3 ranges on 3 subtasks', async () => {
    const input = fresh('input') + '.jsonl';
    const lines = Array.from({ length: 6000 }, (_, i) => JSON.stringify({ i, s: 'é漢😀'.repeat(i % 5) }));
    lines.splice(3000, 0, '', ''); // blank lines ("\r" once joined with CRLF)
    writeFileSync(input, lines.join('\r\n'));
    const one = await runModule(READ, { workers: 1, parallelism: 1, args: [input] });
    const three = await runModule(READ, { workers: 2, parallelism: 3, args: [input] });
    const key = (x: [number, unknown]) => JSON.stringify(x[1]);
    const a = one.collected<[number, unknown]>('main').map(key).sort();
    const b = three.collected<[number, unknown]>('main');
    expect(a).toHaveLength(6000);
    expect(b.map(key).sort()).toEqual(a);
    expect(new Set(b.map((x) => x[0]))).toEqual(new Set([0, 1, 2]));
    expect(one.collected('dead')).toEqual([]);
    expect(three.collected('dead')).toEqual([]);
  });

  it('a failure mid-file at parallelism 2 (2 workers): restarted from a checkpoint, every record is committed exactly once', async () => {
    const n = 3000;
    const input = fresh('input') + '.jsonl';
    writeFileSync(input, Array.from({ length: n }, (_, i) => JSON.stringify({ i, key: `k${i % 4}` })).join('\n') + '\n');
    let out = '';
    // The failure waits for a completed checkpoint; on a loaded machine the run is repeated slower until one completes mid-file.
    const r = await runUntilFailedAfterCheckpoint('file splits', (slowdown) => {
      out = fresh('out');
      return counts(input, n, { workers: 2, parallelism: 2, out, chk: fresh('chk'), fail: 'once@1', spinMicros: 100 * slowdown, restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 } });
    }, (x) => x.result.attempts > 1);
    expect(r.result.status, r.result.error?.message).toBe('FINISHED');
    expect(r.result.attempts).toBe(2);
    expect(r.logs.some((l) => /from checkpoint \d+/.test(l)), r.logs.join('\n')).toBe(true);
    expectExactlyOnce(committedLines(out), n);
  });

  it('a run failing mid-file at parallelism 2 resumed with --from latest at parallelism 3 (2 workers): exactly once across both runs', async () => {
    const n = 3000;
    const input = fresh('input') + '.jsonl';
    writeFileSync(input, Array.from({ length: n }, (_, i) => JSON.stringify({ i, key: `k${i % 4}` })).join('\n') + '\n');
    const out = fresh('out');
    const chk = fresh('chk');
    // 16 KiB ranges: 5 for this ~75 KB file, dealt 3 + 2 at parallelism 2 and 2 + 2 + 1 at 3.
    const first = await counts(input, n, { workers: 2, parallelism: 2, out, chk, fail: 'always@2', splitSize: 16384, restartStrategy: { type: 'none' }, checkpoint: { retention: 'retain-on-cancel' } });
    expect(first.result.status).toBe('FAILED');
    const before = committedLines(out);
    expect(before.length).toBeGreaterThan(0);
    expect(before.length).toBeLessThan(n);
    const second = await counts(input, n, { workers: 2, parallelism: 3, out, chk, fail: 'never', splitSize: 16384, from: 'latest' });
    expect(second.result.status, second.result.error?.message).toBe('FINISHED');
    expect(second.result.checkpoints.counts.restored).toBe(1);
    expectExactlyOnce(committedLines(out), n);
  });
});
