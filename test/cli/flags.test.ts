/** Flag parsing from the registry: every spelling, values checked as read, weir's own errors. */
import { describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/args.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import type { CommandName } from '../../src/core/options/commands.ts';
import { OPTIONS } from '../../src/core/options/registry.ts';
import { valueOf } from '../../src/core/options/values.ts';

function refusal(argv: string[], command: CommandName = 'run'): string {
  try {
    parseCommandLine(argv, command);
  } catch (e) {
    expect(e).toBeInstanceOf(CliError);
    return (e as Error).message;
  }
  throw new Error(`expected ${argv.join(' ')} to be refused`);
}

describe('parseCommandLine', () => {
  it('reads --flag value, --flag=value, -p N, -pN and switches; positionals anywhere', () => {
    const { values, positionals } = parseCommandLine(
      ['-p', '2', 'job.ts', '--checkpoint-interval=1s', '-w1', '--allow-non-restored-state', '--checkpoint-dir', 'file:///tmp/chk', 'extra'], 'run',
    );
    expect(positionals).toEqual(['job.ts', 'extra']);
    expect(valueOf(values, OPTIONS.parallelism)).toBe(2);
    expect(valueOf(values, OPTIONS.workers)).toBe(1);
    expect(valueOf(values, OPTIONS.checkpointInterval)).toBe('1s');
    expect(valueOf(values, OPTIONS.allowNonRestoredState)).toBe(true);
    expect(valueOf(values, OPTIONS.checkpointDir)).toBe('/tmp/chk');
    expect(valueOf(values, OPTIONS.verbose)).toBeUndefined();
  });

  it('values in the API\'s form, whichever spelling was typed; the last of a repeated flag wins', () => {
    const { values } = parseCommandLine(['--checkpoint-mode', 'AT_LEAST_ONCE', '--restart-strategy', 'fixeddelay', '-p', '2', '-p', '3'], 'run');
    expect(valueOf(values, OPTIONS.checkpointMode)).toBe('at-least-once');
    expect(valueOf(values, OPTIONS.restartStrategy)).toBe('fixed-delay');
    expect(valueOf(values, OPTIONS.parallelism)).toBe(3);
  });

  it('a negative number and "-" are values, not flags', () => {
    expect(refusal(['--restart-attempts', '-1'])).toBe('--restart-attempts expects an integer >= 0, got "-1"');
    expect(parseCommandLine(['-'], 'checkpoints').positionals).toEqual(['-']);
  });

  it('unknown flags: weir\'s words, the command, and the nearest flag of that command', () => {
    expect(refusal(['job.ts', '--checkpoint-intervall', '1s'])).toBe('run: unknown option --checkpoint-intervall (did you mean --checkpoint-interval?)');
    expect(refusal(['--execution.checkpointing.interval', '1s'])).toBe('run: unknown option --execution.checkpointing.interval (did you mean --checkpoint-interval?)');
    expect(refusal(['--fast'])).toBe('run: unknown option --fast; see weir run --help');
    expect(refusal(['-x'])).toBe('run: unknown option -x; see weir run --help');
    expect(refusal(['/tmp', '--jsn'], 'checkpoints')).toBe('checkpoints: unknown option --jsn (did you mean --json?)');
    // A flag of another command is unknown here.
    expect(refusal(['--parallelism', '2'], 'list')).toMatch(/^list: unknown option --parallelism/);
  });

  it('a missing value, and a value given to a switch', () => {
    expect(refusal(['--parallelism'])).toBe('run: option --parallelism needs a value (N); a value starting with "-" goes as --parallelism=VALUE');
    expect(refusal(['--from', '--verbose'])).toMatch(/^run: option --from needs a value/);
    expect(refusal(['--verbose=1'])).toBe('run: option --verbose takes no value, got "1"');
  });

  it('bad values name the flag as typed', () => {
    expect(refusal(['--parallelism', 'abc'])).toBe('--parallelism expects a positive integer, got "abc"');
    expect(refusal(['-p0'])).toBe('-p expects a positive integer, got "0"');
    expect(refusal(['--checkpoint-interval', '5ms'])).toBe('--checkpoint-interval expects a duration of at least 10 ms, got "5ms"');
    expect(refusal(['--checkpoint-retention', 'forever'])).toBe('--checkpoint-retention expects none, delete-on-cancel or retain-on-cancel, got "forever"');
    expect(refusal(['--from='])).toBe('--from expects latest, latest-or-empty or a checkpoint/savepoint path, got ""');
    expect(refusal(['--rest-port', '70000'])).toBe('--rest-port expects an integer between 0 and 65535, got "70000"');
    expect(refusal(['j', '--rest-port', '0'], 'cancel')).toBe('--rest-port expects an integer between 1 and 65535, got "0"');
    expect(refusal(['j', '--timeout', 'xx'], 'savepoint')).toBe('--timeout: cannot read "xx" as a duration; use e.g. 500ms, 5s, 1min, 2h');
  });
});
