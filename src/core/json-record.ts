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

/**
 * A record from JSON text, as the sources with a JSON format read it. A field named
 * "__proto__" is refused (the source makes the record malformed: a dead letter, or a failure):
 * JSON.parse makes it an own field, but msgpack renames it between threads and at restores,
 * and a plain assignment while copying sets the copy's prototype instead. The walk looking for
 * one runs only when the text holds "proto" or an escape ("\u006f" spells an o).
 */
export function parseJsonRecord(text: string): unknown {
  const v: unknown = JSON.parse(text);
  // "\u" too: an escaped spelling ("__pr\u006fto__") holds no "proto" yet parses to the key.
  if ((text.includes('proto') || text.includes('\\u')) && hasProtoKey(v, 0)) {
    throw new SyntaxError('a field named "__proto__" is not supported in a record (it would not survive between threads and checkpoints)');
  }
  return v;
}

/** Levels searched for a "__proto__" key; deeper JSON is refused by the same error. */
const MAX_PROTO_DEPTH = 64;

function hasProtoKey(v: unknown, depth: number): boolean {
  if (v === null || typeof v !== 'object') return false;
  if (depth >= MAX_PROTO_DEPTH) return true;
  if (Array.isArray(v)) return v.some((x) => hasProtoKey(x, depth + 1));
  if (Object.prototype.hasOwnProperty.call(v, '__proto__')) return true;
  return Object.values(v).some((x) => hasProtoKey(x, depth + 1));
}
