/**
 * Strings that UTF-8 cannot carry, kept exact through msgpack. A string with a lone surrogate
 * (half of an emoji, as `s.slice()` cuts one: 'user-😀'.slice(0, 6)) is valid in JavaScript,
 * but msgpack writes strings as UTF-8, and msgpackr puts U+FFFD in its place. Such a key
 * crossing threads became another key (its state split in two), a timer's key in a checkpoint
 * no longer matched its state's, and values changed at a restore.
 *
 * The common case pays one scan of the packed bytes for U+FFFD's encoding (a native search,
 * fast next to the packing itself). Only when it is there (a replaced lone surrogate, or a real
 * U+FFFD) is the value packed again, with every string that is not well formed wrapped in an
 * extension written as UTF-16 code units. Property names are not rewritten: a lone surrogate
 * in a property name is still replaced (records use fixed field names in practice).
 */
import { addExtension } from 'msgpackr/pack';
import { setOwn } from './copy.ts';

/** msgpack extension type of a UTF-16 string (not one msgpackr uses itself). */
const UTF16_STRING_TYPE = 0x55;
/** Levels walked; deeper (or cyclic) values cannot be packed anyway. */
const MAX_DEPTH = 1000;
/** U+FFFD in UTF-8: what msgpackr writes for a lone surrogate. */
const REPLACEMENT_UTF8 = Buffer.from([0xef, 0xbf, 0xbd]);

class Utf16String {
  constructor(readonly text: string) {}
}

addExtension({
  Class: Utf16String,
  type: UTF16_STRING_TYPE,
  pack: (s: Utf16String) => Buffer.from(s.text, 'utf16le'),
  unpack: (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf16le'),
});

const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

export interface MsgPacker {
  pack(v: unknown): Uint8Array;
}

/** packer.pack(v), with every string exact (see above). The result is packer.pack's (a view into its scratch buffer). */
export function packExact<B extends Uint8Array>(packer: { pack(v: unknown): B }, v: unknown): B {
  const bytes = packer.pack(v);
  if (Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(REPLACEMENT_UTF8) < 0) return bytes;
  return packer.pack(wrapIllFormed(v, 0));
}

/** A copy of `v` with every string that is not well formed wrapped; other values as they are. */
function wrapIllFormed(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return isWellFormed(v) ? v : new Utf16String(v);
  if (v === null || typeof v !== 'object') return v;
  if (depth > MAX_DEPTH) throw new RangeError(`a value nested more than ${MAX_DEPTH} levels deep (or cyclic) cannot be encoded`);
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = wrapIllFormed(v[i], depth + 1);
    return out;
  }
  if (v instanceof Map) {
    const out = new Map<unknown, unknown>();
    for (const [k, x] of v) out.set(wrapIllFormed(k, depth + 1), wrapIllFormed(x, depth + 1));
    return out;
  }
  if (v instanceof Set) {
    const out = new Set<unknown>();
    for (const x of v) out.add(wrapIllFormed(x, depth + 1));
    return out;
  }
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer || v instanceof Date || v instanceof RegExp || v instanceof Error) return v;
  // Plain objects, and class instances (msgpack packs their own enumerable properties).
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) setOwn(out, k, wrapIllFormed((v as Record<string, unknown>)[k], depth + 1));
  return out;
}
