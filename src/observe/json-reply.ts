/**
 * JSON text of a REST reply. Every string in it has its URLs' user:password@ blanked: the API
 * answers reads without a token, to any local user (as Flink's), and exception messages, stack
 * traces and checkpoint failures may quote a record or a user function's error holding a
 * connection string. A bigint is written as the integer it is: Flink's API gives Java's
 * Long.MAX_VALUE for "never" (the checkpoint interval with checkpointing off), which no JS number
 * holds exactly (it printed as 9223372036854776000, beyond any long: a Java client reading it
 * into a long fails).
 */
import { randomUUID } from 'node:crypto';
import { redactUserinfo } from '../core/redact.ts';

/** Java's Long.MAX_VALUE. */
export const JAVA_LONG_MAX = 9223372036854775807n;

// A bigint goes through JSON.stringify as a string carrying this mark, then loses its quotes.
// The mark holds a NUL (written \u0000) and a fresh id per process, so no string a job or a
// user sets can be taken for one.
const MARK = `\u0000bigint-${randomUUID()}:`;
const MARKED = new RegExp(`"${JSON.stringify(MARK).slice(1, -1).replace(/\\/g, '\\\\')}(-?\\d+)"`, 'g');

export function jsonText(body: unknown): string {
  let marked = false;
  const text = JSON.stringify(body, (_key, v: unknown) => {
    if (typeof v === 'string') return redactUserinfo(v);
    if (typeof v !== 'bigint') return v;
    marked = true;
    return `${MARK}${v}`;
  });
  return marked ? text.replace(MARKED, '$1') : text;
}
