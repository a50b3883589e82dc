/**
 * The queries' output types, and how an output stream is checked: every record is hashed
 * (its fields, in a fixed order) and the suite compares the count and two sums of 24-bit
 * hashes, which do not depend on the order of the records nor on how they were split over
 * parallel sink instances (the partial results add up). A query whose output is a changelog
 * (q4's running averages) is checked on the last record per key, as a table would hold it.
 * weir's sinks and the plain implementations use the same accumulator.
 */
import type { Accumulator, Result } from '../workloads.ts';

export const QUERY_IDS = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q9', 'q11', 'q14'] as const;
export type QueryId = (typeof QUERY_IDS)[number];

export interface Q0Out { readonly auction: number; readonly bidder: number; readonly price: number; readonly dateTime: number; readonly extra: string }
export type Q1Out = Q0Out;
export interface Q2Out { readonly auction: number; readonly price: number }
export interface Q3Out { readonly name: string; readonly city: string; readonly state: string; readonly id: number }
export interface Q4Out { readonly category: number; readonly sum: number; readonly count: number; readonly avg: number }
export interface Q5Out { readonly auction: number; readonly num: number; readonly start: number }
export type Q7Out = Q0Out;
export interface Q8Out { readonly id: number; readonly name: string; readonly start: number }
export interface Q9Out {
  readonly id: number; readonly seller: number; readonly category: number; readonly dateTime: number; readonly expires: number;
  readonly bidder: number; readonly price: number; readonly bidTime: number;
}
export interface Q11Out { readonly bidder: number; readonly count: number; readonly start: number; readonly end: number }
export interface Q14Out { readonly auction: number; readonly bidder: number; readonly price: number; readonly bidTimeType: string; readonly dateTime: number; readonly extra: string }

// ---- hashing -------------------------------------------------------------------------

function mixInt(h: number, x: number): number {
  // Numbers up to 2^53: both 32-bit halves.
  const lo = x >>> 0;
  const hi = Math.floor(x / 4294967296) >>> 0;
  h = Math.imul(h ^ lo, 0x01000193);
  return Math.imul(h ^ hi, 0x01000193);
}
/** Floats (q1's converted prices, q4's averages) to a thousandth. */
const mixNum = (h: number, x: number): number => mixInt(h, Math.round(x * 1000));
function mixStr(h: number, s: string): number {
  for (let k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 0x01000193);
  return Math.imul(h ^ 0xff, 0x01000193);
}
function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const SEED_HASH = 0x811c9dc5;
const bidLike = (o: Q0Out) => mixStr(mixInt(mixNum(mixInt(mixInt(SEED_HASH, o.auction), o.bidder), o.price), o.dateTime), o.extra);

/** One record's hash, per query. */
export const HASH: { readonly [Q in QueryId]: (o: any) => number } = {
  q0: bidLike,
  q1: bidLike,
  q2: (o: Q2Out) => mixInt(mixInt(SEED_HASH, o.auction), o.price),
  q3: (o: Q3Out) => mixInt(mixStr(mixStr(mixStr(SEED_HASH, o.name), o.city), o.state), o.id),
  q4: (o: Q4Out) => mixNum(mixInt(mixInt(mixInt(SEED_HASH, o.category), o.sum), o.count), o.avg),
  q5: (o: Q5Out) => mixInt(mixInt(mixInt(SEED_HASH, o.auction), o.num), o.start),
  q7: bidLike,
  q8: (o: Q8Out) => mixInt(mixStr(mixInt(SEED_HASH, o.id), o.name), o.start),
  q9: (o: Q9Out) => [o.seller, o.category, o.dateTime, o.expires, o.bidder, o.price, o.bidTime].reduce(mixInt, mixInt(SEED_HASH, o.id)),
  q11: (o: Q11Out) => mixInt(mixInt(mixInt(mixInt(SEED_HASH, o.bidder), o.count), o.start), o.end),
  q14: (o: Q14Out) => mixStr(mixStr(mixInt(mixNum(mixInt(mixInt(SEED_HASH, o.auction), o.bidder), o.price), o.dateTime), o.bidTimeType), o.extra),
};

/** Queries whose output is a changelog: checked on the last record per key. */
export const CHANGELOG_KEY: { readonly [Q in QueryId]?: (o: any) => number | string } = {
  q4: (o: Q4Out) => o.category,
};

/** Count and two order-insensitive sums of 24-bit hashes (at most 2^24 × records: exact in doubles). */
export class OutputDigest implements Accumulator<unknown> {
  private records = 0;
  private a = 0;
  private b = 0;
  private readonly last = new Map<number | string, unknown>();
  private readonly hash: (o: unknown) => number;
  private readonly key: ((o: unknown) => number | string) | undefined;

  constructor(readonly query: QueryId) {
    this.hash = HASH[query];
    this.key = CHANGELOG_KEY[query];
  }

  add(o: unknown): void {
    this.records++;
    if (this.key !== undefined) this.last.set(this.key(o), o);
    else this.addHash(this.hash(o));
  }

  private addHash(h: number): void {
    this.a += fmix(h) & 0xffffff;
    this.b += fmix(h ^ 0x9e3779b9) & 0xffffff;
  }

  result(): Result {
    if (this.key === undefined) return { records: this.records, hashA: this.a, hashB: this.b };
    let a = 0;
    let b = 0;
    for (const o of this.last.values()) {
      const h = this.hash(o);
      a += fmix(h) & 0xffffff;
      b += fmix(h ^ 0x9e3779b9) & 0xffffff;
    }
    return { records: this.records, keys: this.last.size, hashA: a, hashB: b };
  }
}
