/**
 * Command-line flags of one command, read by the option registry: --name value, --name=value,
 * -p 2, -p2, switches without a value. Values are decoded and checked as they are read, so a
 * bad one is refused before anything starts; unknown flags get a suggestion. Pure.
 */
import type { CommandName } from '../core/options/commands.ts';
import { byFlag, byShort, optionsOf } from '../core/options/lookup.ts';
import type { Option } from '../core/options/option.ts';
import { suggest } from '../core/options/suggest.ts';
import { readValue, type OptionValues } from '../core/options/values.ts';
import { CliError } from './args.ts';

export interface CommandLine {
  readonly values: OptionValues;
  readonly positionals: readonly string[];
}

/** A flag as written: the option, how it was spelled, and a value given with "=" or glued (-p2). */
interface FlagToken {
  readonly option: Option;
  readonly spelled: string;
  readonly inline: string | undefined;
}

export function parseCommandLine(argv: readonly string[], command: CommandName): CommandLine {
  const values = new Map<Option, unknown>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!isFlag(arg)) {
      positionals.push(arg);
      continue;
    }
    const { option, spelled, inline } = flagToken(arg, command);
    let text: string | true = true;
    if (option.type.takesValue) {
      if (inline !== undefined) text = inline;
      else if (i + 1 < argv.length && !isFlag(argv[i + 1]!)) text = argv[++i]!;
      else throw new CliError(`${command}: option ${spelled} needs a value (${option.type.metavar}); a value starting with "-" goes as ${spelled}=VALUE`);
    } else if (inline !== undefined) {
      throw new CliError(`${command}: option ${spelled} takes no value, got "${inline}"`);
    }
    const read = readValue(option, text, { kind: 'flag', flag: spelled, text: text === true ? '' : text });
    if (!read.ok) throw new CliError(read.message);
    values.set(option, read.value); // the last one wins
  }
  return { values, positionals };
}

/** A flag, not a value: "-" alone is a value (stdin, by convention), and so is a negative number. */
function isFlag(arg: string): boolean {
  return arg.startsWith('-') && arg !== '-' && !/^-\d/.test(arg);
}

function flagToken(arg: string, command: CommandName): FlagToken {
  if (arg.startsWith('--')) {
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    const option = byFlag(command, name);
    if (option === undefined) throw unknown(`--${name}`, command);
    return { option, spelled: `--${name}`, inline: eq < 0 ? undefined : arg.slice(eq + 1) };
  }
  const option = byShort(command, arg[1]!);
  if (option === undefined) throw unknown(arg.slice(0, 2), command);
  const rest = arg.slice(2);
  return { option, spelled: arg.slice(0, 2), inline: rest === '' ? undefined : rest.replace(/^=/, '') };
}

function unknown(spelled: string, command: CommandName): CliError {
  const name = spelled.replace(/^-+/, '');
  const candidates = optionsOf(command).flatMap((o) => [
    ...(o.flag !== undefined ? [{ name: o.flag, offer: `--${o.flag}` }] : []),
    // A Flink key typed as a flag (--execution.checkpointing.interval) finds its flag.
    ...(o.flag !== undefined && o.key !== undefined ? [{ name: o.key, offer: `--${o.flag}` }] : []),
  ]);
  const near = suggest(name, candidates);
  return new CliError(`${command}: unknown option ${spelled}${near !== undefined ? ` (did you mean ${near}?)` : `; see weir ${command} --help`}`);
}
