/** weir run: runs a job module in this process (main thread plus worker threads). */
import { runJob, type Progress } from '../cluster/job-manager.ts';
import { CliError, oneLine, parseFlags, positiveInt, splitJobArgs } from './args.ts';

export async function runCommand(argv: string[]): Promise<number> {
  const { own, job } = splitJobArgs(argv);
  const { values, positionals } = parseFlags(own, {
    parallelism: { type: 'string', short: 'p' },
    workers: { type: 'string', short: 'w' },
    verbose: { type: 'boolean' },
  }, 'run');
  if (positionals.length === 0) throw new CliError('run: missing the job file, e.g. weir run examples/word-count.ts');
  if (positionals.length > 1) throw new CliError(`run: unexpected argument "${positionals[1]}"; job arguments go after "--"`);
  const parallelism = positiveInt(values.parallelism as string | undefined, '--parallelism');
  const workers = positiveInt(values.workers as string | undefined, '--workers');
  const opts: Parameters<typeof runJob>[1] = {
    args: job,
    onProgress: statusLine(),
    ...(parallelism !== undefined ? { parallelism } : {}),
    ...(workers !== undefined ? { workers } : {}),
  };
  const result = await runJob(positionals[0]!, opts);
  if (result.status === 'FINISHED') {
    process.stderr.write(`weir: job "${result.graph.jobName}" finished in ${(result.durationMs / 1000).toFixed(2)} s (${result.progress.recordsIn} records in, ${result.progress.recordsOut} out)\n`);
    return 0;
  }
  const e = result.error;
  process.stderr.write(`weir: error: job "${result.graph.jobName}" ${result.status.toLowerCase()}: ${oneLine(e?.message ?? 'unknown reason')}\n`);
  if (values.verbose && e?.stack) process.stderr.write(e.stack + '\n');
  return 1;
}

/** At most one status line every 5 s, with throughput since the previous line. */
function statusLine(): (p: Progress) => void {
  let last: Progress | undefined;
  return (p) => {
    if (last !== undefined && p.elapsedMs - last.elapsedMs < 5000) return;
    if (last === undefined && p.elapsedMs < 5000) return;
    const dt = (p.elapsedMs - (last?.elapsedMs ?? 0)) / 1000;
    const rin = (p.recordsIn - (last?.recordsIn ?? 0)) / dt;
    const rout = (p.recordsOut - (last?.recordsOut ?? 0)) / dt;
    process.stderr.write(`weir: ${(p.elapsedMs / 1000).toFixed(0)} s: ${fmt(rin)} records/s in, ${fmt(rout)} records/s out, heap ${(p.heapUsed / 2 ** 20).toFixed(0)} MiB\n`);
    last = p;
  };
}

function fmt(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0);
}
