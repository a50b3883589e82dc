/**
 * The weir CLI. Every problem a user can cause (a missing file, a bad flag, a job that
 * throws) ends in a one-line message and a non-zero exit; stacks only with --verbose.
 */
import { runCommand } from './run.ts';
import { checkpointsCommand } from './checkpoints.ts';
import { stateCommand } from './state.ts';
import { cancelCommand, listCommand, savepointCommand, stopCommand } from './control.ts';
import { CliError, oneLine, USAGE } from './args.ts';
import { isUsageError } from '../core/errors.ts';

async function main(argv: string[]): Promise<number> {
  const verbose = argv.includes('--verbose');
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
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      case '--version':
      case '-v':
        process.stdout.write('weir 0.1.0\n');
        return 0;
      default:
        throw new CliError(`unknown command "${command}"; run "weir --help" for the list`);
    }
  } catch (e) {
    reportError(e, verbose);
    return isUsageError(e) ? 2 : 1;
  }
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
