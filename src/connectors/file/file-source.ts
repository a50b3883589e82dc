/**
 * Bounded file source: JSON lines or CSV, from one file or every file of a directory. Each
 * file is a split whose position is the byte offset of the next unread line, so a restore
 * resumes at the exact record. Reads are asynchronous in large chunks (never per record);
 * the reader answers 'wait' while a chunk is in flight and wakes its task when it lands.
 */
import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { MalformedRecord, PollStatus, Source, SourceOutput, SourceReader, SourceReaderContext, SourceSplit } from '../../core/source.ts';
import { castField, parseCsvLine } from './csv.ts';

export type FileFormat = 'jsonl' | 'csv';

export interface CsvOptions {
  /** First line holds column names (default true); records are then objects, else arrays. */
  readonly header?: boolean;
  /** Column names when there is no header line. */
  readonly columns?: readonly string[];
  readonly delimiter?: string;
  /** Turn numeric and boolean fields into numbers and booleans (default true). */
  readonly cast?: boolean;
}

export interface FileSourceOptions {
  readonly format?: FileFormat;
  readonly csv?: CsvOptions;
  /** Bytes per read (default 1 MiB). */
  readonly chunkSize?: number;
}

export interface FileSplit extends SourceSplit {
  readonly path: string;
  /** Byte offset of the next line to read. */
  offset: number;
  /** 1-based number of that line, for error messages. */
  line: number;
}

export class FileSource<T> implements Source<T, FileSplit> {
  readonly name: string;
  readonly bounded = true;
  readonly format: FileFormat;
  readonly chunkSize: number;
  readonly csv: Required<Omit<CsvOptions, 'columns'>> & { columns: readonly string[] | undefined };

  constructor(readonly path: string, options: FileSourceOptions = {}) {
    if (typeof path !== 'string' || path === '') throw new TypeError('fromFile needs a file or directory path');
    const format = options.format ?? (path.toLowerCase().endsWith('.csv') ? 'csv' : 'jsonl');
    if (format !== 'jsonl' && format !== 'csv') throw new RangeError(`fromFile: format must be "jsonl" or "csv", got ${JSON.stringify(format)}`);
    this.format = format;
    this.chunkSize = options.chunkSize ?? 1 << 20;
    if (!(Number.isInteger(this.chunkSize) && this.chunkSize >= 64)) throw new RangeError(`fromFile: chunkSize must be an integer >= 64, got ${this.chunkSize}`);
    const c = options.csv ?? {};
    this.csv = { header: c.header ?? c.columns === undefined, columns: c.columns, delimiter: c.delimiter ?? ',', cast: c.cast ?? true };
    if (this.csv.delimiter.length === 0 || this.csv.delimiter.includes('"') || this.csv.delimiter.includes('\n')) {
      throw new RangeError(`fromFile: invalid CSV delimiter ${JSON.stringify(this.csv.delimiter)}`);
    }
    this.name = `file:${path}`;
  }

  async planSplits(): Promise<FileSplit[]> {
    const abs = resolve(this.path);
    let st;
    try {
      st = await stat(abs);
    } catch {
      throw new Error(`fromFile: ${this.path} does not exist`);
    }
    let files: string[];
    if (st.isDirectory()) {
      files = (await readdir(abs, { withFileTypes: true }))
        .filter((d) => d.isFile() && !d.name.startsWith('.') && !d.name.startsWith('_'))
        .map((d) => join(abs, d.name))
        .sort();
    } else if (st.isFile()) {
      files = [abs];
    } else {
      throw new Error(`fromFile: ${this.path} is neither a file nor a directory`);
    }
    return files.map((p) => ({ id: p, path: p, offset: 0, line: 1 }));
  }

  createReader(ctx: SourceReaderContext): SourceReader<T, FileSplit> {
    return new FileReader<T>(this, ctx);
  }
}

interface PendingLine {
  text: string;
  /** Offset just after this line: the split position once the record is emitted. */
  endOffset: number;
  lineNo: number;
}

class FileReader<T> implements SourceReader<T, FileSplit> {
  private readonly queue: FileSplit[] = [];
  private current: FileSplit | undefined;
  private fh: FileHandle | undefined;
  /** File offset of the first byte not yet read into `carry`/`lines`. */
  private readOffset = 0;
  private carry: Buffer = Buffer.alloc(0);
  private lines: PendingLine[] = [];
  private lineIdx = 0;
  private eof = false;
  private reading = false;
  private error: Error | undefined;
  private columns: readonly string[] | undefined;
  private headerPending = false;

  constructor(private readonly src: FileSource<T>, private readonly ctx: SourceReaderContext) {}

  addSplits(splits: FileSplit[]): void {
    for (const s of splits) this.queue.push({ ...s });
  }

  poll(out: SourceOutput<T>, maxRecords: number): PollStatus {
    if (this.error) throw this.error;
    if (this.current === undefined) {
      const next = this.queue.shift();
      if (next === undefined) return 'end';
      this.startSplit(next);
      return 'wait';
    }
    if (this.lineIdx >= this.lines.length) {
      if (this.eof) {
        this.finishSplit();
        return this.queue.length > 0 ? 'more' : 'end';
      }
      this.readMore();
      return 'wait';
    }
    const split = this.current;
    const end = Math.min(this.lines.length, this.lineIdx + maxRecords);
    for (; this.lineIdx < end; this.lineIdx++) {
      const l = this.lines[this.lineIdx]!;
      // Advance the position before emitting: a malformed line that fails the job is not re-read
      // as a half-consumed record, and a checkpoint after this call covers this record.
      split.offset = l.endOffset;
      split.line = l.lineNo + 1;
      if (l.text.length === 0 || (l.text.length === 1 && l.text === '\r')) continue;
      this.emitLine(l, out);
    }
    if (this.lineIdx >= this.lines.length) {
      this.lines = [];
      this.lineIdx = 0;
    }
    // Read ahead so the next poll finds lines ready.
    if (this.lines.length - this.lineIdx < maxRecords && !this.eof && !this.reading) this.readMore();
    return 'more';
  }

  private emitLine(l: PendingLine, out: SourceOutput<T>): void {
    const text = l.text.endsWith('\r') ? l.text.slice(0, -1) : l.text;
    let value: unknown;
    try {
      value = this.src.format === 'jsonl' ? JSON.parse(text) : this.parseCsv(text);
    } catch (e) {
      const record: MalformedRecord = {
        source: this.src.name,
        location: `${this.current!.path}:${l.lineNo}`,
        raw: text,
        error: e instanceof Error ? e.message : String(e),
      };
      out.malformed(record);
      return;
    }
    out.collect(value as T);
  }

  private parseCsv(text: string): unknown {
    const fields = parseCsvLine(text, this.src.csv.delimiter);
    const vals = this.src.csv.cast ? fields.map(castField) : fields;
    const cols = this.columns;
    if (cols === undefined) return vals;
    if (fields.length !== cols.length) throw new Error(`expected ${cols.length} fields (${cols.join(', ')}), found ${fields.length}`);
    const o: Record<string, unknown> = {};
    for (let i = 0; i < cols.length; i++) o[cols[i]!] = vals[i];
    return o;
  }

  private startSplit(split: FileSplit): void {
    this.current = split;
    this.readOffset = split.offset;
    this.carry = Buffer.alloc(0);
    this.lines = [];
    this.lineIdx = 0;
    this.eof = false;
    this.columns = this.src.csv.columns;
    this.headerPending = this.src.format === 'csv' && this.src.csv.header;
    this.reading = true;
    open(split.path, 'r')
      .then(async (fh) => {
        this.fh = fh;
        if (this.headerPending) await this.readHeader(fh, split);
        this.reading = false;
        this.readMore();
      })
      .catch((e) => this.failRead(e, `cannot open ${split.path}`));
  }

  /** Reads the header line, even when resuming in the middle of the file. */
  private async readHeader(fh: FileHandle, split: FileSplit): Promise<void> {
    const buf = Buffer.alloc(Math.min(this.src.chunkSize, 1 << 16));
    let acc = Buffer.alloc(0);
    let pos = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      acc = Buffer.concat([acc, buf.subarray(0, bytesRead)]);
      pos += bytesRead;
      if (acc.indexOf(10) >= 0) break;
    }
    const nl = acc.indexOf(10);
    const headerBytes = nl >= 0 ? nl + 1 : acc.length;
    let header = acc.subarray(0, nl >= 0 ? nl : acc.length).toString('utf8');
    if (header.endsWith('\r')) header = header.slice(0, -1);
    if (header.charCodeAt(0) === 0xfeff) header = header.slice(1);
    this.columns = parseCsvLine(header, this.src.csv.delimiter);
    if (split.offset === 0) {
      split.offset = headerBytes;
      split.line = 2;
      this.readOffset = headerBytes;
    }
    this.headerPending = false;
  }

  private readMore(): void {
    if (this.reading || this.eof || this.fh === undefined) return;
    this.reading = true;
    const fh = this.fh;
    const buf = Buffer.allocUnsafe(this.src.chunkSize);
    const at = this.readOffset;
    fh.read(buf, 0, buf.length, at)
      .then(({ bytesRead }) => {
        this.reading = false;
        if (fh !== this.fh) return;
        this.readOffset = at + bytesRead;
        this.splitLines(buf.subarray(0, bytesRead), bytesRead === 0);
        this.ctx.wake();
      })
      .catch((e) => this.failRead(e, `cannot read ${this.current?.path}`));
  }

  /** Turns newly read bytes into whole lines; an incomplete last line waits for the next chunk. */
  private splitLines(chunk: Buffer, atEof: boolean): void {
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const base = this.readOffset - data.length; // file offset of data[0]
    const split = this.current!;
    let lineNo = this.lines.length > 0 ? this.lines[this.lines.length - 1]!.lineNo + 1 : split.line;
    let start = 0;
    const fresh: PendingLine[] = [];
    // A UTF-8 byte order mark opens the file, not the first record (the CSV header reader
    // strips it too; without this, the first JSON line or headerless CSV row is corrupted).
    const text = (from: number, to: number): string => {
      const t = data.toString('utf8', from, to);
      return base + from === 0 && t.charCodeAt(0) === 0xfeff ? t.slice(1) : t;
    };
    for (;;) {
      const nl = data.indexOf(10, start);
      if (nl < 0) break;
      fresh.push({ text: text(start, nl), endOffset: base + nl + 1, lineNo: lineNo++ });
      start = nl + 1;
    }
    if (atEof) {
      if (start < data.length) fresh.push({ text: text(start, data.length), endOffset: base + data.length, lineNo: lineNo++ });
      this.carry = Buffer.alloc(0);
      this.eof = true;
    } else {
      this.carry = Buffer.from(data.subarray(start));
    }
    if (this.lineIdx >= this.lines.length) {
      this.lines = fresh;
      this.lineIdx = 0;
    } else {
      for (const l of fresh) this.lines.push(l);
    }
  }

  private finishSplit(): void {
    const fh = this.fh;
    this.fh = undefined;
    this.current = undefined;
    void fh?.close().catch(() => {});
  }

  private failRead(e: unknown, what: string): void {
    this.reading = false;
    this.error = new Error(`${what}: ${e instanceof Error ? e.message : String(e)}`);
    this.ctx.wake();
  }

  snapshotSplits(): FileSplit[] {
    const out: FileSplit[] = [];
    if (this.current) out.push({ ...this.current });
    for (const s of this.queue) out.push({ ...s });
    return out;
  }

  close(): void {
    void this.fh?.close().catch(() => {});
    this.fh = undefined;
  }
}
