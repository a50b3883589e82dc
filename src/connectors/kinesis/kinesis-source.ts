/**
 * Kinesis Data Streams source (polling GetRecords, Flink's FLIP-27 KinesisStreamsSource shape).
 *
 * - A split is a shard; its position is the sequence number of the last record emitted, and a
 *   restore resumes AFTER_SEQUENCE_NUMBER of it, so no record is emitted twice. Before the first
 *   record a split starts at its start position: TRIM_HORIZON, or AT_TIMESTAMP of the job's
 *   first start (LATEST is turned into AT_TIMESTAMP(now) once, at the first start, so a restore
 *   before a shard's first record loses nothing). The initial position is ignored on restore.
 * - One shard discovery caller: the split enumerator on the job manager lists the shards
 *   (ListShards) on an interval (default 10 s) and assigns new ones (shards.ts decides which);
 *   readers never list shards. A child shard is assigned only after its parents are read to
 *   their end; a reader reports each finished shard to the enumerator, and keeps the finished
 *   split in its state as a tombstone, so a restore never reads it again nor loses its children.
 * - Each shard is read by one GetRecords at a time, at most 5 calls per second per shard
 *   (fetchIntervalMs 200), idle shards polled every emptyFetchIntervalMs; throttling
 *   (ProvisionedThroughputExceeded, LimitExceeded), 5xx and timeouts are retried with jittered
 *   backoff until retryDeadlineMs; an expired iterator is renewed at once from the last fetched
 *   record, and retried with that backoff if the renewed one expires too. A shard gone while the
 *   stream exists (past retention) is finished with a warning, as Flink's reader does.
 * - Each split records its shard's StartingSequenceNumber; the enumerator's first listing after
 *   a restore refuses splits of another stream, or of a stream deleted and created again under
 *   the same name (STATE_RESTORE: the job ends at once instead of losing or refusing records).
 *   Records are buffered per shard (bounded: one fetch's worth) and emitted by poll() in
 *   batches; the only promises are per request, never per record.
 * - Event time: ApproximateArrivalTimestamp, unless the job assigns its own. Lag metric:
 *   millisBehindLatest of each shard's last GetRecords.
 * - KPL-aggregated records are de-aggregated (kpl.ts): the position is then the aggregate's
 *   sequence number plus the index of the last user record emitted from it, and a restore
 *   inside an aggregate re-reads it AT_SEQUENCE_NUMBER and skips what was emitted.
 */
import type { GetRecordsCommandOutput, KinesisClient, _Record } from '@aws-sdk/client-kinesis';
import type { MalformedRecord, PollStatus, ReaderOutput, Source, SourceOutput, SourceReader, SourceReaderContext, SourceSplit, SplitEnumerator, SplitEnumeratorContext } from '../../core/source.ts';
import { WeirError } from '../../core/errors.ts';
import { nextRetryDelay, retrying, type RetryPolicy } from '../common/retry.ts';
import { call, createKinesisClient, errorName, isTransientKinesis, kinesisError, resolveConnection, type KinesisConnectionOptions, type ResolvedConnection } from './client.ts';
import { deaggregate, type SubRecord } from './kpl.ts';
import { closedAtStartAreFinished, decideDiscovery, decidePruning, gaveUpAfter, isSequenceNumber, leastLoaded, nextFetchAt, onFetchFailure, recordsProblem, restoredShardMismatches, type ShardInfo, type ShardStart } from './shards.ts';
import { parseJsonRecord } from '../../core/json-record.ts';
import { rawFields } from '../common/raw-bytes.ts';

export type KinesisInitialPosition = 'LATEST' | 'TRIM_HORIZON' | 'AT_TIMESTAMP';
export type KinesisFormat = 'json' | 'string' | 'bytes';

export interface KinesisRecordMeta {
  readonly stream: string;
  readonly shardId: string;
  readonly sequenceNumber: string;
  /** Index of the user record within a KPL aggregate; undefined for a plain record. */
  readonly subSequenceNumber: number | undefined;
  readonly partitionKey: string;
}

export interface KinesisSourceOptions<T> extends KinesisConnectionOptions {
  readonly stream: string;
  /** Where shards are read from at the job's first start (default LATEST); ignored on restore. */
  readonly initialPosition?: KinesisInitialPosition;
  /** With AT_TIMESTAMP: epoch ms or a Date. */
  readonly initialTimestamp?: number | Date;
  /** 'json' (default): JSON.parse of the data; 'string': UTF-8 text; 'bytes': the Uint8Array. */
  readonly format?: KinesisFormat;
  /** Custom decoding instead of `format` (a throw makes the record malformed). */
  readonly decode?: (data: Uint8Array, meta: KinesisRecordMeta) => T;
  /** De-aggregate KPL-aggregated records into their user records (default true). */
  readonly deaggregate?: boolean;
  /** How often the enumerator lists shards (default 10,000 ms). */
  readonly discoveryIntervalMs?: number;
  /** GetRecords Limit (default 10,000, the AWS maximum). */
  readonly maxRecordsPerFetch?: number;
  /** Least time between two GetRecords of one shard (default 200 ms: AWS allows 5 per second). */
  readonly fetchIntervalMs?: number;
  /** Wait after a GetRecords that found nothing new (default 250 ms). */
  readonly emptyFetchIntervalMs?: number;
  /** Timeout of every call (default 10,000 ms). */
  readonly timeoutMs?: number;
  /** Throttled or failing calls are retried with jittered backoff for this long, then the job fails (default 60,000 ms). */
  readonly retryDeadlineMs?: number;
}

export interface KinesisShardSplit extends SourceSplit {
  readonly stream: string;
  readonly shardId: string;
  readonly parents: readonly string[];
  /** Where the shard is read from while nothing of it has been emitted. */
  readonly start: ShardStart;
  /**
   * The shard's StartingSequenceNumber (ListShards) when the split was made: which shard of
   * that id this is, so a restore into a stream deleted and created again under the same name
   * is refused instead of a tombstone hiding the new shard of that id. Absent in checkpoints
   * written before it was recorded (their check is weaker: restoredShardMismatches).
   */
  readonly startSeq?: string;
  /** Sequence number of the last record emitted. */
  lastSeq?: string;
  /** When that record is a KPL aggregate: the index of the last user record emitted from it. */
  lastSub?: number;
  /** Read to its end (a tombstone: kept so the shard is never read again). */
  finished?: boolean;
}

/** A reader's report to the enumerator: shards read to their end. */
interface FinishedEvent {
  readonly finished: readonly string[];
}

/** A reader's report after a completed checkpoint: the splits it held in that checkpoint (not reported before), and which of them were tombstones. */
interface DurableEvent {
  readonly durable: readonly string[];
  readonly durableTombstones: readonly string[];
}

/** The enumerator's word to a reader: drop these tombstones from your state. */
interface PruneEvent {
  readonly prune: readonly string[];
}

const MAX_LIMIT = 10_000;

/** What to do when a checkpoint's shards are not of the stream read now. */
const RESTORE_ADVICE = 'Start the job without the checkpoint, or give the source a new uid() and restore with --allow-non-restored-state (allowNonRestoredState), so its shards are read from initialPosition';

export class KinesisSource<T = unknown> implements Source<T, KinesisShardSplit> {
  readonly name: string;
  readonly bounded = false;
  readonly conn: ResolvedConnection;
  readonly stream: string;
  readonly initialPosition: KinesisInitialPosition;
  readonly initialTimestamp: number | undefined;
  readonly format: KinesisFormat;
  readonly decode: ((data: Uint8Array, meta: KinesisRecordMeta) => T) | undefined;
  readonly discoveryIntervalMs: number;
  readonly maxRecordsPerFetch: number;
  readonly fetchIntervalMs: number;
  readonly emptyFetchIntervalMs: number;
  readonly retry: RetryPolicy;
  readonly deaggregate: boolean;
  /** The start position new shards get at this run's first start (set by planSplits). */
  private plannedStart: ShardStart | undefined;

  constructor(options: KinesisSourceOptions<T>) {
    const where = 'KinesisSource';
    if (options === null || typeof options !== 'object') throw new WeirError('CONFIG', `${where}: expected options { stream: "..." }`);
    if (typeof options.stream !== 'string' || !/^[a-zA-Z0-9_.-]{1,128}$/.test(options.stream)) {
      throw new WeirError('CONFIG', `${where}: stream must be a stream name (1 to 128 of a-z A-Z 0-9 _ . -), got ${JSON.stringify(options.stream)}`);
    }
    this.stream = options.stream;
    this.initialPosition = oneOf(options.initialPosition ?? 'LATEST', ['LATEST', 'TRIM_HORIZON', 'AT_TIMESTAMP'], `${where}: initialPosition`);
    const ts = options.initialTimestamp;
    if (this.initialPosition === 'AT_TIMESTAMP') {
      const ms = ts instanceof Date ? ts.getTime() : ts;
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw new WeirError('CONFIG', `${where}: initialPosition AT_TIMESTAMP needs initialTimestamp (epoch ms or a Date), got ${JSON.stringify(ts)}`);
      this.initialTimestamp = ms;
    } else if (ts !== undefined) {
      throw new WeirError('CONFIG', `${where}: initialTimestamp is only for initialPosition AT_TIMESTAMP`);
    }
    this.format = oneOf(options.format ?? 'json', ['json', 'string', 'bytes'], `${where}: format`);
    if (options.decode !== undefined && typeof options.decode !== 'function') throw new WeirError('CONFIG', `${where}: decode must be a function (data, meta) => record`);
    this.decode = options.decode;
    if (options.deaggregate !== undefined && typeof options.deaggregate !== 'boolean') throw new WeirError('CONFIG', `${where}: deaggregate must be true or false`);
    this.deaggregate = options.deaggregate ?? true;
    this.discoveryIntervalMs = posInt(options.discoveryIntervalMs ?? 10_000, `${where}: discoveryIntervalMs`);
    this.maxRecordsPerFetch = posInt(options.maxRecordsPerFetch ?? MAX_LIMIT, `${where}: maxRecordsPerFetch`);
    if (this.maxRecordsPerFetch > MAX_LIMIT) throw new WeirError('CONFIG', `${where}: maxRecordsPerFetch must be at most ${MAX_LIMIT} (the GetRecords limit), got ${this.maxRecordsPerFetch}`);
    this.fetchIntervalMs = posInt(options.fetchIntervalMs ?? 200, `${where}: fetchIntervalMs`);
    if (this.fetchIntervalMs < 200) throw new WeirError('CONFIG', `${where}: fetchIntervalMs must be at least 200 (AWS allows 5 GetRecords per second per shard), got ${this.fetchIntervalMs}`);
    this.emptyFetchIntervalMs = posInt(options.emptyFetchIntervalMs ?? 250, `${where}: emptyFetchIntervalMs`);
    this.conn = resolveConnection({ ...options, timeoutMs: posInt(options.timeoutMs ?? 10_000, `${where}: timeoutMs`) }, where);
    this.retry = { initialBackoffMs: 300, maxBackoffMs: 5_000, deadlineMs: posInt(options.retryDeadlineMs ?? 60_000, `${where}: retryDeadlineMs`) };
    this.name = `kinesis:${this.conn.label}/${this.stream}`;
  }

  /** Every shard of the stream (ListShards, paged), retried while transient. */
  async listShards(client: KinesisClient, log?: (line: string) => void): Promise<ShardInfo[]> {
    const { ListShardsCommand } = await import('@aws-sdk/client-kinesis');
    let tries = 0;
    const began = Date.now();
    return retrying(this.retry, isTransientKinesis, async () => {
      tries++;
      const out: ShardInfo[] = [];
      let token: string | undefined;
      // Bounded: each page names the next; a stream has at most tens of thousands of shards.
      for (let page = 0; page < 10_000; page++) {
        const res = await call(this.conn, `ListShards of stream "${this.stream}"`, (abortSignal) =>
          client.send(new ListShardsCommand(token === undefined ? { StreamName: this.stream } : { NextToken: token }), { abortSignal }));
        for (const s of res.Shards ?? []) {
          if (typeof s.ShardId !== 'string') throw new WeirError('CONNECTOR', `Kinesis at ${this.conn.label}: ListShards of stream "${this.stream}" returned a shard without ShardId`);
          const parents = [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => typeof p === 'string' && p !== '');
          const startSeq = s.SequenceNumberRange?.StartingSequenceNumber;
          out.push({ shardId: s.ShardId, parents, closed: s.SequenceNumberRange?.EndingSequenceNumber !== undefined, ...(isSequenceNumber(startSeq) ? { startSeq } : {}) });
        }
        token = res.NextToken;
        if (token === undefined) return out;
      }
      throw new WeirError('CONNECTOR', `Kinesis at ${this.conn.label}: ListShards of stream "${this.stream}" did not end after 10,000 pages`);
    }, { onRetry: (e, _a, d) => log?.(`ListShards of stream "${this.stream}": ${(e as Error).message ?? e}; retrying in ${d} ms`) }).catch((e) => {
      const err = kinesisError(this.conn, `ListShards of stream "${this.stream}"`, e);
      if (tries <= 1) throw err;
      // Given up after retries (an unreachable endpoint, throttling): one line saying how long it tried.
      throw new WeirError(err.code, `${err.message} ${gaveUpAfter(tries, Date.now() - began, 'retryDeadlineMs', this.retry.deadlineMs)}`, { cause: e });
    });
  }

  /** On the job manager at a fresh start: the shards to read first (children wait for the enumerator). */
  async planSplits(): Promise<KinesisShardSplit[]> {
    const start: ShardStart = this.initialPosition === 'TRIM_HORIZON' ? { type: 'TRIM_HORIZON' }
      : { type: 'AT_TIMESTAMP', timestamp: this.initialPosition === 'AT_TIMESTAMP' ? this.initialTimestamp! : Date.now() };
    this.plannedStart = start;
    const client = await createKinesisClient(this.conn);
    let listed: ShardInfo[];
    try {
      listed = await this.listShards(client);
    } finally {
      client.destroy();
    }
    const tombstones = closedAtStartAreFinished(this.initialPosition) ? listed.filter((s) => s.closed) : [];
    const finished = new Set(tombstones.map((s) => s.shardId));
    const d = decideDiscovery(listed, { known: finished, finished });
    return [
      ...tombstones.map((s) => this.split(s, start, true)),
      ...d.assign.map((s) => this.split(s, start, false)),
    ];
  }

  split(s: ShardInfo, start: ShardStart, finished: boolean): KinesisShardSplit {
    return { id: s.shardId, stream: this.stream, shardId: s.shardId, parents: [...s.parents], start, ...(s.startSeq !== undefined ? { startSeq: s.startSeq } : {}), ...(finished ? { finished: true } : {}) };
  }

  createEnumerator(ctx: SplitEnumeratorContext<KinesisShardSplit>, assigned: readonly (readonly KinesisShardSplit[])[]): SplitEnumerator {
    const first = assigned.flat()[0];
    const start = first?.start ?? this.plannedStart ?? { type: 'TRIM_HORIZON' };
    return new KinesisEnumerator(this, ctx, assigned, start);
  }

  createReader(ctx: SourceReaderContext): SourceReader<T, KinesisShardSplit> {
    return new KinesisReader<T>(this, ctx);
  }
}

/** The one shard discovery caller: lists shards on an interval and hands new ones to readers. */
class KinesisEnumerator implements SplitEnumerator {
  private readonly known = new Set<string>();
  private readonly finished = new Set<string>();
  /** From the readers' reports after completed checkpoints: shards in one, and tombstones in one with the reader holding each. */
  private readonly durable = new Set<string>();
  private readonly durableTombstones = new Map<string, number>();
  private readonly load: number[];
  private listing: ShardInfo[] | undefined;
  private client: KinesisClient | undefined;
  private listing$: Promise<void> | undefined;
  private again = false;
  private timer: { cancel(): void } | undefined;
  private closed = false;
  private waitingLogged = '';
  /** The splits the readers start with, checked against the first listing, then dropped. */
  private toCheck: KinesisShardSplit[] | undefined;

  constructor(private readonly src: KinesisSource<unknown>, private readonly ctx: SplitEnumeratorContext<KinesisShardSplit>, assigned: readonly (readonly KinesisShardSplit[])[], private readonly newShardStart: ShardStart) {
    this.toCheck = assigned.flat();
    this.load = assigned.map((l) => l.filter((s) => !s.finished).length);
    while (this.load.length < ctx.parallelism) this.load.push(0);
    for (const l of assigned) for (const s of l) {
      this.known.add(s.shardId);
      if (s.finished) this.finished.add(s.shardId);
    }
  }

  start(): void {
    this.discover();
  }

  private schedule(): void {
    this.timer?.cancel();
    this.timer = this.ctx.schedule(this.src.discoveryIntervalMs, () => this.discover());
  }

  /** One ListShards round at a time; a request during one runs another right after. */
  private discover(): void {
    if (this.closed) return;
    if (this.listing$ !== undefined) {
      this.again = true;
      return;
    }
    this.timer?.cancel();
    this.listing$ = (async () => {
      this.client ??= await createKinesisClient(this.src.conn);
      const listed = await this.src.listShards(this.client, (l) => this.ctx.log(l));
      if (this.closed) return;
      if (this.toCheck !== undefined) {
        this.checkRestored(this.toCheck, listed);
        this.toCheck = undefined;
      }
      this.listing = listed;
      this.assignNew();
      this.prune();
    })().then(() => {
      this.listing$ = undefined;
      if (this.closed) return;
      if (this.again) {
        this.again = false;
        this.discover();
      } else this.schedule();
    }, (e) => {
      this.listing$ = undefined;
      if (!this.closed) this.ctx.fail(e);
    });
  }

  /**
   * The restored splits must be of the stream as it is now: a split of a shard that is not the
   * listed shard of that id (the stream deleted and created again under the same name) would,
   * as a tombstone, hide the new shard and lose its records, and as a position be refused by
   * GetShardIterator on every restart. Either way every restart meets it again, so the job
   * ends at once (STATE_RESTORE), saying what to do.
   */
  private checkRestored(splits: readonly KinesisShardSplit[], listed: readonly ShardInfo[]): void {
    const bad = restoredShardMismatches(this.src.stream, splits, listed);
    if (bad.length === 0) return;
    const from = this.ctx.restoredFrom !== undefined ? `the checkpoint ${this.ctx.restoredFrom}` : 'the restored checkpoint';
    throw new WeirError('STATE_RESTORE', `Kinesis stream "${this.src.stream}": ${from} is not of this stream as it is now (${bad.slice(0, 3).join('; ')}${bad.length > 3 ? `; ${bad.length - 3} more` : ''}): ` +
      `was the stream deleted and created again, or the source pointed at another stream? ${RESTORE_ADVICE}`);
  }

  private assignNew(): void {
    if (this.listing === undefined) return;
    const d = decideDiscovery(this.listing, { known: this.known, finished: this.finished });
    for (const s of d.assign) {
      const sub = leastLoaded(this.load);
      this.load[sub]!++;
      this.known.add(s.shardId);
      this.ctx.assignSplits(sub, [this.src.split(s, this.newShardStart, false)]);
      this.ctx.log(`shard ${s.shardId} of stream "${this.src.stream}"${s.parents.length > 0 ? ` (child of ${s.parents.join(' and ')})` : ''} assigned to subtask ${sub + 1}`);
    }
    const w = d.waiting.join(',');
    if (w !== '' && w !== this.waitingLogged) this.ctx.log(`shards ${d.waiting.join(', ')} wait for their parents to be read to their end`);
    this.waitingLogged = w;
  }

  /**
   * Tells readers to drop the tombstones decidePruning lets go, and forgets them here too
   * (decideDiscovery then skips such a shard through its known descendants, or it is gone).
   */
  private prune(): void {
    if (this.ctx.sendEventToReader === undefined || this.durableTombstones.size === 0) return;
    const bySubtask = new Map<number, string[]>();
    for (const p of decidePruning({ listed: this.listing, durableTombstones: this.durableTombstones.keys(), durable: this.durable })) {
      const sub = this.durableTombstones.get(p.shardId)!;
      this.durableTombstones.delete(p.shardId);
      this.durable.delete(p.shardId);
      this.finished.delete(p.shardId);
      this.known.delete(p.shardId);
      const l = bySubtask.get(sub) ?? [];
      l.push(p.shardId);
      bySubtask.set(sub, l);
    }
    for (const [sub, prune] of bySubtask) {
      this.ctx.sendEventToReader(sub, { prune } satisfies PruneEvent);
      this.ctx.log(`tombstone${prune.length > 1 ? 's' : ''} of shard${prune.length > 1 ? 's' : ''} ${prune.join(', ')} of stream "${this.src.stream}" pruned from the state of subtask ${sub + 1}`);
    }
  }

  handleSourceEvent(subtask: number, event: unknown): void {
    const d = event as DurableEvent | null;
    if (d !== null && typeof d === 'object' && Array.isArray(d.durable) && Array.isArray(d.durableTombstones)) {
      for (const id of d.durable) if (typeof id === 'string') this.durable.add(id);
      for (const id of d.durableTombstones) if (typeof id === 'string') this.durableTombstones.set(id, subtask);
      this.prune();
      return;
    }
    const f = (event as FinishedEvent | null)?.finished;
    if (!Array.isArray(f)) return;
    for (const id of f) {
      if (typeof id !== 'string' || this.finished.has(id)) continue;
      this.finished.add(id);
      this.known.add(id);
      if (this.load[subtask] !== undefined && this.load[subtask]! > 0) this.load[subtask]!--;
    }
    // The children are usually in the last listing already; list again in case they are not.
    this.assignNew();
    this.discover();
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.client?.destroy();
  }
}

interface ShardState {
  readonly split: KinesisShardSplit;
  iterator: string | undefined;
  /** Sequence number of the last record fetched (ahead of split.lastSeq by the buffer). */
  fetchedSeq: string | undefined;
  buffer: _Record[];
  at: number;
  /** The user records of the aggregate at buffer[at] (cached while it is emitted over several polls), and the next one's index. */
  subs: SubRecord[] | undefined;
  sub: number;
  /** Restored inside an aggregate: re-read it (AT_SEQUENCE_NUMBER) and skip user records up to split.lastSub. */
  resumeInside: boolean;
  /** The shard has no more records after the buffer (closed and read to its end). */
  ended: boolean;
  reported: boolean;
  /** The enumerator said to drop this tombstone: it goes once its end has been reported. */
  prune: boolean;
  inFlight: boolean;
  timer: { cancel(): void } | undefined;
  nextAt: number;
  failures: number;
  failingSince: number | undefined;
  /** The iterator was renewed after it expired and no GetRecords has succeeded since (a second expiry is then a failure with backoff). */
  renewedAfterExpiry: boolean;
  /** The position restored from the checkpoint, until a fetch succeeds (a refusal of it is the checkpoint's fault). */
  restoredSeq: string | undefined;
  out: SourceOutput<unknown> | undefined;
}

/** For records: invalid UTF-8 is malformed, not silently replaced by U+FFFD (a dead letter keeps the bytes: rawFields). */
const strictDecoder = new TextDecoder('utf-8', { fatal: true });
const MALFORMED = Symbol('malformed');

class KinesisReader<T> implements SourceReader<T, KinesisShardSplit> {
  private readonly states = new Map<string, ShardState>();
  private readonly paused = new Set<string>();
  private client: Promise<KinesisClient> | undefined;
  private closed = false;
  private error: Error | undefined;
  private rr = 0;
  /** Per checkpoint taken and not yet completed or superseded: the splits it held, and which were tombstones. */
  private snapshots: { id: number; ids: string[]; tombstones: string[] }[] = [];
  /** Splits (and tombstones) held now already reported to the enumerator as in a completed checkpoint. */
  private readonly reportedDurable = new Set<string>();
  private readonly reportedTombstones = new Set<string>();

  constructor(private readonly src: KinesisSource<T>, private readonly ctx: SourceReaderContext) {}

  addSplits(splits: KinesisShardSplit[]): void {
    for (const s of splits) {
      // STATE_RESTORE, not RESTORE: a throw here is attributed to the source operator, which
      // wraps every other code as USER_CODE, and the job would restart into it for ever.
      if (typeof s.stream === 'string' && s.stream !== this.src.stream) {
        throw new WeirError('STATE_RESTORE', `Kinesis stream "${this.src.stream}": the checkpoint holds shard ${String(s.shardId)} of stream "${s.stream}", not of this stream (the source was pointed at another stream). ${RESTORE_ADVICE}`);
      }
      const bad = typeof s.shardId !== 'string' || (s.lastSub !== undefined && !(Number.isSafeInteger(s.lastSub) && s.lastSub >= 0)) || s.stream !== this.src.stream || (s.lastSeq !== undefined && !isSequenceNumber(s.lastSeq)) ||
        (s.startSeq !== undefined && !isSequenceNumber(s.startSeq)) ||
        !Array.isArray(s.parents) || s.start === undefined || (s.start.type !== 'TRIM_HORIZON' && !(s.start.type === 'AT_TIMESTAMP' && Number.isFinite(s.start.timestamp)));
      if (bad) throw new WeirError('STATE_RESTORE', `Kinesis stream "${this.src.stream}": bad shard split ${JSON.stringify(s)} in the checkpoint (a checkpoint of another source or version?). ${RESTORE_ADVICE}`);
      this.states.set(s.id, {
        split: { ...s, parents: [...s.parents] }, iterator: undefined, fetchedSeq: s.lastSeq, buffer: [], at: 0, subs: undefined, sub: 0,
        resumeInside: this.src.deaggregate && s.lastSub !== undefined && s.lastSeq !== undefined && s.finished !== true, ended: s.finished === true,
        reported: false, prune: false, inFlight: false, timer: undefined, nextAt: 0, failures: 0, failingSince: undefined,
        renewedAfterExpiry: false, restoredSeq: s.finished === true ? undefined : s.lastSeq, out: undefined,
      });
    }
  }

  pauseOrResumeSplits(pause: readonly string[], resume: readonly string[]): void {
    for (const id of pause) this.paused.add(id);
    for (const id of resume) this.paused.delete(id);
  }

  poll(out: ReaderOutput<T>, maxRecords: number): PollStatus {
    if (this.error) throw this.error;
    const finished: string[] = [];
    for (const st of this.states.values()) {
      if (st.reported || !st.ended || st.at < st.buffer.length) continue;
      st.reported = true;
      if (st.split.finished !== true) {
        st.split.finished = true;
        finished.push(st.split.shardId);
      }
      out.splitFinished(st.split.id);
      if (st.prune) this.drop(st.split.id);
    }
    if (finished.length > 0) {
      this.ctx.log(`shard${finished.length > 1 ? 's' : ''} ${finished.join(', ')} of stream "${this.src.stream}" read to the end`);
      this.ctx.sendSourceEvent?.({ finished } satisfies FinishedEvent);
    }
    // Every shard being read has its output (and so its event time) from the start: an empty
    // shard then turns idle per withIdleness instead of holding event time back for good.
    for (const st of this.states.values()) if (st.out === undefined && !st.ended) st.out = out.forSplit(st.split.id);
    let emitted = 0;
    const list = [...this.states.values()];
    for (let k = 0; k < list.length && emitted < maxRecords; k++) {
      const st = list[(this.rr + k) % list.length]!;
      if (st.at >= st.buffer.length || this.paused.has(st.split.id)) continue;
      emitted += this.emit(st, out, maxRecords - emitted);
    }
    if (list.length > 0) this.rr = (this.rr + 1) % list.length;
    this.fetchDue();
    for (const st of this.states.values()) {
      if (st.at < st.buffer.length && !this.paused.has(st.split.id)) return 'more';
      if (st.ended && !st.reported && st.at >= st.buffer.length) return 'more';
    }
    return 'wait';
  }

  private emit(st: ShardState, out: ReaderOutput<T>, max: number): number {
    const o = (st.out ??= out.forSplit(st.split.id)) as SourceOutput<T>;
    const split = st.split;
    let n = 0;
    let bytes = 0;
    while (st.at < st.buffer.length && n < max) {
      const r = st.buffer[st.at]!;
      const seq = r.SequenceNumber!;
      const data = r.Data ?? new Uint8Array(0);
      const ts = r.ApproximateArrivalTimestamp?.getTime();
      if (st.subs === undefined && this.src.deaggregate) {
        st.subs = deaggregate(data);
        st.sub = 0;
        // Restored inside this aggregate: its first user records were emitted before the checkpoint.
        if (st.resumeInside && seq === split.lastSeq && st.subs !== undefined) st.sub = split.lastSub! + 1;
        st.resumeInside = false;
      }
      const subs = st.subs;
      if (subs === undefined) {
        // A plain record. The position moves before it goes out: a record that fails the job is not re-read.
        split.lastSeq = seq;
        delete split.lastSub;
        bytes += data.length;
        const v = this.decodeRecord(split, seq, undefined, r.PartitionKey ?? '', data, o);
        if (v !== MALFORMED) o.collect(v as T, ts);
        n++;
        st.at++;
        continue;
      }
      for (; st.sub < subs.length && n < max; st.sub++) {
        const u = subs[st.sub]!;
        split.lastSeq = seq;
        split.lastSub = st.sub;
        bytes += u.data.length;
        const v = this.decodeRecord(split, seq, st.sub, u.partitionKey, u.data, o);
        if (v !== MALFORMED) o.collect(v as T, ts);
        n++;
      }
      if (st.sub >= subs.length) {
        st.subs = undefined;
        st.sub = 0;
        st.at++;
      }
    }
    if (st.at >= st.buffer.length) {
      st.buffer = [];
      st.at = 0;
    }
    this.ctx.metrics.addBytesRead(bytes);
    return n;
  }

  private decodeRecord(split: KinesisShardSplit, seq: string, sub: number | undefined, partitionKey: string, data: Uint8Array, o: SourceOutput<T>): unknown {
    const src = this.src;
    try {
      if (src.decode !== undefined) return src.decode(data, { stream: split.stream, shardId: split.shardId, sequenceNumber: seq, subSequenceNumber: sub, partitionKey });
      if (src.format === 'bytes') return data;
      const text = strictDecoder.decode(data);
      return src.format === 'string' ? text : parseJsonRecord(text);
    } catch (e) {
      const record: MalformedRecord = {
        source: src.name,
        location: `Kinesis ${src.conn.label} stream "${split.stream}" shard ${split.shardId} sequence ${seq}${sub !== undefined ? ` user record ${sub}` : ''}`,
        ...rawFields(data),
        error: e instanceof Error ? e.message : String(e),
      };
      o.malformed(record);
      return MALFORMED;
    }
  }

  /** Starts GetRecords for shards that are due, have room and are not paused; arms a timer for the others. */
  private fetchDue(): void {
    if (this.closed || this.error) return;
    const now = this.ctx.now();
    for (const st of this.states.values()) {
      if (st.ended || st.inFlight || st.timer !== undefined || this.paused.has(st.split.id)) continue;
      if (st.buffer.length - st.at >= this.src.maxRecordsPerFetch) continue;
      if (now >= st.nextAt) this.fetch(st);
      else {
        st.timer = this.ctx.schedule(st.nextAt, () => {
          st.timer = undefined;
          this.fetchDue();
        });
      }
    }
  }

  private fetch(st: ShardState): void {
    st.inFlight = true;
    const startedAt = this.ctx.now();
    const src = this.src;
    const shard = st.split.shardId;
    let doing = `GetShardIterator of shard ${shard}`;
    (async () => {
      const { GetShardIteratorCommand, GetRecordsCommand } = await import('@aws-sdk/client-kinesis');
      this.client ??= createKinesisClient(src.conn);
      const client = await this.client;
      if (st.iterator === undefined) {
        const pos = st.fetchedSeq;
        const input = st.resumeInside && pos !== undefined && pos === st.split.lastSeq && st.buffer.length === 0
          ? { StreamName: src.stream, ShardId: shard, ShardIteratorType: 'AT_SEQUENCE_NUMBER' as const, StartingSequenceNumber: pos }
          : pos !== undefined
          ? { StreamName: src.stream, ShardId: shard, ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const, StartingSequenceNumber: pos }
          : st.split.start.type === 'TRIM_HORIZON'
            ? { StreamName: src.stream, ShardId: shard, ShardIteratorType: 'TRIM_HORIZON' as const }
            : { StreamName: src.stream, ShardId: shard, ShardIteratorType: 'AT_TIMESTAMP' as const, Timestamp: new Date(st.split.start.timestamp) };
        const res = await call(src.conn, doing, (abortSignal) => client.send(new GetShardIteratorCommand(input), { abortSignal }));
        st.iterator = res.ShardIterator;
        // No iterator: the shard is closed and nothing is left after the position (Flink's
        // ShardConsumer reads a null iterator the same way).
        if (st.iterator === undefined) return { Records: [], NextShardIterator: undefined, MillisBehindLatest: 0 } as unknown as GetRecordsCommandOutput;
      }
      doing = `GetRecords of shard ${shard}`;
      const it = st.iterator;
      const res = await call(src.conn, doing, (abortSignal) => client.send(new GetRecordsCommand({ ShardIterator: it, Limit: src.maxRecordsPerFetch }), { abortSignal }));
      const problem = recordsProblem(res.Records ?? []);
      if (problem !== undefined) throw new WeirError('CONNECTOR', `Kinesis at ${src.conn.label}: ${doing} of stream "${src.stream}" after sequence ${st.fetchedSeq ?? '(the start position)'}: ${problem}`);
      return res;
    })().then((res) => {
      st.inFlight = false;
      if (this.closed) return;
      st.failures = 0;
      st.failingSince = undefined;
      st.renewedAfterExpiry = false;
      st.restoredSeq = undefined;
      const records = res.Records ?? [];
      if (records.length > 0) {
        st.fetchedSeq = records[records.length - 1]!.SequenceNumber;
        if (st.at >= st.buffer.length) {
          st.buffer = records;
          st.at = 0;
        } else for (const r of records) st.buffer.push(r);
      }
      st.iterator = res.NextShardIterator;
      if (res.NextShardIterator === undefined || res.NextShardIterator === null) st.ended = true;
      const behind = res.MillisBehindLatest ?? 0;
      this.ctx.metrics.setMillisBehindLatest(st.split.id, behind);
      st.nextAt = nextFetchAt(startedAt, records.length === 0 && behind === 0, src.fetchIntervalMs, src.emptyFetchIntervalMs);
      this.ctx.wake();
    }, (e) => {
      st.inFlight = false;
      if (this.closed) return;
      const name = errorName(e);
      const getIterator = doing.startsWith('GetShardIterator');
      const action = onFetchFailure({
        name, transient: isTransientKinesis(e), call: getIterator ? 'GetShardIterator' : 'GetRecords', renewedAfterExpiry: st.renewedAfterExpiry,
        atRestoredPosition: getIterator && st.restoredSeq !== undefined && st.fetchedSeq === st.restoredSeq,
      });
      switch (action) {
        case 'renew-iterator':
          // Renewed at once from the last record fetched (what is buffered is still to be emitted).
          st.iterator = undefined;
          st.renewedAfterExpiry = true;
          st.nextAt = this.ctx.now();
          break;
        case 'check-stream':
          this.checkShardGone(st, doing, e);
          break;
        case 'restored-position-refused':
          this.error = new WeirError('STATE_RESTORE',
            `Kinesis at ${src.conn.label}: ${doing} of stream "${src.stream}" refused the position ${st.restoredSeq} restored from the checkpoint (${name}: ${(e as Error).message ?? e}): ` +
            `the checkpoint is not of this stream as it is now (was it deleted and created again?). ${RESTORE_ADVICE}`, { cause: e });
          break;
        default:
          // An iterator expired again before any GetRecords succeeded: asked for anew after a backoff.
          if (name === 'ExpiredIteratorException') st.iterator = undefined;
          this.retryOrFail(st, doing, e, action === 'retry');
      }
      this.ctx.wake();
    });
  }

  /** After a failed call of shard `st`: its next try after a jittered backoff, or, past retryDeadlineMs (or not transient), the reader's error. */
  private retryOrFail(st: ShardState, doing: string, e: unknown, transient: boolean): void {
    const src = this.src;
    const now = this.ctx.now();
    const name = errorName(e);
    // kinesalite never answers AT_TIMESTAMP while the shard has no record at or after it: keep asking.
    const waitingForTimestamp = st.iterator === undefined && st.fetchedSeq === undefined && st.split.start.type === 'AT_TIMESTAMP' && isTimeout(e);
    if (waitingForTimestamp) st.failingSince = undefined;
    st.failingSince ??= now;
    const delay = nextRetryDelay(src.retry, st.failures++, now - st.failingSince, transient, Math.random());
    if (delay === undefined) {
      const err = kinesisError(src.conn, `${doing} of stream "${src.stream}"`, e);
      // Given up after retries: say how many, for how long, and which setting bounds it (as ListShards).
      this.error = st.failures <= 1 ? err : new WeirError(err.code, `${err.message} ${gaveUpAfter(st.failures, now - st.failingSince, 'retryDeadlineMs', src.retry.deadlineMs)}`, { cause: e });
    } else {
      if (st.failures === 1 || st.failures % 10 === 0) this.ctx.log(`${doing} of stream "${src.stream}": ${name ?? ''} ${(e as Error).message ?? e}; retrying in ${delay} ms (try ${st.failures})`);
      st.nextAt = now + delay;
    }
  }

  /**
   * ResourceNotFound for a shard: if the stream still exists, the shard is past the stream's
   * retention (gone from ListShards too), so nothing more can be read from it; the split is
   * finished, as Flink's reader does, and the enumerator then assigns its children (before: a
   * failure every restart met again, the children never read). If the stream is gone, the
   * reader fails.
   */
  private checkShardGone(st: ShardState, doing: string, e: unknown): void {
    const src = this.src;
    st.inFlight = true;
    const what = `DescribeStreamSummary of stream "${src.stream}"`;
    (async () => {
      const { DescribeStreamSummaryCommand } = await import('@aws-sdk/client-kinesis');
      this.client ??= createKinesisClient(src.conn);
      const client = await this.client;
      await call(src.conn, what, (abortSignal) => client.send(new DescribeStreamSummaryCommand({ StreamName: src.stream }), { abortSignal }));
    })().then(() => {
      st.inFlight = false;
      if (this.closed) return;
      st.iterator = undefined;
      st.ended = true;
      st.failures = 0;
      st.failingSince = undefined;
      const after = st.fetchedSeq !== undefined ? `its records after sequence ${st.fetchedSeq}` : 'its records (none was read)';
      this.ctx.log(`warning: shard ${st.split.shardId} of stream "${src.stream}" no longer exists (${doing}: ${errorName(e)}), though the stream does: it is past the stream's retention period, and ${after} expired unread; the shard is taken as read to its end, so its children are read`);
      this.ctx.wake();
    }, (e2) => {
      st.inFlight = false;
      if (this.closed) return;
      if (errorName(e2) === 'ResourceNotFoundException') this.error = kinesisError(src.conn, `${doing} of stream "${src.stream}" (the stream no longer exists)`, e);
      else this.retryOrFail(st, what, e2, isTransientKinesis(e2));
      this.ctx.wake();
    });
  }

  snapshotSplits(checkpointId?: number): KinesisShardSplit[] {
    const splits = [...this.states.values()].map((s) => ({ ...s.split, parents: [...s.split.parents] }));
    if (checkpointId !== undefined && this.ctx.sendSourceEvent !== undefined) {
      // Bounded: entries go when a checkpoint completes (it supersedes the older ones); a run of aborted ones is capped.
      if (this.snapshots.length >= 64) this.snapshots.shift();
      this.snapshots.push({ id: checkpointId, ids: splits.map((s) => s.id), tombstones: splits.filter((s) => s.finished === true).map((s) => s.id) });
    }
    return splits;
  }

  /** Reports to the enumerator what the completed checkpoint holds that it has not heard of (it decides pruning from that). */
  notifyCheckpointComplete(checkpointId: number): void {
    const k = this.snapshots.findIndex((x) => x.id === checkpointId);
    if (k < 0) return;
    const snap = this.snapshots[k]!;
    this.snapshots = this.snapshots.slice(k + 1);
    const durable = snap.ids.filter((id) => this.states.has(id) && !this.reportedDurable.has(id));
    const durableTombstones = snap.tombstones.filter((id) => this.states.has(id) && !this.reportedTombstones.has(id));
    if (durable.length === 0 && durableTombstones.length === 0) return;
    for (const id of durable) this.reportedDurable.add(id);
    for (const id of durableTombstones) this.reportedTombstones.add(id);
    this.ctx.sendSourceEvent?.({ durable, durableTombstones } satisfies DurableEvent);
  }

  /** The enumerator's word to drop tombstones (only finished splits ever go). */
  handleSourceEvent(event: unknown): void {
    const ids = (event as PruneEvent | null)?.prune;
    if (!Array.isArray(ids)) return;
    for (const id of ids) {
      const st = typeof id === 'string' ? this.states.get(id) : undefined;
      if (st === undefined || st.split.finished !== true) continue;
      if (st.reported) this.drop(id);
      else st.prune = true;
    }
  }

  private drop(id: string): void {
    const st = this.states.get(id);
    st?.timer?.cancel();
    this.states.delete(id);
    this.paused.delete(id);
    this.reportedDurable.delete(id);
    this.reportedTombstones.delete(id);
  }

  close(): void {
    this.closed = true;
    for (const st of this.states.values()) st.timer?.cancel();
    const c = this.client;
    this.client = undefined;
    c?.then((x) => x.destroy(), () => {});
  }
}

function isTimeout(e: unknown): boolean {
  if (e instanceof WeirError) return e.code === 'TIMEOUT';
  const n = errorName(e);
  return n === 'TimeoutError' || n === 'RequestTimeout' || n === 'AbortError';
}

function oneOf<V extends string>(v: unknown, allowed: readonly V[], what: string): V {
  if (!(allowed as readonly unknown[]).includes(v)) throw new WeirError('CONFIG', `${what} must be ${allowed.map((a) => `"${a}"`).join(' or ')}, got ${JSON.stringify(v)}`);
  return v as V;
}

function posInt(v: unknown, what: string): number {
  if (!(typeof v === 'number' && Number.isSafeInteger(v) && v > 0)) throw new WeirError('CONFIG', `${what} must be a positive integer, got ${String(v)}`);
  return v;
}
