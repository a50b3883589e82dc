/**
 * Block splitting of files (Flink's FileSource with block-splittable formats): a large file is
 * cut into byte ranges that parallel readers read at once. Pure planning and the boundary rule,
 * apart from I/O, so both can be tested over random files.
 *
 * The boundary rule: a range [start, end) owns every line that *starts* inside it. A line starts
 * at offset 0 or right after a "\n". So a range that begins mid-line skips to the first line
 * starting at or after `start` (it reads from start - 1 and drops everything up to and including
 * the first "\n": when byte start - 1 is itself the "\n", `start` is a line start and nothing
 * else is dropped), and it reads the line that crosses `end` to that line's "\n" (or the end of
 * the file). Every line is read by exactly one range. Only "\n" (0x0A) separates lines: it never
 * occurs inside a multi-byte UTF-8 character, and "\r\n" splits like "\n" (the "\r" stays with
 * its line and is stripped when the line is decoded).
 */
import { isUtf8 } from 'node:buffer';

/** Smallest range a file is cut into (smaller ones cost more in opens and reads than they bring). */
export const MIN_SPLIT_BYTES = 4096;
/** Default largest range (Flink reads block-sized splits; 32 MiB keeps a split a few hundred ms of work). */
export const DEFAULT_SPLIT_BYTES = 32 * 2 ** 20;

export interface ByteRange {
  readonly start: number;
  /** Exclusive; undefined: to the end of the file (the last range, or a whole file). */
  readonly end: number | undefined;
}

/**
 * The size of the ranges for `totalBytes` of input and `parallelism` readers: `splitBytes` (the
 * option), or less so that every reader gets a range, never below MIN_SPLIT_BYTES. Infinity
 * (the option's "one split per file") stays Infinity.
 */
export function targetSplitBytes(totalBytes: number, parallelism: number, splitBytes: number): number {
  if (splitBytes === Number.POSITIVE_INFINITY) return splitBytes;
  const perReader = Math.ceil(totalBytes / Math.max(1, parallelism));
  return Math.max(MIN_SPLIT_BYTES, Math.min(splitBytes, perReader));
}

/**
 * A file of `size` bytes as ranges of about `target` bytes, all of the same size (so readers
 * get equal work); one range to the end of the file when it is not larger than `target`.
 */
export function byteRanges(size: number, target: number): ByteRange[] {
  const n = Number.isFinite(target) && target > 0 ? Math.max(1, Math.ceil(size / target)) : 1;
  if (n === 1) return [{ start: 0, end: undefined }];
  const out: ByteRange[] = [];
  for (let k = 0; k < n; k++) {
    out.push({ start: Math.floor((k * size) / n), end: k === n - 1 ? undefined : Math.floor(((k + 1) * size) / n) });
  }
  return out;
}

/** A whole line found in a range: [startOffset, endOffset) in the file, the "\n" included. */
export interface FoundLine {
  readonly text: string;
  readonly startOffset: number;
  readonly endOffset: number;
  /** For the reader to number (0 here): one object per line, not two, on the hot path. */
  lineNo: number;
  /** Set (only then) when the line's bytes are not valid UTF-8: its text holds U+FFFD in their place. */
  invalidUtf8?: true;
  /** Set (only then) when the line is longer than the reader's maxLineBytes: its length; `text` is its first bytes only. */
  tooLongBytes?: number;
}

/** Bytes of a line over maxLineBytes kept for its dead letter. */
const LONG_LINE_PREFIX_BYTES = 1024;


/**
 * Finds the lines a range owns in the bytes read for it, chunk by chunk, in order. Begin reading
 * at `readFrom(...)`; feed every chunk read after the previous one, the last with atEof.
 */
export class RangeLines {
  /**
   * The line begun in an earlier chunk, in pieces joined once it is whole: joined at every
   * chunk, a line of 200 MiB took 66 s (each chunk copied everything before it again).
   */
  private carried: Buffer[] = [];
  /** Its length so far, bytes beyond maxLineBytes counted though not kept. */
  private carriedBytes = 0;
  /** The carried line passed maxLineBytes: only its first bytes are kept (`carried[0]`). */
  private carriedTooLong = false;
  /** Still dropping the line that started before the range. */
  private skipping: boolean;
  /** File offset of the next byte fed. */
  private at: number;
  done = false;

  /**
   * `offset`: where to resume (a line start), or the range's start on a fresh range (a line
   * start only if the byte before it is a "\n", which reading from start - 1 finds out).
   */
  constructor(readonly start: number, readonly end: number | undefined, offset: number, private readonly maxLineBytes = Number.POSITIVE_INFINITY) {
    this.skipping = start > 0 && offset === start;
    this.at = this.skipping ? start - 1 : offset;
    if (end !== undefined && !this.skipping && offset >= end) this.done = true;
  }

  /** The file offset to read from first. */
  get readFrom(): number {
    return this.at;
  }

  /**
   * The lines completed by `chunk` (read at the offset after the previous one). Their texts are
   * decoded here, so the caller may reuse the chunk's memory once this returns. Only the line
   * that began in an earlier chunk is put together from two buffers; the rest is decoded in
   * place (copying every chunk behind the carried bytes cost a read of a large file more time
   * than decoding it: 619 of 2,389 ms reading 177 MB, the copies' fresh pages faulting in).
   */
  feed(chunk: Buffer, atEof: boolean): FoundLine[] {
    const found: FoundLine[] = [];
    if (this.done) return found;
    const base = this.at; // file offset of chunk[0]
    this.at += chunk.length;
    let from = 0;
    if (this.skipping) {
      // Nothing is carried while skipping: the skipped line's bytes are not ours.
      const nl = chunk.indexOf(10);
      if (nl < 0) {
        if (atEof) this.done = true;
        return found;
      }
      this.skipping = false;
      from = nl + 1;
    } else if (this.carriedBytes > 0) {
      from = this.completeCarried(chunk, base, atEof, found);
      if (from < 0) return found;
    }
    for (;;) {
      if (this.end !== undefined && base + from >= this.end) {
        this.finish();
        return found;
      }
      const nl = chunk.indexOf(10, from);
      if (nl < 0) break;
      found.push(this.line(chunk, base, from, nl, base + nl + 1));
      from = nl + 1;
    }
    if (atEof) {
      if (from < chunk.length) found.push(this.line(chunk, base, from, chunk.length, base + chunk.length));
      this.finish();
    } else if (from < chunk.length) {
      this.carryMore(chunk.subarray(from));
    }
    return found;
  }

  /** A line within one chunk, [from, to) of it. */
  private line(chunk: Buffer, base: number, from: number, to: number, endOffset: number): FoundLine {
    if (to - from > this.maxLineBytes) return tooLong(chunk.subarray(from, from + LONG_LINE_PREFIX_BYTES), base + from, endOffset, to - from);
    return lineOf(chunk, base, from, to, base + from, endOffset);
  }

  /** Adds a chunk's tail to the carried line: a copy, since the caller reuses the chunk; past maxLineBytes only counted. */
  private carryMore(bytes: Buffer): void {
    this.carriedBytes += bytes.length;
    if (this.carriedTooLong) return;
    if (this.carriedBytes > this.maxLineBytes) {
      this.carried = [Buffer.concat([...this.carried, bytes]).subarray(0, LONG_LINE_PREFIX_BYTES)];
      this.carriedTooLong = true;
      return;
    }
    this.carried.push(Buffer.from(bytes));
  }

  private dropCarried(): void {
    this.carried = [];
    this.carriedBytes = 0;
    this.carriedTooLong = false;
  }

  /**
   * The carried line (begun in an earlier chunk) completed with `chunk`'s first bytes: returns
   * where the chunk's next line starts, or -1 when the chunk is used up (the line goes on, or it
   * was the range's or the file's last).
   */
  private completeCarried(chunk: Buffer, base: number, atEof: boolean, found: FoundLine[]): number {
    const lineStart = base - this.carriedBytes;
    if (this.end !== undefined && lineStart >= this.end) {
      this.finish();
      return -1;
    }
    const nl = chunk.indexOf(10);
    if (nl < 0 && !atEof) {
      this.carryMore(chunk); // a line longer than a chunk
      return -1;
    }
    const upTo = nl < 0 ? chunk.length : nl;
    const endOffset = base + (nl < 0 ? chunk.length : nl + 1);
    const bytes = this.carriedBytes + upTo;
    if (this.carriedTooLong || bytes > this.maxLineBytes) {
      found.push(tooLong(Buffer.concat([...this.carried, chunk.subarray(0, LONG_LINE_PREFIX_BYTES)]), lineStart, endOffset, bytes));
    } else {
      const line = Buffer.concat([...this.carried, chunk.subarray(0, upTo)]);
      found.push(lineOf(line, lineStart, 0, line.length, lineStart, endOffset));
    }
    this.dropCarried();
    if (nl < 0) {
      this.finish();
      return -1;
    }
    return nl + 1;
  }

  private finish(): void {
    this.dropCarried();
    this.done = true;
  }
}

/** A line over maxLineBytes: its first bytes as text, for its dead letter, and its length. */
function tooLong(first: Buffer, startOffset: number, endOffset: number, bytes: number): FoundLine {
  const head = first.subarray(0, LONG_LINE_PREFIX_BYTES);
  return { text: head.toString('utf8'), startOffset, endOffset, lineNo: 0, tooLongBytes: bytes };
}

/**
 * The line at data[from, to). Invalid UTF-8 is flagged, not silently replaced: toString puts
 * U+FFFD in place of bad bytes, and the record would be accepted without its original bytes.
 * Checked only when the text holds U+FFFD (which valid text may also hold, rarely).
 */
function lineOf(data: Buffer, base: number, from: number, to: number, startOffset: number, endOffset: number): FoundLine {
  const text = decode(data, base, from, to);
  if (text.includes('\uFFFD') && !isUtf8(data.subarray(from, to))) return { text, startOffset, endOffset, lineNo: 0, invalidUtf8: true };
  return { text, startOffset, endOffset, lineNo: 0 };
}

/** A line's text; a UTF-8 byte order mark opening the file is not part of its first line. */
function decode(data: Buffer, base: number, from: number, to: number): string {
  const t = data.toString('utf8', from, to);
  return base + from === 0 && t.charCodeAt(0) === 0xfeff ? t.slice(1) : t;
}
