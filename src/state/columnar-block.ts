/**
 * Block format 3: one key group of one state as columns, keys and values apart, each in the
 * tightest layout that holds it exactly:
 *
 *   0  u8  format (3)
 *   1  u8  key kind     0 latin1 strings, 1 UTF-16 strings, 2 int32, 3 float64, 4 msgpack
 *   2  u8  length width 1, 2 or 4 bytes per string key length (0 for other key kinds)
 *   3  u8  value kind   0 uint8, 1 uint16, 2 int32, 3 float64, 4 msgpack
 *   4  u32 entries
 *   8  u32 bytes of the key column
 *  12  u32 bytes of the length column
 *  16  key column, length column, padding to a multiple of 8, value column (to the end)
 *
 * Why: snapshots of millions of small entries (word counts, sums per key) spend their time
 * in the encoder. msgpack walks every key and value; here string keys are joined and
 * converted in one native call, lengths and numbers are typed-array copies. The common case
 * (string or integer keys, numeric values) encodes and decodes several times faster at the
 * same size; anything else falls back to msgpack for that column only. Strings are stored
 * as Latin-1 when every character fits, else as UTF-16, so every string (lone surrogates
 * included) comes back exactly.
 */
import { decodeValue, encodeValue } from '../core/codec.ts';

export const COLUMNAR_FORMAT = 3;

export const HEADER = 16;

export const enum KeyKind { Latin1 = 0, Utf16 = 1, Int32 = 2, Float64 = 3, Packed = 4 }
export const enum ValueKind { Uint8 = 0, Uint16 = 1, Int32 = 2, Float64 = 3, Packed = 4 }

const NOT_LATIN1 = /[^\u0000-\u00ff]/;

function keyKind(keys: readonly (string | number)[]): KeyKind {
  if (keys.length === 0) return KeyKind.Latin1;
  if (typeof keys[0] === 'string') {
    for (let i = 0; i < keys.length; i++) if (typeof keys[i] !== 'string') return KeyKind.Packed;
    return KeyKind.Latin1; // refined to UTF-16 once the joined text is known
  }
  let int = true;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (typeof k !== 'number') return KeyKind.Packed;
    if (int && ((k | 0) !== k || Object.is(k, -0))) int = false;
  }
  return int ? KeyKind.Int32 : KeyKind.Float64;
}

function valueKind(values: readonly unknown[]): ValueKind {
  let min = 0;
  let max = 0;
  let int = true;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'number') return ValueKind.Packed;
    if (int) {
      if ((v | 0) !== v || Object.is(v, -0)) int = false;
      else if (v < min) min = v;
      else if (v > max) max = v;
    }
  }
  if (!int) return ValueKind.Float64;
  if (min >= 0 && max <= 0xff) return ValueKind.Uint8;
  if (min >= 0 && max <= 0xffff) return ValueKind.Uint16;
  return ValueKind.Int32;
}

export const VALUE_WIDTH = [1, 2, 4, 8] as const;

/** Encodes parallel arrays of normalised keys and (already serialized) values. */
export function encodeColumns(keys: readonly (string | number)[], values: readonly unknown[]): Uint8Array {
  const n = keys.length;
  let kk = keyKind(keys);
  let keyBytes: Uint8Array | undefined;
  let text = '';
  let keyLen: number;
  let lenWidth = 0;
  let lenBytes = 0;
  let lengths: Uint8Array | Uint16Array | Uint32Array | undefined;
  if (kk === KeyKind.Latin1) {
    text = (keys as string[]).join('');
    if (NOT_LATIN1.test(text)) kk = KeyKind.Utf16;
    keyLen = kk === KeyKind.Latin1 ? text.length : 2 * text.length;
    let longest = 0;
    for (let i = 0; i < n; i++) if ((keys[i] as string).length > longest) longest = (keys[i] as string).length;
    lenWidth = longest <= 0xff ? 1 : longest <= 0xffff ? 2 : 4;
    lengths = lenWidth === 1 ? new Uint8Array(n) : lenWidth === 2 ? new Uint16Array(n) : new Uint32Array(n);
    for (let i = 0; i < n; i++) lengths[i] = (keys[i] as string).length;
    lenBytes = n * lenWidth;
  } else {
    keyBytes =
      kk === KeyKind.Int32 ? new Uint8Array(Int32Array.from(keys as number[]).buffer)
      : kk === KeyKind.Float64 ? new Uint8Array(Float64Array.from(keys as number[]).buffer)
      : encodeValue(keys);
    keyLen = keyBytes.length;
  }
  const vk = valueKind(values);
  const valueBytes = vk === ValueKind.Packed ? encodeValue(values) : undefined;
  const valuesAt = align8(HEADER + keyLen + lenBytes);
  const total = valuesAt + (valueBytes !== undefined ? valueBytes.length : n * VALUE_WIDTH[vk as 0 | 1 | 2 | 3]);
  const out = new Uint8Array(total);
  writeColumnarHeader(out, kk, lenWidth, vk, n, keyLen, lenBytes);
  // String keys are converted straight into the block, in one native call.
  if (keyBytes !== undefined) out.set(keyBytes, HEADER);
  else Buffer.from(out.buffer).write(text, HEADER, kk === KeyKind.Latin1 ? 'latin1' : 'utf16le');
  if (lengths !== undefined) out.set(new Uint8Array(lengths.buffer, 0, lenBytes), HEADER + keyLen);
  if (valueBytes !== undefined) out.set(valueBytes, valuesAt);
  else typedValues(vk, out.buffer, valuesAt, n).set(values as number[]);
  return out;
}

export function align8(x: number): number {
  return (x + 7) & ~7;
}

export function typedValues(vk: ValueKind, buf: ArrayBufferLike, at: number, n: number): Uint8Array | Uint16Array | Int32Array | Float64Array {
  switch (vk) {
    case ValueKind.Uint8: return new Uint8Array(buf, at, n);
    case ValueKind.Uint16: return new Uint16Array(buf, at, n);
    case ValueKind.Int32: return new Int32Array(buf, at, n);
    default: return new Float64Array(buf, at, n);
  }
}

/** Column `bytes[at, at + n * width)` as a typed array, copied when it is not aligned. */
function column<T>(bytes: Uint8Array, at: number, n: number, width: number, make: (b: ArrayBufferLike, at: number, n: number) => T): T {
  const abs = bytes.byteOffset + at;
  if (abs % width === 0) return make(bytes.buffer, abs, n);
  // A copy into a buffer of its own: not bytes.slice(), which for a Buffer is a view whose
  // .buffer is the whole (pooled) memory the block sits in.
  const copy = new Uint8Array(n * width);
  copy.set(bytes.subarray(at, at + n * width));
  return make(copy.buffer, 0, n);
}

/** Decodes a format-3 block into its key and value columns; throws on anything inconsistent. */
export function decodeColumns(bytes: Uint8Array): { keys: (string | number)[]; values: unknown[] } {
  if (bytes.length < HEADER || bytes[0] !== COLUMNAR_FORMAT) throw new Error('not a columnar state block');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kk = bytes[1]!;
  const lenWidth = bytes[2]!;
  const vk = bytes[3]!;
  const n = view.getUint32(4, true);
  const keyLen = view.getUint32(8, true);
  const lenBytes = view.getUint32(12, true);
  const valuesAt = align8(HEADER + keyLen + lenBytes);
  const valueLen = bytes.length - valuesAt;
  const stringKeys = kk === KeyKind.Latin1 || kk === KeyKind.Utf16;
  if (
    kk > KeyKind.Packed || vk > ValueKind.Packed || valueLen < 0 ||
    (stringKeys ? ![1, 2, 4].includes(lenWidth) || lenBytes !== n * lenWidth : lenBytes !== 0) ||
    (kk === KeyKind.Int32 && keyLen !== n * 4) || (kk === KeyKind.Float64 && keyLen !== n * 8) ||
    (vk !== ValueKind.Packed && valueLen !== n * VALUE_WIDTH[vk as 0 | 1 | 2 | 3])
  ) {
    throw new Error(`corrupt columnar state block (key kind ${kk}, value kind ${vk}, ${n} entries, ${bytes.length} bytes)`);
  }
  let keys: (string | number)[];
  if (stringKeys) {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset + HEADER, keyLen).toString(kk === KeyKind.Latin1 ? 'latin1' : 'utf16le');
    const lengths = column(bytes, HEADER + keyLen, n, lenWidth, (b, at, m) =>
      lenWidth === 1 ? new Uint8Array(b, at, m) : lenWidth === 2 ? new Uint16Array(b, at, m) : new Uint32Array(b, at, m));
    // Made at its length, not by push: growing by push allocates about three times the array in
    // fresh memory (~11 µs a 4 KiB page on this project's VMs); 10 M keys took 1.0 s by push and
    // 0.3 s so. (Node 20 gives `new Array(n)` fast holey elements at any n up to 2^25, measured.)
    keys = new Array<string>(n);
    let pos = 0;
    for (let i = 0; i < n; i++) {
      const end = pos + lengths[i]!;
      keys[i] = text.slice(pos, end);
      pos = end;
    }
    if (pos !== text.length) throw new Error(`corrupt columnar state block: key lengths add up to ${pos} of ${text.length} characters`);
  } else if (kk === KeyKind.Int32) {
    keys = arrayOf(column(bytes, HEADER, n, 4, (b, at, m) => new Int32Array(b, at, m)), n);
  } else if (kk === KeyKind.Float64) {
    keys = arrayOf(column(bytes, HEADER, n, 8, (b, at, m) => new Float64Array(b, at, m)), n);
  } else {
    keys = decodeValue<(string | number)[]>(bytes.subarray(HEADER, HEADER + keyLen));
  }
  let values: unknown[];
  if (vk === ValueKind.Packed) {
    values = decodeValue<unknown[]>(bytes.subarray(valuesAt));
  } else {
    const w = VALUE_WIDTH[vk as 0 | 1 | 2 | 3];
    values = arrayOf(column(bytes, valuesAt, n, w, (b, at, m) => typedValues(vk, b, at, m)), n);
  }
  if (!Array.isArray(keys) || !Array.isArray(values) || keys.length !== n || values.length !== n) {
    throw new Error(`corrupt columnar state block: ${n} entries declared, ${keys.length} keys and ${values.length} values found`);
  }
  return { keys, values };
}

/** A format-3 block's string-key column as it is stored: characters and lengths (views, or copies where not aligned). */
export interface StoredKeyColumn {
  /** Latin-1 bytes, or UTF-16 code units. */
  readonly chars: Uint8Array | Uint16Array;
  readonly lens: Uint8Array | Uint16Array | Uint32Array;
  readonly count: number;
}

/**
 * The string-key column of a format-3 block, undefined when its keys are not strings. Checked
 * as decodeColumns checks it (the lengths add up to the characters), so a cache filled from it
 * (key-column-cache.ts) holds exactly the keys decodeColumns gives.
 */
export function storedKeyColumn(bytes: Uint8Array): StoredKeyColumn | undefined {
  if (bytes.length < HEADER || bytes[0] !== COLUMNAR_FORMAT) return undefined;
  const kk = bytes[1]!;
  if (kk !== KeyKind.Latin1 && kk !== KeyKind.Utf16) return undefined;
  const lenWidth = bytes[2]!;
  if (lenWidth !== 1 && lenWidth !== 2 && lenWidth !== 4) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = view.getUint32(4, true);
  const keyLen = view.getUint32(8, true);
  if (view.getUint32(12, true) !== n * lenWidth || HEADER + keyLen + n * lenWidth > bytes.length) return undefined;
  const wide = kk === KeyKind.Utf16;
  if (wide && keyLen % 2 !== 0) return undefined;
  const charCount = wide ? keyLen / 2 : keyLen;
  const chars = wide ? column(bytes, HEADER, charCount, 2, (b, at, m) => new Uint16Array(b, at, m)) : bytes.subarray(HEADER, HEADER + keyLen);
  const lens = column(bytes, HEADER + keyLen, n, lenWidth, (b, at, m) =>
    lenWidth === 1 ? new Uint8Array(b, at, m) : lenWidth === 2 ? new Uint16Array(b, at, m) : new Uint32Array(b, at, m));
  let sum = 0;
  for (let i = 0; i < n; i++) sum += lens[i]!;
  return sum === charCount ? { chars, lens, count: n } : undefined;
}

/** A column's numbers as an array made at its length (Array.from grows it by push, as the keys above say). */
function arrayOf(column: ArrayLike<number>, n: number): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = column[i]!;
  return out;
}

/** Entries in a format-3 block, from its header alone. */
export function columnarSize(bytes: Uint8Array): number {
  if (bytes.length < HEADER || bytes[0] !== COLUMNAR_FORMAT) throw new Error('not a columnar state block');
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4, true);
}

/** The 16-byte header of a columnar block: format, key kind, length width, value kind, then counts (little-endian). */
export function writeColumnarHeader(out: Uint8Array, kk: number, lenWidth: number, vk: number, n: number, keyLen: number, lenBytes: number): void {
  const view = new DataView(out.buffer, out.byteOffset, 16);
  out[0] = COLUMNAR_FORMAT;
  out[1] = kk;
  out[2] = lenWidth;
  out[3] = vk;
  view.setUint32(4, n, true);
  view.setUint32(8, keyLen, true);
  view.setUint32(12, lenBytes, true);
}
