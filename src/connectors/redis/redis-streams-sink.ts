/**
 * Exactly-once Redis Streams sink. A subtask's entries of a checkpoint interval are its
 * committable (they travel in the checkpoint). When the checkpoint completes they are added
 * with XADD inside one MULTI/EXEC that also sets the subtask's progress key
 * (`<prefix>:<job>:<operator>:<subtask>` -> checkpoint), under WATCH of that key after reading
 * it: a progress key at or past the checkpoint means the entries are there already (a
 * re-commit after a crash), and nothing is written twice. A transaction interrupted by a lost
 * connection either ran whole or not at all; the retry reads the progress key again on a new
 * connection (a broken connection is never reused, so a WATCH is never lost silently).
 * Entry ids are the server's (`*`): ids of a re-run differ, content and order do not.
 */
import type { Redis } from 'ioredis';
import { WeirError } from '../../core/errors.ts';
import type { CommitScope, SinkCommitter, SinkContext, SinkWriter, TwoPhaseCommitSink } from '../../core/sink.ts';
import { foreignProgressError, newestCommitted, operatorKey, parseCommittedId, type ProgressKey } from '../common/progress.ts';
import { isSocketError, messageOf, retrying, withTimeout } from '../common/retry.ts';
import { resolveRedisOptions, type RedisFieldValue, type RedisStreamsSinkOptions, type ResolvedRedisOptions } from './options.ts';
import { TriedCheckpoints } from '../common/tried-checkpoints.ts';

/** One entry: stream key, then field, value, field, value, ... */
export type RedisEntry = [string, ...RedisFieldValue[]];

export interface RedisCommittable {
  readonly sub: number;
  readonly chk: number;
  readonly entries: RedisEntry[];
}

/** WATCH saw the progress key change before EXEC (another committer of the same subtask): read it again. */
class WatchConflict extends Error {}

export function isTransientRedis(e: unknown): boolean {
  if (e instanceof WatchConflict || isSocketError(e)) return true;
  if (e instanceof WeirError) return e.code === 'TIMEOUT';
  return /Connection is closed|aborted due to connection close|Command timed out|Stream isn't writeable|LOADING|connect ETIMEDOUT|MASTERDOWN|TRYAGAIN/i.test(messageOf(e));
}

export class RedisStreamsSink<T> implements TwoPhaseCommitSink<T, RedisCommittable> {
  readonly name: string;
  readonly options: ResolvedRedisOptions;
  private readonly streamOf: (v: T) => string;
  private readonly fieldsOf: (v: T) => Record<string, RedisFieldValue>;
  /** The start check, once per sink in this process. */
  private started: Promise<void> | undefined;

  constructor(options: RedisStreamsSinkOptions<T>) {
    this.options = resolveRedisOptions(options);
    const stream = options.stream;
    this.name = `redis streams ${typeof stream === 'string' ? stream : '(by record)'}`;
    this.streamOf = typeof stream === 'string' ? () => stream : stream;
    this.fieldsOf = options.fields ?? ((v: T) => ({ data: JSON.stringify(v) }));
  }

  server(): string {
    return `${this.options.connection.host}:${this.options.connection.port}/${this.options.connection.db}`;
  }

  /** At start: the server answers (retried with backoff to the deadline, then a CONNECTOR error naming host and port). Writers fail on their next call if not. */
  start(): Promise<void> {
    this.started ??= retrying(this.options.retry, isTransientRedis, async () => {
      const c = await this.connect();
      try {
        await c.ping();
      } finally {
        c.disconnect();
      }
    }).catch((e) => {
      throw this.wrap(e, 'start check');
    });
    return this.started;
  }

  progressKey(key: ProgressKey): string {
    return `${this.options.progressKeyPrefix}:${key.job}:${key.operator}:${key.subtask}`;
  }

  key(ctx: Pick<SinkContext, 'operatorId' | 'subtaskIndex'>, sub = ctx.subtaskIndex): ProgressKey {
    return { job: this.options.jobId, operator: operatorKey(this.name, ctx as SinkContext), subtask: sub };
  }

  /** An entry of a record: stream key and flattened fields, checked. */
  entryOf(v: T): RedisEntry {
    const stream = this.streamOf(v);
    if (typeof stream !== 'string' || stream === '') throw new TypeError(`redis streams sink: the stream key of a record must be a non-empty string, got ${JSON.stringify(stream)}`);
    const fields = this.fieldsOf(v);
    const out: RedisEntry = [stream];
    for (const k in fields) {
      const x = fields[k];
      if (!(typeof x === 'string' || typeof x === 'number' || Buffer.isBuffer(x))) throw new TypeError(`redis streams sink: field "${k}" of stream "${stream}" must be a string, number or Buffer, got ${typeof x}`);
      out.push(k, x);
    }
    if (out.length === 1) throw new TypeError(`redis streams sink: an entry of stream "${stream}" needs at least one field`);
    return out;
  }

  createWriter(ctx: SinkContext): SinkWriter<T, RedisCommittable> {
    return new RedisWriter<T>(this, ctx);
  }

  createCommitter(ctx: SinkContext): SinkCommitter<RedisCommittable> {
    return new RedisCommitter(this as RedisStreamsSink<never>, ctx);
  }

  /** A connected client that is never reused after it breaks (no reconnects, no offline queue). */
  async connect(): Promise<Redis> {
    const o = this.options;
    // Loaded on first use: every thread of every job imports the connectors, few use this one.
    const { Redis: Client } = await import('ioredis');
    const c = new Client({
      host: o.connection.host, port: o.connection.port, username: o.connection.username, password: o.connection.password, db: o.connection.db,
      lazyConnect: true, connectTimeout: o.connectTimeoutMs, commandTimeout: o.commandTimeoutMs,
      retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false, autoResendUnfulfilledCommands: false,
      connectionName: `weir-sink-${o.jobId}`,
    });
    // Surfaced by the command that fails; while connecting, the socket's own error (WRONGPASS,
    // ECONNREFUSED) says more than connect()'s "Connection is closed".
    let cause: unknown;
    c.on('error', (e) => (cause ??= e));
    try {
      await withTimeout(c.connect(), o.connectTimeoutMs + 1_000, `connecting to Redis at ${this.server()}`);
      return c;
    } catch (e) {
      c.disconnect();
      throw cause ?? e;
    }
  }

  wrap(e: unknown, doing: string): WeirError {
    if (e instanceof WeirError && e.code !== 'TIMEOUT') return e;
    return new WeirError('CONNECTOR', `redis streams sink ${doing} at ${this.server()} failed: ${messageOf(e)}`); // no cause: an aborted MULTI carries every queued command
  }

  /** The jobId names this sink's progress records and prepared work (checked against every restored checkpoint). */
  identity(): string {
    return `jobId ${this.options.jobId}`;
  }

  /** The newest checkpoint any subtask of the operator committed (the start-up check against duplicate output). */
  lastCommittedCheckpoint(scope: CommitScope): Promise<number | undefined> {
    return newestCommitted(scope.parallelism, (subtask) => this.lastCommittedCheckpointOf(scope.operatorId, subtask));
  }

  /** The last checkpoint whose entries `subtask` of this sink committed (its progress key), or undefined. Retried like start(): a server down while the job restarts is waited for, to the retry deadline. */
  async lastCommittedCheckpointOf(operatorId: string, subtask: number): Promise<number | undefined> {
    return retrying(this.options.retry, isTransientRedis, async () => {
      const c = await this.connect();
      try {
        const pkey = this.progressKey(this.key({ operatorId, subtaskIndex: subtask }));
        return parseCommittedId(await c.get(pkey), `progress key "${pkey}"`);
      } finally {
        c.disconnect();
      }
    }).catch((e) => { throw this.wrap(e, 'reading its progress'); });
  }
}

class RedisWriter<T> implements SinkWriter<T, RedisCommittable> {
  private entries: RedisEntry[] = [];
  private failed: unknown;

  constructor(private readonly sink: RedisStreamsSink<T>, private readonly ctx: SinkContext) {
    sink.start().catch((e) => (this.failed ??= e));
  }

  write(values: readonly T[]): void {
    if (this.failed !== undefined) throw this.failed;
    const max = this.sink.options.maxBufferedRecords;
    if (this.entries.length + values.length > max) {
      throw new WeirError('CONFIG', `${this.sink.name}: more than maxBufferedRecords (${max}) entries between two checkpoints; checkpoint more often or raise maxBufferedRecords`);
    }
    for (let i = 0; i < values.length; i++) this.entries.push(this.sink.entryOf(values[i]!));
  }

  prepareCommit(checkpointId: number): RedisCommittable[] {
    if (this.failed !== undefined) throw this.failed;
    const entries = this.entries;
    this.entries = [];
    return [{ sub: this.ctx.subtaskIndex, chk: checkpointId, entries }];
  }
}

class RedisCommitter implements SinkCommitter<RedisCommittable> {
  private client: Redis | undefined;
  private readonly tried = new TriedCheckpoints();

  constructor(private readonly sink: RedisStreamsSink<never>, private readonly ctx: SinkContext) {}

  async commit(list: readonly RedisCommittable[]): Promise<void> {
    for (const item of list) {
      const triedBefore = this.tried.tryOnce(item.sub, item.chk);
      try {
        await retrying(this.sink.options.retry, isTransientRedis, (attempt) => this.commitOne(item, triedBefore || attempt > 0), { onRetry: (e) => { if (!(e instanceof WatchConflict)) this.drop(); } });
      } catch (e) {
        this.drop();
        throw this.sink.wrap(e, `committing checkpoint ${item.chk}`);
      }
    }
  }

  private async commitOne(item: RedisCommittable, triedBefore: boolean): Promise<void> {
    const c = (this.client ??= await this.sink.connect());
    const key = this.sink.key(this.ctx, item.sub);
    const pkey = this.sink.progressKey(key);
    const streams = [...new Set(item.entries.map((e) => e[0]))];
    // The streams too: one turned into another type between the check below and EXEC aborts it.
    await c.watch(pkey, ...streams);
    const committed = parseCommittedId(await c.get(pkey), `progress key "${pkey}"`);
    if (committed !== undefined && committed >= item.chk) {
      await c.unwatch();
      // Done before: by this subtask (a retry, or a re-commit after a restore), or by another run.
      if (this.ctx.restoredCheckpointId === undefined && !triedBefore) throw foreignProgressError(this.sink.name, `progress key "${pkey}"`, key, committed, item.chk);
      return;
    }
    await this.checkStreams(c, streams, item.chk);
    const m = c.multi();
    const maxLen = this.sink.options.maxLen;
    for (const [stream, ...fields] of item.entries) {
      if (maxLen === undefined) m.xadd(stream, '*', ...fields);
      else m.xadd(stream, 'MAXLEN', '~', maxLen, '*', ...fields);
    }
    m.set(pkey, String(item.chk));
    const r = await m.exec();
    if (r === null) throw new WatchConflict(`progress key ${pkey} changed during the commit`);
    for (const [err] of r) if (err) throw err;
  }

  /**
   * Every key the checkpoint's entries go to is a stream or absent. MULTI/EXEC is not all or
   * nothing for errors at run time: an XADD to a key of another type fails alone while the
   * other XADDs and the progress key's SET apply, and the restore's re-commit would then skip
   * the checkpoint with that XADD's entries never written. So nothing is sent instead, and the
   * commit fails naming the key (WATCH covers the keys from here to EXEC).
   */
  private async checkStreams(c: Redis, streams: readonly string[], chk: number): Promise<void> {
    const types = await Promise.all(streams.map((s) => c.type(s)));
    const at = types.findIndex((t) => t !== 'stream' && t !== 'none');
    if (at < 0) return;
    await c.unwatch();
    throw new WeirError('CONNECTOR', `${this.sink.name}: key "${streams[at]}" holds a ${types[at]}, not a stream: checkpoint ${chk}'s entries for it cannot be added, so none of the checkpoint's entries were written (rename or delete that key, or route the records to another stream)`);
  }

  private drop(): void {
    this.client?.disconnect();
    this.client = undefined;
  }

  close(): void {
    this.drop();
  }
}
