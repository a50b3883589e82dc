/** weir --help and every command's --help, from the command table and the option registry. */
import { COMMANDS, commandInfo, type CommandName } from '../core/options/commands.ts';
import { optionsOf } from '../core/options/lookup.ts';
import { flagUsage, hints, type Option } from '../core/options/option.ts';

const DOCS = 'docs/configuration.md';
const WIDTH = 100;

/** `text` after `prefix`, in lines of at most WIDTH characters, continuation lines aligned. */
function wrap(prefix: string, text: string): string[] {
  const lines: string[] = [];
  let line = prefix;
  let empty = true;
  for (const word of text.split(' ')) {
    if (!empty && line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = ' '.repeat(prefix.length);
      empty = true;
    }
    line += (empty ? '' : ' ') + word;
    empty = false;
  }
  return [...lines, line];
}

/** Option lines, aligned; a flag with a short alias sits two columns left of those without. */
function optionLines(options: readonly Option[]): string[] {
  const withFlag = options.filter((o) => o.flag !== undefined);
  const left = withFlag.map((o) => (o.short !== undefined ? '' : '    ') + flagUsage(o));
  const width = Math.max(...left.map((l) => l.length)) + 2;
  return withFlag.flatMap((o, i) => wrap(`  ${left[i]!.padEnd(width)}`, `${o.description}${hints(o)}`));
}

export function commandHelp(command: CommandName): string {
  const c = commandInfo(command);
  const lines = [`Usage: weir ${c.name} ${c.args}`, '', `${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.`, '', 'Options:', ...optionLines(optionsOf(command))];
  if ('note' in c && c.note !== undefined) lines.push('', ...wrap('', c.note));
  if (command === 'run') lines.push('', ...wrap('', `Flags override the --config file, which overrides the job's own settings. Every option and Flink key: ${DOCS}`));
  return lines.join('\n') + '\n';
}

export function globalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    'weir: a stateful stream processor for TypeScript',
    '',
    'Usage: weir <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    `Options for run (weir run ${commandInfo('run').args}):`,
    ...optionLines(optionsOf('run')),
    '',
    ...wrap('', `"weir <command> --help" shows a command's options; ${DOCS} lists every option and Flink key.`),
  ].join('\n') + '\n';
}
