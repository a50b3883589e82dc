/**
 * What the connectors suite computes, shared by its runner (bench/connectors.ts) and its child
 * (bench/connector-child.ts): the record every source reads and every sink writes, the check
 * every run's records must pass, and the measurements' names. The raw-client loops and the weir
 * jobs do the same work on the same records; only HOW differs.
 */

/** A record: ~100 bytes of JSON. `i` is its index, 0..n-1, in the order it was written. */
export interface Rec {
  readonly i: number;
  readonly key: string;
  readonly value: number;
  readonly pad: string;
}

const PAD = 'x'.repeat(40);
export const rec = (i: number): Rec => ({ i, key: `k${i % 100}`, value: i % 7, pad: PAD });

export const SOURCES = ['redis', 'jetstream', 'kinesis'] as const;
export type SourceConnector = (typeof SOURCES)[number];
export const SINKS = ['postgres', 'redis', 'jetstream', 'kinesis'] as const;
export type SinkConnector = (typeof SINKS)[number];

/**
 * raw: the client library in a plain loop; weir: the connector in a weir job (1 worker,
 * parallelism 1) without checkpoints; weir-eo / weir-alo: the same job with a checkpoint every
 * second, exactly-once or at-least-once mode.
 */
export const CONNECTOR_VARIANTS = ['raw', 'weir', 'weir-eo', 'weir-alo'] as const;
export type ConnectorVariant = (typeof CONNECTOR_VARIANTS)[number];

/** Checkpoint interval of weir-eo and weir-alo. */
export const CHECKPOINT_INTERVAL_MS = 1000;

export const SHARED_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = 'redis://127.0.0.1:6379';
export const NATS_SERVERS = '127.0.0.1:4222';
export const KINESIS_REGION = 'us-east-1';
export const KINESIS_CREDENTIALS = { accessKeyId: 'weir-bench', secretAccessKey: 'weir-bench' };

/** Rows per INSERT (the PostgreSQL sink's rowsPerStatement default), entries per XREAD / pipeline, messages per pull. */
export const BATCH = 1000;
/** Records per PutRecords (the Kinesis maximum and the sink's default) and requests in flight (the sink's default). */
export const KINESIS_BATCH = 500;
export const KINESIS_IN_FLIGHT = 10;
/** Publishes awaiting acknowledgement at once (the JetStream sink's maxInFlight default). */
export const NATS_IN_FLIGHT = 1000;
/** Least time between two GetRecords of one shard (AWS allows 5 per second; the Kinesis source's default). */
export const KINESIS_FETCH_INTERVAL_MS = 200;

/** What a run's records add up to; the same for every variant and every run of one n. */
export interface Check {
  readonly records: number;
  readonly distinct: number;
  readonly sumI: number;
  readonly sumValue: number;
  /** Records whose key or pad is not the one of their index. */
  readonly malformed: number;
  /** Sources only: records read out of the order they were written (one stream, one shard: none). */
  readonly outOfOrder?: number;
}

/** Accumulates a run's records: counts, sums, duplicates and order. */
export class Checker {
  private readonly seen: Uint8Array;
  records = 0;
  distinct = 0;
  sumI = 0;
  sumValue = 0;
  malformed = 0;
  outOfOrder = 0;
  private next = 0;
  constructor(readonly n: number) {
    this.seen = new Uint8Array(n);
  }
  add(r: Rec): void {
    this.records++;
    const i = r.i;
    if (i !== this.next) this.outOfOrder++;
    this.next = i + 1;
    if (Number.isInteger(i) && i >= 0 && i < this.n && this.seen[i] === 0) {
      this.seen[i] = 1;
      this.distinct++;
    }
    this.sumI += i;
    this.sumValue += r.value;
    if (r.key !== `k${i % 100}` || r.pad !== PAD || r.value !== i % 7) this.malformed++;
  }
  result(withOrder: boolean): Check {
    const c = { records: this.records, distinct: this.distinct, sumI: this.sumI, sumValue: this.sumValue, malformed: this.malformed };
    return withOrder ? { ...c, outOfOrder: this.outOfOrder } : c;
  }
}

/** The check a correct run of n records gives. */
export function expected(n: number, withOrder: boolean): Check {
  let sumValue = 0;
  for (let m = 0; m < 7; m++) sumValue += m * (Math.floor(n / 7) + (m < n % 7 ? 1 : 0));
  const c = { records: n, distinct: n, sumI: (n * (n - 1)) / 2, sumValue, malformed: 0 };
  return withOrder ? { ...c, outOfOrder: 0 } : c;
}

/** Differences between a run's check and the expected one, as text (empty when it is right). */
export function checkProblems(got: Check, want: Check): string[] {
  const out: string[] = [];
  for (const k of Object.keys(want) as (keyof Check)[]) if (got[k] !== want[k]) out.push(`${k} ${got[k]}, expected ${want[k]}`);
  return out;
}
