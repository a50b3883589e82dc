/** Sink operators: print, collect (tests), plain JSON-lines files and user sink functions. */
import { closeSync, mkdirSync, openSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SinkFunction } from '../../core/functions.ts';
import { describeRecord, WeirError } from '../../core/errors.ts';
import { jsonRecord } from '../../core/json-record.ts';
import { NO_TIMESTAMP, type Batch } from '../../core/batch.ts';
import { refusePromise, StreamOperator } from './operator.ts';

/** Formats a record the way print and the file sink write it: strings raw, the rest as JSON. */
export function formatRecord(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return `${v}`;
  try {
    const s = jsonRecord(v);
    return s === undefined ? String(v) : s;
  } catch {
    return describeRecord(v, 10_000);
  }
}

export class PrintSinkOperator extends StreamOperator {
  private prefix = '';
  constructor(private readonly label: string | undefined) {
    super();
  }
  protected override setUp(): void {
    const { parallelism, subtaskIndex } = this.env.taskInfo;
    const parts = [this.label, parallelism > 1 ? String(subtaskIndex + 1) : undefined].filter((x) => x !== undefined && x !== '');
    this.prefix = parts.length > 0 ? parts.join(':') + '> ' : '';
  }
  processBatch(batch: Batch): void {
    let text = '';
    for (const v of batch.values) text += this.prefix + formatRecord(v) + '\n';
    this.env.services.writeStdout(text);
  }
}

/** Sends records to the job's client, which gathers them by sink name (tests, embedding). */
export class CollectSinkOperator extends StreamOperator {
  constructor(private readonly sinkName: string) {
    super();
  }
  processBatch(batch: Batch): void {
    this.env.services.collect(this.sinkName, this.env.taskInfo.subtaskIndex, batch.values.slice());
  }
}

const PART_FILE = /^part-\d+\.jsonl$/;

/**
 * Refuses to start a JSON-lines sink over the part files of an earlier run (Flink's
 * NO_OVERWRITE): silently truncating them loses output, and leftovers of a run at a higher
 * parallelism would mix with the new ones. Run once before the job starts.
 */
export function refuseExistingPartFiles(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // no directory yet (or not readable: opening the part file will say so)
  }
  const parts = names.filter((n) => PART_FILE.test(n)).sort();
  if (parts.length === 0) return;
  const shown = parts.length > 3 ? `${parts.slice(0, 3).join(', ')} and ${parts.length - 3} more` : parts.join(', ');
  throw new WeirError(
    'START',
    `writeAsJsonLines: ${dir} already holds part files (${shown}); refusing to overwrite them: remove them, write to another directory, or pass { overwrite: true }`,
  );
}

/** Writes every record as one JSON line into <dir>/part-<subtask>.jsonl; not transactional. */
export class JsonLinesFileSinkOperator extends StreamOperator {
  private fd = -1;
  constructor(private readonly dir: string) {
    super();
  }
  protected override setUp(): void {
    mkdirSync(this.dir, { recursive: true });
    this.fd = openSync(join(this.dir, `part-${this.env.taskInfo.subtaskIndex}.jsonl`), 'w');
  }
  processBatch(batch: Batch): void {
    let text = '';
    for (const v of batch.values) {
      const line = jsonRecord(v);
      if (line === undefined) throw this.failOn(new TypeError(`a record of ${typeof v} has no JSON form and cannot be written as a JSON line`), 'writeAsJsonLines', v);
      text += line + '\n';
    }
    const buf = Buffer.from(text);
    let off = 0;
    while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
  }
  protected override tearDown(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/**
 * A sink function's per-record context. The record's timestamp is stored as the raw number and
 * turned into `undefined` (no timestamp) only when read: storing `undefined` or a number into a
 * plain object per record cost a compare, a conversion and a write barrier on every record.
 */
class SinkRecordContext {
  ts = NO_TIMESTAMP;
  get timestamp(): number | undefined {
    return this.ts === NO_TIMESTAMP ? undefined : this.ts;
  }
}

export class FunctionSinkOperator extends StreamOperator {
  private readonly ctx = new SinkRecordContext();
  constructor(private readonly fn: SinkFunction<any>) {
    super();
    this.userFunction = fn;
  }
  processBatch(batch: Batch): void {
    const { values, timestamps } = batch;
    let i = 0;
    try {
      for (; i < values.length; i++) {
        this.ctx.ts = timestamps[i]!;
        const r = this.fn.invoke(values[i], this.ctx) as unknown;
        if (i === 0) refusePromise(r, 'the sink\'s invoke');
      }
    } catch (e) {
      throw this.failOn(e, 'sink', values[i]);
    }
  }
  override processRecord(value: unknown, timestamp: number): void {
    this.ctx.ts = timestamp;
    try {
      const r = this.fn.invoke(value, this.ctx) as unknown;
      if (this.firstCall) this.checkFirstResult(r, 'the sink\'s invoke');
    } catch (e) {
      throw this.failOn(e, 'sink', value);
    }
  }
  override finish(): void {
    try {
      refusePromise(this.fn.finish?.() as unknown, 'the sink\'s finish');
    } catch (e) {
      throw this.fail(e, 'sink finish');
    }
  }
}
