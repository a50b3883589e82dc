/**
 * Node Buffers in values stay Buffers through every msgpack encoding weir does (batches between
 * threads, snapshots, disk state). msgpack's bin type comes back as a plain Uint8Array, whose
 * toString() and slice() differ from a Buffer's (toString() gives "104,105" for "hi"), so a
 * job's output depended on whether a record crossed a thread or a restore. A msgpack extension
 * carries them instead; other byte arrays keep the bin type and come back as they went.
 * msgpackr's extension registry is one per process, so importing this module once (codec.ts
 * and the disk backend's stored values both do) covers every Packr.
 */
import { addExtension } from 'msgpackr/pack';

/** msgpack extension type of a Buffer's bytes (msgpackr's own types are 0x42 and up). */
export const BUFFER_EXTENSION_TYPE = 0x10;

addExtension({
  Class: Buffer,
  type: BUFFER_EXTENSION_TYPE,
  pack: (b: Buffer) => b,
  // A copy: the bytes are a view of the message or of the disk store's reused read buffer.
  unpack: (bytes: Uint8Array) => Buffer.from(bytes),
});
