/**
 * The one binary encoding of batches between threads (and, later, between processes), also
 * used for in-flight data in unaligned checkpoints: columnar when the records share one shape
 * (batch-codec.ts), else msgpack with record structures carried inside each message, so sender
 * and receiver need no shared schema. Values must be plain data: objects, arrays, strings,
 * numbers, booleans, null, bigint, Date, Map, Set, typed arrays, Buffers (msgpack-buffers.ts);
 * class instances arrive as plain objects. Decoding reads both forms (the first byte tells them apart), so in-flight
 * data stored by earlier versions, all msgpack, still restores.
 */
// 'msgpackr/pack' is msgpackr's plain JavaScript build (its index.js, the same Packr): the
// package's main entry for Node also looks for the native string extractor (msgpackr-extract)
// and loads its stream classes, ~7 ms of every thread's start, and measured no faster at
// unpacking snapshots of short strings (1 M entries: 299 vs 288 ms). The disk backend's lmdb
// still loads the main entry, which turns the extractor on for this same module.
import { Packr } from 'msgpackr/pack';
import type { Batch } from './batch.ts';
import { COLUMNAR_TAG, decodeColumnar, encodeColumnar, type ValuePacker } from './batch-codec.ts';
import { packExact } from './exact-strings.ts';
import { refuseFunction } from './plain-data.ts';
import './msgpack-buffers.ts';

const packr = new Packr({ useRecords: true, moreTypes: true, structuredClone: false, largeBigIntToFloat: false, writeFunction: refuseFunction } as never);

const columnPacker: ValuePacker = { pack: (v) => packExact(packr, v), unpack: (b) => packr.unpack(b) };

/** Encodes a batch into a standalone buffer that can be transferred to another thread. */
export function encodeBatch(batch: Batch): Uint8Array {
  return encodeColumnar(batch, columnPacker) ?? encodeBatchMsgpack(batch);
}

/** The msgpack form (every batch before the columnar one; now the fallback). */
export function encodeBatchMsgpack(batch: Batch): Uint8Array {
  const packed = packExact(packr, batch.keyGroups === undefined ? [batch.values, batch.timestamps] : [batch.values, batch.timestamps, batch.keyGroups]);
  // pack() returns a view into a shared scratch buffer; copy so the transfer owns its memory.
  return new Uint8Array(packed);
}

export function decodeBatch(bytes: Uint8Array): Batch {
  if (bytes[0] === COLUMNAR_TAG) return decodeColumnar(bytes, columnPacker);
  const [values, timestamps, keyGroups] = packr.unpack(bytes) as [unknown[], number[], number[] | undefined];
  return keyGroups === undefined ? { values, timestamps } : { values, timestamps, keyGroups };
}

/** Plain-data encoding for snapshots and control messages. */
export function encodeValue(v: unknown): Uint8Array {
  return new Uint8Array(packExact(packr, v));
}

export function decodeValue<T = unknown>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
