/**
 * The weir CLI. Every problem a user can cause (a missing file, a bad flag, a job that
 * throws) ends in a one-line message and a non-zero exit; stacks only with --verbose.
 * Exit codes: 0 done, 2 a usage error (bad flag, value, argument or config file: a CliError,
 * found before the job is loaded), 1 a job that failed (to load, to start, or while running),
 * 130/143 a job cancelled by SIGINT/SIGTERM.
 */
import { runCommand } from './run.ts';
import { checkpointsCommand } from './checkpoints.ts';
import { stateCommand } from './state.ts';
import { cancelCommand, listCommand, savepointCommand, stopCommand } from './control.ts';
import { appsCommand, managerCommand } from './apps.ts';
import { CliError, oneLine, splitJobArgs } from './args.ts';
import { COMMANDS, type CommandName } from '../core/options/commands.ts';
import { suggest } from '../core/options/suggest.ts';
import { commandHelp, globalHelp } from './help.ts';

const COMMAND_WORDS = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]!))];
import { isUsageError } from '../core/errors.ts';
import { createLogger, logger, setLogger, LOG_LEVELS, type LogLevel } from '../core/log.ts';
import { exitProcess } from './exit.ts';

/**
 * The logger is set before any command parses its flags, so that even a bad flag is reported in
 * the chosen format; a bad value here is ignored (the command's own parsing reports it).
 */
function configureLogger(own: readonly string[]): void {
  const valueOf = (flag: string): string | undefined => {
    for (let i = own.length - 1; i >= 0; i--) {
      const a = own[i]!;
      if (a === flag) return own[i + 1];
      if (a.startsWith(`${flag}=`)) return a.slice(flag.length + 1);
    }
    return undefined;
  };
  const level = valueOf('--log-level');
  const format = valueOf('--log-format');
  setLogger(createLogger({
    level: (LOG_LEVELS as readonly string[]).includes(level ?? '') ? (level as LogLevel) : 'info',
    format: format === 'json' ? 'json' : 'text',
  }));
}

async function main(argv: string[]): Promise<number> {
  // Not the job's own arguments: "weir run job.ts -- --verbose" passes --verbose to the job.
  const own = splitJobArgs(argv).own;
  const verbose = own.includes('--verbose');
  configureLogger(own);
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'run':
        return await runCommand(rest);
      case 'checkpoints':
        return await checkpointsCommand(rest);
      case 'list':
        return await listCommand(rest);
      case 'savepoint':
        return await savepointCommand(rest);
      case 'stop':
        return await stopCommand(rest);
      case 'cancel':
        return await cancelCommand(rest);
      case 'state':
        return await stateCommand(rest);
      case 'manager':
        return await managerCommand(rest);
      case 'apps':
        return await appsCommand(rest);
      case undefined:
        // No command is a usage error: the help goes where errors go.
        process.stderr.write(globalHelp());
        return 2;
      case '-h':
      case '--help':
        process.stdout.write(globalHelp());
        return 0;
      case 'help':
        return help(rest.join(' '));
      case '--version':
      case '-v':
        process.stdout.write('weir 0.1.0\n');
        return 0;
      default:
        throw unknownCommand(command);
    }
  } catch (e) {
    reportError(e, verbose);
    return isUsageError(e) ? 2 : 1;
  }
}

/** weir help [command]. */
function help(command: string): number {
  if (command === '') process.stdout.write(globalHelp());
  else if (command === 'state' || COMMANDS.some((c) => c.name === command)) process.stdout.write(commandHelp(command === 'state' ? 'state inspect' : (command as CommandName)));
  else throw unknownCommand(command);
  return 0;
}

function unknownCommand(command: string): CliError {
  const near = suggest(command, COMMAND_WORDS.map((w) => ({ name: w, offer: w })));
  return new CliError(`unknown command "${command}"${near !== undefined ? ` (did you mean ${near}?)` : ''}; run "weir --help" for the list`);
}

export function reportError(e: unknown, verbose: boolean): void {
  const msg = e instanceof Error ? e.message : String(e);
  const stack = verbose && e instanceof Error ? e.stack : undefined;
  logger().error(oneLine(msg), stack !== undefined ? { stack } : undefined);
}

// Output piped into a command that stops reading (| head) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') exitProcess(Number(process.exitCode ?? 0));
  throw e;
});

/**
 * After the command has ended, how long anything else may hold the process open before it exits
 * anyway: a job module is loaded in this thread too, and a client or a timer it made at module
 * scope (a database pool, an interval) kept `weir run` alive for ever after its job had ended.
 */
const EXIT_GRACE_MS = 2000;

const code = await main(process.argv.slice(2));
process.exitCode = code;
setTimeout(() => {
  logger().line(`weir: something the job module made (a client, a timer) still held the process open ${EXIT_GRACE_MS} ms after the command ended; exiting`);
  exitProcess(code);
}, EXIT_GRACE_MS).unref();
