/** Finding options by command, flag and config key. */
import type { CommandName } from './commands.ts';
import type { Option } from './option.ts';
import { ALL_OPTIONS } from './registry.ts';

export function optionsOf(command: CommandName): readonly Option[] {
  return ALL_OPTIONS.filter((o) => o.commands.includes(command));
}

export function byFlag(command: CommandName, name: string): Option | undefined {
  return optionsOf(command).find((o) => o.flag === name);
}

export function byShort(command: CommandName, letter: string): Option | undefined {
  return optionsOf(command).find((o) => o.short === letter);
}

/** Options a config file may set, by every key they answer to (current and older). */
const BY_KEY: ReadonlyMap<string, Option> = new Map(
  ALL_OPTIONS.flatMap((o) => [o.key, ...(o.deprecatedKeys ?? [])].filter((k): k is string => k !== undefined).map((k) => [k, o] as const)),
);

export function byKey(key: string): Option | undefined {
  return BY_KEY.get(key);
}

export function allKeys(): readonly string[] {
  return [...BY_KEY.keys()];
}

/** Options whose field is under `root` ("checkpoint"), by the field's last part ("interval"). */
export function fieldsUnder(root: string): ReadonlyMap<string, Option> {
  const out = new Map<string, Option>();
  for (const o of ALL_OPTIONS) {
    if (o.field?.startsWith(`${root}.`) && !out.has(o.field.slice(root.length + 1))) out.set(o.field.slice(root.length + 1), o);
  }
  return out;
}
