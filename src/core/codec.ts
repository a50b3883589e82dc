/**
 * The one binary encoding of batches between threads (and, later, between processes):
 * msgpack with record structures carried inside each message, so sender and receiver need
 * no shared schema. Values must be plain data: objects, arrays, strings, numbers, booleans,
 * null, bigint, Date, Map, Set, typed arrays; class instances arrive as plain objects.
 */
import { Packr } from 'msgpackr';
import type { Batch } from './batch.ts';

const packr = new Packr({ useRecords: true, moreTypes: true, structuredClone: false, largeBigIntToFloat: false } as never);

/** Encodes a batch into a standalone buffer that can be transferred to another thread. */
export function encodeBatch(batch: Batch): Uint8Array {
  const packed = packr.pack(batch.keyGroups === undefined ? [batch.values, batch.timestamps] : [batch.values, batch.timestamps, batch.keyGroups]);
  // pack() returns a view into a shared scratch buffer; copy so the transfer owns its memory.
  return new Uint8Array(packed);
}

export function decodeBatch(bytes: Uint8Array): Batch {
  const [values, timestamps, keyGroups] = packr.unpack(bytes) as [unknown[], number[], number[] | undefined];
  return keyGroups === undefined ? { values, timestamps } : { values, timestamps, keyGroups };
}

/** Plain-data encoding for snapshots and control messages. */
export function encodeValue(v: unknown): Uint8Array {
  return new Uint8Array(packr.pack(v));
}

export function decodeValue<T = unknown>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
