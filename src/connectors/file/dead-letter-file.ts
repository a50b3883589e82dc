/**
 * Where the dead letters of a source subtask go when no one else takes them: one JSON line per
 * malformed record ({source, location, error, raw}) appended to
 * <dir>/<source>-<subtask>.jsonl, the directory made on the first letter (a job without
 * malformed records leaves nothing behind). Written a batch at a time, synchronously, from the
 * task's thread: a poll's letters become one write. At-least-once: after a restore, the
 * letters read since the restored checkpoint are written again.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MalformedRecord } from '../../core/source.ts';

/** A file name from a source's name: letters, digits, "-", "_" and "." kept, the rest "_". */
export function deadLetterFileName(source: string, subtaskIndex: number): string {
  const base = source.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(0, 100) || 'source';
  return `${base}-${subtaskIndex}.jsonl`;
}

export function deadLetterLine(r: MalformedRecord): string {
  const bytes = r.rawBase64 !== undefined ? { rawBase64: r.rawBase64 } : {};
  return JSON.stringify({ source: r.source, location: r.location, error: r.error, raw: r.raw, ...bytes }) + '\n';
}

export function appendDeadLetters(dir: string, source: string, subtaskIndex: number, records: readonly MalformedRecord[]): void {
  if (records.length === 0) return;
  let text = '';
  for (const r of records) text += deadLetterLine(r);
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, deadLetterFileName(source, subtaskIndex)), text);
}
