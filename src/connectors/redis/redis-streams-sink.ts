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

/**
 * A checkpoint's commit, run by the server as one script (atomic: nothing else runs between its
 * commands). KEYS: the progress key, then every stream the entries go to. ARGV: the checkpoint
 * id, MAXLEN ('' for none), the number of entries, then per entry its stream's index in KEYS,
 * its number of fields and values, and those. Returns {1} when committed; {0, progress} when the
 * progress key says the checkpoint was committed before (or holds what is not a number, for the
 * caller to name); {-1, key, type} when a key holds another type than a stream, before anything is
 * written (an XADD failing there alone would leave the others and the progress applied, and a
 * re-commit would skip the checkpoint, its entries for that key never written).
 *
 * It was MULTI/EXEC under a WATCH of the progress key and every stream: on Redis 7.0 WATCH of N
 * keys costs O(N^2) in the server, blocking every client (6.5 s at 40,000 keys), and a checkpoint
 * of 100,000 streams timed out at every retry, the job stuck at its restore.
 */
const COMMIT_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if cur then
  if not string.match(cur, '^%d+$') or tonumber(cur) >= tonumber(ARGV[1]) then return {0, cur} end
end
for i = 2, #KEYS do
  local t = redis.call('TYPE', KEYS[i]).ok
  if t ~= 'stream' and t ~= 'none' then return {-1, KEYS[i], t} end
end
local maxlen = ARGV[2]
local at = 4
for e = 1, tonumber(ARGV[3]) do
  local key = KEYS[tonumber(ARGV[at])]
  local nf = tonumber(ARGV[at + 1])
  at = at + 2
  local cmd = {'XADD', key}
  if maxlen ~= '' then cmd[#cmd + 1] = 'MAXLEN'; cmd[#cmd + 1] = '~'; cmd[#cmd + 1] = maxlen end
  cmd[#cmd + 1] = '*'
  for f = 0, nf - 1 do cmd[#cmd + 1] = ARGV[at + f] end
  redis.call(unpack(cmd))
  at = at + nf
end
redis.call('SET', KEYS[1], ARGV[1])
return {1}
`;

/**
 * Most fields and values one entry may have: the commit script builds each XADD as a Lua table
 * and unpacks it, and Lua's unpack returns at most 7,999 values (measured on Redis 7.0: 8,000
 * fails with "too many results to unpack"); XADD, the key, MAXLEN ~ n and '*' take 6. A wider
 * entry was taken and failed the commit of a completed checkpoint, at every retry and restore.
 */
export const MAX_ENTRY_FIELD_VALUES = 7_992;

/** ioredis's eval with its arguments as arrays (it flattens them; its types list spread arguments only). */
interface ScriptRunner {
  eval(script: string, numKeys: number, keys: readonly string[], args: readonly RedisFieldValue[]): Promise<unknown>;
}

/** maxmemory-policy and maxmemory, or undefined where CONFIG is not allowed (managed servers often rename or refuse it). */
async function evictionSettings(c: Redis): Promise<{ policy: string; maxmemory: string } | undefined> {
  try {
    const [, policy] = (await c.config('GET', 'maxmemory-policy')) as string[];
    const [, maxmemory] = (await c.config('GET', 'maxmemory')) as string[];
    return policy === undefined || maxmemory === undefined ? undefined : { policy, maxmemory };
  } catch {
    return undefined;
  }
}

/**
 * Whether a server may evict the sink's progress keys (they have no TTL): an allkeys-* policy
 * under a memory limit. volatile-* policies evict only keys with a TTL; without maxmemory (0)
 * nothing is evicted.
 */
export function evictsAnyKey(policy: string, maxmemory: string): boolean {
  return policy.startsWith('allkeys-') && Number(maxmemory) > 0;
}

export function isTransientRedis(e: unknown): boolean {
  if (isSocketError(e)) return true;
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

  /**
   * At start: the server answers (retried with backoff to the deadline, then a CONNECTOR error
   * naming host and port; writers fail on their next call if not), and whether it may evict the
   * progress keys (said once in the log).
   */
  start(log: (line: string) => void): Promise<void> {
    this.started ??= retrying(this.options.retry, isTransientRedis, async () => {
      const c = await this.connect();
      try {
        await c.ping();
        const policy = await evictionSettings(c);
        if (policy !== undefined && evictsAnyKey(policy.policy, policy.maxmemory)) {
          log(`weir: ${this.name} at ${this.server()}: the server evicts any key under memory pressure (maxmemory-policy ${policy.policy}, maxmemory ${policy.maxmemory}); a progress key evicted makes a re-commit after a failure write a checkpoint's entries again. Use noeviction or a volatile-* policy`);
        }
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
    if (out.length - 1 > MAX_ENTRY_FIELD_VALUES) throw new TypeError(`redis streams sink: an entry of stream "${stream}" has ${(out.length - 1) / 2} fields, more than the ${MAX_ENTRY_FIELD_VALUES / 2} one commit script can add; store the record in fewer fields`);
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
    sink.start((line) => ctx.log(line)).catch((e) => (this.failed ??= e));
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
        await retrying(this.sink.options.retry, isTransientRedis, (attempt) => this.commitOne(item, triedBefore || attempt > 0), { onRetry: () => this.drop(), signal: this.ctx.signal });
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
    const slot = new Map(streams.map((s, i) => [s, i + 2]));
    const args: RedisFieldValue[] = [String(item.chk), this.sink.options.maxLen === undefined ? '' : String(this.sink.options.maxLen), String(item.entries.length)];
    for (const [stream, ...fields] of item.entries) args.push(String(slot.get(stream)!), String(fields.length), ...fields);
    // Arrays, not spread arguments: ioredis flattens them, and a spread of 150,000 failed.
    const r = (await (c as unknown as ScriptRunner).eval(COMMIT_SCRIPT, 1 + streams.length, [pkey, ...streams], args)) as [number, string?, string?];
    if (r[0] === 1) return this.awaitReplicas(c, item.chk);
    if (r[0] === -1) {
      throw new WeirError('CONNECTOR', `${this.sink.name}: key "${r[1]}" holds a ${r[2]}, not a stream: checkpoint ${item.chk}'s entries for it cannot be added, so none of the checkpoint's entries were written (rename or delete that key, or route the records to another stream)`);
    }
    const committed = parseCommittedId(r[1] ?? null, `progress key "${pkey}"`);
    // Done before: by this subtask (a retry, or a re-commit after a restore), or by another run.
    if (this.ctx.restoredCheckpointId === undefined && !triedBefore && committed !== undefined) throw foreignProgressError(this.sink.name, `progress key "${pkey}"`, key, committed, item.chk);
    // Done before, perhaps by a try whose wait for the replicas fell short: they must have it now.
    return this.awaitReplicas(c, item.chk);
  }

  /** The commit is on `replicas` replicas (WAIT), or a TIMEOUT (transient: the commit is retried, and finds itself done). */
  private async awaitReplicas(c: Redis, chk: number): Promise<void> {
    const want = this.sink.options.replicas;
    if (want === 0) return;
    // Half the command timeout: WAIT blocks the connection that long, and must answer before the client gives up on it.
    const waitMs = Math.max(1, Math.floor(this.sink.options.commandTimeoutMs / 2));
    const got = await c.wait(want, waitMs);
    if (got < want) {
      throw new WeirError('TIMEOUT', `${this.sink.name}: checkpoint ${chk}'s commit reached ${got} of the ${want} replicas asked for (replicas) within ${waitMs} ms`);
    }
  }

  private drop(): void {
    this.client?.disconnect();
    this.client = undefined;
  }

  close(): void {
    this.drop();
  }
}
