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

async function main(argv: string[]): Promise<number> {
  // Not the job's own arguments: "weir run job.ts -- --verbose" passes --verbose to the job.
  const verbose = splitJobArgs(argv).own.includes('--verbose');
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
  process.stderr.write(`weir: error: ${oneLine(msg)}\n`);
  if (verbose && e instanceof Error && e.stack) process.stderr.write(e.stack + '\n');
}

// Output piped into a command that stops reading (| head) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw e;
});

const code = await main(process.argv.slice(2));
process.exitCode = code;
