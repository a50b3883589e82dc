/** Reading a command's flags and arguments, or printing its help. */
import type { CommandName } from '../core/options/commands.ts';
import { parseCommandLine, type CommandLine } from './flags.ts';
import { commandHelp } from './help.ts';

/** Whether the user asks for help: -h or --help anywhere, whatever else is wrong on the line. */
export function wantsHelp(argv: readonly string[]): boolean {
  return argv.some((a) => a === '--help' || a === '-h');
}

/** The command's flags and arguments; undefined after printing the command's help (--help). */
export function commandLine(argv: readonly string[], command: CommandName): CommandLine | undefined {
  if (wantsHelp(argv)) {
    process.stdout.write(commandHelp(command));
    return undefined;
  }
  return parseCommandLine(argv, command);
}
