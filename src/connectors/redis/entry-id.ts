/**
 * Redis stream entry ids ("<ms>-<seq>", two unsigned 64-bit decimals): parsing, validation
 * and order, without BigInt on the hot path (decimal strings without leading zeros compare by
 * length, then lexically).
 */

const ID = /^(0|[1-9]\d{0,19})-(0|[1-9]\d{0,19})$/;

export function isEntryId(s: unknown): s is string {
  return typeof s === 'string' && ID.test(s);
}

function cmpDecimal(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Negative, zero or positive as a is before, equal to or after b. */
export function compareEntryIds(a: string, b: string): number {
  const da = a.indexOf('-');
  const db = b.indexOf('-');
  return cmpDecimal(a.slice(0, da), b.slice(0, db)) || cmpDecimal(a.slice(da + 1), b.slice(db + 1));
}

/** The entry's millisecond timestamp (its event time by default). */
export function entryIdMillis(id: string): number {
  return Number(id.slice(0, id.indexOf('-')));
}

/**
 * The first problem of an XREAD reply's entries for one stream, or undefined: each must be
 * [id, [field, value, ...]] with a valid id. An entry without a valid id would put a position
 * into the checkpoint that a restore refuses (or, undefined, start the stream over).
 */
export function entriesProblem(entries: unknown): string | undefined {
  if (!Array.isArray(entries)) return `the reply's entries are not a list (${typeof entries})`;
  for (let i = 0; i < entries.length; i++) {
    const e: unknown = entries[i];
    if (!Array.isArray(e) || e.length !== 2) return `entry ${i} of the reply is not [id, fields]`;
    if (!isEntryId(e[0])) return `entry ${i} of the reply has no valid id (${JSON.stringify(e[0]) ?? 'none'})`;
    if (!Array.isArray(e[1]) || e[1].length % 2 !== 0) return `entry ${e[0]} of the reply has no [field, value, ...] list`;
  }
  return undefined;
}
