/**
 * The exactly-once file sink's format seam: how records become the bytes of a part file.
 *
 * - Row formats (JSON lines, CSV) turn each record into its bytes at once; a part file is a valid
 *   file after any write, and committed files of one format are merged (compaction) by
 *   concatenation, a CSV header kept once.
 * - Bulk formats (Parquet, parquet/parquet-format.ts) buffer rows and turn them into bytes a
 *   block at a time (a row group): when the block is full, and at every checkpoint barrier, so
 *   the bytes a checkpoint records are a valid prefix of the file. A bulk file needs closing
 *   bytes after its blocks (Parquet's footer); `closing()` gives the bytes that would close the
 *   file now, which is what a part that stays open across a checkpoint (S3) records beside its
 *   tail, so a restore completes the file exactly as it stood at the checkpoint.
 *
 * An encoder belongs to one part file; the sink's writer calls it from the task's thread only.
 */
import { jsonRecord } from '../../core/json-record.ts';
import { castField } from './csv.ts';
import { isWellFormedText, notARecord } from './record-shape.ts';

/** A record that does not fit the format (a Parquet record missing a column, or with one of the wrong type). */
export type RejectRecord = (value: unknown, error: string) => void;

/**
 * Where a row format writes a batch's bytes directly: the part's own buffer (S3: the bytes of
 * the next part to upload), so a record's text is encoded once, into the bytes that are sent,
 * with no batch string or Buffer in between.
 */
export interface ByteWriter {
  /** Appends the UTF-8 bytes of `s`. */
  writeString(s: string): void;
  /** Appends one byte (an ASCII character: a line break). */
  writeByte(b: number): void;
  /** Appends bytes (copied). */
  write(bytes: Uint8Array): void;
}

export interface PartEncoder {
  /**
   * Encodes a batch: returns the bytes to append now (a bulk format may return none and keep
   * the rows). A record that does not fit goes to `reject` and is left out.
   */
  encode(values: readonly unknown[], reject: RejectRecord): Uint8Array | undefined;
  /**
   * Row formats: encodes a batch straight into `out`, the same bytes encode() returns (used when
   * the part offers a ByteWriter; encode() otherwise). Bulk formats have none.
   */
  encodeInto?(values: readonly unknown[], reject: RejectRecord, out: ByteWriter): void;
  /** Rows taken but not yet in bytes (a bulk format's open block). */
  readonly bufferedRows: number;
  /** About how many bytes those rows will take (a part's size bound counts them); row formats: 0. */
  readonly bufferedBytes: number;
  /** A bulk format's file has as many blocks as it may (its footer's bound): the part rolls at the next write or barrier. */
  isFull?(): boolean;
  /** Turns the buffered rows into bytes (a Parquet row group); undefined when there are none. */
  flush(): Uint8Array | undefined;
  /** The bytes that would close the file after what was flushed (the Parquet footer); row formats: none. Does not change the encoder. */
  closing(): Uint8Array | undefined;
}

export interface FileFormat {
  /** For messages and docs: "JSON lines", "CSV", "Parquet". */
  readonly name: string;
  /** The committed files' extension, without the dot. */
  readonly extension: string;
  /** Bytes every file of this format starts with that a merged file holds once (CSV header). */
  readonly header?: Uint8Array;
  /**
   * Compaction: whether a committed file can be merged with files this format writes now (same
   * header, same schema); files that cannot are left as they are. Default: any file.
   */
  mergeable?(file: Uint8Array): boolean;
  /** Compaction of a bulk format: the files as one file (Parquet: their row groups under one footer). Row formats concatenate. */
  merge?(files: readonly Uint8Array[]): Uint8Array;
  /** An encoder for a new part file; `where` names the sink in messages. */
  open(where: string): PartEncoder;
}

/**
 * JSON lines (the default): one `format(value)` per line; by default the record's JSON
 * (core/json-record.ts: bigints as text, Maps as objects, Sets as arrays). A record the format
 * gives no text for (undefined), or text with a line break, is rejected (dead letter or
 * failure, per the sink), never written as lines no reader takes back. As in JSON.stringify,
 * NaN and ±Infinity, which JSON has no form for, are written as null.
 */
export function jsonLines(format: (value: unknown) => string | undefined = jsonRecord): FileFormat {
  if (typeof format !== 'function') throw new TypeError('jsonLines: format must be a function (value) => string');
  const custom = format !== jsonRecord;
  const line = (v: unknown, reject: RejectRecord): string | undefined => {
    let s: string | undefined;
    try {
      s = format(v);
    } catch (e) {
      // A record the format cannot turn into text (a cycle, a throwing toJSON): rejected as the
      // sink's malformed setting says, never a broken writer failing every restart on it.
      reject(v, `cannot be written as a JSON line: ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    }
    if (typeof s === 'string') {
      // A line break inside a record's text splits it into lines no reader takes back (a
      // pretty-printed object: "{", "  \"a\": 1", "}"). The default JSON never holds one.
      if (custom && (s.includes('\n') || s.includes('\r'))) {
        reject(v, 'the format function returned text with a line break; a JSON line must be one line');
        return undefined;
      }
      return s;
    }
    if (s === undefined) {
      reject(v, `a record of ${typeof v} has no JSON form and cannot be written as a JSON line`);
      return undefined;
    }
    return String(s);
  };
  return {
    name: 'JSON lines',
    extension: 'jsonl',
    open: () => ({
      bufferedRows: 0,
      bufferedBytes: 0,
      encode(values: readonly unknown[], reject: RejectRecord): Uint8Array {
        let text = '';
        for (let i = 0; i < values.length; i++) {
          const l = line(values[i], reject);
          if (l !== undefined) text += l + '\n';
        }
        return Buffer.from(text);
      },
      encodeInto(values: readonly unknown[], reject: RejectRecord, out: ByteWriter): void {
        for (let i = 0; i < values.length; i++) {
          const l = line(values[i], reject);
          if (l === undefined) continue;
          out.writeString(l);
          out.writeByte(0x0a);
        }
      },
      flush: () => undefined,
      closing: () => undefined,
    }),
  };
}

export interface CsvFormatOptions {
  /** The columns, in order: each record's field of that name becomes one field of its line. */
  readonly columns: readonly string[];
  /** Field separator (default ","). */
  readonly delimiter?: string;
  /** A first line with the column names in every file (default true). */
  readonly header?: boolean;
}

/**
 * CSV (RFC 4180): one line per record, a field per column; a field holding a character of the
 * delimiter, a quote or a line break is quoted (quotes doubled), and so is a string weir's file
 * source would otherwise read back as a number or boolean ("42", "true"; a quoted field stays
 * text); null and undefined are empty fields (a record that would be an empty line, one column
 * and an empty field, is written as ""); objects are written as JSON. Lines end with "\n". A
 * record must be an object (record-shape.ts); a string with a lone surrogate is refused.
 */
/** An object or array in a CSV field: its JSON, as JSON lines writes it (Maps, Sets, bigints kept); a function or other value JSON cannot hold throws (the record is rejected). */
function objectField(v: object): string {
  const text = jsonRecord(v);
  if (text === undefined) throw new TypeError(`a field holds ${typeof v}, which JSON cannot write`);
  return text;
}

export function csv(options: CsvFormatOptions): FileFormat {
  const columns = options?.columns;
  if (!Array.isArray(columns) || columns.length === 0 || !columns.every((c) => typeof c === 'string' && c !== '')) {
    throw new TypeError('csv: columns must be a non-empty array of column names');
  }
  const delimiter = options.delimiter ?? ',';
  if (typeof delimiter !== 'string' || delimiter === '' || /["\r\n]/.test(delimiter)) throw new TypeError(`csv: delimiter must be a non-empty string without quotes or line breaks, got ${JSON.stringify(delimiter)}`);
  const withHeader = options.header ?? true;
  // A missing field named as one of Object.prototype's (constructor, toString) is missing, not inherited.
  const inherited = columns.map((c) => c in Object.prototype);
  // Any character of the delimiter, not only the whole of it: with "||", an unquoted "x|"
  // before the delimiter read back as "x" and "|q".
  const needsQuotes = new RegExp(`["\\r\\n${delimiter.replace(/[\\\]^-]/g, '\\$&')}]`);
  const quote = (s: string): string => `"${s.replace(/"/g, '""')}"`;
  const field = (v: unknown): string => {
    if (v === undefined || v === null) return '';
    if (typeof v === 'string') {
      if (!isWellFormedText(v)) throw new TypeError('a field holds a string with a lone surrogate (not valid Unicode), which UTF-8 cannot store');
      // "00501" is not cast (castField keeps it); "42" or "true" would come back as a number or boolean.
      return needsQuotes.test(v) || castField(v) !== v ? quote(v) : v;
    }
    if (typeof v === 'function' || typeof v === 'symbol') throw new TypeError(`a field holds a ${typeof v}, which a CSV file cannot hold`);
    const s = typeof v === 'object' && !(v instanceof Date) ? objectField(v) : v instanceof Date ? v.toISOString() : String(v);
    return needsQuotes.test(s) ? quote(s) : s;
  };
  const header = withHeader ? Buffer.from(columns.map(field).join(delimiter) + '\n') : undefined;
  return {
    name: 'CSV',
    extension: 'csv',
    header,
    mergeable: header === undefined ? undefined : (file) => Buffer.from(file.buffer, file.byteOffset, Math.min(file.byteLength, header.byteLength)).equals(header),
    open: () => {
      let first = true;
      const line = (v: unknown, reject: RejectRecord): string | undefined => {
        const shape = notARecord(v);
        if (shape !== undefined) {
          reject(v, `a CSV record must be an object with the columns as fields, got ${shape}`);
          return undefined;
        }
        const r = v as Record<string, unknown>;
        let text = '';
        try {
          for (let c = 0; c < columns.length; c++) text += (c === 0 ? '' : delimiter) + field(inherited[c] && !Object.hasOwn(r, columns[c]!) ? undefined : r[columns[c]!]);
        } catch (e) {
          // An Invalid Date, a field with a cycle: rejected (dead letter or failure, per the sink).
          reject(v, `cannot be written as a CSV row: ${e instanceof Error ? e.message : String(e)}`);
          return undefined;
        }
        // One column with an empty field would be an empty line, which readers (weir's file
        // source among them) skip: the record would be lost. Quoted, it reads back as "".
        return text === '' ? '""' : text;
      };
      return {
        bufferedRows: 0,
      bufferedBytes: 0,
        encode(values: readonly unknown[], reject: RejectRecord): Uint8Array {
          let text = first && header !== undefined ? header.toString() : '';
          first = false;
          for (let i = 0; i < values.length; i++) {
            const l = line(values[i], reject);
            if (l !== undefined) text += l + '\n';
          }
          return Buffer.from(text);
        },
        encodeInto(values: readonly unknown[], reject: RejectRecord, out: ByteWriter): void {
          if (first && header !== undefined) out.write(header);
          first = false;
          for (let i = 0; i < values.length; i++) {
            const l = line(values[i], reject);
            if (l === undefined) continue;
            out.writeString(l);
            out.writeByte(0x0a);
          }
        },
        flush: () => undefined,
        closing: () => undefined,
      };
    },
  };
}

/** What the sink's `format` option takes: a FileFormat, or (as before) a function formatting a record as a JSON line. */
/** Bytes one compaction reads into memory at most (it merges fewer files when they are more). */
export const MAX_MERGE_BYTES = 64 * 2 ** 20;

/**
 * Committed files of `format` as one file (compaction, local and S3): a bulk format's merge
 * (Parquet: row groups under one footer); row formats one after the other, a header (CSV) once.
 */
export function mergedFile(format: FileFormat, contents: readonly Uint8Array[]): Uint8Array[] {
  if (format.merge !== undefined) return [format.merge(contents)];
  const header = format.header;
  if (header === undefined) return [...contents];
  const same = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, Math.min(b.byteLength, header.byteLength)).equals(header);
  return contents.map((b, i) => (i > 0 && same(b) ? b.subarray(header.byteLength) : b));
}

export function toFileFormat(format: FileFormat | ((value: unknown) => string) | undefined): FileFormat {
  if (format === undefined) return jsonLines();
  if (typeof format === 'function') return jsonLines(format);
  if (typeof format === 'object' && format !== null && typeof format.open === 'function' && typeof format.extension === 'string' && /^[a-z0-9]+$/.test(format.extension)) return format;
  throw new TypeError('the exactly-once file sink\'s format must be jsonLines(), csv({...}), parquet({...}) or a function (value) => string');
}
