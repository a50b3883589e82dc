/**
 * Values as the disk backend stores them: the same msgpack options as snapshot data
 * (core/codec.ts), so a value read from the store goes into a snapshot block as the heap
 * backend would write it. Buffers in values are copied out: the store's read buffer is reused
 * by the next read.
 */
import { Packr } from 'msgpackr/pack'; // msgpackr's plain build: see core/codec.ts
import { packExact } from '../../core/exact-strings.ts';
import '../../core/msgpack-buffers.ts'; // Buffers stay Buffers, as in snapshots
import { refuseFunction } from '../../core/plain-data.ts';

const packr = new Packr({ useRecords: true, moreTypes: true, structuredClone: false, largeBigIntToFloat: false, copyBuffers: true, writeFunction: refuseFunction } as never);

export function packStored(raw: unknown): Buffer {
  return packExact(packr as { pack(v: unknown): Buffer }, raw);
}

export function unpackStored(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/** Bytes writeStoredNumber writes at most. */
export const STORED_NUMBER_MAX_BYTES = 9;

/**
 * Writes number `n` at `at` of `b` exactly as packStored(n) encodes it (msgpackr's rules with
 * these options: records reserve the fixints 0x40-0x7f, so only 0-0x3f are one byte); the
 * offset after it. A count or a sum is the commonest stored value, and this spares a pack
 * call and a Buffer per value written (checked byte for byte against packStored in the tests).
 */
export function writeStoredNumber(b: Uint8Array, at: number, n: number): number {
  if (n >>> 0 === n) {
    if (n < 0x40) {
      b[at] = n;
      return at + 1;
    }
    if (n < 0x100) {
      b[at] = 0xcc;
      b[at + 1] = n;
      return at + 2;
    }
    if (n < 0x10000) {
      b[at] = 0xcd;
      b[at + 1] = n >> 8;
      b[at + 2] = n & 0xff;
      return at + 3;
    }
    b[at] = 0xce;
    writeU32BE(b, at + 1, n);
    return at + 5;
  }
  if (n >> 0 === n) {
    if (n >= -0x20) {
      b[at] = 0x100 + n;
      return at + 1;
    }
    if (n >= -0x80) {
      b[at] = 0xd0;
      b[at + 1] = n + 0x100;
      return at + 2;
    }
    if (n >= -0x8000) {
      b[at] = 0xd1;
      b[at + 1] = (n >> 8) & 0xff;
      b[at + 2] = n & 0xff;
      return at + 3;
    }
    b[at] = 0xd2;
    writeU32BE(b, at + 1, n >>> 0);
    return at + 5;
  }
  b[at] = 0xcb;
  f64[0] = n;
  // Big-endian: the float's bytes reversed (the machine is little-endian; checked at load).
  for (let i = 0; i < 8; i++) b[at + 1 + i] = f64Bytes[7 - i]!;
  return at + 9;
}

const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('stored-value.ts assumes a little-endian machine');

function writeU32BE(b: Uint8Array, at: number, u: number): void {
  b[at] = u >>> 24;
  b[at + 1] = (u >>> 16) & 0xff;
  b[at + 2] = (u >>> 8) & 0xff;
  b[at + 3] = u & 0xff;
}
