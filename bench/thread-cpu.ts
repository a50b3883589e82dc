/**
 * By hand (Linux): where a benchmark command's CPU goes, thread by thread. Runs the command,
 * reads /proc/<pid>/task/<tid>/stat of every thread every `--every-ms` (10 ms) and keeps each
 * thread's last user + system time, so threads that end before the process (weir's workers) are
 * counted too. Prints the main thread, every other thread that used CPU (largest first), their
 * sum, and the command's own result line when it prints one (RESULT_MARK: "ms", "cpuMs").
 *
 *   node --import tsx bench/thread-cpu.ts [--runs N] -- <command ...>
 *
 * Example (why two workers of a short Nexmark query gain little on two CPUs: the single worker's
 * run already keeps V8's compiler and GC threads busy on the second CPU):
 *
 *   WEIR_RUNTIME=dist node --import tsx bench/thread-cpu.ts --runs 3 -- \
 *     node bench/ts-entry.mjs bench/nexmark/child.ts q5 weir-2 5000000 generator
 *
 * Threads are not named apart (Node names none of them): in a weir run on N workers the N
 * largest besides the main thread are the workers' JavaScript threads; the rest are V8's
 * platform threads (the optimizing compiler, GC helpers) and libuv's.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { median } from './harness.ts';
import { RESULT_MARK } from './workloads.ts';

const USAGE = 'usage: node --import tsx bench/thread-cpu.ts [--runs N] [--every-ms MS] -- <command ...>';
/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_S = 100;
/** A command that runs longer than this is killed: a benchmark is never meant to. */
const TIMEOUT_MS = 10 * 60_000;

interface Sample {
  readonly mainMs: number;
  /** Every other thread that used CPU, largest first. */
  readonly othersMs: number[];
  readonly result: { ms?: number; cpuMs?: number } | undefined;
}

function parse(argv: readonly string[]): { runs: number; everyMs: number; command: string[] } {
  const dash = argv.indexOf('--');
  if (dash < 0 || dash === argv.length - 1) throw new Error(USAGE);
  let runs = 1;
  let everyMs = 10;
  const own = argv.slice(0, dash);
  for (let i = 0; i < own.length; i += 2) {
    const v = Number(own[i + 1]);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${own[i]} needs a positive integer, got ${own[i + 1]}\n${USAGE}`);
    if (own[i] === '--runs') runs = v;
    else if (own[i] === '--every-ms') everyMs = v;
    else throw new Error(`unknown option ${own[i]}\n${USAGE}`);
  }
  return { runs, everyMs, command: argv.slice(dash + 1) };
}

/** User + system time of one thread in ms; undefined once it is gone. */
function threadCpuMs(pid: number, tid: string): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields count from its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime: fields 14 and 15 of stat
  if (!Number.isFinite(ticks)) throw new Error(`unreadable /proc/${pid}/task/${tid}/stat: ${stat.slice(0, 80)}`);
  return (ticks * 1000) / TICKS_PER_S;
}

function poll(pid: number, last: Map<string, number>): void {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return; // exited between two polls
  }
  for (const tid of tids) {
    const ms = threadCpuMs(pid, tid);
    if (ms !== undefined) last.set(tid, ms);
  }
}

async function runOnce(command: readonly string[], everyMs: number): Promise<Sample> {
  const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${command.join(' ')}`);
  const last = new Map<string, number>();
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const timer = setInterval(() => poll(pid, last), everyMs);
  const killer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => { poll(pid, last); resolve(c); }));
  clearInterval(timer);
  clearTimeout(killer);
  if (code !== 0) throw new Error(`${command.join(' ')} exited with ${code}`);
  const line = out.split('\n').find((l) => l.startsWith(RESULT_MARK));
  const result = line === undefined ? undefined : (JSON.parse(line.slice(RESULT_MARK.length)) as { ms?: number; cpuMs?: number });
  const mainMs = last.get(String(pid)) ?? 0;
  last.delete(String(pid));
  const othersMs = [...last.values()].filter((ms) => ms > 0).sort((a, b) => b - a);
  return { mainMs, othersMs, result };
}

const fmt = (ms: number): string => `${Math.round(ms)}`;

async function main(): Promise<void> {
  const { runs, everyMs, command } = parse(process.argv.slice(2));
  if (process.platform !== 'linux') throw new Error('thread-cpu reads /proc: Linux only');
  const samples: Sample[] = [];
  for (let r = 0; r < runs; r++) {
    const s = await runOnce(command, everyMs);
    samples.push(s);
    const total = s.mainMs + s.othersMs.reduce((a, b) => a + b, 0);
    const res = s.result === undefined ? '' : ` | its result: ${s.result.ms?.toFixed(0)} ms wall, ${s.result.cpuMs?.toFixed(0)} ms CPU`;
    console.log(`run ${r + 1}: main ${fmt(s.mainMs)} ms; others ${s.othersMs.map(fmt).join(' ')} ms; sum ${fmt(total)} ms${res}`);
  }
  const sums = samples.map((s) => s.mainMs + s.othersMs.reduce((a, b) => a + b, 0));
  console.log(`median of ${runs}: main ${fmt(median(samples.map((s) => s.mainMs)))} ms, all threads ${fmt(median(sums))} ms` +
    (samples[0]!.result?.ms !== undefined ? `, wall ${fmt(median(samples.map((s) => s.result!.ms!)))} ms` : ''));
}

main().catch((e: unknown) => {
  process.stderr.write(`thread-cpu: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
