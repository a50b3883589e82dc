/**
 * CSV per RFC 4180: fields separated by a delimiter, optionally quoted with double quotes, a
 * doubled quote inside quotes is a literal quote. `line` is one record's text: a quoted field
 * may hold line breaks, so the file source joins the lines of such a record before parsing it.
 */

/** The text ends inside a quoted field: the record goes on on the next line (or is cut short). */
export class UnterminatedQuote extends Error {
  constructor() {
    super('unterminated quoted field');
  }
}

/** Double quotes in `s`: an even number over a whole record closes every quoted field it opens. */
export function countQuotes(s: string): number {
  let n = 0;
  for (let i = s.indexOf('"'); i >= 0; i = s.indexOf('"', i + 1)) n++;
  return n;
}

/**
 * The fields of one record's text. `quoted`, when given, is refilled with one flag per field:
 * whether it was quoted (a quoted field is text, never cast: a writer quotes "007" to keep it).
 */
export function parseCsvLine(line: string, delimiter: string, quoted?: boolean[]): string[] {
  const out: string[] = [];
  const n = line.length;
  let i = 0;
  if (quoted !== undefined) quoted.length = 0;
  for (;;) {
    quoted?.push(i < n && line[i] === '"');
    if (i < n && line[i] === '"') {
      let field = '';
      i++;
      for (;;) {
        if (i >= n) throw new UnterminatedQuote();
        const ch = line[i]!;
        if (ch === '"') {
          if (line[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += ch;
        i++;
      }
      out.push(field);
      if (i >= n) return out;
      if (!line.startsWith(delimiter, i)) throw new Error(`unexpected character ${JSON.stringify(line[i])} after a quoted field at column ${i + 1}`);
      i += delimiter.length;
      continue;
    }
    const next = line.indexOf(delimiter, i);
    if (next < 0) {
      out.push(line.slice(i));
      return out;
    }
    out.push(line.slice(i, next));
    i = next + delimiter.length;
  }
}

/** A number as JSON writes one: no leading zeros ("007"), no "+", no bare "." ends. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

/**
 * Numbers and booleans from their text, the rest unchanged (option `cast`): "true", "false" and
 * the numbers JSON would read. "00501" (a zip code), "+1" or "1." stay text, and so does an
 * integer beyond 2^53, whose last digits would change (an id).
 */
export function castField(s: string): unknown {
  if (s === 'true') return true;
  if (s === 'false') return false;
  if (JSON_NUMBER.test(s)) {
    const n = Number(s);
    if (Number.isFinite(n) && (Number.isSafeInteger(n) || !/^-?\d+$/.test(s))) return n;
  }
  return s;
}
