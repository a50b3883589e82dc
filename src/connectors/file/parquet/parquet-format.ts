/**
 * Parquet, a bulk format of the exactly-once file sink, with a typed schema given by the job:
 *
 *   parquet({ columns: { key: 'string', ts: 'int64', value: 'double', note: 'string?' } })
 *
 * Types: string, int32, int64, float, double, boolean, timestamp (milliseconds since the epoch,
 * from a number or a Date; Parquet TIMESTAMP_MILLIS) and json (any value, stored as JSON text);
 * a trailing "?" makes a column nullable (null or a missing field is a null). A record is an
 * object; fields not in the schema are ignored; a record missing a required column or with a
 * value of the wrong type is rejected with a one-line reason naming the column (the sink fails,
 * or dead-letters it with malformed: 'dead-letter').
 *
 * Rows are buffered by column and written as a row group when `rowGroupRows` are buffered and
 * at every checkpoint barrier (the sink calls flush()), so the file's bytes at a barrier are a
 * valid prefix: the footer for the row groups so far (closing()) closes it. The encoding is
 * hyparquet-writer's (pinned; docs/dependencies.md); weir writes the footer itself from the
 * writer's row-group metadata, so it can compute it at a barrier without ending the file. No
 * page indexes or bloom filters are written (they would go between the row groups and the footer).
 *
 * Compaction (local directories) merges small committed files without decoding a value: each
 * file's row groups are copied as bytes, one after the other, and one footer lists them all,
 * their offsets moved by where their bytes now start (footers read with hyparquet). Only files
 * with this format's schema are merged.
 */
import { createRequire } from 'node:module';
import type { FileMetaData } from 'hyparquet';
import type { ByteWriter, ColumnSource, ParquetWriter, schemaFromColumnData } from 'hyparquet-writer';
import type { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import { jsonRecord } from '../../../core/json-record.ts';
import type { FileFormat, PartEncoder, RejectRecord } from '../formats.ts';
import { isWellFormedText, notARecord } from '../record-shape.ts';

/**
 * hyparquet and hyparquet-writer, loaded when a job first uses this format: loading them cost
 * every thread of every job ~45 ms of CPU at start (weir's API module imports this one).
 * Synchronously (require of an ES module, Node >= 20.19), as the format is made in a job's
 * synchronous builder; this module is their only user, so it always gets the same instances.
 */
interface Libs {
  readonly parquetMetadata: typeof import('hyparquet').parquetMetadata;
  readonly ByteWriter: typeof ByteWriter;
  readonly ParquetWriter: typeof ParquetWriter;
  readonly schemaFromColumnData: typeof schemaFromColumnData;
  readonly writeMetadata: typeof writeMetadata;
}
let libs: Libs | undefined;
function lib(): Libs {
  if (libs === undefined) {
    const require = createRequire(import.meta.url);
    const writer = require('hyparquet-writer') as typeof import('hyparquet-writer');
    libs = {
      parquetMetadata: (require('hyparquet') as typeof import('hyparquet')).parquetMetadata,
      ByteWriter: writer.ByteWriter,
      ParquetWriter: writer.ParquetWriter,
      schemaFromColumnData: writer.schemaFromColumnData,
      writeMetadata: (require('hyparquet-writer/src/metadata.js') as typeof import('hyparquet-writer/src/metadata.js')).writeMetadata,
    };
  }
  return libs;
}

export type ParquetColumnType = 'string' | 'int32' | 'int64' | 'float' | 'double' | 'boolean' | 'timestamp' | 'json';

export interface ParquetFormatOptions {
  /** Column name → type; a type ending in "?" is nullable. Order is the file's column order. */
  readonly columns: Readonly<Record<string, `${ParquetColumnType}` | `${ParquetColumnType}?`>>;
  /** A row group is written once this many rows are buffered (and at every barrier). Default 100 000. */
  readonly rowGroupRows?: number;
  /**
   * A row group is written once the buffered rows' values hold about this many bytes (strings'
   * and JSON text's lengths, 8 per number), whichever of the two bounds comes first. Default
   * 64 MiB: half of Flink's parquet.block.size, since the rows wait as JavaScript values and
   * writing a group copies them more than once (a 200 MiB group peaked at ~900 MiB of memory).
   */
  readonly rowGroupBytes?: number;
  /**
   * A file is closed (its part rolls) at the first write or barrier that finds this many row
   * groups in it (one more when the barrier flushes rows into it). Default 500. A part open across checkpoints (S3) gains a row group at every barrier, and
   * every barrier writes the footer that would close it, which lists every group: without a
   * bound, barrier work and checkpoint size grew with the file's age (~1 MB and ~250 ms per
   * barrier at 3,600 groups), and readers got files of thousands of one-row groups.
   */
  readonly maxRowGroups?: number;
  /** Compression of the pages (default SNAPPY). */
  readonly codec?: 'SNAPPY' | 'UNCOMPRESSED';
}

const BASIC: Record<ParquetColumnType, 'STRING' | 'INT32' | 'INT64' | 'FLOAT' | 'DOUBLE' | 'BOOLEAN' | 'TIMESTAMP' | 'JSON'> = {
  string: 'STRING', int32: 'INT32', int64: 'INT64', float: 'FLOAT', double: 'DOUBLE', boolean: 'BOOLEAN', timestamp: 'TIMESTAMP', json: 'JSON',
};

const MAGIC = 0x31524150; // "PAR1"
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

interface Column {
  readonly name: string;
  readonly type: ParquetColumnType;
  readonly nullable: boolean;
  /** Object.prototype has a property of this name: read the record's own field only. */
  readonly inherited: boolean;
}

/** A value as the column stores it, or a string saying why it cannot be (checked, never thrown). */
type Converted = { ok: true; v: unknown; bytes?: number } | { ok: false; why: string };

const OPTION_KEYS: ReadonlySet<string> = new Set(['columns', 'rowGroupRows', 'rowGroupBytes', 'maxRowGroups', 'codec']);

/** Bytes a number, bigint, boolean or Date takes in a row group's bound (its stored width, 8 at most). */
const FIXED_VALUE_BYTES = 8;

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? v.slice(0, 39) + '…' : v)}`;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return `${typeof v} ${String(v)}`;
  if (v instanceof Date) return 'a Date';
  return Array.isArray(v) ? 'an array' : typeof v;
}

function convert(c: Column, v: unknown): Converted {
  switch (c.type) {
    case 'string':
      if (typeof v !== 'string') return { ok: false, why: `must be a string, got ${describe(v)}` };
      // UTF-8 cannot hold a lone surrogate: the encoder wrote U+FFFD in its place, a changed value.
      return isWellFormedText(v) ? { ok: true, v } : { ok: false, why: `holds a lone surrogate (not valid Unicode), which UTF-8 cannot store` };
    case 'boolean':
      return typeof v === 'boolean' ? { ok: true, v } : { ok: false, why: `must be a boolean, got ${describe(v)}` };
    case 'double':
      return typeof v === 'number' ? { ok: true, v } : { ok: false, why: `must be a number (double), got ${describe(v)}` };
    case 'float':
      // A finite number beyond float's range would be stored as Infinity.
      if (typeof v === 'number' && (!Number.isFinite(v) || Number.isFinite(Math.fround(v)))) return { ok: true, v };
      return { ok: false, why: `must be a number within a float's range (about ±3.4e38), got ${describe(v)}` };
    case 'int32':
      return typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 ? { ok: true, v } : { ok: false, why: `must be an int32 (an integer from -2^31 to 2^31-1), got ${describe(v)}` };
    case 'int64':
      if (typeof v === 'number' && Number.isSafeInteger(v)) return { ok: true, v: BigInt(v) };
      if (typeof v === 'bigint' && v >= INT64_MIN && v <= INT64_MAX) return { ok: true, v };
      return { ok: false, why: `must be an int64 (a safe integer number or a bigint), got ${describe(v)}` };
    case 'timestamp':
      if (v instanceof Date && Number.isFinite(v.getTime())) return { ok: true, v: BigInt(v.getTime()) };
      if (typeof v === 'number' && Number.isSafeInteger(v)) return { ok: true, v: BigInt(v) };
      return { ok: false, why: `must be a timestamp (integer milliseconds since the epoch or a Date), got ${describe(v)}` };
    case 'json':
      return jsonValue(v);
  }
}

/**
 * A json column's value as the plain data the writer stringifies: through jsonRecord, the one
 * JSON encoding of records (bigints as text, Maps as objects, Sets as arrays; the writer's own
 * conversion wrote a bigint as an imprecise number and a Map or Set as {}). A value JSON cannot
 * hold (a function, a cycle, a throwing getter, nesting too deep) is refused here, at its
 * record: found only when the row group was written, it failed every barrier and restart.
 */
function jsonValue(v: unknown): Converted {
  let text: string | undefined;
  try {
    text = jsonRecord(v);
  } catch (e) {
    return { ok: false, why: `cannot be written as JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (text === undefined) return { ok: false, why: `cannot be written as JSON, got ${describe(v)}` };
  return { ok: true, v: JSON.parse(text), bytes: text.length };
}

export function parseParquetColumns(columns: unknown): Column[] {
  if (typeof columns !== 'object' || columns === null || Array.isArray(columns)) throw new TypeError('parquet: columns must be an object of column name → type, e.g. { key: \'string\', ts: \'int64\' }');
  const out: Column[] = [];
  for (const [name, t] of Object.entries(columns as Record<string, unknown>)) {
    if (name === '') throw new TypeError('parquet: a column name must not be empty');
    const s = typeof t === 'string' ? t : '';
    const nullable = s.endsWith('?');
    const type = (nullable ? s.slice(0, -1) : s) as ParquetColumnType;
    if (!(type in BASIC)) throw new TypeError(`parquet: column "${name}" has type ${JSON.stringify(t)}; expected one of ${Object.keys(BASIC).join(', ')} (with "?" for nullable)`);
    out.push({ name, type, nullable, inherited: name in Object.prototype });
  }
  if (out.length === 0) throw new TypeError('parquet: columns must name at least one column');
  return out;
}

/** The Parquet format of the exactly-once file sink (see the module comment). */
export function parquet(options: ParquetFormatOptions): FileFormat {
  const columns = parseParquetColumns(options?.columns);
  for (const k of Object.keys(options)) if (!OPTION_KEYS.has(k)) throw new TypeError(`parquet: unknown option "${k}"; the options are ${[...OPTION_KEYS].join(', ')}`);
  const rowGroupRows = options.rowGroupRows ?? 100_000;
  if (!(Number.isInteger(rowGroupRows) && rowGroupRows > 0)) throw new RangeError(`parquet: rowGroupRows must be a positive integer, got ${String(options.rowGroupRows)}`);
  const rowGroupBytes = options.rowGroupBytes ?? 64 * 1024 * 1024;
  if (!(Number.isSafeInteger(rowGroupBytes) && rowGroupBytes > 0)) throw new RangeError(`parquet: rowGroupBytes must be a positive integer, got ${String(options.rowGroupBytes)}`);
  const maxRowGroups = options.maxRowGroups ?? 500;
  if (!(Number.isSafeInteger(maxRowGroups) && maxRowGroups > 0)) throw new RangeError(`parquet: maxRowGroups must be a positive integer, got ${String(options.maxRowGroups)}`);
  const codec = options.codec ?? 'SNAPPY';
  if (codec !== 'SNAPPY' && codec !== 'UNCOMPRESSED') throw new RangeError(`parquet: codec must be "SNAPPY" or "UNCOMPRESSED", got ${JSON.stringify(codec)}`);
  const schema = lib().schemaFromColumnData({ columnData: columns.map((c) => ({ name: c.name, data: [], type: BASIC[c.type], nullable: c.nullable })) });
  return {
    name: 'Parquet',
    extension: 'parquet',
    open: () => new ParquetEncoder(columns, schema, rowGroupRows, rowGroupBytes, maxRowGroups, codec),
    mergeable: (file) => sameSchema(file, schema),
    merge: (files) => mergeParquet(files, schema),
  };
}

type Schema = ReturnType<typeof schemaFromColumnData>;

function schemaKey(schema: readonly { name: string; type?: string; repetition_type?: string; converted_type?: string; num_children?: number }[]): string {
  return JSON.stringify(schema.map((e) => [e.name, e.type ?? null, e.repetition_type ?? null, e.converted_type ?? null, e.num_children ?? null]));
}

function metadataOf(file: Uint8Array): FileMetaData | undefined {
  try {
    return lib().parquetMetadata(file);
  } catch {
    return undefined;
  }
}

function sameSchema(file: Uint8Array, schema: Schema): boolean {
  const m = metadataOf(file);
  return m !== undefined && schemaKey(m.schema.slice(1)) === schemaKey(schema.slice(1));
}

const shift = <V>(v: V, by: bigint): V => (typeof v === 'bigint' ? ((v + by) as V) : typeof v === 'number' ? ((v + Number(by)) as V) : v);

/** The files' row groups under one footer (see the module comment). */
export function mergeParquet(files: readonly Uint8Array[], schema: Schema): Uint8Array {
  const out: Uint8Array[] = [Buffer.from('PAR1')];
  let offset = 4;
  let numRows = 0n;
  const rowGroups: FileMetaData['row_groups'] = [];
  for (const f of files) {
    const m = lib().parquetMetadata(f);
    const view = new DataView(f.buffer, f.byteOffset, f.byteLength);
    const dataEnd = f.byteLength - 8 - view.getUint32(f.byteLength - 8, true);
    const by = BigInt(offset - 4);
    for (const rg of m.row_groups) {
      rowGroups.push({
        ...rg,
        file_offset: shift(rg.file_offset, by),
        columns: rg.columns.map((c) => ({
          ...c,
          file_offset: shift(c.file_offset, by),
          offset_index_offset: shift(c.offset_index_offset, by),
          column_index_offset: shift(c.column_index_offset, by),
          meta_data: c.meta_data && {
            ...c.meta_data,
            data_page_offset: shift(c.meta_data.data_page_offset, by),
            dictionary_page_offset: shift(c.meta_data.dictionary_page_offset, by),
            index_page_offset: shift(c.meta_data.index_page_offset, by),
            bloom_filter_offset: shift(c.meta_data.bloom_filter_offset, by),
          },
        })),
      });
    }
    out.push(f.subarray(4, dataEnd));
    offset += dataEnd - 4;
    numRows += BigInt(m.num_rows);
  }
  const w = new (lib().ByteWriter)(4096);
  lib().writeMetadata(w, { version: 2, created_by: 'weir (hyparquet-writer)', schema, num_rows: numRows, row_groups: rowGroups } as unknown as Parameters<typeof writeMetadata>[1]);
  w.appendUint32(MAGIC);
  out.push(Buffer.from(w.getBytes()));
  return Buffer.concat(out);
}

class ParquetEncoder implements PartEncoder {
  private readonly out = new (lib().ByteWriter)(64 * 1024);
  private readonly writer: ParquetWriter;
  private data: unknown[][];
  bufferedRows = 0;
  bufferedBytes = 0;

  constructor(private readonly columns: readonly Column[], private readonly schema: ReturnType<typeof schemaFromColumnData>, private readonly rowGroupRows: number, private readonly rowGroupBytes: number, private readonly maxRowGroups: number, codec: 'SNAPPY' | 'UNCOMPRESSED') {
    this.writer = new (lib().ParquetWriter)({ writer: this.out, schema, codec, createdBy: 'weir (hyparquet-writer)' });
    this.data = columns.map(() => []);
  }

  encode(values: readonly unknown[], reject: RejectRecord): Uint8Array | undefined {
    const cols = this.columns;
    const row: unknown[] = new Array(cols.length);
    let chunks: Uint8Array[] | undefined;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      const shape = notARecord(v);
      if (shape !== undefined) {
        reject(v, `a Parquet record must be an object with the columns as fields, got ${typeof v === 'object' ? shape : describe(v)}`);
        continue;
      }
      const r = v as Record<string, unknown>;
      let bad: string | undefined;
      let bytes = 0;
      for (let c = 0; c < cols.length; c++) {
        const col = cols[c]!;
        // A missing field named as Object.prototype's (constructor, toString) is missing, not inherited.
        const x = col.inherited && !Object.hasOwn(r, col.name) ? undefined : r[col.name];
        if (x === undefined || x === null) {
          if (!col.nullable) {
            bad = `column "${col.name}" (${col.type}) is ${x === null ? 'null' : 'missing'} and not nullable`;
            break;
          }
          row[c] = null;
          continue;
        }
        const conv = convert(col, x);
        if (!conv.ok) {
          bad = `column "${col.name}" ${conv.why}`;
          break;
        }
        row[c] = conv.v;
        bytes += conv.bytes ?? (typeof x === 'string' ? x.length : FIXED_VALUE_BYTES);
      }
      if (bad !== undefined) {
        reject(v, bad);
        continue;
      }
      for (let c = 0; c < cols.length; c++) this.data[c]!.push(row[c]);
      this.bufferedBytes += bytes;
      if (++this.bufferedRows >= this.rowGroupRows || this.bufferedBytes >= this.rowGroupBytes) (chunks ??= []).push(this.flush()!);
    }
    if (chunks === undefined) return undefined;
    return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  }

  flush(): Uint8Array | undefined {
    if (this.bufferedRows > 0) {
      // No statistics for json columns (a JSON bound is kept whole, the footer would carry whole documents).
      const columnData: ColumnSource[] = this.columns.map((c, i) => ({ name: c.name, data: this.data[i]!, offsetIndex: false, columnIndex: false, statistics: c.type !== 'json' }));
      this.writer.write({ columnData, rowGroupSize: this.bufferedRows });
      (this.writer as unknown as { pendingIndexes: unknown[] }).pendingIndexes.length = 0; // no page indexes (see the module comment)
      this.data = this.columns.map(() => []);
      this.bufferedRows = 0;
      this.bufferedBytes = 0;
    }
    // Nothing written yet but the magic number: no bytes (a part without rows is no file).
    if (this.out.index === 0 || this.writer.row_groups.length === 0) return undefined;
    // The writer's offsets are absolute (out.offset runs on); only the bytes not handed out yet are taken.
    const bytes = Buffer.from(this.out.getBytes());
    this.out.index = 0;
    return bytes;
  }

  isFull(): boolean {
    return this.writer.row_groups.length >= this.maxRowGroups;
  }

  closing(): Uint8Array {
    const w = new (lib().ByteWriter)(4096);
    lib().writeMetadata(w, {
      version: 2,
      created_by: this.writer.createdBy,
      schema: this.schema,
      num_rows: this.writer.num_rows,
      row_groups: this.writer.row_groups,
    } as unknown as Parameters<typeof writeMetadata>[1]);
    w.appendUint32(MAGIC);
    return Buffer.from(w.getBytes());
  }
}
