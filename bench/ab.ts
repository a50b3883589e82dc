/**
 * By hand: a paired A/B of two revisions of weir on one benchmark command, for effects smaller
 * than this machine's noise (in a bad hour one build varies by ±15 % from run to run, even
 * pinned to one CPU, where a change worth keeping may gain 5 %).
 *
 *   node --import tsx bench/ab.ts [--runs N] [--timeout-s S] <a> <b> -- <command ...>
 *
 * <a> and <b> are git revisions of this checkout (exported with `git archive` into the temporary
 * directory, node_modules linked from here, dist/ built there; kept for the next comparison of
 * the same commit) or directories holding a built checkout. The command runs in each in turn,
 * the order alternating from round to round, from dist/ (WEIR_RUNTIME=dist) and with a
 * WEIR_HOME of each side's own, so that both keep their job bundles cached; a first round warms
 * those caches and is not counted. Its result line (RESULT_MARK, as bench/child.ts and
 * bench/nexmark/child.ts print it) gives "ms" and "cpuMs". Reported: the medians of both, and
 * the median of the paired ratios b ÷ a of each round, which cancels the machine's slow drifts
 * that medians alone keep. Example (session 50's q7 on two workers):
 *
 *   node --import tsx bench/ab.ts --runs 9 b95a3e9 51cb32f -- \
 *     node bench/ts-entry.mjs bench/nexmark/child.ts q7 weir-2 1000000 generator
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { median, ROOT } from './harness.ts';
import { RESULT_MARK } from './workloads.ts';

interface Side {
  readonly label: string;
  readonly dir: string;
  readonly ms: number[];
  readonly cpuMs: number[];
}

const USAGE = 'usage: node --import tsx bench/ab.ts [--runs N] [--timeout-s S] <revision or directory a> <b> -- <command ...>';

function parse(argv: readonly string[]): { runs: number; timeoutMs: number; sides: [string, string]; command: string[] } {
  const dash = argv.indexOf('--');
  if (dash < 0 || dash === argv.length - 1) throw new Error(USAGE);
  const own = argv.slice(0, dash);
  let runs = 7;
  let timeoutMs = 600_000;
  const sides: string[] = [];
  for (let i = 0; i < own.length; i++) {
    const a = own[i]!;
    if (a === '--runs' || a === '--timeout-s') {
      const n = Number(own[++i]);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${a} needs a positive integer, got ${own[i]}`);
      if (a === '--runs') runs = n;
      else timeoutMs = n * 1000;
    } else if (a.startsWith('--')) {
      throw new Error(`unknown option ${a}; ${USAGE}`);
    } else {
      sides.push(a);
    }
  }
  if (sides.length !== 2) throw new Error(`two revisions or directories expected, got ${sides.length}; ${USAGE}`);
  return { runs, timeoutMs, sides: [sides[0]!, sides[1]!], command: argv.slice(dash + 1) };
}

/** A built checkout of `what`: the directory itself, or the revision exported and built once. */
function checkout(what: string): string {
  if (existsSync(what) && statSync(what).isDirectory()) {
    const dir = resolve(what);
    if (!existsSync(join(dir, 'dist', 'index.js'))) throw new Error(`${dir} has no built dist/ (run npm run build there)`);
    return dir;
  }
  const sha = execFileSync('git', ['rev-parse', '--verify', `${what}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = join(tmpdir(), `weir-ab-${sha.slice(0, 12)}`);
  if (existsSync(join(dir, 'dist', 'index.js'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${sha} | tar -x -C '${dir}'`], { cwd: ROOT, stdio: 'inherit' });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  console.log(`building ${what} (${sha.slice(0, 12)}) in ${dir}`);
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

/** One run of the command in `side`'s checkout: its "ms" and "cpuMs". */
function runOnce(side: Side, command: readonly string[], timeoutMs: number): { ms: number; cpuMs: number } {
  let out: string;
  try {
    out = execFileSync(command[0]!, command.slice(1), {
      cwd: side.dir,
      env: { ...process.env, WEIR_RUNTIME: 'dist', WEIR_HOME: join(side.dir, '.ab-weir-home') },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`${side.label}: the command failed: ${err.message}\n${String(err.stderr ?? '').slice(-2000)}`);
  }
  const line = out.split('\n').find((l) => l.startsWith(RESULT_MARK));
  if (line === undefined) throw new Error(`${side.label}: no result line (${RESULT_MARK.trim()}) in the command's output`);
  const r = JSON.parse(line.slice(RESULT_MARK.length)) as { ms?: unknown; cpuMs?: unknown };
  if (typeof r.ms !== 'number' || typeof r.cpuMs !== 'number') throw new Error(`${side.label}: the result line has no numeric ms and cpuMs`);
  return { ms: r.ms, cpuMs: r.cpuMs };
}

function main(): void {
  const { runs, timeoutMs, sides: [a, b], command } = parse(process.argv.slice(2));
  const sides: Side[] = [a, b].map((what) => ({ label: what, dir: checkout(what), ms: [], cpuMs: [] }));
  for (let round = 0; round <= runs; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const r = runOnce(side, command, timeoutMs);
      if (round === 0) continue; // warms the side's job-bundle cache
      side.ms.push(r.ms);
      side.cpuMs.push(r.cpuMs);
    }
  }
  const [sa, sb] = sides as [Side, Side];
  const ratios = sb.ms.map((ms, i) => ms / sa.ms[i]!).sort((x, y) => x - y);
  for (const s of sides) {
    console.log(`${s.label}: wall median ${median(s.ms).toFixed(0)} ms, CPU median ${median(s.cpuMs).toFixed(0)} ms; runs ${[...s.ms].sort((x, y) => x - y).map((x) => x.toFixed(0)).join(' ')}`);
  }
  console.log(`paired ${sb.label} ÷ ${sa.label} (wall): median ${median(ratios).toFixed(3)}, range ${ratios[0]!.toFixed(2)}-${ratios[ratios.length - 1]!.toFixed(2)} over ${ratios.length} rounds`);
}

main();
