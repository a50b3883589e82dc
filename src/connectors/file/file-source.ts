/**
 * Bounded file source: JSON lines or CSV, from one file or every file of a directory. A file
 * larger than the split size is cut into byte ranges (file-ranges.ts) that parallel readers
 * read at once; each range, or each smaller file, is a split whose position is the byte offset
 * of the next unread line, so a restore resumes at the exact record, at any parallelism.
 * Reads are asynchronous in large chunks (never per record); the reader answers 'wait' while a
 * chunk is in flight and wakes its task when it lands. Each split is its own split output, so
 * with fromFile's `watermarks` each range keeps its own watermark and ranges read one after the
 * other do not make each other's records late.
 */
import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { WeirError } from '../../core/errors.ts';
import type { MalformedRecord, PollStatus, ReaderOutput, Source, SourceOutput, SourceReader, SourceReaderContext, SourceSplit } from '../../core/source.ts';
import { castField, countQuotes, parseCsvLine, UnterminatedQuote } from './csv.ts';
import { byteRanges, DEFAULT_SPLIT_BYTES, MIN_SPLIT_BYTES, RangeLines, targetSplitBytes, type FoundLine } from './file-ranges.ts';
import { parseJsonRecord } from '../../core/json-record.ts';

export type FileFormat = 'jsonl' | 'csv';

export interface CsvOptions {
  /** First line holds column names (default true); records are then objects, else arrays. */
  readonly header?: boolean;
  /** Column names when there is no header line. */
  readonly columns?: readonly string[];
  readonly delimiter?: string;
  /**
   * Turn unquoted numeric and boolean fields into numbers and booleans (default true). Only text
   * the number prints back as exactly is cast ("42", "1.5"; not "00501", "1.50" or an integer
   * beyond 2^53, which stay text, exact); a quoted field is always text.
   */
  readonly cast?: boolean;
}

export interface FileSourceOptions {
  readonly format?: FileFormat;
  readonly csv?: CsvOptions;
  /** Bytes per read (default 1 MiB). */
  readonly chunkSize?: number;
  /**
   * Largest byte range of a file one split reads (default 32 MiB; less when the input divided by
   * the parallelism is smaller, never below 4 KiB). Infinity: one split per file.
   */
  readonly splitSize?: number;
  /**
   * Longest line, and longest CSV record whose quoted field spans lines (default 64 MiB): a
   * longer one is a malformed record (its first KiB the dead
   * letter's raw text), read past without keeping its bytes. Without a bound one line without a
   * newline was held whole, and past 512 MiB its text could not be made: the task failed at
   * every restart on the same file.
   */
  readonly maxLineBytes?: number;
}

export interface FileSplit extends SourceSplit {
  readonly path: string;
  /** First byte of the range this split reads (absent: 0, the whole file). */
  readonly start?: number;
  /** End of the range, exclusive: the split reads the lines starting before it (absent: to the end of the file). */
  readonly end?: number;
  /** Byte offset of the next line to read (the range's start before its first line is found). */
  offset: number;
  /** 1-based number of that line: in the file when the range starts at 0, else within the range. */
  line: number;
}

export class FileSource<T> implements Source<T, FileSplit> {
  readonly name: string;
  readonly bounded = true;
  readonly format: FileFormat;
  /** No format was given: it was taken from the path's extension (checked against the files found). */
  private readonly formatGuessed: boolean;
  readonly chunkSize: number;
  readonly splitSize: number;
  readonly maxLineBytes: number;
  readonly csv: Required<Omit<CsvOptions, 'columns'>> & { columns: readonly string[] | undefined };

  constructor(readonly path: string, options: FileSourceOptions = {}) {
    if (typeof path !== 'string' || path === '') throw new TypeError('fromFile needs a file or directory path');
    const format = options.format ?? (path.toLowerCase().endsWith('.csv') ? 'csv' : 'jsonl');
    if (format !== 'jsonl' && format !== 'csv') throw new RangeError(`fromFile: format must be "jsonl" or "csv", got ${JSON.stringify(format)}`);
    this.format = format;
    this.formatGuessed = options.format === undefined;
    this.chunkSize = options.chunkSize ?? 1 << 20;
    if (!(Number.isInteger(this.chunkSize) && this.chunkSize >= 64)) throw new RangeError(`fromFile: chunkSize must be an integer >= 64, got ${this.chunkSize}`);
    // CSV is cut into byte ranges only when asked (splitSize given): a range cannot tell a line
    // break inside a quoted field from one between records, and cut there, a valid record went
    // to the dead letters in two halves, its tail read as a record of its own (as Flink, whose
    // CSV format is not splittable). JSON lines hold no raw line breaks inside a record.
    this.splitSize = options.splitSize ?? (format === 'csv' ? Number.POSITIVE_INFINITY : DEFAULT_SPLIT_BYTES);
    if (!((Number.isInteger(this.splitSize) && this.splitSize >= MIN_SPLIT_BYTES) || this.splitSize === Number.POSITIVE_INFINITY)) {
      throw new RangeError(`fromFile: splitSize must be an integer number of bytes >= ${MIN_SPLIT_BYTES} (or Infinity for one split per file), got ${this.splitSize}`);
    }
    this.maxLineBytes = options.maxLineBytes ?? 64 * 1024 * 1024;
    if (!(Number.isSafeInteger(this.maxLineBytes) && this.maxLineBytes >= 1024)) throw new RangeError(`fromFile: maxLineBytes must be an integer >= 1024, got ${options.maxLineBytes}`);
    const c = options.csv ?? {};
    this.csv = { header: c.header ?? c.columns === undefined, columns: c.columns, delimiter: c.delimiter ?? ',', cast: c.cast ?? true };
    if (this.csv.delimiter.length === 0 || this.csv.delimiter.includes('"') || this.csv.delimiter.includes('\n')) {
      throw new RangeError(`fromFile: invalid CSV delimiter ${JSON.stringify(this.csv.delimiter)}`);
    }
    this.name = `file:${path}`;
  }

  /** Every file, cut into ranges so that `parallelism` readers share the bytes. */
  async planSplits(parallelism = 1): Promise<FileSplit[]> {
    const files = await this.listFiles();
    if (this.formatGuessed) this.checkGuess(files);
    const sizes = await Promise.all(files.map(async (p) => (await stat(p)).size));
    const target = targetSplitBytes(sizes.reduce((a, b) => a + b, 0), parallelism, this.splitSize);
    const out: FileSplit[] = [];
    files.forEach((path, i) => {
      const ranges = byteRanges(sizes[i]!, target);
      if (ranges.length === 1) out.push({ id: path, path, offset: 0, line: 1 });
      else for (const r of ranges) out.push(rangeSplit(path, r.start, r.end));
    });
    return out;
  }

  /**
   * A format guessed from the path (a directory's name says nothing) must fit the files found:
   * a directory of .csv files read as JSON lines made every line a malformed record (dead
   * letters, or a failed job) instead of a line saying to give the format.
   */
  private checkGuess(files: readonly string[]): void {
    const other = this.format === 'csv' ? /\.(jsonl|ndjson|json)$/i : /\.csv$/i;
    const misfit = files.find((f) => other.test(f));
    if (misfit === undefined) return;
    const guessed = this.format === 'csv' ? 'CSV' : 'JSON lines';
    throw new WeirError('CONFIG', `fromFile(${JSON.stringify(this.path)}): the format was taken as ${guessed} from the path, but it holds ${basename(misfit)}; give format: '${this.format === 'csv' ? 'jsonl' : 'csv'}' (or '${this.format}') in fromFile's options`);
  }

  private async listFiles(): Promise<string[]> {
    const abs = resolve(this.path);
    let st;
    try {
      st = await stat(abs);
    } catch {
      throw new Error(`fromFile: ${this.path} does not exist`);
    }
    let files: string[];
    if (st.isDirectory()) {
      const entries = (await readdir(abs, { withFileTypes: true })).filter((d) => !d.name.startsWith('.') && !d.name.startsWith('_'));
      files = [];
      for (const d of entries) {
        // A link is read when it leads to a file (a ConfigMap mount, a directory of links), as Flink does.
        if (d.isFile() || (d.isSymbolicLink() && (await stat(join(abs, d.name)).catch(() => undefined))?.isFile() === true)) files.push(join(abs, d.name));
      }
      files.sort();
    } else if (st.isFile()) {
      files = [abs];
    } else {
      throw new Error(`fromFile: ${this.path} is neither a file nor a directory`);
    }
    return files;
  }

  createReader(ctx: SourceReaderContext): SourceReader<T, FileSplit> {
    return new FileReader<T>(this, ctx);
  }
}

/** A split reading [start, end) of the file at `path`; its id names the range. */
export function rangeSplit(path: string, start: number, end: number | undefined): FileSplit {
  const split: FileSplit = { id: `${path}#${start}-${end ?? ''}`, path, start, offset: start, line: 1 };
  return end === undefined ? split : { ...split, end };
}

/** A line of the split not emitted yet; `endOffset` is the split's position once it is. */
type PendingLine = FoundLine;

/** The error of a line whose bytes are not valid UTF-8 (its raw text shows U+FFFD in their place). */
const NOT_UTF8 = 'the line is not valid UTF-8';

/** Most files a reader keeps open at once while alignment pauses the ones ahead. */
const MAX_OPEN_FILES = 32;


/** A CSV record whose quoted field holds line breaks, being joined line by line. */
interface QuotedRecord {
  readonly first: PendingLine;
  /** Its lines so far, joined with "\n" (each line's own "\r" kept: CRLF inside a field stays CRLF). */
  text: string;
  quotes: number;
  last: PendingLine;
  /** One of its lines is not valid UTF-8: malformed once whole. */
  invalidUtf8?: boolean;
}

/** One split (a file, or a byte range of one) being read: its handle, bytes read ahead, and whole lines not yet emitted. */
class Cursor {
  fh: FileHandle | undefined;
  /** File offset of the first byte not yet read into `range`/`lines`. */
  readOffset = 0;
  /** The split's boundary rule; set once the header (CSV) is read and the position is known. */
  range: RangeLines | undefined;
  lines: PendingLine[] = [];
  lineIdx = 0;
  /** A CSV record open across lines (a quoted field with a line break); the split's position stays at its start. */
  quoted: QuotedRecord | undefined;
  eof = false;
  reading = false;
  columns: readonly string[] | undefined;
  headerPending: boolean;
  out: SourceOutput<unknown> | undefined;
  /**
   * The buffer chunks are read into, reused for every read of the split (RangeLines.feed copies
   * out what it keeps): a fresh buffer per chunk costs its pages faulting in on every read.
   */
  readBuffer: Buffer | undefined;
  constructor(readonly split: FileSplit, src: FileSource<unknown>) {
    this.columns = src.csv.columns;
    this.headerPending = src.format === 'csv' && src.csv.header;
  }
  get ready(): boolean {
    return this.lineIdx < this.lines.length || (this.eof && !this.reading);
  }
}

/**
 * Reads its splits (files, or byte ranges of them) one after the other, in file order; with
 * alignment (maxDrift) a split that runs ahead in event time is paused and the next one opened,
 * so several are read interleaved. Every split the reader holds keeps its own watermark, so
 * reading order never makes a record late.
 */
class FileReader<T> implements SourceReader<T, FileSplit> {
  /** Assigned splits not opened yet, in order. */
  private readonly queue: FileSplit[] = [];
  /** Open files, in the order they were opened. */
  private readonly open: Cursor[] = [];
  private readonly paused = new Set<string>();
  private error: Error | undefined;
  /** close() was called: a file opening or a read landing afterwards touches nothing. */
  private closed = false;
  /** Per CSV record parsed: which of its fields were quoted (reused, one record at a time). */
  private readonly quotedFields: boolean[] = [];

  constructor(private readonly src: FileSource<T>, private readonly ctx: SourceReaderContext) {}

  /**
   * Splits are read in file order (path, then range start), whatever order they came in: a
   * restore deals the ranges out again in another order, and a reader reading a later range
   * of a time-ordered file before an earlier one would make the earlier one's records late
   * under a watermark strategy applied after the source (assignTimestampsAndWatermarks).
   */
  addSplits(splits: FileSplit[]): void {
    for (const s of splits) this.queue.push({ ...s });
    this.queue.sort(fileOrder);
  }

  pauseOrResumeSplits(pause: readonly string[], resume: readonly string[]): void {
    for (const id of pause) this.paused.add(id);
    for (const id of resume) this.paused.delete(id);
  }

  /** The file to read now: the first open one not paused; else a new one; else (all paused, at the cap) the first. */
  private pick(): Cursor | 'opened' | undefined {
    for (const c of this.open) if (!this.paused.has(c.split.id)) return c;
    if (this.queue.length > 0 && this.open.length < MAX_OPEN_FILES) {
      this.startSplit(this.queue.shift()!);
      return 'opened';
    }
    // Alignment cannot be kept without more open files: read on (lateness cannot follow, as a
    // split not yet opened holds the reader's watermark at the minimum anyway).
    return this.open[0];
  }

  poll(out: ReaderOutput<T>, maxRecords: number): PollStatus {
    if (this.error) throw this.error;
    const c = this.pick();
    if (c === undefined) return 'end';
    if (c === 'opened') return 'wait';
    if (c.lineIdx >= c.lines.length) {
      if (c.eof && !c.reading) {
        if (c.quoted !== undefined) this.endQuoted(c, (c.out ??= out.forSplit(c.split.id)) as SourceOutput<T>, 'the quoted field is not closed before the end of the split');
        this.finishSplit(c, out);
        return this.open.length > 0 || this.queue.length > 0 ? 'more' : 'end';
      }
      this.readMore(c);
      // Another open file may have lines ready while this one reads.
      return this.open.some((o) => o !== c && o.lineIdx < o.lines.length && !this.paused.has(o.split.id)) ? 'more' : 'wait';
    }
    const split = c.split;
    const o = (c.out ??= out.forSplit(split.id)) as SourceOutput<T>;
    const end = Math.min(c.lines.length, c.lineIdx + maxRecords);
    for (; c.lineIdx < end; c.lineIdx++) {
      const l = c.lines[c.lineIdx]!;
      if (c.quoted !== undefined) {
        this.continueQuoted(c, l, o);
        continue;
      }
      // Advance the position before emitting: a malformed line that fails the job is not re-read
      // as a half-consumed record, and a checkpoint after this call covers this record.
      split.offset = l.endOffset;
      split.line = l.lineNo + 1;
      if (l.text.length === 0 || (l.text.length === 1 && l.text === '\r')) continue;
      this.emitLine(c, l, o);
    }
    if (c.lineIdx >= c.lines.length) {
      c.lines = [];
      c.lineIdx = 0;
    }
    // Read ahead so the next poll finds lines ready.
    if (c.lines.length - c.lineIdx < maxRecords && !c.eof && !c.reading) this.readMore(c);
    return 'more';
  }

  private emitLine(c: Cursor, l: PendingLine, out: SourceOutput<T>): void {
    const text = l.text.endsWith('\r') ? l.text.slice(0, -1) : l.text;
    let value: unknown;
    try {
      if (l.tooLongBytes !== undefined) throw new SyntaxError(`the line is ${l.tooLongBytes} bytes, longer than maxLineBytes (${this.src.maxLineBytes}); its first bytes are kept`);
      value = this.src.format === 'jsonl' ? parseJsonRecord(text) : this.parseCsv(c, text);
      if (l.invalidUtf8 === true) throw new SyntaxError(NOT_UTF8);
    } catch (e) {
      if (e instanceof UnterminatedQuote) {
        // A quoted field with a line break: the record goes on on the next lines. The position
        // stays at its first line until it is whole, so a checkpoint meanwhile re-reads it all.
        c.quoted = { first: l, text: l.text, quotes: countQuotes(l.text), last: l, ...(l.invalidUtf8 === true ? { invalidUtf8: true } : {}) };
        c.split.offset = l.startOffset;
        c.split.line = l.lineNo;
        return;
      }
      const record: MalformedRecord = {
        source: this.src.name,
        location: lineLocation(c.split, l),
        raw: text,
        error: e instanceof Error ? e.message : String(e),
      };
      out.malformed(record);
      return;
    }
    out.collect(value as T);
  }

  /** The next line of a CSV record open across lines: joined; emitted once its quotes close. */
  private continueQuoted(c: Cursor, l: PendingLine, out: SourceOutput<T>): void {
    const q = c.quoted!;
    q.text += '\n' + l.text;
    q.quotes += countQuotes(l.text);
    q.last = l;
    if (l.tooLongBytes !== undefined) {
      this.endQuoted(c, out, `a line of the record is ${l.tooLongBytes} bytes, longer than maxLineBytes (${this.src.maxLineBytes})`);
      return;
    }
    if (l.invalidUtf8 === true) q.invalidUtf8 = true;
    // Any line with a quote may close the record, whatever the count's parity: a quote inside
    // an unquoted field (5'11") makes it odd for good, and the record swallowed the rest of the file.
    if (countQuotes(l.text) > 0) {
      if (q.invalidUtf8 === true) {
        this.endQuoted(c, out, NOT_UTF8);
        return;
      }
      const text = q.text.endsWith('\r') ? q.text.slice(0, -1) : q.text;
      let value: unknown;
      try {
        value = this.parseCsv(c, text);
      } catch (e) {
        // Even quotes yet open (a stray quote inside an unquoted field): the record goes on.
        if (e instanceof UnterminatedQuote && !this.quotedTooLong(q)) return;
        this.endQuoted(c, out, e instanceof Error ? e.message : String(e));
        return;
      }
      c.quoted = undefined;
      c.split.offset = l.endOffset;
      c.split.line = l.lineNo + 1;
      out.collect(value as T);
      return;
    }
    if (this.quotedTooLong(q)) this.endQuoted(c, out, `unterminated quoted field (the record is over ${this.src.maxLineBytes} bytes, maxLineBytes)`);
  }

  /**
   * A record across lines is held to the same bound as one line (maxLineBytes): a stray quote
   * that opens a field never closed would otherwise join the rest of the file into one record,
   * and a lower bound than one line's cut real multi-line fields the sink wrote into pieces.
   */
  private quotedTooLong(q: QuotedRecord): boolean {
    return q.last.endOffset - q.first.startOffset > this.src.maxLineBytes;
  }

  /** A record open across lines that cannot be completed: malformed, whole; the position moves past it. */
  private endQuoted(c: Cursor, out: SourceOutput<T>, error: string): void {
    const q = c.quoted!;
    c.quoted = undefined;
    c.split.offset = q.last.endOffset;
    c.split.line = q.last.lineNo + 1;
    const text = q.text.endsWith('\r') ? q.text.slice(0, -1) : q.text;
    out.malformed({ source: this.src.name, location: lineLocation(c.split, q.first), raw: text, error });
  }

  private parseCsv(c: Cursor, text: string): unknown {
    const cast = this.src.csv.cast;
    const quoted = this.quotedFields;
    const fields = parseCsvLine(text, this.src.csv.delimiter, cast ? quoted : undefined);
    const vals = cast ? fields.map((f, i) => (quoted[i] === true ? f : castField(f))) : fields;
    const cols = c.columns;
    if (cols === undefined) return vals;
    if (fields.length !== cols.length) throw new Error(`expected ${cols.length} fields (${cols.join(', ')}), found ${fields.length}`);
    const o: Record<string, unknown> = {};
    for (let i = 0; i < cols.length; i++) o[cols[i]!] = vals[i];
    return o;
  }

  private startSplit(split: FileSplit): void {
    const c = new Cursor(split, this.src as FileSource<unknown>);
    this.open.push(c);
    c.reading = true;
    open(split.path, 'r')
      .then(async (fh) => {
        // Closed while the file was opening (a cancel, a failover): this handle is its own to close.
        if (this.closed) {
          void fh.close().catch(() => {});
          return;
        }
        c.fh = fh;
        if (c.headerPending) await this.readHeader(c, fh);
        if (this.closed) return; // close() closed c.fh
        const split = c.split;
        c.range = new RangeLines(split.start ?? 0, split.end, split.offset, this.src.maxLineBytes);
        c.readOffset = c.range.readFrom;
        c.reading = false;
        if (c.range.done) {
          // Restored at its end: nothing to read, finish on the next poll.
          c.eof = true;
          this.ctx.wake();
        } else this.readMore(c);
      })
      .catch((e) => this.failRead(c, e, `cannot open ${split.path}`));
  }

  /** Reads the header line, even when resuming in the middle of the file. */
  private async readHeader(c: Cursor, fh: FileHandle): Promise<void> {
    const split = c.split;
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
    c.columns = parseCsvLine(header, this.src.csv.delimiter);
    if (split.offset === 0) {
      split.offset = headerBytes;
      split.line = 2;
    }
    c.headerPending = false;
  }

  private readMore(c: Cursor): void {
    if (this.closed || c.reading || c.eof || c.fh === undefined) return;
    c.reading = true;
    const fh = c.fh;
    const at = c.readOffset;
    // Up to a little past the range's end (the line crossing it), then whole chunks again.
    const end = c.split.end;
    const size = end !== undefined && at < end ? Math.min(this.src.chunkSize, end - at + 4096) : this.src.chunkSize;
    const buf = (c.readBuffer ??= Buffer.allocUnsafe(this.src.chunkSize));
    fh.read(buf, 0, size, at)
      .then(({ bytesRead }) => {
        c.reading = false;
        if (this.closed || fh !== c.fh) return;
        c.readOffset = at + bytesRead;
        this.ctx.metrics.addBytesRead(bytesRead);
        this.splitLines(c, buf.subarray(0, bytesRead), bytesRead === 0);
        this.ctx.wake();
      })
      .catch((e) => this.failRead(c, e, `cannot read ${c.split.path}`));
  }

  /** Turns newly read bytes into the whole lines the split owns; an incomplete last line waits for the next chunk. */
  private splitLines(c: Cursor, chunk: Buffer, atEof: boolean): void {
    const range = c.range!;
    // While a CSV record is open across lines the split's line stays at its first (a restore
    // re-reads it whole); the next line read is the one after the record's last so far.
    let lineNo = c.lines.length > 0 ? c.lines[c.lines.length - 1]!.lineNo + 1 : c.quoted !== undefined ? c.quoted.last.lineNo + 1 : c.split.line;
    const fresh = range.feed(chunk, atEof);
    for (let i = 0; i < fresh.length; i++) fresh[i]!.lineNo = lineNo++;
    if (range.done) c.eof = true;
    if (c.lineIdx >= c.lines.length) {
      c.lines = fresh;
      c.lineIdx = 0;
    } else {
      for (const l of fresh) c.lines.push(l);
    }
  }

  private finishSplit(c: Cursor, out: ReaderOutput<T>): void {
    const fh = c.fh;
    c.fh = undefined;
    this.open.splice(this.open.indexOf(c), 1);
    this.paused.delete(c.split.id);
    out.splitFinished(c.split.id);
    void fh?.close().catch(() => {});
  }

  private failRead(c: Cursor, e: unknown, what: string): void {
    c.reading = false;
    this.error = new Error(`${what}: ${e instanceof Error ? e.message : String(e)}`);
    this.ctx.wake();
  }

  snapshotSplits(): FileSplit[] {
    const out: FileSplit[] = [];
    for (const c of this.open) out.push({ ...c.split });
    for (const s of this.queue) out.push({ ...s });
    return out;
  }

  close(): void {
    this.closed = true;
    for (const c of this.open) {
      void c.fh?.close().catch(() => {});
      c.fh = undefined;
    }
  }
}

function fileOrder(a: FileSplit, b: FileSplit): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : (a.start ?? 0) - (b.start ?? 0);
}

/** "path:line" when the split's line numbers are the file's (it starts at 0), else "path at byte N". */
function lineLocation(split: FileSplit, l: PendingLine): string {
  return (split.start ?? 0) === 0 ? `${split.path}:${l.lineNo}` : `${split.path} at byte ${l.startOffset}`;
}
