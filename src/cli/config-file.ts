/**
 * A JSON config file with Flink's configuration keys (weir run --config FILE), e.g.
 *   { "execution.checkpointing.interval": "1 s", "execution.checkpointing.mode": "EXACTLY_ONCE",
 *     "execution.checkpointing.dir": "file:///var/lib/weir/checkpoints", "restart-strategy.type": "fixed-delay" }
 * Every key of the option registry is read, and Flink's older names for them. Unknown keys and
 * bad values are errors naming the key and the file.
 */
import { readFileSync } from 'node:fs';
import { resolveRestartStrategy } from '../cluster/restart-strategy.ts';
import { JsonTextError, jsonTextProblem, parseJsonText } from '../core/json-text.ts';
import { allKeys, byKey } from '../core/options/lookup.ts';
import { ALL_OPTIONS } from '../core/options/registry.ts';
import { suggest } from '../core/options/suggest.ts';
import { FileValues, readValue } from '../core/options/values.ts';
import { CliError } from './args.ts';
import { settingsOf, type RunSettings } from './run-settings.ts';

/** The file's settings; `checkpoint` is always there (empty when the file sets none). */
export type FileConfig = RunSettings & { checkpoint: NonNullable<RunSettings['checkpoint']> };

export function readConfigFile(path: string): FileConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read config file ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseJsonText(text);
  } catch (e) {
    // Its place only: JSON.parse's message quoted the file around the fault (maybe a secret).
    if (e instanceof JsonTextError) throw new CliError(jsonTextProblem(`config file ${path}`, e));
    throw e;
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new CliError(`config file ${path} must hold a JSON object of "key": value`);
  return parseConfig(raw as Record<string, unknown>, path);
}

/** Each value is checked as it is read, so that a bad one is reported with its key and file. */
export function parseConfig(raw: Record<string, unknown>, path: string): FileConfig {
  const read = new FileValues();
  for (const [key, v] of Object.entries(raw)) {
    const option = byKey(key);
    if (option === undefined) throw new CliError(unknownKey(key, path));
    const value = readValue(option, v, { kind: 'file', path, key });
    if (!value.ok) throw new CliError(value.message);
    const twice = read.add(option, key, value.value);
    if (twice !== undefined) throw new CliError(`${path}: ${twice}`);
  }
  const settings = settingsOf(read.values);
  // Settings that must agree with each other (the backoff bounds) are checked once all are read.
  if (settings.restart !== undefined) {
    try {
      resolveRestartStrategy(settings.restart, path);
    } catch (e) {
      throw new CliError((e as Error).message);
    }
  }
  return { ...settings, checkpoint: settings.checkpoint ?? {} };
}

function unknownKey(key: string, path: string): string {
  const candidates = [
    ...allKeys().map((k) => ({ name: k, offer: k })),
    // A flag's name used as a key ("checkpoint-interval") finds the key.
    ...ALL_OPTIONS.filter((o) => o.key !== undefined && o.flag !== undefined).map((o) => ({ name: o.flag!, offer: o.key! })),
  ];
  const near = suggest(key, candidates);
  return `${path}: unknown configuration key "${key}"${near !== undefined ? ` (did you mean "${near}"?)` : ''}`;
}
