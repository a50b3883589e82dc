/** Command-line flags: parsed strictly, validated, with messages that name the flag. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { WeirError } from '../core/errors.ts';

export class CliError extends WeirError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

export const USAGE = `weir: a stateful stream processor for TypeScript

Usage:
  weir run <job.ts|job.js> [options] [-- job args]
  weir checkpoints <checkpoint-dir> [--json]             checkpoint history, offline
  weir state inspect <checkpoint-or-savepoint> [--json] [--operator X [--state S [--key K]]]
  weir list [--json]                                      running jobs on this machine
  weir savepoint <job-id> [--dir DIR]                     take a savepoint, print its path
  weir stop <job-id> --savepoint [--dir DIR] [--drain]    stop with a savepoint
  weir cancel <job-id>                                    cancel a running job
  (savepoint, stop and cancel find the job by id prefix, or take --rest-port P [--rest-address A])

Options for run:
  -p, --parallelism N                 default parallelism of operators (default: number of workers)
  -w, --workers N                     worker threads (default: number of cores); 1 runs in one thread
      --config FILE                   JSON file with Flink configuration keys (execution.checkpointing.*, restart-strategy.*)
      --checkpoint-dir DIR            where checkpoints go (a folder per job and checkpoint)
      --checkpoint-interval D         checkpoint every D (e.g. 1s, 500ms); turns checkpointing on
      --checkpoint-mode M             exactly-once (default) or at-least-once
      --checkpoint-timeout D          a checkpoint not done in D fails as expired (default 10min)
      --checkpoint-min-pause D        least time from one checkpoint's end to the next's start (default 0)
      --checkpoint-max-concurrent N   checkpoints in flight at once (default 1)
      --checkpoint-tolerable-failures N  consecutive failed checkpoints tolerated before the job fails over (default 0)
      --checkpoint-retention R        none (default), delete-on-cancel or retain-on-cancel
      --checkpoints-retained N        completed checkpoints kept (default 1)
      --restart-strategy S            none, fixed-delay, failure-rate or exponential-delay (default with checkpointing)
      --restart-attempts N            fixed-delay: attempts (default 1)
      --restart-delay D               fixed-delay / failure-rate: delay between restarts (default 1s)
      --from X                        start from: latest, latest-or-empty, or a checkpoint/savepoint path
      --allow-non-restored-state      drop snapshot state of operators the job no longer has
      --claim-mode M                  no-claim (default: never delete the snapshot given with --from) or claim
      --savepoint-dir DIR             default target directory of savepoints
      --rest-port P                   control API port on 127.0.0.1 (default 8081; 0 picks a free one)
      --rest-address A                control API address (default 127.0.0.1)
      --verbose                       print stack traces with errors
  -h, --help                          show this help
`;

type Options = NonNullable<ParseArgsConfig['options']>;

/** Splits argv at "--": what follows belongs to the job. */
export function splitJobArgs(argv: string[]): { own: string[]; job: string[] } {
  const i = argv.indexOf('--');
  return i < 0 ? { own: argv, job: [] } : { own: argv.slice(0, i), job: argv.slice(i + 1) };
}

export function parseFlags(argv: string[], options: Options, command: string) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    const msg = e instanceof Error ? e.message.split('\n')[0]! : String(e);
    throw new CliError(`${command}: ${msg.replace(/^TypeError \[[A-Z_]+\]: /, '')}`);
  }
}

export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new CliError(`${flag} expects a positive integer, got "${value}"`);
  }
  return Number(value);
}

/**
 * A message as one line: some errors carry several (esbuild's "Transform failed with 1
 * error:\n<file>:<line>: ERROR: ..."), and the CLI promises one line per error without
 * --verbose. The lines are joined with spaces, nothing is dropped.
 */
export function oneLine(message: string): string {
  return message.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '').join(' ');
}
