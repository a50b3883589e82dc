/**
 * Columnar binary encoding of a batch for the exchange between threads. Records of one batch
 * mostly share one shape (plain objects with the same fields in the same order, or primitives),
 * so the field names are written once per batch and each field becomes a column: numbers as
 * Int32Array / Float64Array, booleans as bytes, strings as UTF-8 bytes with offsets, anything
 * else as one msgpack array. Timestamps that are all equal (records without event time) take
 * 8 bytes; key groups take 2 bytes each. Compared with msgpack records this skips the
 * per-value type dispatch on both sides, and objects are rebuilt by a function compiled once
 * per field list, so they all get one hidden class.
 *
 * Layout (little-endian; every section starts at a multiple of 8, so typed arrays view the
 * bytes in place):
 *   0  u8 TAG (0xc1: a byte msgpack never uses, so decodeBatch tells this from older
 *      msgpack-encoded batches kept in checkpoints), u8 VERSION, u8 flags, u8 column count
 *   4  u32 record count n
 *   8  f64 the timestamp of every record (flag TS_CONST), else 0
 *  16  u32 byte length L of the field names (JSON array; L = 0: the records are primitives,
 *      one column), then L bytes; then one kind byte per column; padding to 8
 *      [timestamps f64 x n unless TS_CONST] [key groups u16 x n if KEY_GROUPS, padded]
 *      [key hashes i32 x n if KEY_HASHES, padded]
 *      per column: I32 i32 x n | F64 f64 x n | BOOL u8 x n | STR u32 offsets x (n+1), bytes |
 *      PACKED u32 length, msgpack bytes — each padded to 8.
 * A batch that does not fit (mixed shapes, class instances, arrays as records, key groups
 * over 65535) is returned as undefined, and the caller encodes it with msgpack instead.
 * Version 2 is version 1 with the KEY_HASHES flag allowed; a batch without key hashes is still
 * written as version 1, byte for byte as before, and an older reader refuses a version 2 batch
 * by its version instead of reading the hashes as a column.
 */
import { newTimestamps, type Batch } from './batch.ts';

export const COLUMNAR_TAG = 0xc1;
const VERSION = 1;
/** The version of a batch with key hashes (KEY_HASHES). */
const VERSION_KEY_HASHES = 2;

const TS_CONST = 1;
const KEY_GROUPS = 2;
const KEY_HASHES = 4;
const HEADER_BYTES = 16;

const I32 = 1;
const F64 = 2;
const BOOL = 3;
/** Strings, every one ASCII (one byte per character). */
const STR_ASCII = 4;
const STR_UTF8 = 5;
const PACKED = 6;
/** Returned by writeStrings for a string UTF-8 cannot carry: the batch goes to msgpack. */
const NOT_COLUMNAR = -1;

/** msgpack for columns of other values; given by codec.ts (which owns the one Packr). */
export interface ValuePacker {
  pack(v: unknown): Uint8Array;
  unpack(bytes: Uint8Array): unknown;
}

const textEncoder = new TextEncoder();
/** ignoreBOM: a string's leading U+FEFF is data, not a byte-order mark to strip. */
const textDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
/** Lone surrogates do not survive UTF-8 (TextEncoder writes U+FFFD): such batches go to msgpack. */
const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();
const objectProto = Object.prototype;
/** Field names that can be written as plain property names in compiled code (never data otherwise). */
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** Shapes remembered with their compiled reader/builder; beyond this, the generic (slower) path. */
const MAX_SHAPES = 256;
/** Strings up to this many UTF-16 units are copied byte by byte; longer ones by TextEncoder. */
const SHORT_STRING = 32;

// ---- the write buffer --------------------------------------------------------------------

/** Scratch space, grown as needed; each batch is copied out of it into its own buffer. */
let buf = new ArrayBuffer(64 * 1024);
let u8 = new Uint8Array(buf);
let dv = new DataView(buf);

function ensure(end: number): void {
  if (end <= buf.byteLength) return;
  let size = buf.byteLength * 2;
  while (size < end) size *= 2;
  const next = new ArrayBuffer(size);
  new Uint8Array(next).set(u8);
  buf = next;
  u8 = new Uint8Array(buf);
  dv = new DataView(buf);
}

const pad8 = (n: number): number => (n + 7) & ~7;

// ---- shapes ---------------------------------------------------------------------------------

interface Shape {
  readonly names: readonly string[];
  /** The names as the JSON bytes written into each batch. */
  readonly nameBytes: Uint8Array;
  /**
   * Copies field f of every record into cols[f]; returns false when some record is not a plain
   * object with exactly these own enumerable fields in this order (then the batch is not columnar).
   */
  readonly extract: (values: readonly unknown[], cols: unknown[][]) => boolean;
  /** Builds the records from the columns (arrays or typed arrays). */
  readonly build: (n: number, cols: ArrayLike<unknown>[], out: unknown[]) => void;
  /** Reused column arrays of the writer. */
  readonly cols: unknown[][];
}

const shapesByKey = new Map<string, Shape>();

function shapeFor(names: string[]): Shape | undefined {
  const json = JSON.stringify(names);
  let s = shapesByKey.get(json);
  if (s !== undefined) return s;
  if (shapesByKey.size >= MAX_SHAPES || names.length > 255) return undefined;
  if (names.includes('__proto__')) return undefined;
  s = {
    names,
    nameBytes: textEncoder.encode(json),
    extract: names.every((n) => IDENTIFIER.test(n)) ? compiledExtract(names) : genericExtract(names),
    build: names.every((n) => IDENTIFIER.test(n)) ? compiledBuild(names) : genericBuild(names),
    cols: names.map(() => []),
  };
  shapesByKey.set(json, s);
  return s;
}

/** Own enumerable fields of `v`, in order, are exactly `names` (for-in also sees inherited ones: none on Object.prototype). */
function sameFields(v: object, names: readonly string[]): boolean {
  let j = 0;
  for (const k in v) {
    if (k !== names[j]) return false;
    j++;
  }
  return j === names.length;
}

function genericExtract(names: readonly string[]): Shape['extract'] {
  return (values, cols) => {
    for (let i = 0; i < values.length; i++) {
      const v = values[i] as Record<string, unknown>;
      if (typeof v !== 'object' || v === null || Object.getPrototypeOf(v) !== objectProto || !sameFields(v, names)) return false;
      for (let f = 0; f < names.length; f++) cols[f]![i] = v[names[f]!];
    }
    return true;
  };
}

function genericBuild(names: readonly string[]): Shape['build'] {
  return (n, cols, out) => {
    for (let i = 0; i < n; i++) {
      const o: Record<string, unknown> = {};
      for (let f = 0; f < names.length; f++) o[names[f]!] = cols[f]![i];
      out[i] = o;
    }
  };
}

/*
 * Compiled per field list: named property loads and an object literal give monomorphic access
 * and one hidden class for every record built. Only identifier names get here (IDENTIFIER), so
 * the source text is made of identifiers and fixed code, never of arbitrary data.
 */
function compiledExtract(names: readonly string[]): Shape['extract'] {
  const body =
    `return function extract(values, cols) {\n` +
    names.map((_, f) => `const c${f} = cols[${f}];\n`).join('') +
    `for (let i = 0; i < values.length; i++) {\n` +
    `const v = values[i];\n` +
    `if (typeof v !== 'object' || v === null || getProto(v) !== proto || !sameFields(v, names)) return false;\n` +
    names.map((n, f) => `c${f}[i] = v.${n};\n`).join('') +
    `}\nreturn true;\n}`;
  return new Function('getProto', 'proto', 'sameFields', 'names', body)(Object.getPrototypeOf, objectProto, sameFields, names) as Shape['extract'];
}

function compiledBuild(names: readonly string[]): Shape['build'] {
  const body =
    `return function build(n, cols, out) {\n` +
    names.map((_, f) => `const c${f} = cols[${f}];\n`).join('') +
    `for (let i = 0; i < n; i++) out[i] = { ${names.map((n, f) => `${n}: c${f}[i]`).join(', ')} };\n}`;
  return new Function(body)() as Shape['build'];
}

// ---- encoding -------------------------------------------------------------------------------

/** Kind of a column: the narrowest that holds every value. */
function columnKind(c: readonly unknown[], n: number): number {
  const t = typeof c[0];
  if (t === 'number') {
    let int = true;
    for (let i = 0; i < n; i++) {
      const x = c[i];
      if (typeof x !== 'number') return PACKED;
      // -0 is not an int32 (it would come back as 0).
      if (int && ((x | 0) !== x || (x === 0 && 1 / x < 0))) int = false;
    }
    return int ? I32 : F64;
  }
  if (t === 'string') {
    for (let i = 0; i < n; i++) if (typeof c[i] !== 'string') return PACKED;
    return STR_ASCII; // becomes STR_UTF8 while writing if some string is not ASCII
  }
  if (t === 'boolean') {
    for (let i = 0; i < n; i++) if (typeof c[i] !== 'boolean') return PACKED;
    return BOOL;
  }
  return PACKED;
}

/** Writes column `c` at `pos` (a multiple of 8); returns [end, kind written], kind NOT_COLUMNAR to give up. */
function writeColumn(c: readonly unknown[], n: number, kind: number, pos: number, packer: ValuePacker): [number, number] {
  switch (kind) {
    case I32: {
      ensure(pos + n * 4 + 8);
      const a = new Int32Array(buf, pos, n);
      for (let i = 0; i < n; i++) a[i] = c[i] as number;
      return [pad8(pos + n * 4), kind];
    }
    case F64: {
      ensure(pos + n * 8);
      const a = new Float64Array(buf, pos, n);
      for (let i = 0; i < n; i++) a[i] = c[i] as number;
      return [pos + n * 8, kind];
    }
    case BOOL: {
      ensure(pos + n + 8);
      for (let i = 0; i < n; i++) u8[pos + i] = c[i] ? 1 : 0;
      return [pad8(pos + n), kind];
    }
    case STR_ASCII:
      return writeStrings(c as readonly string[], n, pos);
    default: {
      const packed = packer.pack(c.length === n ? c : c.slice(0, n));
      ensure(pos + 4 + packed.byteLength + 8);
      dv.setUint32(pos, packed.byteLength, true);
      u8.set(packed, pos + 4);
      return [pad8(pos + 4 + packed.byteLength), PACKED];
    }
  }
}

function writeStrings(c: readonly string[], n: number, pos: number): [number, number] {
  const offsetsAt = pos;
  let p = pad8(pos + (n + 1) * 4);
  const start = p;
  let ascii = true;
  ensure(p);
  for (let i = 0; i < n; i++) {
    dv.setUint32(offsetsAt + i * 4, p - start, true);
    const s = c[i]!;
    const len = s.length;
    // Room for the worst case (3 bytes per UTF-16 unit); the offsets are inside `buf` too.
    ensure(p + len * 3 + 8);
    let k = 0;
    if (len <= SHORT_STRING) {
      for (; k < len; k++) {
        const ch = s.charCodeAt(k);
        if (ch >= 0x80) break;
        u8[p + k] = ch;
      }
    }
    if (k === len) {
      p += len;
    } else {
      if (!isWellFormed(s)) return [p, NOT_COLUMNAR];
      const written = textEncoder.encodeInto(s, u8.subarray(p)).written;
      if (written !== len) ascii = false;
      else for (let j = 0; j < written && ascii; j++) if (u8[p + j]! >= 0x80) ascii = false;
      p += written;
    }
  }
  dv.setUint32(offsetsAt + n * 4, p - start, true);
  return [pad8(p), ascii ? STR_ASCII : STR_UTF8];
}

/**
 * The batch in the columnar layout, in a buffer of its own (transferable), or undefined when
 * its records do not fit it (the caller then uses msgpack).
 */
export function encodeColumnar(batch: Batch, packer: ValuePacker): Uint8Array | undefined {
  const { values, timestamps, keyGroups } = batch;
  const n = values.length;
  if (n === 0 || timestamps.length !== n || (keyGroups !== undefined && keyGroups.length !== n)) return undefined;
  // Hashes only beside key groups, of the same length; else left out (a receiver hashes itself).
  const keyHashes = keyGroups !== undefined && batch.keyHashes?.length === n ? batch.keyHashes : undefined;
  const first = values[0];
  let shape: Shape | undefined;
  let cols: unknown[][];
  if (typeof first === 'object' && first !== null) {
    if (Object.getPrototypeOf(first) !== objectProto) return undefined;
    shape = shapeFor(Object.keys(first));
    if (shape === undefined) return undefined;
    cols = shape.cols;
    if (!shape.extract(values, cols)) {
      releaseColumns(cols, n);
      return undefined;
    }
  } else {
    const t = typeof first;
    if (t !== 'number' && t !== 'string' && t !== 'boolean') return undefined;
    cols = [values];
  }
  try {
    return encodeColumns(cols, n, timestamps, keyGroups, keyHashes, shape?.nameBytes, packer);
  } finally {
    if (shape !== undefined) releaseColumns(shape.cols, n);
  }
}

/**
 * The writer's columns must not keep the batch's values alive, but they keep their length: cut
 * to 0 they grew again slot by slot for every batch (~50 bytes of garbage a record, measured).
 */
function releaseColumns(cols: unknown[][], n: number): void {
  for (const c of cols) c.fill(undefined, 0, n); // fill stops at the array's end
}

function encodeColumns(
  cols: unknown[][], n: number, timestamps: number[], keyGroups: number[] | undefined, keyHashes: number[] | undefined,
  nameBytes: Uint8Array | undefined, packer: ValuePacker,
): Uint8Array | undefined {
  let tsConst = true;
  const t0 = timestamps[0]!;
  for (let i = 1; i < n; i++) {
    const t = timestamps[i]!;
    // 0 and -0 are equal to !==, not to the f64 written
    if (t !== t0 || (t === 0 && 1 / t !== 1 / t0)) {
      tsConst = false;
      break;
    }
  }
  if (keyGroups !== undefined) {
    for (let i = 0; i < n; i++) {
      const g = keyGroups[i]!;
      if (!(g >= 0 && g <= 0xffff && (g | 0) === g)) return undefined;
    }
  }
  if (keyHashes !== undefined) {
    for (let i = 0; i < n; i++) if ((keyHashes[i]! | 0) !== keyHashes[i]) return undefined;
  }
  const numCols = cols.length;
  const nameLen = nameBytes?.byteLength ?? 0;
  const kindsAt = HEADER_BYTES + 4 + nameLen;
  let pos = pad8(kindsAt + numCols);
  ensure(pos + 8);
  u8[0] = COLUMNAR_TAG;
  u8[1] = keyHashes !== undefined ? VERSION_KEY_HASHES : VERSION;
  u8[2] = (tsConst ? TS_CONST : 0) | (keyGroups !== undefined ? KEY_GROUPS : 0) | (keyHashes !== undefined ? KEY_HASHES : 0);
  u8[3] = numCols;
  dv.setUint32(4, n, true);
  dv.setFloat64(8, tsConst ? t0 : 0, true);
  dv.setUint32(HEADER_BYTES, nameLen, true);
  if (nameBytes !== undefined) u8.set(nameBytes, HEADER_BYTES + 4);
  if (!tsConst) {
    ensure(pos + n * 8);
    const a = new Float64Array(buf, pos, n);
    for (let i = 0; i < n; i++) a[i] = timestamps[i]!;
    pos += n * 8;
  }
  if (keyGroups !== undefined) {
    ensure(pos + n * 2 + 8);
    const a = new Uint16Array(buf, pos, n);
    for (let i = 0; i < n; i++) a[i] = keyGroups[i]!;
    pos = pad8(pos + n * 2);
  }
  if (keyHashes !== undefined) {
    ensure(pos + n * 4 + 8);
    const a = new Int32Array(buf, pos, n);
    for (let i = 0; i < n; i++) a[i] = keyHashes[i]!;
    pos = pad8(pos + n * 4);
  }
  for (let f = 0; f < numCols; f++) {
    const c = cols[f]!;
    const [end, kind] = writeColumn(c, n, columnKind(c, n), pos, packer);
    if (kind === NOT_COLUMNAR) return undefined;
    u8[kindsAt + f] = kind;
    pos = end;
  }
  return new Uint8Array(buf.slice(0, pos));
}

// ---- decoding -------------------------------------------------------------------------------

/** Decodes a batch written by encodeColumnar (bytes[0] === COLUMNAR_TAG). */
export function decodeColumnar(bytes: Uint8Array, packer: ValuePacker): Batch {
  // Typed-array views need 8-byte alignment: bytes read back from a checkpoint file may not have it.
  if (bytes.byteOffset % 8 !== 0) bytes = bytes.slice();
  const b = bytes.buffer;
  const base = bytes.byteOffset;
  const view = new DataView(b, base, bytes.byteLength);
  if (bytes[0] !== COLUMNAR_TAG) throw new Error('not a columnar batch');
  if (bytes[1] !== VERSION && bytes[1] !== VERSION_KEY_HASHES) throw new Error(`columnar batch of version ${bytes[1]}; this version reads ${VERSION} and ${VERSION_KEY_HASHES}`);
  const flags = bytes[2]!;
  if ((flags & KEY_HASHES) !== 0 && (bytes[1] !== VERSION_KEY_HASHES || (flags & KEY_GROUPS) === 0)) throw new Error('columnar batch: key hashes without key groups or in a version 1 batch');
  const numCols = bytes[3]!;
  const n = view.getUint32(4, true);
  const nameLen = view.getUint32(HEADER_BYTES, true);
  const kindsAt = HEADER_BYTES + 4 + nameLen;
  let pos = pad8(kindsAt + numCols);
  // Arrays are allocated at their length and filled by index: growing them by push allocated
  // about twice over (most of a decoded record's garbage, measured).
  let timestamps: number[];
  if ((flags & TS_CONST) !== 0) {
    timestamps = newTimestamps(n).fill(view.getFloat64(8, true));
  } else {
    timestamps = newTimestamps(n);
    const a = new Float64Array(b, base + pos, n);
    for (let i = 0; i < n; i++) timestamps[i] = a[i]!;
    pos += n * 8;
  }
  let keyGroups: number[] | undefined;
  if ((flags & KEY_GROUPS) !== 0) {
    keyGroups = new Array<number>(n);
    const a = new Uint16Array(b, base + pos, n);
    for (let i = 0; i < n; i++) keyGroups[i] = a[i]!;
    pos = pad8(pos + n * 2);
  }
  let keyHashes: number[] | undefined;
  if ((flags & KEY_HASHES) !== 0) {
    keyHashes = new Array<number>(n);
    const a = new Int32Array(b, base + pos, n);
    for (let i = 0; i < n; i++) keyHashes[i] = a[i]!;
    pos = pad8(pos + n * 4);
  }
  const cols: ArrayLike<unknown>[] = [];
  for (let f = 0; f < numCols; f++) {
    const kind = bytes[kindsAt + f]!;
    switch (kind) {
      case I32:
        cols.push(new Int32Array(b, base + pos, n));
        pos = pad8(pos + n * 4);
        break;
      case F64:
        cols.push(new Float64Array(b, base + pos, n));
        pos += n * 8;
        break;
      case BOOL: {
        const c = new Array<boolean>(n);
        for (let i = 0; i < n; i++) c[i] = bytes[pos + i] !== 0;
        cols.push(c);
        pos = pad8(pos + n);
        break;
      }
      case STR_ASCII:
      case STR_UTF8:
        pos = readStrings(bytes, view, pos, n, kind === STR_ASCII, cols);
        break;
      case PACKED: {
        const len = view.getUint32(pos, true);
        cols.push(packer.unpack(bytes.subarray(pos + 4, pos + 4 + len)) as unknown[]);
        pos = pad8(pos + 4 + len);
        break;
      }
      default:
        throw new Error(`columnar batch: unknown column kind ${kind}`);
    }
  }
  let values: unknown[];
  if (nameLen === 0) {
    const c = cols[0]!;
    values = Array.isArray(c) ? c : Array.from(c);
  } else {
    const names = JSON.parse(textDecoder.decode(bytes.subarray(HEADER_BYTES + 4, kindsAt))) as string[];
    const shape = shapeFor(names);
    values = new Array(n);
    (shape?.build ?? genericBuild(names))(n, cols, values);
  }
  if (keyGroups === undefined) return { values, timestamps };
  return keyHashes === undefined ? { values, timestamps, keyGroups } : { values, timestamps, keyGroups, keyHashes };
}

const fromCharCode = String.fromCharCode;

function readStrings(bytes: Uint8Array, view: DataView, pos: number, n: number, ascii: boolean, cols: ArrayLike<unknown>[]): number {
  const offsetsAt = pos;
  const start = pad8(pos + (n + 1) * 4);
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const a = start + view.getUint32(offsetsAt + i * 4, true);
    const e = start + view.getUint32(offsetsAt + i * 4 + 4, true);
    out[i] = ascii ? asciiString(bytes, a, e) : textDecoder.decode(bytes.subarray(a, e));
  }
  cols.push(out);
  return pad8(start + view.getUint32(offsetsAt + n * 4, true));
}

/** A string of ASCII bytes [a, e): short ones built in JS (a native call costs more than that). */
function asciiString(u: Uint8Array, a: number, e: number): string {
  switch (e - a) {
    case 0: return '';
    case 1: return fromCharCode(u[a]!);
    case 2: return fromCharCode(u[a]!, u[a + 1]!);
    case 3: return fromCharCode(u[a]!, u[a + 1]!, u[a + 2]!);
    case 4: return fromCharCode(u[a]!, u[a + 1]!, u[a + 2]!, u[a + 3]!);
    case 5: return fromCharCode(u[a]!, u[a + 1]!, u[a + 2]!, u[a + 3]!, u[a + 4]!);
    case 6: return fromCharCode(u[a]!, u[a + 1]!, u[a + 2]!, u[a + 3]!, u[a + 4]!, u[a + 5]!);
    case 7: return fromCharCode(u[a]!, u[a + 1]!, u[a + 2]!, u[a + 3]!, u[a + 4]!, u[a + 5]!, u[a + 6]!);
    case 8: return fromCharCode(u[a]!, u[a + 1]!, u[a + 2]!, u[a + 3]!, u[a + 4]!, u[a + 5]!, u[a + 6]!, u[a + 7]!);
    default:
      if (e - a <= 64) return fromCharCode.apply(null, u.subarray(a, e) as unknown as number[]);
      return textDecoder.decode(u.subarray(a, e));
  }
}
