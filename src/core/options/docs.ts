/**
 * docs/configuration.md, generated from the option registry (npm run docs:config writes it; a
 * test fails when the committed file differs, so it cannot go stale). Pure.
 */
import { COMMANDS, type CommandName } from './commands.ts';
import { optionsOf } from './lookup.ts';
import { defaultShown, flagUsage, SECTIONS, type Option } from './option.ts';

const INTRO = `# Configuration

<!-- Generated from src/core/options/registry.ts by \`npm run docs:config\`. Edit the registry, not this file. -->

Every option of weir, by where it is set:

- **Flag**: on the command line, e.g. \`weir run job.ts --checkpoint-interval 1s\`.
- **Flink key**: in a JSON file given with \`weir run --config FILE\`, e.g.
  \`{ "execution.checkpointing.interval": "1 s", "restart-strategy.type": "fixed-delay" }\`.
  Flink's older names for a key are read too.
- **API**: in the job's code or \`runJob\`'s options. \`checkpoint.*\` are the settings of
  \`env.enableCheckpointing(interval, { ... })\` and of runJob's \`checkpoint\`; \`restart.*\` those of
  \`env.setRestartStrategy({ ... })\` and of runJob's \`restartStrategy\`; the others are runJob options.

Flags override the config file, which overrides the job's own settings: checkpoint settings
field by field, while a restart strategy from flags or the file replaces the job's as a whole.
The parallelism is the exception, as in Flink: \`--parallelism\` (\`parallelism.default\`) is the
default, and the job's \`env.setParallelism\` (or an operator's) wins over it, with a log line.

Values: durations as \`500ms\`, \`5 s\`, \`1.5 min\`, \`2h\`, \`1d\` or a number of milliseconds;
choices in either spelling (\`exactly-once\` or Flink's \`EXACTLY_ONCE\`; case and \`-\` or \`_\` do
not matter); paths also as Flink's \`file:///path\` URIs. A bad value, an unknown flag or an
unknown key stops weir before the job is loaded, with one line naming the flag (or the file and
key) and, for a misspelling, the nearest known name.
`;

/** Markdown table cells: a pipe, even inside code, would end the cell. */
const cell = (s: string): string => s.replace(/\|/g, '\\|');
const code = (s: string): string => `\`${s}\``;
/** Prose that may hold placeholders such as <job-id>, which Markdown would take for HTML. */
const prose = (s: string): string => s.replace(/</g, '&lt;').replace(/>/g, '&gt;');

function valueText(o: Option): string {
  const cli = o.type.describe('cli');
  const flink = o.type.describe('flink');
  return o.key !== undefined && flink !== cli ? `${cli} (file: ${flink})` : cli;
}

function keyText(o: Option): string {
  if (o.key === undefined) return '–';
  const older = o.deprecatedKeys ?? [];
  return code(o.key) + (older.length > 0 ? `<br>older: ${older.map(code).join(', ')}` : '');
}

function row(cells: readonly string[]): string {
  return `| ${cells.map(cell).join(' | ')} |`;
}

function runTables(): string[] {
  const out: string[] = ['## weir run', ''];
  const run = optionsOf('run');
  for (const section of SECTIONS) {
    const options = run.filter((o) => o.section === section);
    if (options.length === 0) continue;
    out.push(`### ${section}`, '', row(['Flag', 'Flink key', 'API', 'Value', 'Default', 'Description']), row(['---', '---', '---', '---', '---', '---']));
    for (const o of options) {
      out.push(row([
        o.flag !== undefined ? code(flagUsage(o)) : '–', keyText(o), o.field !== undefined ? code(o.field) : '–', prose(valueText(o)), prose(defaultShown(o) ?? '–'), prose(o.description),
      ]));
    }
    out.push('');
  }
  return out;
}

function commandTable(name: CommandName): string[] {
  const c = COMMANDS.find((x) => x.name === name)!;
  const out = [`### \`weir ${c.name} ${c.args}\``, '', `${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.`, ''];
  out.push(row(['Flag', 'Value', 'Default', 'Description']), row(['---', '---', '---', '---']));
  for (const o of optionsOf(name)) out.push(row([code(flagUsage(o)), prose(valueText(o)), prose(defaultShown(o) ?? '–'), prose(o.description)]));
  return [...out, ''];
}

export function configurationDocs(): string {
  const others = COMMANDS.filter((c) => c.name !== 'run').flatMap((c) => commandTable(c.name));
  return [INTRO, ...runTables(), '## Other commands', '', ...others].join('\n').trimEnd() + '\n';
}
