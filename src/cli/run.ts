/** weir run: runs a job module in this process (main thread plus worker threads). */
import { readFileSync } from 'node:fs';
import { runJob, type Progress } from '../cluster/job-manager.ts';
import { JsonTextError, jsonTextProblem, parseJsonText } from '../core/json-text.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { valueOf } from '../core/options/values.ts';
import { CliError, oneLine, splitJobArgs } from './args.ts';
import { commandLine } from './command-line.ts';
import { readConfigFile } from './config-file.ts';
import { controlApi } from '../observe/control-api.ts';
import { isLoopback, newToken } from '../observe/request-guard.ts';
import { logger } from '../core/log.ts';
import { exitIsOurs, exitProcess } from './exit.ts';
import { mergeSettings, runOptionsOf, settingsOf } from './run-settings.ts';
import { settingsConflict } from '../checkpoint/settings-conflict.ts';
import { readTokenFile } from './token-file.ts';
import { ancestors, startedByNpm, watchAncestors } from './parent-watch.ts';

/** --args-file: a JSON array of strings, the job's arguments. */
export function readArgsFile(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`--args-file ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  let v: unknown;
  try {
    v = parseJsonText(text);
  } catch (e) {
    // Its place only: JSON.parse's message quoted the file around the fault (a password, maybe).
    if (e instanceof JsonTextError) throw new CliError(jsonTextProblem(`--args-file ${path}`, e));
    throw e;
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new CliError(`--args-file ${path}: expected a JSON array of strings, e.g. ["--orders", "postgres://db/orders"]`);
  return v as string[];
}

export async function runCommand(argv: string[]): Promise<number> {
  const { own, job } = splitJobArgs(argv);
  const line = commandLine(own, 'run');
  if (line === undefined) return 0;
  const { values, positionals } = line;
  if (positionals.length === 0) throw new CliError('run: missing the job file, e.g. weir run examples/word-count.ts');
  if (positionals.length > 1) throw new CliError(`run: unexpected argument "${positionals[1]}"; job arguments go after "--"`);
  const configPath = valueOf(values, OPTIONS.config);
  const argsFile = valueOf(values, OPTIONS.argsFile);
  if (argsFile !== undefined && job.length > 0) throw new CliError('run: job arguments come either after -- or from --args-file, not both');
  const file = configPath !== undefined ? readConfigFile(configPath) : undefined;
  // Flags override the config file, which overrides the job's own settings (in runJob).
  const merged = mergeSettings(file, settingsOf(values));
  const conflict = settingsConflict(merged, configPath === undefined ? 'flags' : `flags and ${configPath}`);
  if (conflict !== undefined) throw new CliError(conflict);
  const { run: opts, rest } = runOptionsOf(merged);
  opts.args = argsFile !== undefined ? readArgsFile(argsFile) : job;
  opts.onProgress = statusLine();
  opts.log = (line) => logger().line(line);
  const onListening = (p: number, id: string) => {
    logger().info(`job ${id} running; control API on http://${rest.address}:${p}`, { jobId: id, port: p });
    // Reads (the job graph, file names, metrics) take no token, as in Flink: said, as the manager says it.
    if (!isLoopback(rest.address)) logger().warn(`the control API on ${rest.address}:${p} is reachable from the network: reads need no token, changes only the job's token, and there is no TLS; keep it on loopback, or behind a proxy that authenticates and encrypts`);
  };
  // Always a token for what changes the job: without one any local user reaching the port could
  // cancel it or write its state where they like. Generated unless given; the job's registry
  // entry (readable by this user only) holds it for weir stop, savepoint and cancel.
  const token = rest.tokenFile !== undefined ? readTokenFile(rest.tokenFile) : newToken();
  opts.services = [controlApi({ port: rest.port, address: rest.address, fallback: rest.fallback, onListening, token })];
  // Ctrl-C / SIGTERM cancel the job: checkpoints are kept (default retain-on-cancel) or deleted per the retention setting.
  const cancel = new AbortController();
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (s: NodeJS.Signals) => {
    if (signalled !== undefined) exitProcess(s === 'SIGINT' ? 130 : 143); // a second signal: stop now
    signalled = s;
    logger().info(`${s}: cancelling the job`);
    cancel.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Under npm (npx weir run), killing npm must end the job too (parent-watch.ts).
  const stopWatch = startedByNpm()
    ? watchAncestors(ancestors(), (pid) => {
      if (signalled !== undefined) return;
      signalled = 'SIGTERM';
      logger().info(`process ${pid} that started weir (npm) is gone: cancelling the job`);
      cancel.abort();
    })
    : () => {};
  opts.signal = cancel.signal;
  const verbose = valueOf(values, OPTIONS.verbose) === true;
  const guards = guardProcess(verbose);
  let result;
  try {
    result = await runJob(positionals[0]!, opts);
  } finally {
    stopWatch();
    guards.off();
  }
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  const letters = result.progress.deadLetters;
  if (letters > 0) {
    const where = result.deadLetterDir !== undefined ? `written to ${result.deadLetterDir}` : 'the first 10 of each subtask are in the log above; --dead-letter-dir keeps them all';
    logger().info(`${letters} malformed record${letters === 1 ? '' : 's'} went to the dead letters (${where})`);
  }
  if (result.status === 'CANCELED') {
    logger().info(`job "${result.graph.jobName}" cancelled; job id ${result.jobId}`, { jobId: result.jobId });
    return signalled === 'SIGTERM' ? 143 : 130;
  }
  if (result.status === 'FINISHED') {
    const late = result.progress.lateRecordsDropped ?? 0;
    const lateNote = late > 0 ? `, ${late} dropped as late` : '';
    const deadNote = letters > 0 ? `, ${letters} dead letters` : '';
    const records = result.progress.recordCounters === false ? 'records not counted' : `${result.progress.recordsIn} records in, ${result.progress.recordsOut} out`;
    logger().info(`job "${result.graph.jobName}" finished in ${(result.durationMs / 1000).toFixed(2)} s (${records}${lateNote}${deadNote}); job id ${result.jobId}`, { jobId: result.jobId });
    return 0;
  }
  const e = result.error;
  const stack = valueOf(values, OPTIONS.verbose) === true ? e?.stack : undefined;
  logger().error(`job "${result.graph.jobName}" ${result.status.toLowerCase()}: ${oneLine(e?.message ?? 'unknown reason')}`, stack !== undefined ? { jobId: result.jobId, stack } : { jobId: result.jobId });
  return 1;
}

/** At most one status line every 5 s, with throughput since the previous line. */
function statusLine(): (p: Progress) => void {
  let last: Progress | undefined;
  return (p) => {
    if (last !== undefined && last.attempt !== p.attempt) last = undefined;
    if (last !== undefined && p.elapsedMs - last.elapsedMs < 5000) return;
    if (last === undefined && p.elapsedMs < 5000) return;
    logger().line(statusText(p, last));
    last = p;
  };
}

/** One status line: throughput since `last`, back pressure, heap and the last checkpoint. */
export function statusText(p: Progress, last: Progress | undefined): string {
  const dt = Math.max(0.001, (p.elapsedMs - (last?.elapsedMs ?? 0)) / 1000);
  const rin = (p.recordsIn - (last?.recordsIn ?? 0)) / dt;
  const rout = (p.recordsOut - (last?.recordsOut ?? 0)) / dt;
  const c = p.lastCheckpoint;
  const cp = c ? `, last checkpoint ${c.id} (${c.endToEndDurationMs} ms, ${fmtBytes(c.stateSize)})` : '';
  const b = p.backPressure;
  // Flink's levels: up to 10 % of the time is ok; above, name the subtask that waits most.
  const bp = b === undefined ? '' : b.msPerSecond <= 100 ? ', back pressure ok' : `, back pressure ${(b.msPerSecond / 10).toFixed(0)}% at ${b.task}`;
  const lag = (p.pendingRecords !== undefined ? `, ${fmt(p.pendingRecords)} records pending` : '') + (p.millisBehindLatest !== undefined ? `, ${(p.millisBehindLatest / 1000).toFixed(1)} s behind latest` : '');
  const late = p.lateRecordsDropped ? `, ${p.lateRecordsDropped} dropped as late` : '';
  const dead = p.deadLetters > 0 ? `, ${p.deadLetters} dead letters` : '';
  const rates = p.recordCounters === false ? 'records not counted (--record-counters off)' : `${fmt(rin)} records/s in, ${fmt(rout)} records/s out`;
  return `weir: ${(p.elapsedMs / 1000).toFixed(0)} s: ${rates}, heap ${(p.heapUsed / 2 ** 20).toFixed(0)} MiB${bp}${cp}${lag}${late}${dead}`;
}

function fmt(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0);
}

export function fmtBytes(n: number): string {
  return n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
}

/**
 * While the job runs, what its code does to this process outside any task (on the main thread:
 * --workers 1, or the module's top level): an exception thrown from a callback, timer or promise
 * ended weir with Node's raw crash report, and process.exit(0) ended it with code 0 and no word.
 * Each now ends it with one line and exit code 1.
 */
function guardProcess(verbose: boolean): { off(): void } {
  const crashed = (e: unknown): void => {
    const msg = e instanceof Error ? e.message : String(e);
    logger().error(oneLine(`job failed: an exception outside any task (a callback, timer or promise of the job's code): ${msg}`), verbose && e instanceof Error && e.stack !== undefined ? { stack: e.stack } : undefined);
    exitProcess(1);
  };
  const exited = (code: number): void => {
    if (exitIsOurs()) return;
    logger().error(`job failed: the job's code ended the process (process.exit(${code})) before the job ended`);
    process.exitCode = 1;
  };
  process.on('uncaughtException', crashed);
  process.on('unhandledRejection', crashed);
  process.on('exit', exited);
  return {
    off: () => {
      process.off('uncaughtException', crashed);
      process.off('unhandledRejection', crashed);
      process.off('exit', exited);
    },
  };
}
