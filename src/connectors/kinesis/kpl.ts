/**
 * KPL (Kinesis Producer Library) aggregated records: one Kinesis record holding many user
 * records, each with its own partition key; the KCL and Flink's legacy consumer de-aggregate
 * them. Format: 4 magic bytes F3 89 9A C2, a protobuf AggregatedRecord, and the MD5 of the
 * protobuf bytes (16 bytes). A record without the magic, or whose digest does not match, is not
 * an aggregate and is read as one plain record (as the KCL does).
 *
 *   message AggregatedRecord { repeated string partition_key_table = 1; repeated string explicit_hash_key_table = 2; repeated Record records = 3; }
 *   message Record { required uint64 partition_key_index = 1; optional uint64 explicit_hash_key_index = 2; required bytes data = 3; repeated Tag tags = 4; }
 */
import { createHash } from 'node:crypto';

export const KPL_MAGIC = new Uint8Array([0xf3, 0x89, 0x9a, 0xc2]);

export interface SubRecord {
  readonly partitionKey: string;
  readonly data: Uint8Array;
}

const decoder = new TextDecoder();

/** The user records of a KPL aggregate, or undefined if `data` is not one (read it as a plain record). */
export function deaggregate(data: Uint8Array): SubRecord[] | undefined {
  // An empty body is a plain record, as the KCL reads it: magic and MD5("") alone were taken for
  // an aggregate of nothing, the record never emitted.
  if (data.length <= KPL_MAGIC.length + 16) return undefined;
  for (let i = 0; i < KPL_MAGIC.length; i++) if (data[i] !== KPL_MAGIC[i]) return undefined;
  const body = data.subarray(KPL_MAGIC.length, data.length - 16);
  const digest = createHash('md5').update(body).digest();
  const given = data.subarray(data.length - 16);
  for (let i = 0; i < 16; i++) if (digest[i] !== given[i]) return undefined;
  try {
    const keys: string[] = [];
    const raw: { pk: number; data: Uint8Array }[] = [];
    const r = new Reader(body);
    while (!r.done()) {
      const [field, wire] = r.tag();
      if (field === 1 && wire === 2) keys.push(decoder.decode(r.bytes()));
      else if (field === 3 && wire === 2) raw.push(readRecord(r.bytes()));
      else r.skip(wire);
    }
    return raw.map((x) => {
      const pk = keys[x.pk];
      if (pk === undefined) throw new Error(`partition key index ${x.pk} out of range`);
      return { partitionKey: pk, data: x.data };
    });
  } catch {
    return undefined;
  }
}

function readRecord(buf: Uint8Array): { pk: number; data: Uint8Array } {
  const r = new Reader(buf);
  let pk = -1;
  let data: Uint8Array | undefined;
  while (!r.done()) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === 0) pk = r.varint();
    else if (field === 3 && wire === 2) data = r.bytes();
    else r.skip(wire);
  }
  if (pk < 0 || data === undefined) throw new Error('a record without partition key index or data');
  return { pk, data };
}

class Reader {
  private at = 0;
  constructor(private readonly buf: Uint8Array) {}
  done(): boolean {
    return this.at >= this.buf.length;
  }
  varint(): number {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.buf.length) throw new Error('truncated varint');
      const b = this.buf[this.at++]!;
      v += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return v;
      mul *= 128;
    }
    throw new Error('varint too long');
  }
  tag(): [number, number] {
    const t = this.varint();
    return [Math.floor(t / 8), t & 7];
  }
  bytes(): Uint8Array {
    const n = this.varint();
    if (this.at + n > this.buf.length) throw new Error('truncated field');
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 2) this.bytes();
    else if (wire === 1) this.at += 8;
    else if (wire === 5) this.at += 4;
    else throw new Error(`unsupported wire type ${wire}`);
    if (this.at > this.buf.length) throw new Error('truncated field');
  }
}

/** Builds an aggregate (tests, and producers without the KPL). */
export function aggregate(records: readonly SubRecord[]): Uint8Array {
  const keys = [...new Set(records.map((r) => r.partitionKey))];
  const enc = new TextEncoder();
  const parts: number[] = [];
  const varint = (out: number[], v: number) => {
    while (v >= 128) {
      out.push((v % 128) | 0x80);
      v = Math.floor(v / 128);
    }
    out.push(v);
  };
  const field = (out: number[], n: number, bytes: ArrayLike<number>) => {
    varint(out, n * 8 + 2);
    varint(out, bytes.length);
    for (let i = 0; i < bytes.length; i++) out.push(bytes[i]!);
  };
  for (const k of keys) field(parts, 1, enc.encode(k));
  for (const r of records) {
    const rec: number[] = [];
    varint(rec, 1 * 8);
    varint(rec, keys.indexOf(r.partitionKey));
    field(rec, 3, r.data);
    field(parts, 3, rec);
  }
  const body = Uint8Array.from(parts);
  const digest = createHash('md5').update(body).digest();
  const out = new Uint8Array(KPL_MAGIC.length + body.length + 16);
  out.set(KPL_MAGIC, 0);
  out.set(body, KPL_MAGIC.length);
  out.set(digest, KPL_MAGIC.length + body.length);
  return out;
}
