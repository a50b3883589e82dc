/**
 * The exactly-once file sink's record of the last checkpoint it committed, kept beside its
 * output: one small hidden file per subtask, `.weir-committed-<sub>`, holding
 * {"checkpointId": n}. Each subtask's committer writes its own (no two threads write one
 * file), atomically (temp file, fsync, rename) and before the commit's renames: a crash
 * between the two leaves a record one checkpoint ahead of the visible output, never behind it
 * (behind would let a restore re-emit committed output unnoticed; ahead only refuses a restore
 * that would in fact have been safe, and the user can accept it).
 */
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { WeirError } from '../../core/errors.ts';

const RECORD_RE = /^\.weir-committed-(\d+)$/;

export function isCommitRecordFile(name: string): boolean {
  return RECORD_RE.test(name) || /^\.weir-committed-\d+\.tmp$/.test(name);
}

/** Records that subtask `sub` commits the output of checkpoint `checkpointId` (durable when it returns). */
export function writeCommitRecord(dir: string, sub: number, checkpointId: number): void {
  const file = join(dir, `.weir-committed-${sub}`);
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    const buf = Buffer.from(JSON.stringify({ checkpointId }) + '\n');
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const d = openSync(dir, 'r');
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
}

/**
 * The highest checkpoint id any subtask recorded in `dir`, or undefined when none did (or the
 * directory does not exist). A record that cannot be read is an error, not "nothing committed":
 * guessing low could let a restore duplicate output.
 */
export function readCommitRecords(dir: string): number | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  let highest: number | undefined;
  for (const name of names) {
    if (!RECORD_RE.test(name)) continue;
    const path = join(dir, name);
    let id: unknown;
    try {
      id = (JSON.parse(readFileSync(path, 'utf8')) as { checkpointId?: unknown }).checkpointId;
    } catch (e) {
      throw new WeirError('START', `cannot read the sink's commit record ${path}: ${(e as Error).message}`);
    }
    if (!(Number.isInteger(id) && (id as number) >= 0)) throw new WeirError('START', `the sink's commit record ${path} holds no checkpoint id`);
    highest = Math.max(highest ?? 0, id as number);
  }
  return highest;
}
