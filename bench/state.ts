/**
 * The state suite: npm run bench -- --suite state [--quick] [--runs N]
 *
 * The heap and the disk keyed-state backend side by side on the keyed running count
 * (bench/jobs/word-count.ts, 1 worker): once with few distinct keys (every key stays in the
 * disk backend's cache) and once with as many keys as records (most accesses go to its LMDB
 * store). Every measurement is its own child process (bench/child.ts); per run the two backends
 * run back to back, the order alternated from run to run. The results of the two backends must
 * be equal (checked). Issue 11's target: disk >= 0.3x heap. Prints a table and keeps the raw
 * data in bench/results/; BENCHMARKS.md is not touched.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, relative } from 'node:path';
import type { ChildReport } from './child.ts';
import { BENCH_DIR, BenchFailure, fmtInt, fmtMs, fmtRate, machineLine, median, RESULTS_DIR, spawnChild, type Machine } from './harness.ts';
import { readPartials, RESULT_MARK, sameResult, type Result, type Size } from './workloads.ts';

const CHILD = join(BENCH_DIR, 'child.ts');
const BACKENDS = ['heap', 'disk'] as const;
type Backend = (typeof BACKENDS)[number];

export interface StateSuiteOptions {
  readonly quick: boolean;
  readonly runs: number | undefined;
  readonly timeoutMs: number;
}

async function measure(backend: Backend, size: Size, timeoutMs: number, where: string): Promise<{ ms: number; result: Result }> {
  const c = await spawnChild([CHILD, 'word-count', 'weir-1', String(size.n), String(size.keys), `backend=${backend}`], timeoutMs, where);
  const line = c.stdout.split('\n').find((l) => l.startsWith(RESULT_MARK));
  if (line === undefined) throw new BenchFailure(`${where}: child printed no result\n${c.stderr}${c.stdout}`);
  const report = JSON.parse(line.slice(RESULT_MARK.length)) as ChildReport;
  const partials = readPartials(c.stderr);
  if (partials === undefined) throw new BenchFailure(`${where}: no sink reported a result\n${c.stderr}`);
  return { ms: report.ms, result: partials.result };
}

export async function runStateSuite(opts: StateSuiteOptions, m: Machine, revision: string): Promise<void> {
  const n = opts.quick ? 200_000 : 1_000_000;
  const sizes: Size[] = [{ n, keys: 10_000 }, { n, keys: n }];
  const runs = opts.runs ?? (opts.quick ? 1 : 3);
  const rows: { size: Size; ms: Record<Backend, number[]> }[] = [];
  for (const size of sizes) {
    const ms: Record<Backend, number[]> = { heap: [], disk: [] };
    for (let run = 1; run <= runs; run++) {
      const order = run % 2 === 1 ? BACKENDS : [...BACKENDS].reverse();
      const results: Partial<Record<Backend, Result>> = {};
      for (const backend of order) {
        const where = `state/${backend}/${size.keys} keys run ${run}`;
        const r = await measure(backend, size, opts.timeoutMs, where);
        process.stdout.write(`${where}: ${fmtMs(r.ms)}\n`);
        ms[backend].push(r.ms);
        results[backend] = r.result;
      }
      if (!sameResult(results.heap!, results.disk!)) throw new BenchFailure(`state/${size.keys} keys run ${run}: heap and disk results differ: ${JSON.stringify(results)}`);
    }
    rows.push({ size, ms });
  }
  const when = new Date().toISOString();
  const lines = [
    `Run of ${when}, weir at ${revision}: ${machineLine(m)}; ${runs} run(s) per backend, back to back (order alternated), median shown${opts.quick ? ' (QUICK mode)' : ''}; 1-minute load average ${loadavg()[0]!.toFixed(2)} at the end.`,
    '',
    '| Keyed running count (1 worker) | heap | disk | records/s heap | records/s disk | disk / heap |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const { size, ms } of rows) {
    const h = median(ms.heap);
    const d = median(ms.disk);
    lines.push(`| ${fmtInt(size.n)} records, ${fmtInt(size.keys)} keys | ${fmtMs(h)} | ${fmtMs(d)} | ${fmtRate(size.n / (h / 1000))} | ${fmtRate(size.n / (d / 1000))} | ${(h / d).toFixed(2)}x |`);
  }
  lines.push('', 'Target (issue 11): disk >= 0.3x heap. Results of the two backends equal in every run (checked).');
  mkdirSync(RESULTS_DIR, { recursive: true });
  const rawFile = join(RESULTS_DIR, `state-${when.replace(/[:.]/g, '-')}.json`);
  writeFileSync(rawFile, JSON.stringify({ suite: 'state', started: when, revision, machine: m, options: opts, rows }, null, 2));
  process.stdout.write(`\n${lines.join('\n')}\n\nraw results in ${relative(process.cwd(), rawFile)}\n`);
}
