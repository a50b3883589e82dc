/**
 * The state suite: npm run bench -- --suite state [--quick] [--runs N]
 *
 * The heap and the disk keyed-state backend side by side on the keyed running count
 * (bench/jobs/word-count.ts, 1 worker): once with few distinct keys (every key stays in the
 * disk backend's cache), once with as many keys as records drawn uniformly (most accesses go
 * to its LMDB store: the worst case), and once with 1 M possible keys drawn Zipf-distributed
 * (s = 1), as the words of a real text are: a hot head stays cached, a long tail does not. Every measurement is its own child process (bench/child.ts); per run the two backends
 * run back to back, the order alternated from run to run. The results of the two backends must
 * be equal (checked). Issue 11's target: disk >= 0.3x heap. Prints a table and keeps the raw
 * data in bench/results/; BENCHMARKS.md is not touched.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, relative } from 'node:path';
import type { ChildReport } from './child.ts';
import { BENCH_DIR, BenchFailure, fmtInt, fmtMs, fmtRate, machineLine, median, RESULTS_DIR, checkChildRuntime, spawnChild, type Machine, type WeirRuntime } from './harness.ts';
import { readPartials, RESULT_MARK, sameResult, type Result, type Size } from './workloads.ts';

const CHILD = join(BENCH_DIR, 'child.ts');
const BACKENDS = ['heap', 'disk'] as const;
type Backend = (typeof BACKENDS)[number];

export interface StateSuiteOptions {
  readonly quick: boolean;
  readonly runs: number | undefined;
  readonly timeoutMs: number;
  /** Which weir the children run (harness.ts, weirRuntime). */
  readonly runtime: WeirRuntime;
}

function label(size: Size): string {
  return `${size.keys} keys${size.dist === 'zipf' ? ' zipf' : ''}`;
}

async function measure(backend: Backend, size: Size, timeoutMs: number, where: string, runtime: WeirRuntime): Promise<{ ms: number; cpuMs: number; result: Result }> {
  const c = await spawnChild([CHILD, 'word-count', 'weir-1', String(size.n), String(size.keys), `backend=${backend}`, `keys=${size.dist ?? 'uniform'}`], timeoutMs, where, runtime);
  const line = c.stdout.split('\n').find((l) => l.startsWith(RESULT_MARK));
  if (line === undefined) throw new BenchFailure(`${where}: child printed no result\n${c.stderr}${c.stdout}`);
  const report = JSON.parse(line.slice(RESULT_MARK.length)) as ChildReport;
  const partials = readPartials(c.stderr);
  if (partials === undefined) throw new BenchFailure(`${where}: no sink reported a result\n${c.stderr}`);
  checkChildRuntime(where, report.runtime, runtime);
  return { ms: report.ms, cpuMs: report.cpuMs, result: partials.result };
}

export async function runStateSuite(opts: StateSuiteOptions, m: Machine, revision: string): Promise<void> {
  const n = opts.quick ? 200_000 : 1_000_000;
  const sizes: Size[] = [{ n, keys: 10_000 }, { n, keys: n }, { n, keys: 1_000_000, dist: 'zipf' }];
  const runs = opts.runs ?? (opts.quick ? 1 : 3);
  const rows: { size: Size; ms: Record<Backend, number[]>; cpuMs: Record<Backend, number[]> }[] = [];
  for (const size of sizes) {
    const ms: Record<Backend, number[]> = { heap: [], disk: [] };
    const cpuMs: Record<Backend, number[]> = { heap: [], disk: [] };
    for (let run = 1; run <= runs; run++) {
      const order = run % 2 === 1 ? BACKENDS : [...BACKENDS].reverse();
      const results: Partial<Record<Backend, Result>> = {};
      for (const backend of order) {
        const where = `state/${backend}/${label(size)} run ${run}`;
        const r = await measure(backend, size, opts.timeoutMs, where, opts.runtime);
        process.stdout.write(`${where}: ${fmtMs(r.ms)} (CPU ${fmtMs(r.cpuMs)})\n`);
        ms[backend].push(r.ms);
        cpuMs[backend].push(r.cpuMs);
        results[backend] = r.result;
      }
      if (!sameResult(results.heap!, results.disk!)) throw new BenchFailure(`state/${label(size)} run ${run}: heap and disk results differ: ${JSON.stringify(results)}`);
    }
    rows.push({ size, ms, cpuMs });
  }
  const when = new Date().toISOString();
  const lines = [
    `Run of ${when}, weir at ${revision}: ${machineLine(m)}; ${runs} run(s) per backend, back to back (order alternated), median shown${opts.quick ? ' (QUICK mode)' : ''}; 1-minute load average ${loadavg()[0]!.toFixed(2)} at the end.`,
    '',
    '| Keyed running count (1 worker) | heap | disk | records/s heap | records/s disk | disk / heap | heap CPU | disk CPU | disk / heap (CPU) | records/s disk per CPU-s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { size, ms, cpuMs } of rows) {
    const h = median(ms.heap);
    const d = median(ms.disk);
    const hc = median(cpuMs.heap);
    const dc = median(cpuMs.disk);
    lines.push(
      `| ${fmtInt(size.n)} records, ${fmtInt(size.keys)} keys${size.dist === 'zipf' ? ' (Zipf, s = 1)' : ''} | ${fmtMs(h)} | ${fmtMs(d)} | ${fmtRate(size.n / (h / 1000))} | ${fmtRate(size.n / (d / 1000))} | ${(h / d).toFixed(2)}x` +
        ` | ${fmtMs(hc)} | ${fmtMs(dc)} | ${(hc / dc).toFixed(2)}x | ${fmtRate(size.n / (dc / 1000))} |`,
    );
  }
  lines.push('', 'Target (issue 11): disk >= 0.3x heap. CPU: user + system of every thread of the child while the job ran. Results of the two backends equal in every run (checked).');
  mkdirSync(RESULTS_DIR, { recursive: true });
  const rawFile = join(RESULTS_DIR, `state-${when.replace(/[:.]/g, '-')}.json`);
  writeFileSync(rawFile, JSON.stringify({ suite: 'state', started: when, revision, machine: m, options: opts, rows }, null, 2));
  process.stdout.write(`\n${lines.join('\n')}\n\nraw results in ${relative(process.cwd(), rawFile)}\n`);
}
