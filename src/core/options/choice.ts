/** Enumerated option values, with Flink's spelling of each and older names. */
import { oneOf, ok, refuse, shown, type Dialect, type ValueType } from './value-type.ts';

export interface Choice<T extends string> {
  /** The API value, also the flag spelling: "exactly-once". */
  readonly value: T;
  /** Flink's spelling, when it differs: "EXACTLY_ONCE". */
  readonly flink?: string;
  /** Older or alternative names that mean the same ("fixeddelay", "off"). */
  readonly aliases?: readonly string[];
}

/** Case and - versus _ do not matter: exactly_once, EXACTLY-ONCE and exactly-once are one value. */
const normal = (s: string): string => s.trim().toLowerCase().replace(/_/g, '-');

export function choice<T extends string>(metavar: string, choices: readonly Choice<T>[]): ValueType<T> {
  const spell = (c: Choice<T>, d: Dialect): string => (d === 'flink' ? (c.flink ?? c.value) : c.value);
  const spellings = (d: Dialect): string[] => choices.map((c) => spell(c, d));
  const byName = new Map<string, T>();
  for (const c of choices) for (const n of [c.value, c.flink, ...(c.aliases ?? [])]) if (n !== undefined) byName.set(normal(n), c.value);
  return {
    metavar,
    takesValue: true,
    describe: (d) => spellings(d).join(' | '),
    decode: (raw, d) => {
      const v = typeof raw === 'string' ? byName.get(normal(raw)) : undefined;
      return v === undefined ? refuse(oneOf(spellings(d)), raw) : ok(v);
    },
    check: (v) => (choices.some((c) => c.value === v) ? undefined : { expected: oneOf(spellings('cli')), got: shown(v) }),
    show: (v, d) => spell(choices.find((c) => c.value === v)!, d),
  };
}
