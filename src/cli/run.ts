/** weir run: runs a job module in this process (main thread plus worker threads). */
import { runJob, type Progress } from '../cluster/job-manager.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { valueOf } from '../core/options/values.ts';
import { CliError, oneLine, splitJobArgs } from './args.ts';
import { commandLine } from './command-line.ts';
import { readConfigFile } from './config-file.ts';
import { controlApi } from '../observe/control-api.ts';
import { mergeSettings, runOptionsOf, settingsOf } from './run-settings.ts';

export async function runCommand(argv: string[]): Promise<number> {
  const { own, job } = splitJobArgs(argv);
  const line = commandLine(own, 'run');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  if (positionals.length === 0) throw new CliError('run: missing the job file, e.g. weir run examples/word-count.ts');
  if (positionals.length > 1) throw new CliError(`run: unexpected argument "${positionals[1]}"; job arguments go after "--"`);
  const configPath = valueOf(values, OPTIONS.config);
  const file = configPath !== undefined ? readConfigFile(configPath) : undefined;
  // Flags override the config file, which overrides the job's own settings (in runJob).
  const { run: opts, rest } = runOptionsOf(mergeSettings(file, settingsOf(values)));
  opts.args = job;
  opts.onProgress = statusLine();
  const onListening = (p: number, id: string) => void process.stderr.write(`weir: job ${id} running; control API on http://${rest.address}:${p}\n`);
  opts.services = [controlApi({ ...rest, onListening })];
  // Ctrl-C / SIGTERM cancel the job: checkpoints are kept (default retain-on-cancel) or deleted per the retention setting.
  const cancel = new AbortController();
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (s: NodeJS.Signals) => {
    if (signalled !== undefined) process.exit(s === 'SIGINT' ? 130 : 143); // a second signal: stop now
    signalled = s;
    process.stderr.write(`weir: ${s}: cancelling the job\n`);
    cancel.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  opts.signal = cancel.signal;
  const result = await runJob(positionals[0]!, opts);
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  if (result.status === 'CANCELED') {
    process.stderr.write(`weir: job "${result.graph.jobName}" cancelled; job id ${result.jobId}\n`);
    return signalled === 'SIGTERM' ? 143 : 130;
  }
  if (result.status === 'FINISHED') {
    const late = result.progress.lateRecordsDropped ?? 0;
    const lateNote = late > 0 ? `, ${late} dropped as late` : '';
    process.stderr.write(`weir: job "${result.graph.jobName}" finished in ${(result.durationMs / 1000).toFixed(2)} s (${result.progress.recordsIn} records in, ${result.progress.recordsOut} out${lateNote}); job id ${result.jobId}\n`);
    return 0;
  }
  const e = result.error;
  process.stderr.write(`weir: error: job "${result.graph.jobName}" ${result.status.toLowerCase()}: ${oneLine(e?.message ?? 'unknown reason')}\n`);
  if (valueOf(values, OPTIONS.verbose) === true && e?.stack) process.stderr.write(e.stack + '\n');
  return 1;
}

/** At most one status line every 5 s, with throughput since the previous line. */
function statusLine(): (p: Progress) => void {
  let last: Progress | undefined;
  return (p) => {
    if (last !== undefined && last.attempt !== p.attempt) last = undefined;
    if (last !== undefined && p.elapsedMs - last.elapsedMs < 5000) return;
    if (last === undefined && p.elapsedMs < 5000) return;
    const dt = (p.elapsedMs - (last?.elapsedMs ?? 0)) / 1000;
    const rin = (p.recordsIn - (last?.recordsIn ?? 0)) / dt;
    const rout = (p.recordsOut - (last?.recordsOut ?? 0)) / dt;
    const c = p.lastCheckpoint;
    const cp = c ? `, last checkpoint ${c.id} (${c.endToEndDurationMs} ms, ${fmtBytes(c.stateSize)})` : '';
    const lag = (p.pendingRecords !== undefined ? `, ${fmt(p.pendingRecords)} records pending` : '') + (p.millisBehindLatest !== undefined ? `, ${(p.millisBehindLatest / 1000).toFixed(1)} s behind latest` : '');
    const late = p.lateRecordsDropped ? `, ${p.lateRecordsDropped} dropped as late` : '';
    process.stderr.write(`weir: ${(p.elapsedMs / 1000).toFixed(0)} s: ${fmt(rin)} records/s in, ${fmt(rout)} records/s out, heap ${(p.heapUsed / 2 ** 20).toFixed(0)} MiB${cp}${lag}${late}\n`);
    last = p;
  };
}

function fmt(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0);
}

export function fmtBytes(n: number): string {
  return n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
}
