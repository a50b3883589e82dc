/**
 * How the disk backend lays out its keys in the store: key group (u16 big-endian), state id
 * (u16 big-endian), then the normalised key. Big-endian prefixes make the store's byte order
 * group by group and state by state, so a snapshot or a rescale reads one key group as one
 * contiguous range and a state's entries of a group stay together.
 *
 * The normalised key (a string or a finite number, key-groups.ts) follows a tag byte:
 * 1 = float64 big-endian (-0 written as 0: a Map treats them as one key, so does the store);
 * 2 = Latin-1 string (one byte per character); 3 = UTF-16LE string (any other string, lone
 * surrogates included, comes back exactly). The same key always gives the same bytes.
 */
import { WeirError } from '../../core/errors.ts';
import type { NormKey } from '../key-groups.ts';

/** Bytes before the normalised key: key group, state id, tag. */
export const KEY_PREFIX_BYTES = 5;
/** LMDB's largest key (lmdb-js is built with 1978). */
export const MAX_STORE_KEY_BYTES = 1978;
/** State ids fit the u16 of the key prefix. */
export const MAX_STATE_ID = 0xffff;

const TAG_NUMBER = 1;
const TAG_LATIN1 = 2;
const TAG_UTF16 = 3;
const NOT_LATIN1 = /[^\u0000-\u00ff]/;

export function encodeStoreKey(keyGroup: number, stateId: number, key: NormKey): Buffer {
  const b = Buffer.allocUnsafe(storeKeyBytes(key));
  writeStoreKey(b, 0, keyGroup, stateId, key);
  return b;
}

/** The store key's length in bytes; throws for a key too long for the store. */
function storeKeyBytes(key: NormKey): number {
  const n = KEY_PREFIX_BYTES + (typeof key === 'number' ? 8 : NOT_LATIN1.test(key) ? key.length * 2 : key.length);
  if (n > MAX_STORE_KEY_BYTES) {
    throw new WeirError('STATE_BACKEND', `a key of ${n - KEY_PREFIX_BYTES} bytes is too long for the disk state backend (at most ${MAX_STORE_KEY_BYTES - KEY_PREFIX_BYTES}); use a shorter key or the heap backend`);
  }
  return n;
}

/** Room enough for the store key (without looking at its characters). */
export function storeKeyBytesAtMost(key: NormKey): number {
  return KEY_PREFIX_BYTES + (typeof key === 'number' ? 8 : key.length * 2);
}

/** Writes the store key at `at` of `b` (room: storeKeyBytesAtMost); the offset after it. Throws for a key too long. */
export function writeStoreKey(b: Buffer, at: number, keyGroup: number, stateId: number, key: NormKey): number {
  if (!(keyGroup >= 0 && keyGroup <= 0xffff && stateId >= 0 && stateId <= MAX_STATE_ID)) {
    throw new WeirError('STATE_BACKEND', `store key out of range: key group ${keyGroup}, state id ${stateId}`);
  }
  const k = at + KEY_PREFIX_BYTES;
  if (typeof key === 'number') {
    writePrefix(b, at, keyGroup, stateId, TAG_NUMBER);
    b.writeDoubleBE(key === 0 ? 0 : key, k);
    return k + 8;
  }
  let end = key.length <= SHORT_KEY_CHARS ? writeShortLatin1(b, k, key) : -1;
  if (end >= 0) writePrefix(b, at, keyGroup, stateId, TAG_LATIN1);
  else if (!NOT_LATIN1.test(key)) {
    writePrefix(b, at, keyGroup, stateId, TAG_LATIN1);
    end = k + b.write(key, k, 'latin1');
  } else {
    writePrefix(b, at, keyGroup, stateId, TAG_UTF16);
    end = k + b.write(key, k, 'utf16le');
  }
  if (end - at > MAX_STORE_KEY_BYTES) storeKeyBytes(key);
  return end;
}

/**
 * Keys up to this many characters are written by a loop here: most keys are short, and for
 * them the regular expression and Buffer.write's call into C++ cost more than the copy (~6 %
 * of the task's thread with 1 M uniformly drawn keys, profiled).
 */
const SHORT_KEY_CHARS = 32;

/** Writes a short key's characters one byte each; the offset after them, or -1 if one is not Latin-1 (nothing to undo: the caller rewrites). */
function writeShortLatin1(b: Uint8Array, at: number, key: string): number {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c > 0xff) return -1;
    b[at + i] = c;
  }
  return at + key.length;
}

/** Buffers of each length for scratchStoreKey (a store get or synchronous put copies its key at once). */
const scratchKeys: (Buffer | undefined)[] = [];

/**
 * The store key for one point get or synchronous put (which copy it at once), in a buffer
 * reused by the next call: valid until then. Short Latin-1 keys and numbers cost no
 * allocation; other keys get a buffer of their own.
 */
export function scratchStoreKey(keyGroup: number, stateId: number, key: NormKey): Buffer {
  if (typeof key === 'number') {
    const b = (scratchKeys[KEY_PREFIX_BYTES + 8] ??= Buffer.alloc(KEY_PREFIX_BYTES + 8));
    writeStoreKey(b, 0, keyGroup, stateId, key);
    return b;
  }
  if (key.length <= SHORT_KEY_CHARS) {
    const n = KEY_PREFIX_BYTES + key.length;
    const b = (scratchKeys[n] ??= Buffer.alloc(n));
    if (writeShortLatin1(b, KEY_PREFIX_BYTES, key) >= 0) {
      writePrefix(b, 0, keyGroup, stateId, TAG_LATIN1);
      return b;
    }
  }
  return encodeStoreKey(keyGroup, stateId, key);
}

/** Key group and state id (u16 big-endian each) and the key's tag byte. */
function writePrefix(b: Uint8Array, at: number, keyGroup: number, stateId: number, tag: number): void {
  b[at] = keyGroup >>> 8;
  b[at + 1] = keyGroup & 0xff;
  b[at + 2] = stateId >>> 8;
  b[at + 3] = stateId & 0xff;
  b[at + 4] = tag;
}

/** Throws as encodeStoreKey does for a key too long for the store (cheap for short keys). */
export function checkStoreKeyLength(key: NormKey): void {
  if (typeof key === 'string' && KEY_PREFIX_BYTES + key.length * 2 > MAX_STORE_KEY_BYTES) encodeStoreKey(0, 0, key);
}

/** The first key of (keyGroup, stateId), or of keyGroup alone when stateId is 0. */
export function storeKeyPrefix(keyGroup: number, stateId = 0): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt16BE(keyGroup, 0);
  b.writeUInt16BE(stateId, 2);
  return b;
}

export function keyGroupOfStoreKey(b: Uint8Array): number {
  return (b[0]! << 8) | b[1]!;
}

export function stateIdOfStoreKey(b: Uint8Array): number {
  return (b[2]! << 8) | b[3]!;
}

export function normKeyOfStoreKey(b: Uint8Array): NormKey {
  const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  switch (buf[4]) {
    case TAG_NUMBER:
      return buf.readDoubleBE(KEY_PREFIX_BYTES);
    case TAG_LATIN1:
      return buf.toString('latin1', KEY_PREFIX_BYTES);
    case TAG_UTF16:
      return buf.toString('utf16le', KEY_PREFIX_BYTES);
    default:
      throw new WeirError('STATE_BACKEND', `corrupt key in the disk state store (tag ${buf[4]})`);
  }
}
