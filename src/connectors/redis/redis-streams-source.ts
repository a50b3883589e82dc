/**
 * Redis Streams source: each stream key is a split whose position is the id of the last entry
 * emitted. A reader reads its splits with one blocking `XREAD COUNT n BLOCK ms STREAMS k.. id..`
 * at a time on its own connection (XREAD is exclusive of the id, so a restore resumes right
 * after the last emitted entry); nothing lives in the server (no consumer group, no XACK), so
 * replay from a checkpoint is exact. Entries are buffered per split (bounded) and emitted in
 * batches by poll(), never awaited per record.
 */
import type { Redis } from 'ioredis';
import { BufferedSplits } from '../common/buffered-splits.ts';
import type { MalformedRecord, PollStatus, ReaderOutput, Source, SourceOutput, SourceReader, SourceReaderContext, SourceSplit } from '../../core/source.ts';
import { compareEntryIds, entriesProblem, entryIdMillis, isEntryId } from './entry-id.ts';
import { connectRedis, redisError, redisLabel, validateRedisUrl, type RedisConnectionOptions } from './connection.ts';
import { WeirError } from '../../core/errors.ts';
import { reconcileNamedSplits } from '../common/restored-splits.ts';
import { parseJsonRecord } from '../../core/json-record.ts';

export type RedisEntryFormat = 'json' | 'fields';

export interface RedisStreamsSourceOptions<T> {
  /** redis://[user:password@]host:port[/db] (default redis://127.0.0.1:6379). */
  readonly url?: string;
  /** Stream keys; each is a split. */
  readonly streams: readonly string[];
  /** Where a stream is read from when the job starts without a checkpoint (default 'earliest'). */
  readonly startFrom?: 'earliest' | 'latest';
  /**
   * 'latest': the source is bounded, ending at the last entry each stream has when the job
   * first starts (kept in the checkpoint, so a restore ends at the same place). Default: never.
   */
  readonly stopAt?: 'never' | 'latest';
  /** 'json' (default): the record is JSON.parse of the entry's `field`; 'fields': an object of all fields (strings). */
  readonly format?: RedisEntryFormat;
  /** The field holding the JSON record (default "data"). */
  readonly field?: string;
  /** Custom decoding instead of `format` (a throw makes the entry malformed). */
  readonly decode?: (fields: Record<string, string>, id: string, stream: string) => T;
  /** Entries per XREAD per stream (COUNT, default 1000); a split buffers at most 3 of these. */
  readonly batchSize?: number;
  /** How long one XREAD waits for new entries (BLOCK, default 500 ms). */
  readonly blockMs?: number;
  /** Timeout of every command beyond its blocking time, and of connecting (default 10,000 ms). */
  readonly timeoutMs?: number;
  /** Total time spent retrying to connect before the job fails (default 30,000 ms). */
  readonly connectBudgetMs?: number;
  /** CLIENT SETNAME of the source's connections, to find them in CLIENT LIST (default "weir-source"). */
  readonly clientName?: string;
}

export interface RedisStreamSplit extends SourceSplit {
  readonly stream: string;
  /** Id of the last entry emitted ("0-0" before the first). */
  lastId: string;
  /** With stopAt 'latest': the last entry to read; the split ends there. */
  readonly endId?: string;
}

type Entry = [id: string, fields: string[]];

export class RedisStreamsSource<T = unknown> implements Source<T, RedisStreamSplit> {
  readonly name: string;
  readonly bounded: boolean;
  readonly url: string;
  readonly label: string;
  readonly streams: readonly string[];
  readonly startFrom: 'earliest' | 'latest';
  readonly format: RedisEntryFormat;
  readonly field: string;
  readonly decode: ((fields: Record<string, string>, id: string, stream: string) => T) | undefined;
  readonly batchSize: number;
  readonly blockMs: number;
  readonly conn: RedisConnectionOptions;

  constructor(options: RedisStreamsSourceOptions<T>) {
    const where = 'RedisStreamsSource';
    if (options === null || typeof options !== 'object') throw new TypeError(`${where}: expected options { streams: [...] }`);
    this.url = validateRedisUrl(options.url ?? 'redis://127.0.0.1:6379', where);
    this.label = redisLabel(this.url);
    const streams = options.streams;
    if (!Array.isArray(streams) || streams.length === 0 || !streams.every((s) => typeof s === 'string' && s.length > 0)) {
      throw new TypeError(`${where}: streams must be a non-empty array of stream keys`);
    }
    if (new Set(streams).size !== streams.length) throw new RangeError(`${where}: streams must not repeat a key`);
    this.streams = [...streams];
    this.startFrom = oneOf(options.startFrom ?? 'earliest', ['earliest', 'latest'], `${where}: startFrom`);
    const stopAt = oneOf(options.stopAt ?? 'never', ['never', 'latest'], `${where}: stopAt`);
    this.bounded = stopAt === 'latest';
    this.format = oneOf(options.format ?? 'json', ['json', 'fields'], `${where}: format`);
    this.field = options.field ?? 'data';
    if (typeof this.field !== 'string' || this.field === '') throw new TypeError(`${where}: field must be a non-empty string`);
    if (options.decode !== undefined && typeof options.decode !== 'function') throw new TypeError(`${where}: decode must be a function (fields, id, stream) => record`);
    this.decode = options.decode;
    this.batchSize = posInt(options.batchSize ?? 1000, `${where}: batchSize`);
    this.blockMs = posInt(options.blockMs ?? 500, `${where}: blockMs`);
    this.conn = {
      url: this.url,
      timeoutMs: posInt(options.timeoutMs ?? 10_000, `${where}: timeoutMs`),
      connectBudgetMs: posInt(options.connectBudgetMs ?? 30_000, `${where}: connectBudgetMs`),
      clientName: options.clientName ?? 'weir-source',
    };
    if (typeof this.conn.clientName !== 'string' || !/^[!-~]+$/.test(this.conn.clientName)) {
      throw new RangeError(`${where}: clientName must be printable ASCII without spaces, got ${JSON.stringify(this.conn.clientName)}`);
    }
    this.name = `redis-streams:${this.label}/${this.streams.join(',')}`;
  }

  /** On the job manager at a fresh start: one split per stream, positioned per startFrom and stopAt. */
  async planSplits(): Promise<RedisStreamSplit[]> {
    const needsServer = this.startFrom === 'latest' || this.bounded;
    if (!needsServer) return this.streams.map((s) => ({ id: s, stream: s, lastId: '0-0' }));
    const r = await connectRedis(this.conn, this.conn.timeoutMs);
    try {
      const out: RedisStreamSplit[] = [];
      for (const s of this.streams) {
        let last: string;
        try {
          const res = (await r.xrevrange(s, '+', '-', 'COUNT', 1)) as Entry[];
          last = res.length > 0 ? res[0]![0] : '0-0';
        } catch (e) {
          throw redisError(this.label, `XREVRANGE of stream "${s}"`, e, this.url);
        }
        out.push({ id: s, stream: s, lastId: this.startFrom === 'latest' ? last : '0-0', ...(this.bounded ? { endId: last } : {}) });
      }
      return out;
    } finally {
      r.disconnect();
    }
  }

  /** A restore: streams added since the checkpoint are read from startFrom; removed ones no more (restored-splits.ts). */
  reconcileRestoredSplits(restored: readonly RedisStreamSplit[], log: (line: string) => void): Promise<RedisStreamSplit[]> {
    return reconcileNamedSplits(restored, { configuredIds: this.streams, bounded: this.bounded, plan: () => this.planSplits(), where: this.name, startFrom: this.startFrom }, log);
  }

  createReader(ctx: SourceReaderContext): SourceReader<T, RedisStreamSplit> {
    return new RedisStreamsReader<T>(this, ctx);
  }
}

interface SplitState {
  readonly split: RedisStreamSplit;
  /** Id of the last entry fetched (ahead of split.lastId by what is buffered). */
  fetchedId: string;
  buffer: Entry[];
  at: number;
  out: SourceOutput<unknown> | undefined;
  done: boolean;
  /** Whether entries after the split's resumed position were looked for among the deleted (once per split). */
  gapChecked: boolean;
}

class RedisStreamsReader<T> implements SourceReader<T, RedisStreamSplit> {
  private readonly splits = new BufferedSplits<SplitState>();
  private conn: Redis | undefined;
  private connecting = false;
  private inFlight = false;
  private closed = false;
  private error: Error | undefined;
  /** Splits finished since the last poll, to report to the output. */
  private readonly finished: string[] = [];

  constructor(private readonly src: RedisStreamsSource<T>, private readonly ctx: SourceReaderContext) {}

  addSplits(splits: RedisStreamSplit[]): void {
    for (const s of splits) {
      if (!isEntryId(s.lastId) || (s.endId !== undefined && !isEntryId(s.endId))) {
        throw new RangeError(`Redis stream "${s.stream}": bad position in the split ${JSON.stringify(s)}`);
      }
      const st: SplitState = { split: { ...s }, fetchedId: s.lastId, buffer: [], at: 0, out: undefined, done: false, gapChecked: s.lastId === '0-0' };
      if (s.endId !== undefined && compareEntryIds(s.lastId, s.endId) >= 0) st.done = true;
      this.splits.add(st);
    }
  }

  pauseOrResumeSplits(pause: readonly string[], resume: readonly string[]): void {
    this.splits.pauseOrResume(pause, resume);
  }

  poll(out: ReaderOutput<T>, maxRecords: number): PollStatus {
    if (this.error) throw this.error;
    this.splits.finishDrained(out);
    if (this.splits.size === 0) return this.src.bounded ? 'end' : 'wait';
    this.splits.startAll(out);
    this.splits.emitRoundRobin(maxRecords, (st, max) => this.emit(st, out, max));
    this.fetch();
    return this.splits.status();
  }

  private emit(st: SplitState, out: ReaderOutput<T>, max: number): number {
    const o = (st.out ??= out.forSplit(st.split.id)) as SourceOutput<T>;
    const split = st.split;
    const end = Math.min(st.buffer.length, st.at + max);
    let n = 0;
    let bytes = 0;
    for (; st.at < end; st.at++) {
      const [id, fields] = st.buffer[st.at]!;
      // The position moves before the record goes out: a record that fails the job is not re-read.
      split.lastId = id;
      for (let i = 0; i < fields.length; i++) bytes += fields[i]!.length;
      const v = this.decodeEntry(split.stream, id, fields, o);
      if (v !== MALFORMED) o.collect(v as T, entryIdMillis(id));
      n++;
    }
    BufferedSplits.dropEmitted(st);
    this.ctx.metrics.addBytesRead(bytes);
    return n;
  }

  private decodeEntry(stream: string, id: string, fields: string[], o: SourceOutput<T>): unknown {
    const src = this.src;
    try {
      if (src.decode !== undefined || src.format === 'fields') {
        const obj: Record<string, string> = {};
        for (let i = 0; i + 1 < fields.length; i += 2) obj[fields[i]!] = fields[i + 1]!;
        return src.decode !== undefined ? src.decode(obj, id, stream) : obj;
      }
      for (let i = 0; i + 1 < fields.length; i += 2) {
        if (fields[i] === src.field) return parseJsonRecord(fields[i + 1]!);
      }
      throw new Error(`the entry has no field "${src.field}"`);
    } catch (e) {
      this.malformed(o, stream, id, fields, e);
      return MALFORMED;
    }
  }

  private malformed(o: SourceOutput<T>, stream: string, id: string, fields: string[], e: unknown): void {
    const record: MalformedRecord = {
      source: this.src.name,
      location: `Redis ${this.src.label} stream "${stream}" entry ${id}`,
      raw: JSON.stringify(fields),
      error: e instanceof Error ? e.message : String(e),
    };
    o.malformed(record);
  }

  /** One XREAD in flight at most, for the splits that are not paused, not done and not full. */
  private fetch(): void {
    if (this.inFlight || this.closed || this.error) return;
    if (this.conn === undefined) {
      this.connect();
      return;
    }
    const unchecked = [...this.splits.states.values()].filter((st) => !st.gapChecked && !st.done);
    if (unchecked.length > 0) return this.checkGaps(this.conn, unchecked);
    const keys: string[] = [];
    const ids: string[] = [];
    const n = this.src.batchSize;
    for (const st of this.splits.states.values()) {
      // Read ahead up to two batches per split: the next XREAD is on the wire while poll emits.
      if (st.done || this.splits.isPaused(st) || st.buffer.length - st.at >= 2 * n) continue;
      keys.push(st.split.stream);
      ids.push(st.fetchedId);
    }
    if (keys.length === 0) return;
    this.inFlight = true;
    const conn = this.conn;
    (conn.xread('COUNT', n, 'BLOCK', this.src.blockMs, 'STREAMS', ...keys, ...ids) as Promise<[string, Entry[]][] | null>)
      .then((res) => {
        if (this.closed) return;
        if (res !== null) for (const [key, entries] of res) this.received(key, entries);
        // A bounded split's stream that answered nothing has nothing after our position: its end
        // entry was deleted or trimmed (later entries get higher ids), so the split is done.
        // Before, it waited for an entry past its end forever and the job never finished.
        const answered = new Set(res?.map(([k]) => k));
        // A stream that answered nothing has nothing after our position: caught up, 0 behind
        // (before, the age of the last entry read stayed as the lag after the reader caught up).
        for (const k of keys) if (!answered.has(k)) this.ctx.metrics.setMillisBehindLatest(k, 0);
        const ended = keys.filter((k) => !answered.has(k) && this.splits.states.get(k)?.split.endId !== undefined);
        // Nothing new within BLOCK: a stream this reader has read from may have been deleted
        // (XREAD of a missing key just waits). Checked here, so an active stream costs nothing.
        const read = res === null ? keys.filter((k, i) => ids[i] !== '0-0') : [];
        if (read.length > 0 || ended.length > 0) return this.checkExists(conn, [...new Set([...read, ...ended])], new Set(ended));
        this.inFlight = false;
        this.fetch();
        this.ctx.wake();
      }, (e) => {
        this.inFlight = false;
        if (this.closed) return;
        this.error = redisError(this.src.label, `XREAD of streams ${keys.map((k) => `"${k}"`).join(', ')}`, e, this.src.url);
        this.ctx.wake();
      });
  }

  /**
   * A split resumed from a checkpoint reads on after its position, and XREAD skips what the
   * stream's limits (MAXLEN, MINID) or XDEL removed meanwhile without a word. Asked once per
   * split (XINFO STREAM, Redis 7): a first entry past the position (trimmed), or a deleted entry
   * past it, is named in the log, as the JetStream source names sequences that are gone.
   */
  private checkGaps(conn: Redis, states: SplitState[]): void {
    this.inFlight = true;
    const p = conn.pipeline();
    for (const st of states) p.xinfo('STREAM', st.split.stream);
    p.exec().then((res) => {
      this.inFlight = false;
      if (this.closed) return;
      states.forEach((st, i) => {
        st.gapChecked = true;
        const [err, info] = res?.[i] ?? [null, undefined];
        if (err || !Array.isArray(info)) return; // a missing stream: the XREAD path says so
        const field = (name: string): string | undefined => {
          const at = info.indexOf(name);
          const v: unknown = at >= 0 ? info[at + 1] : undefined;
          return typeof v === 'string' && isEntryId(v) ? v : undefined;
        };
        // XDEL records the highest id it removed; trimming moves the first entry past removed ones.
        const maxDeleted = field('max-deleted-entry-id');
        const first = field('recorded-first-entry-id');
        const where = `stream "${st.split.stream}"`;
        if (first !== undefined && compareEntryIds(first, st.fetchedId) > 0) {
          this.ctx.log(`${where}: its entries up to the position ${st.fetchedId} were trimmed (the oldest is now ${first}); entries between them, if there were any, were removed before this reader read them`);
        } else if (maxDeleted !== undefined && compareEntryIds(maxDeleted, st.fetchedId) > 0) {
          this.ctx.log(`${where}: entries after the position ${st.fetchedId} were deleted before this reader read them (the last deleted ${maxDeleted})`);
        }
      });
      this.fetch();
      this.ctx.wake();
    }, (e) => {
      this.inFlight = false;
      if (this.closed) return;
      this.error = redisError(this.src.label, `XINFO STREAM of streams ${states.map((st) => `"${st.split.stream}"`).join(', ')}`, e, this.src.url);
      this.ctx.wake();
    });
  }

  /**
   * Fails the reader, naming the stream, if one it has read from no longer exists; bounded
   * splits in `ended` that answered nothing are done (one never read from and now gone too,
   * with a log line: nothing of it is left to read).
   */
  private checkExists(conn: Redis, keys: string[], ended: ReadonlySet<string> = new Set()): void {
    const p = conn.pipeline();
    for (const k of keys) p.exists(k);
    p.exec().then((res) => {
      this.inFlight = false;
      if (this.closed) return;
      const isGone = (i: number) => res?.[i]?.[1] === 0;
      keys.forEach((k, i) => {
        const st = this.splits.states.get(k);
        if (st === undefined || !ended.has(k)) return;
        if (!isGone(i)) st.done = true;
        else if (st.fetchedId === '0-0') {
          this.ctx.log(`stream "${k}" was deleted before this reader read from it; its split ends with nothing read`);
          st.done = true;
        }
      });
      const gone = keys.filter((k, i) => isGone(i) && this.splits.states.get(k)?.done !== true);
      if (gone.length > 0) {
        const st = this.splits.states.get(gone[0]!);
        this.error = new WeirError('CONNECTOR', `Redis at ${this.src.label}: stream "${gone[0]}" no longer exists (deleted while the job read it, after entry ${st?.fetchedId ?? '?'})`);
      } else {
        this.fetch();
      }
      this.ctx.wake();
    }, (e) => {
      this.inFlight = false;
      if (this.closed) return;
      this.error = redisError(this.src.label, `EXISTS of streams ${keys.map((k) => `"${k}"`).join(', ')}`, e, this.src.url);
      this.ctx.wake();
    });
  }

  private received(key: string, entries: Entry[]): void {
    const st = this.splits.states.get(key);
    if (st === undefined) return;
    const problem = entriesProblem(entries);
    if (problem !== undefined) {
      this.error ??= new WeirError('CONNECTOR', `Redis at ${this.src.label}: XREAD of stream "${key}" after entry ${st.fetchedId}: ${problem}`);
      return;
    }
    if (entries.length === 0) return;
    const endId = st.split.endId;
    let take = entries;
    if (endId !== undefined) {
      let k = 0;
      while (k < entries.length && compareEntryIds(entries[k]![0], endId) <= 0) k++;
      if (k < entries.length || compareEntryIds(entries[k - 1]![0], endId) === 0) st.done = true;
      take = k < entries.length ? entries.slice(0, k) : entries;
    }
    if (take.length === 0) return;
    st.fetchedId = take[take.length - 1]![0];
    if (st.at >= st.buffer.length) {
      st.buffer = take;
      st.at = 0;
    } else {
      for (const e of take) st.buffer.push(e);
    }
    const last = entryIdMillis(st.fetchedId);
    this.ctx.metrics.setMillisBehindLatest(key, Math.max(0, this.ctx.now() - last));
  }

  private connect(): void {
    if (this.connecting || this.closed) return;
    this.connecting = true;
    connectRedis(this.src.conn, this.src.conn.timeoutMs + this.src.blockMs, (l) => this.ctx.log(l)).then((r) => {
      this.connecting = false;
      if (this.closed) {
        r.disconnect();
        return;
      }
      this.conn = r;
      r.on('end', () => {
        if (!this.closed && this.error === undefined) {
          this.error = redisError(this.src.label, 'connection closed', new Error('the server closed the connection'), this.src.url);
          this.ctx.wake();
        }
      });
      this.ctx.wake();
    }, (e) => {
      this.connecting = false;
      this.error = e as Error;
      this.ctx.wake();
    });
  }

  snapshotSplits(): RedisStreamSplit[] {
    return [...this.splits.states.values()].map((s) => ({ ...s.split }));
  }

  close(): void {
    this.closed = true;
    this.conn?.disconnect();
    this.conn = undefined;
  }
}

const MALFORMED = Symbol('malformed');

function oneOf<V extends string>(v: unknown, allowed: readonly V[], what: string): V {
  if (!(allowed as readonly unknown[]).includes(v)) throw new RangeError(`${what} must be ${allowed.map((a) => `"${a}"`).join(' or ')}, got ${JSON.stringify(v)}`);
  return v as V;
}

function posInt(v: unknown, what: string): number {
  if (!(typeof v === 'number' && Number.isInteger(v) && v > 0)) throw new RangeError(`${what} must be a positive integer, got ${String(v)}`);
  return v;
}
