/**
 * What an option's value is: how it is read from a flag's text or a config file's JSON value
 * (decode), which values are allowed (check), and how it is shown in help and docs.
 * Pure: problems are returned, and the caller words them for where the value came from.
 */

/**
 * How values are spelled: 'cli' for flags and code (exactly-once), 'flink' for config files
 * (EXACTLY_ONCE, Flink's spelling). Both spellings are accepted everywhere; the dialect only
 * picks the one used in messages and docs.
 */
export type Dialect = 'cli' | 'flink';

/**
 * Why a value is refused: either what was expected ("an integer >= 1") and what came (shown
 * as the value's own text), or a reason that says both (a duration parser's message).
 */
export type Problem =
  | { readonly expected: string; readonly got: string }
  | { readonly reason: string };

export type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: Problem };

export interface ValueType<T> {
  /** Placeholder in help: N, D, DIR... */
  readonly metavar: string;
  /** False for switches (boolean flags take no value on the command line). */
  readonly takesValue: boolean;
  /** The kind of value, for docs: "duration >= 10 ms", "integer >= 0", "path". */
  describe(dialect: Dialect): string;
  /** A flag's text or a config file's JSON value to the API's value (Flink spellings normalized). */
  decode(raw: unknown, dialect: Dialect): Decoded<T>;
  /** The API value's own rules (bounds, membership); also checks values set in job code. */
  check(value: unknown): Problem | undefined;
  /** A value as a user writes it (defaults in help and docs). */
  show(value: T, dialect: Dialect): string;
}

export function ok<T>(value: T): Decoded<T> {
  return { ok: true, value };
}

export function refuse<T>(expected: string, got: unknown): Decoded<T> {
  return { ok: false, problem: { expected, got: shown(got) } };
}

/** A value as messages show it: JSON, so strings are quoted and objects readable. */
export function shown(v: unknown): string {
  return v === undefined ? 'nothing' : typeof v === 'bigint' ? `${v}n` : JSON.stringify(v) ?? String(v);
}

/** "a, b or c". */
export function oneOf(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}
