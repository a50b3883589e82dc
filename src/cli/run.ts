/** weir run: runs a job module in this process (main thread plus worker threads). */
import type { CheckpointSettings } from '../checkpoint/config.ts';
import { runJob, type Progress, type RunOptions } from '../cluster/job-manager.ts';
import type { RestartStrategySettings } from '../cluster/restart-strategy.ts';
import { CliError, oneLine, parseFlags, positiveInt, splitJobArgs } from './args.ts';
import { readConfigFile } from './config-file.ts';
import { controlApi } from '../observe/control-api.ts';

type Mut<T> = { -readonly [K in keyof T]: T[K] };

export async function runCommand(argv: string[]): Promise<number> {
  const { own, job } = splitJobArgs(argv);
  const { values, positionals } = parseFlags(own, {
    parallelism: { type: 'string', short: 'p' },
    workers: { type: 'string', short: 'w' },
    verbose: { type: 'boolean' },
    config: { type: 'string' },
    'checkpoint-dir': { type: 'string' },
    'checkpoint-interval': { type: 'string' },
    'checkpoint-mode': { type: 'string' },
    'checkpoint-timeout': { type: 'string' },
    'checkpoint-min-pause': { type: 'string' },
    'checkpoint-max-concurrent': { type: 'string' },
    'checkpoint-tolerable-failures': { type: 'string' },
    'checkpoint-retention': { type: 'string' },
    'checkpoints-retained': { type: 'string' },
    'restart-strategy': { type: 'string' },
    'restart-attempts': { type: 'string' },
    'restart-delay': { type: 'string' },
    from: { type: 'string' },
    'savepoint-dir': { type: 'string' },
    'rest-port': { type: 'string' },
    'rest-address': { type: 'string' },
    'claim-mode': { type: 'string' },
    'allow-non-restored-state': { type: 'boolean' },
  }, 'run');
  if (positionals.length === 0) throw new CliError('run: missing the job file, e.g. weir run examples/word-count.ts');
  if (positionals.length > 1) throw new CliError(`run: unexpected argument "${positionals[1]}"; job arguments go after "--"`);
  const v = values as Record<string, string | boolean | undefined>;
  const s = (k: string) => v[k] as string | undefined;
  const file = s('config') !== undefined ? readConfigFile(s('config')!) : undefined;
  const parallelism = positiveInt(s('parallelism'), '--parallelism') ?? file?.parallelism;
  const workers = positiveInt(s('workers'), '--workers');

  // Flags override the config file, which overrides the job's own settings.
  const cp: Mut<CheckpointSettings> = { ...(file?.checkpoint ?? {}) };
  if (s('checkpoint-dir') !== undefined) cp.dir = s('checkpoint-dir');
  if (s('checkpoint-interval') !== undefined) cp.interval = s('checkpoint-interval');
  if (s('checkpoint-mode') !== undefined) cp.mode = s('checkpoint-mode') as CheckpointSettings['mode'];
  if (s('checkpoint-timeout') !== undefined) cp.timeout = s('checkpoint-timeout');
  if (s('checkpoint-min-pause') !== undefined) cp.minPause = s('checkpoint-min-pause');
  if (s('checkpoint-max-concurrent') !== undefined) cp.maxConcurrent = intFlag(s('checkpoint-max-concurrent')!, '--checkpoint-max-concurrent');
  if (s('checkpoint-tolerable-failures') !== undefined) cp.tolerableFailures = intFlag(s('checkpoint-tolerable-failures')!, '--checkpoint-tolerable-failures');
  if (s('checkpoint-retention') !== undefined) cp.retention = s('checkpoint-retention') as CheckpointSettings['retention'];
  if (s('checkpoints-retained') !== undefined) cp.numRetained = intFlag(s('checkpoints-retained')!, '--checkpoints-retained');
  if (s('savepoint-dir') !== undefined) cp.savepointDir = s('savepoint-dir');
  let restart: Mut<RestartStrategySettings> | undefined = file?.restart ? { ...file.restart } : undefined;
  if (s('restart-strategy') !== undefined) (restart ??= {}).type = s('restart-strategy') as RestartStrategySettings['type'];
  if (s('restart-attempts') !== undefined) (restart ??= {}).attempts = intFlag(s('restart-attempts')!, '--restart-attempts');
  if (s('restart-delay') !== undefined) (restart ??= {}).delay = s('restart-delay');
  // Attempts or a delay without a strategy mean fixed-delay (the only strategy with attempts),
  // rather than being ignored by the exponential-delay default.
  if (restart !== undefined && restart.type === undefined && (restart.attempts !== undefined || restart.delay !== undefined)) restart.type = 'fixed-delay';
  const from = s('from');
  if (from === '') throw new CliError('--from needs "latest", "latest-or-empty" or a checkpoint/savepoint path');

  const opts: Mut<RunOptions> = { args: job, onProgress: statusLine(), checkpoint: cp };
  if (parallelism !== undefined) opts.parallelism = parallelism;
  if (workers !== undefined) opts.workers = workers;
  if (restart !== undefined) opts.restartStrategy = restart;
  if (from !== undefined) opts.from = from;
  if (v['allow-non-restored-state']) opts.allowNonRestoredState = true;
  const claim = s('claim-mode');
  if (claim !== undefined) {
    if (claim !== 'claim' && claim !== 'no-claim') throw new CliError(`--claim-mode must be claim or no-claim, got "${claim}"`);
    opts.claimMode = claim;
  }
  // The control API: 127.0.0.1:8081 unless told otherwise; a busy default port falls back to a free one.
  const restPort = s('rest-port');
  const port = restPort === undefined ? 8081 : restPort === '0' ? 0 : positiveInt(restPort, '--rest-port')!;
  const address = s('rest-address') ?? '127.0.0.1';
  const onListening = (p: number, id: string) => void process.stderr.write(`weir: job ${id} running; control API on http://${address}:${p}\n`);
  opts.services = [controlApi({ port, address, fallback: restPort === undefined, onListening })];
  // Ctrl-C / SIGTERM cancel the job: checkpoints are kept or deleted per the retention setting.
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
    process.stderr.write(`weir: job "${result.graph.jobName}" finished in ${(result.durationMs / 1000).toFixed(2)} s (${result.progress.recordsIn} records in, ${result.progress.recordsOut} out); job id ${result.jobId}\n`);
    return 0;
  }
  const e = result.error;
  process.stderr.write(`weir: error: job "${result.graph.jobName}" ${result.status.toLowerCase()}: ${oneLine(e?.message ?? 'unknown reason')}\n`);
  if (v.verbose && e?.stack) process.stderr.write(e.stack + '\n');
  return 1;
}

function intFlag(x: string, flag: string): number {
  if (!/^\d+$/.test(x)) throw new CliError(`${flag} expects a non-negative integer, got "${x}"`);
  return Number(x);
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
    process.stderr.write(`weir: ${(p.elapsedMs / 1000).toFixed(0)} s: ${fmt(rin)} records/s in, ${fmt(rout)} records/s out, heap ${(p.heapUsed / 2 ** 20).toFixed(0)} MiB${cp}\n`);
    last = p;
  };
}

function fmt(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0);
}

export function fmtBytes(n: number): string {
  return n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
}
