/**
 * Redis Streams source: each stream key is a split whose position is the id of the last entry
 * emitted. A reader reads its splits with one blocking `XREAD COUNT n BLOCK ms STREAMS k.. id..`
 * at a time on its own connection (XREAD is exclusive of the id, so a restore resumes right
 * after the last emitted entry); nothing lives in the server (no consumer group, no XACK), so
 * replay from a checkpoint is exact. Entries are buffered per split (bounded) and emitted in
 * batches by poll(), never awaited per record.
 */
import type { Redis } from 'ioredis';
import { createHash } from 'node:crypto';
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
  /**
   * Entries after a split's position that were gone before the reader read them (trimmed by
   * MAXLEN / MINID while it lagged or the job was down, or deleted with XDEL): 'log' (default)
   * names them in the log and reads on; 'fail' fails the source naming them (Redis 7).
   */
  readonly onGap?: 'log' | 'fail';
}

export interface RedisStreamSplit extends SourceSplit {
  readonly stream: string;
  /** Id of the last entry emitted ("0-0" before the first). */
  lastId: string;
  /** With stopAt 'latest': the last entry to read; the split ends there. */
  readonly endId?: string;
  /**
   * How many entries the stream had been given up to lastId, counting removed ones (Redis 7's
   * entries-added counter, as a consumer group's entries-read), when the reader knows it: tells
   * how many entries a trim took past the position, and a stream with fewer entries added is
   * another one. Checkpoints of older weirs lack it.
   */
  entriesRead?: number;
  /**
   * Digest of the fields of the entry lastId: entries never change and an id is never used
   * twice in one stream, so an entry at that id with other fields is in a stream deleted and
   * created again. Checkpoints of older weirs lack it.
   */
  lastEntryDigest?: string;
}

/** An entry as XREAD returns it. */
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
  readonly onGap: 'log' | 'fail';
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
    this.onGap = oneOf(options.onGap ?? 'log', ['log', 'fail'], `${where}: onGap`);
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
  /** entries-added up to fetchedId (see RedisStreamSplit.entriesRead), when known. */
  fetchedRead: number | undefined;
  /**
   * Numbers (entries-added) of the buffer's first and last entries, when known; the buffer is
   * numbered one by one from the first when that is known. Kept beside the entries, not in them:
   * a third element added to every entry array cost a fifth of the source's CPU.
   */
  bufferFirstRead: number | undefined;
  bufferLastRead: number | undefined;
  /** The last entry emitted, and its number, for the checkpoint (its digest). */
  lastEmitted: Entry | undefined;
  lastEmittedRead: number | undefined;
  /** The entry whose digest the split holds. */
  digestOf: Entry | undefined;
  /** Whether the stream was found to be the one the restored position is in (once per split). */
  verified: boolean;
  /**
   * onGap 'fail': the gap found after fetchedId. Thrown once the entries fetched before it are
   * emitted, so the failure comes at its place in the stream whenever the reader is polled, not
   * before records it had already read; nothing more is fetched for the split.
   */
  gapError: WeirError | undefined;
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
      const read = s.entriesRead;
      if (read !== undefined && !(Number.isSafeInteger(read) && read >= 0)) throw new RangeError(`Redis stream "${s.stream}": bad entriesRead in the split ${JSON.stringify(s)}`);
      const st: SplitState = {
        split: { ...s }, fetchedId: s.lastId, buffer: [], at: 0, out: undefined, done: false,
        fetchedRead: read ?? (s.lastId === '0-0' ? 0 : undefined), bufferFirstRead: undefined, bufferLastRead: undefined, lastEmitted: undefined, lastEmittedRead: undefined, digestOf: undefined, verified: s.lastId === '0-0',
        gapError: undefined,
      };
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
    for (const st of this.splits.states.values()) if (st.gapError !== undefined && st.at >= st.buffer.length) throw st.gapError;
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
    if (n > 0) {
      st.lastEmitted = st.buffer[st.at - 1];
      st.lastEmittedRead = st.at === st.buffer.length ? st.bufferLastRead : st.bufferFirstRead === undefined ? undefined : st.bufferFirstRead + st.at - 1;
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
    const unverified = [...this.splits.states.values()].filter((st) => !st.verified && !st.done);
    if (unverified.length > 0) return this.verify(this.conn, unverified);
    const keys: string[] = [];
    const ids: string[] = [];
    const n = this.src.batchSize;
    for (const st of this.splits.states.values()) {
      // Read ahead up to two batches per split: the next XREAD is on the wire while poll emits.
      if (st.done || st.gapError !== undefined || this.splits.isPaused(st) || st.buffer.length - st.at >= 2 * n) continue;
      keys.push(st.split.stream);
      ids.push(st.fetchedId);
    }
    if (keys.length === 0) return;
    this.inFlight = true;
    const conn = this.conn;
    // Each stream's XINFO goes just before the XREAD, in the same round trip: what was removed
    // after a position before the XREAD ran is what the XREAD skipped without a word (gapBefore).
    const p = conn.pipeline();
    for (const k of keys) p.xinfo('STREAM', k);
    p.xread('COUNT', n, 'BLOCK', this.src.blockMs, 'STREAMS', ...keys, ...ids);
    p.exec()
      .then((replies) => {
        const [err, reply] = replies?.[keys.length] ?? [new Error('no reply to XREAD'), null];
        if (err) throw err;
        return [replies!, reply as [string, Entry[]][] | null] as const;
      })
      .then(([replies, res]) => {
        if (this.closed) return;
        if (res !== null) for (const [key, entries] of res) this.received(key, entries, streamInfo(replies[keys.indexOf(key)]));
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
   * A split restored at a position: refused, as the JetStream source refuses a stream created
   * again, when its stream is evidently not the one the position is in (deleted and created
   * again while the job was down): reading on after the position would skip as many of the new
   * stream's entries. Asked once per split (XINFO STREAM and the entry at the position).
   */
  private verify(conn: Redis, states: SplitState[]): void {
    this.inFlight = true;
    const p = conn.pipeline();
    for (const st of states) p.xinfo('STREAM', st.split.stream).xrange(st.split.stream, st.split.lastId, st.split.lastId);
    p.exec().then((res) => {
      this.inFlight = false;
      if (this.closed) return;
      for (const [i, st] of states.entries()) {
        const [xerr, at] = res?.[2 * i + 1] ?? [new Error('no reply'), undefined];
        if (xerr) throw xerr;
        st.verified = true;
        const info = streamInfo(res?.[2 * i]);
        // A missing stream: the XREAD path says so. A server before Redis 7: nothing to go by.
        if (typeof info !== 'object') continue;
        const entry = Array.isArray(at) && at.length > 0 ? (at[0] as Entry) : undefined;
        const reset = streamReplaced(st.split, info, entry);
        if (reset !== undefined) {
          this.error = new WeirError('CONNECTOR', `Redis stream "${st.split.stream}" at ${this.src.label}: ${reset}; the entries of the new stream are not the ones the position counts, and reading on would skip some of them. Start the job without this checkpoint (the source reads the new stream from startFrom), or restore the stream`);
          break;
        }
      }
      if (this.error === undefined) this.fetch();
      this.ctx.wake();
    }).catch((e) => {
      this.inFlight = false;
      if (this.closed) return;
      this.error = redisError(this.src.label, `XINFO STREAM and XRANGE of streams ${states.map((st) => `"${st.split.stream}"`).join(', ')}`, e, this.src.url);
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

  private received(key: string, entries: Entry[], info: StreamInfo | 'missing' | undefined): void {
    const st = this.splits.states.get(key);
    if (st === undefined) return;
    const problem = entriesProblem(entries);
    if (problem !== undefined) {
      this.error ??= new WeirError('CONNECTOR', `Redis at ${this.src.label}: XREAD of stream "${key}" after entry ${st.fetchedId}: ${problem}`);
      return;
    }
    if (entries.length === 0) return;
    const numbers = this.gapBefore(st, entries, info);
    if (this.error !== undefined || st.gapError !== undefined) return;
    const endId = st.split.endId;
    let take = entries;
    if (endId !== undefined) {
      let k = 0;
      while (k < entries.length && compareEntryIds(entries[k]![0], endId) <= 0) k++;
      if (k < entries.length || compareEntryIds(entries[k - 1]![0], endId) === 0) st.done = true;
      take = k < entries.length ? entries.slice(0, k) : entries;
    }
    if (take.length === 0) return;
    const takeFirst = numbers.first;
    const takeLast = take === entries ? numbers.last : takeFirst === undefined ? undefined : takeFirst + take.length - 1;
    st.fetchedId = take[take.length - 1]![0];
    st.fetchedRead = takeLast;
    if (st.at >= st.buffer.length) {
      st.buffer = take;
      st.at = 0;
      st.bufferFirstRead = takeFirst;
    } else {
      for (const e of take) st.buffer.push(e);
      // Still numbered one by one only if the new entries follow on.
      if (takeFirst === undefined || st.bufferLastRead === undefined || takeFirst !== st.bufferLastRead + 1) st.bufferFirstRead = undefined;
    }
    st.bufferLastRead = takeLast;
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

  /**
   * Whether entries between the split's position and what XREAD returned were removed before
   * the XREAD ran (XINFO STREAM of just before it, Redis 7: a first entry past the position is a
   * trim, a deleted id past it an XDEL), named in the log as the JetStream source names the
   * sequences that are gone, or failing the reader with onGap 'fail'. Numbers the entries (the
   * stream's entries-added count) while it can: a trim up to the position takes nothing from the
   * reader and is not reported. One check per XREAD reply, a loop over its entries only to number
   * them. A fresh split at 0-0 reads from whatever is left: nothing is reported for it.
   */
  private gapBefore(st: SplitState, entries: Entry[], info: StreamInfo | 'missing' | undefined): { first: number | undefined; last: number | undefined } {
    const pos = st.fetchedId;
    const read = st.fetchedRead;
    const first = entries[0]![0];
    const last = entries[entries.length - 1]![0];
    let firstRead: number | undefined;
    let numbered = false;
    let line: string | undefined;
    let certain = false;
    if (info === 'missing') {
      // The stream did not exist before this XREAD: a fresh split reads it from its first entry.
      if (pos === '0-0' && read === 0) firstRead = 1;
      numbered = firstRead !== undefined;
    } else if (info !== undefined) {
      const trimmed = info.length === 0 ? compareEntryIds(info.lastGenerated, pos) > 0 : compareEntryIds(info.first, pos) > 0;
      const deleted = compareEntryIds(info.maxDeleted, pos) > 0;
      // No entry between the first returned and the last was deleted before: numbered one by one.
      numbered = compareEntryIds(info.maxDeleted, first) < 0;
      if (!trimmed && !deleted) {
        firstRead = read === undefined ? undefined : read + 1;
      } else {
        // The first entry returned is the stream's first (or new since an emptied stream): its
        // number is entries-added less what is there (no XDEL hole among them).
        if (info.length === 0) firstRead = info.entriesAdded + 1;
        else if (first === info.first && compareEntryIds(info.maxDeleted, info.first) < 0) firstRead = info.entriesAdded - info.length + 1;
        const where = `stream "${st.split.stream}"`;
        if (pos === '0-0') {
          // A fresh start reads from the oldest entry left.
        } else if (trimmed && firstRead !== undefined && read !== undefined) {
          const gone = firstRead - read - 1;
          if (gone > 0) {
            line = `${where}: ${gone} entr${gone === 1 ? 'y' : 'ies'} after the position ${pos}, before ${first}, ${gone === 1 ? 'is' : 'are'} gone (removed by the stream's limits or deleted before this reader read them)`;
            certain = true;
          }
        } else if (trimmed) {
          line = `${where}: its entries up to the position ${pos} were trimmed (the oldest is now ${info.length === 0 ? first : info.first}); entries between them, if there were any, were removed before this reader read them`;
        } else if (compareEntryIds(info.maxDeleted, last) < 0) {
          line = `${where}: entries after the position ${pos} were deleted before this reader read them (the last deleted ${info.maxDeleted})`;
          certain = true;
        }
      }
    }
    const numbers = {
      first: numbered ? firstRead : undefined,
      // The stream's last entry is its entries-added'th, holes or not.
      last: typeof info === 'object' && last === info.lastGenerated ? info.entriesAdded : numbered && firstRead !== undefined ? firstRead + entries.length - 1 : undefined,
    };
    if (line === undefined) return numbers;
    if (certain && this.src.onGap === 'fail') {
      st.gapError = new WeirError('CONNECTOR', `Redis at ${this.src.label}: ${line}; onGap is 'fail' (with 'log' the source reads on after them)`);
      return numbers;
    }
    this.ctx.log(line);
    return numbers;
  }

  snapshotSplits(): RedisStreamSplit[] {
    return [...this.splits.states.values()].map((s) => {
      const e = s.lastEmitted;
      if (e !== undefined && e[0] === s.split.lastId) {
        if (s.lastEmittedRead !== undefined) s.split.entriesRead = s.lastEmittedRead;
        else delete s.split.entriesRead;
        // Per checkpoint, not per record: one entry's digest.
        if (s.digestOf !== e) s.split.lastEntryDigest = entryDigest(e[1]);
        s.digestOf = e;
      }
      return { ...s.split };
    });
  }

  close(): void {
    this.closed = true;
    this.conn?.disconnect();
    this.conn = undefined;
  }
}

const MALFORMED = Symbol('malformed');

/** Digest of an entry's fields (RedisStreamSplit.lastEntryDigest). */
export function entryDigest(fields: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(fields)).digest('base64url').slice(0, 22);
}

/**
 * Why the stream is not the one a split's position is in, or undefined when it may be: fewer
 * entries ever added than the position counts (splits that recorded the number), its last id
 * before the position (any split), another entry at the position's id, or no entry there
 * although the stream never removed one at or past it (splits that recorded the digest).
 * Trims and XDEL pass: they never add entries, nor change one.
 */
export function streamReplaced(split: Pick<RedisStreamSplit, 'lastId' | 'entriesRead' | 'lastEntryDigest'>, info: StreamInfo, entry: readonly [id: string, fields: string[], ...unknown[]] | undefined): string | undefined {
  const pos = split.lastId;
  if (pos === '0-0') return undefined;
  if (split.entriesRead !== undefined && info.entriesAdded < split.entriesRead) {
    return `it has had ${info.entriesAdded} entries added, fewer than the ${split.entriesRead} up to the position ${pos} (deleted and created again)`;
  }
  if (compareEntryIds(info.lastGenerated, pos) < 0) return `its last entry id is ${info.lastGenerated}, before the position ${pos} (deleted and created again?)`;
  if (split.lastEntryDigest === undefined) return undefined;
  if (entry !== undefined) {
    return entry[0] === pos && entryDigest(entry[1]) !== split.lastEntryDigest ? `its entry ${pos} is not the one the position read (deleted and created again)` : undefined;
  }
  const removed = info.length === 0 || compareEntryIds(info.first, pos) > 0 || compareEntryIds(info.maxDeleted, pos) >= 0;
  return removed ? undefined : `it has no entry ${pos} and never removed one there (deleted and created again)`;
}

/** What the reader uses of XINFO STREAM (Redis 7). */
export interface StreamInfo {
  readonly length: number;
  /** The first entry's id (recorded-first-entry-id: trims and XDEL move it on; 0-0 when empty). */
  readonly first: string;
  readonly lastGenerated: string;
  /** The highest id XDEL removed (trims leave it). */
  readonly maxDeleted: string;
  /** Entries ever added, removed ones counted. */
  readonly entriesAdded: number;
}

/** XINFO STREAM's fields from a pipeline reply: 'missing' for no such key, undefined for another error or a server before Redis 7. */
export function streamInfo(reply: [Error | null, unknown] | undefined): StreamInfo | 'missing' | undefined {
  const [err, info] = reply ?? [null, undefined];
  if (err) return /no such key/i.test(err.message) ? 'missing' : undefined;
  if (!Array.isArray(info)) return undefined;
  const field = (name: string): unknown => {
    const at = info.indexOf(name);
    return at >= 0 && at % 2 === 0 ? info[at + 1] : undefined;
  };
  const length = field('length');
  const first = field('recorded-first-entry-id');
  const lastGenerated = field('last-generated-id');
  const maxDeleted = field('max-deleted-entry-id');
  const entriesAdded = field('entries-added');
  if (typeof length !== 'number' || typeof entriesAdded !== 'number' || !isEntryId(first) || !isEntryId(lastGenerated) || !isEntryId(maxDeleted)) return undefined;
  return { length, first, lastGenerated, maxDeleted, entriesAdded };
}

function oneOf<V extends string>(v: unknown, allowed: readonly V[], what: string): V {
  if (!(allowed as readonly unknown[]).includes(v)) throw new RangeError(`${what} must be ${allowed.map((a) => `"${a}"`).join(' or ')}, got ${JSON.stringify(v)}`);
  return v as V;
}

function posInt(v: unknown, what: string): number {
  if (!(typeof v === 'number' && Number.isInteger(v) && v > 0)) throw new RangeError(`${what} must be a positive integer, got ${String(v)}`);
  return v;
}
