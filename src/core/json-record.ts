/**
 * A record as one line of JSON, the one encoding of print(), writeAsJsonLines and the file sinks'
 * JSON-lines format. JSON has no bigint, Map or Set: a bigint is written as its decimal text (as
 * print writes it), a Map as an object of its entries, a Set as an array. Plain JSON.stringify
 * wrote Maps and Sets as {} (their data lost) and failed on a bigint.
 */
function replacer(_key: string, x: unknown): unknown {
  if (typeof x === 'bigint') return x.toString();
  if (x instanceof Map) return Object.fromEntries(x);
  if (x instanceof Set) return [...x];
  return x;
}

/**
 * The record's JSON text, or undefined when it has none (undefined, a function, a symbol): such
 * a record must be refused by the caller, never written as the line "undefined", which no JSON
 * reader takes back (weir's file source refused the whole file).
 */
export function jsonRecord(v: unknown): string | undefined {
  return JSON.stringify(v, replacer) as string | undefined;
}
