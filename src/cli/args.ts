/** The CLI's usage error and argument splitting. */
import { WeirError } from '../core/errors.ts';

/** A usage error: a bad flag, value, argument or config file. weir exits with 2. */
export class CliError extends WeirError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

/** Splits argv at "--": what follows belongs to the job. */
export function splitJobArgs(argv: string[]): { own: string[]; job: string[] } {
  const i = argv.indexOf('--');
  return i < 0 ? { own: argv, job: [] } : { own: argv.slice(0, i), job: argv.slice(i + 1) };
}

/**
 * A message as one line: some errors carry several (esbuild's "Transform failed with 1
 * error:\n<file>:<line>: ERROR: ..."), and the CLI promises one line per error without
 * --verbose. The lines are joined with spaces, nothing is dropped.
 */
export function oneLine(message: string): string {
  return message.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '').join(' ');
}
