/**
 * Exactly-once NATS JetStream sink. A subtask's messages of a checkpoint interval are its
 * committable (staged in the checkpoint, published to no one). When the checkpoint completes
 * they are published, each with a deterministic Nats-Msg-Id (job, operator, subtask,
 * checkpoint, index), then the subtask's progress key in a key-value bucket records the
 * checkpoint as committed. A re-commit after a restore skips a checkpoint recorded there; one
 * whose publishing a crash interrupted is published again under the same ids, and the server
 * drops the messages it already has.
 *
 * The limit: the server de-duplicates only within the stream's duplicate window after a
 * message's first publish. Weir checks at start that the window is at least
 * minDuplicateWindowMs (default 2 min), and each committer again before its first commit (a
 * restart in the same process keeps the sink object), so a restart that re-commits within that time after
 * the interrupted commit began writes nothing twice; a re-commit later than the window is
 * detected (the progress key holds when publishing began): the committer then searches the
 * stream for the checkpoint's message ids and publishes only the messages it does not find
 * (bounded; past the bounds it publishes all, and the log says its repeats may be duplicates).
 *
 * A message larger than the server's max_payload or the stream's max_msg_size (headers
 * included) is refused by the writer, before it enters a committable: at publish it failed the
 * commit of a completed checkpoint, half of it visible, and every restore's re-commit again.
 */
import type { JetStreamClient, JetStreamManager, KV, NatsConnection, PubAck } from 'nats';
import { describeRecord, WeirError } from '../../core/errors.ts';
import type { CommitScope, SinkCommitter, SinkContext, SinkWriter, TwoPhaseCommitSink } from '../../core/sink.ts';
import { foreignProgressError, newestCommitted, operatorKey, type ProgressKey } from '../common/progress.ts';
import { isSocketError, messageOf, retrying, withTimeout } from '../common/retry.ts';
import { resolveJetStreamOptions, type JetStreamSinkOptions, type ResolvedJetStreamOptions } from './options.ts';
import { decideCommit, messageId, messageIdPrefix, newestVisible, parseProgress } from './progress-state.ts';
import { TriedCheckpoints } from '../common/tried-checkpoints.ts';

export interface JetStreamCommittable {
  readonly sub: number;
  readonly chk: number;
  /** [subject, body] per message, in order. */
  readonly msgs: [string, Uint8Array][];
}

const TRANSIENT_CODES = new Set(['TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_REFUSED', 'CONNECTION_TIMEOUT', 'DISCONNECT', '503', '408', 'CONNECTION_DRAINING']);

/**
 * The progress key changed since this commit read it: another committer of the same subtask (a
 * later attempt's, while an earlier attempt's commit still runs after its timeout) wrote it. The
 * commit starts over from a fresh read, which skips a checkpoint now recorded as committed.
 */
class ProgressMovedError extends Error {}

/** How much earlier than a late re-commit's first try its search for messages already published begins: the server stamps messages with its own clock. */
const CLOCK_SLACK_MS = 60_000;
/** Bounds of that search; past either the checkpoint is published whole again, as without it, with a log line. */
const SCAN_MAX_MESSAGES = 1_000_000;
const SCAN_BUDGET_MS = 30_000;

/** NATS's "wrong last sequence" (JSStreamWrongLastSequenceErr), a failed compare-and-set. */
const WRONG_LAST_SEQUENCE = 10071;

export function isTransientNats(e: unknown): boolean {
  if (isSocketError(e) || e instanceof ProgressMovedError) return true;
  if (e instanceof WeirError) return e.code === 'TIMEOUT';
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TRANSIENT_CODES.has(code);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Session {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly kv: KV;
}

export class JetStreamSink<T> implements TwoPhaseCommitSink<T, JetStreamCommittable> {
  readonly name: string;
  readonly options: ResolvedJetStreamOptions;
  private readonly subjectOf: (v: T) => string;
  private readonly payloadOf: (v: T) => string | Uint8Array;
  /** The start check (server reachable, stream there, duplicate window long enough), once per sink in this process. */
  private started: Promise<void> | undefined;
  /** The stream's duplicate window as the start check found it. */
  duplicateWindowMs: number | undefined;
  /** The largest message (headers and payload) the server and the stream take, as the start check found it, and what sets it. */
  messageLimit: { readonly bytes: number; readonly by: string } | undefined;

  constructor(options: JetStreamSinkOptions<T>) {
    this.options = resolveJetStreamOptions(options);
    const subject = options.subject;
    this.name = `jetstream ${this.options.stream}`;
    this.subjectOf = typeof subject === 'string' ? () => subject : subject;
    this.payloadOf = options.payload ?? ((v: T) => JSON.stringify(v));
  }

  server(): string {
    return this.options.servers.join(',');
  }

  key(ctx: Pick<SinkContext, 'operatorId' | 'subtaskIndex'>, sub = ctx.subtaskIndex): ProgressKey {
    return { job: this.options.jobId, operator: operatorKey(this.name, ctx as SinkContext), subtask: sub };
  }

  progressKey(k: ProgressKey): string {
    return `${k.job}.${k.operator}.${k.subtask}`;
  }

  wrap(e: unknown, doing: string): WeirError {
    if (e instanceof WeirError && e.code !== 'TIMEOUT') return e;
    return new WeirError('CONNECTOR', `jetstream sink ${doing} at ${this.server()} (stream "${this.options.stream}") failed: ${messageOf(e)}`);
  }

  async connect(): Promise<Session> {
    const o = this.options;
    // Loaded on first use: every thread of every job imports the connectors, few use this one.
    const { connect } = await import('nats');
    const nc = await connect({
      servers: o.servers, user: o.user, pass: o.pass, token: o.token, timeout: o.connectTimeoutMs,
      name: `weir-sink-${o.jobId}`, maxReconnectAttempts: -1, reconnectTimeWait: 250,
    });
    try {
      const js = nc.jetstream({ timeout: o.requestTimeoutMs });
      const kv = await withTimeout(js.views.kv(o.progressBucket, { history: 1 }), o.requestTimeoutMs, `opening key-value bucket ${o.progressBucket}`);
      return { nc, js, kv };
    } catch (e) {
      await nc.close().catch(() => {});
      throw e;
    }
  }

  /** The stream must exist and keep duplicates out for at least minDuplicateWindowMs. */
  async checkStream(nc: NatsConnection): Promise<void> {
    const o = this.options;
    const jsm = await nc.jetstreamManager({ timeout: o.requestTimeoutMs });
    let windowNs: number;
    let maxMsgSize: number;
    try {
      const config = (await jsm.streams.info(o.stream)).config;
      windowNs = config.duplicate_window ?? 0;
      maxMsgSize = config.max_msg_size ?? -1;
    } catch (e) {
      if (/stream not found/i.test(messageOf(e))) throw new WeirError('CONFIG', `jetstream sink: stream "${o.stream}" does not exist at ${this.server()}`);
      throw e;
    }
    this.messageLimit = messageLimit(nc.info?.max_payload, maxMsgSize);
    const windowMs = windowNs / 1e6;
    this.duplicateWindowMs = windowMs;
    if (windowMs < o.minDuplicateWindowMs) {
      throw new WeirError(
        'CONFIG',
        `jetstream sink: stream "${o.stream}" has a duplicate window of ${windowMs / 1000} s, less than minDuplicateWindowMs (${o.minDuplicateWindowMs / 1000} s): ` +
          'messages of a commit interrupted by a crash could be duplicated when the restarted job publishes them again; raise the stream\'s duplicate_window',
      );
    }
  }

  /** Runs the start check once; writers and committers fail on it (server down, stream missing, window too short). */
  start(): Promise<void> {
    this.started ??= retrying(this.options.retry, isTransientNats, async () => {
      const s = await this.connect();
      try {
        await this.checkStream(s.nc);
      } finally {
        await s.nc.close().catch(() => {});
      }
    }).catch((e) => {
      throw this.wrap(e, 'start check');
    });
    return this.started;
  }

  createWriter(ctx: SinkContext): SinkWriter<T, JetStreamCommittable> {
    return new JetStreamWriter<T>(this, ctx, this.subjectOf, this.payloadOf);
  }

  createCommitter(ctx: SinkContext): SinkCommitter<JetStreamCommittable> {
    return new JetStreamCommitter(this as JetStreamSink<never>, ctx);
  }

  /** The jobId names this sink's progress records and prepared work (checked against every restored checkpoint). */
  identity(): string {
    return `jobId ${this.options.jobId}`;
  }

  /** The newest checkpoint any subtask of the operator committed (the start-up check against duplicate output). */
  lastCommittedCheckpoint(scope: CommitScope): Promise<number | undefined> {
    return newestCommitted(scope.parallelism, (subtask) => this.lastCommittedCheckpointOf(scope.operatorId, subtask));
  }

  /** The last checkpoint whose messages `subtask` of this sink published, completely or in part (its progress key), or undefined. Retried like start(): a server down while the job restarts is waited for, to the retry deadline. */
  async lastCommittedCheckpointOf(operatorId: string, subtask: number): Promise<number | undefined> {
    return retrying(this.options.retry, isTransientNats, async () => {
      const s = await this.connect();
      try {
        const pkey = this.progressKey(this.key({ operatorId, subtaskIndex: subtask }));
        const e = await s.kv.get(pkey);
        return newestVisible(parseProgress(e === null || e.operation !== 'PUT' ? undefined : decoder.decode(e.value), `progress key "${pkey}" in bucket ${this.options.progressBucket}`));
      } finally {
        await s.nc.close().catch(() => {});
      }
    }).catch((e) => { throw this.wrap(e, 'reading its progress'); });
  }
}

/**
 * The largest message the server (max_payload) and the stream (max_msg_size; -1 or 0: none)
 * take, headers and payload together (both limits count both), or undefined when neither is known.
 */
export function messageLimit(maxPayload: number | undefined, maxMsgSize: number): { bytes: number; by: string } | undefined {
  const server = maxPayload !== undefined && maxPayload > 0 ? { bytes: maxPayload, by: `the server's max_payload of ${maxPayload} bytes` } : undefined;
  const stream = maxMsgSize > 0 ? { bytes: maxMsgSize, by: `the stream's max_msg_size of ${maxMsgSize} bytes` } : undefined;
  if (server === undefined || stream === undefined) return server ?? stream;
  return stream.bytes <= server.bytes ? stream : server;
}

/**
 * The most bytes the headers of this subtask's messages take (Nats-Msg-Id and
 * Nats-Expected-Stream, as the client encodes them), at the longest id: a checkpoint id of 16
 * digits (the largest safe integer) and an index as long as maxBufferedRecords.
 */
export function headerBytes(job: string, operator: string, subtask: number, stream: string, maxBufferedRecords: number): number {
  const id = messageId(job, operator, subtask, Number.MAX_SAFE_INTEGER, maxBufferedRecords);
  return encoder.encode(`NATS/1.0\r\nNats-Msg-Id: ${id}\r\nNats-Expected-Stream: ${stream}\r\n\r\n`).length;
}

class JetStreamWriter<T> implements SinkWriter<T, JetStreamCommittable> {
  private msgs: [string, Uint8Array][] = [];
  private failed: unknown;
  /** Messages of `msgs` before this index were checked against the message limit (later ones were written before the start check told it). */
  private checked = 0;
  /** Committables prepared before the start check told the limit: [first unchecked index, messages], checked in whenPrepared. */
  private readonly unchecked = new Map<number, [number, [string, Uint8Array][]]>();
  private readonly headerBytes: number;

  constructor(private readonly sink: JetStreamSink<T>, private readonly ctx: SinkContext, private readonly subjectOf: (v: T) => string, private readonly payloadOf: (v: T) => string | Uint8Array) {
    const key = sink.key(ctx);
    this.headerBytes = headerBytes(key.job, key.operator, key.subtask, sink.options.stream, sink.options.maxBufferedRecords);
    // At start, not at the first commit: a stream without a long enough duplicate window fails the job before it writes.
    sink.start().catch((e) => (this.failed ??= e));
  }

  write(values: readonly T[]): void {
    if (this.failed !== undefined) throw this.failed;
    const max = this.sink.options.maxBufferedRecords;
    if (this.msgs.length + values.length > max) {
      throw new WeirError('CONFIG', `${this.sink.name}: more than maxBufferedRecords (${max}) messages between two checkpoints; checkpoint more often or raise maxBufferedRecords`);
    }
    const limit = this.sink.messageLimit;
    if (limit !== undefined && this.checked < this.msgs.length) this.check(this.msgs, this.checked, limit);
    const maxBody = limit === undefined ? Infinity : limit.bytes - this.headerBytes;
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      const subject = this.subjectOf(v);
      if (typeof subject !== 'string' || subject === '' || /[\s*>]/.test(subject)) throw new TypeError(`jetstream sink: a record's subject must be a subject without wildcards or spaces, got ${JSON.stringify(subject)}`);
      const p = this.payloadOf(v);
      const body = typeof p === 'string' ? encoder.encode(p) : p;
      if (body.length > maxBody) throw this.tooLarge(subject, body.length, limit!, v);
      this.msgs.push([subject, body]);
    }
    if (limit !== undefined) this.checked = this.msgs.length;
  }

  /** Every message of `msgs` from `from` on fits the limit, or the error naming the first that does not. */
  private check(msgs: readonly [string, Uint8Array][], from: number, limit: { bytes: number; by: string }): void {
    const maxBody = limit.bytes - this.headerBytes;
    for (let i = from; i < msgs.length; i++) {
      const [subject, body] = msgs[i]!;
      if (body.length > maxBody) throw this.tooLarge(subject, body.length, limit);
    }
  }

  private tooLarge(subject: string, bytes: number, limit: { bytes: number; by: string }, record?: unknown): WeirError {
    return new WeirError(
      'MALFORMED_RECORD',
      `jetstream sink: stream "${this.sink.options.stream}" at ${this.sink.server()} (subtask ${this.ctx.subtaskIndex + 1}): a message of ${bytes} bytes on subject ${subject} ` +
        `(with up to ${this.headerBytes} bytes of headers) is over ${limit.by}, and would fail every commit of its checkpoint` +
        (record !== undefined ? `; the record: ${describeRecord(record, 120)}` : ''),
    );
  }

  prepareCommit(checkpointId: number): JetStreamCommittable[] {
    if (this.failed !== undefined) throw this.failed;
    const msgs = this.msgs;
    const limit = this.sink.messageLimit;
    if (limit !== undefined) this.check(msgs, this.checked, limit);
    else if (this.checked < msgs.length) this.unchecked.set(checkpointId, [this.checked, msgs]);
    this.msgs = [];
    this.checked = 0;
    return [{ sub: this.ctx.subtaskIndex, chk: checkpointId, msgs }];
  }

  /** A checkpoint prepared before the start check told the message limit is acknowledged once its messages are checked against it (a rejection declines it). */
  whenPrepared(checkpointId: number): Promise<void> | undefined {
    const u = this.unchecked.get(checkpointId);
    if (u === undefined) return undefined;
    this.unchecked.delete(checkpointId);
    return this.sink.start().then(() => {
      const limit = this.sink.messageLimit;
      if (limit !== undefined) this.check(u[1], u[0], limit);
    }).catch((e) => {
      this.failed ??= e;
      throw e;
    });
  }
}

/** Writes the progress key if its revision is still `revision` (0: no entry); returns the new revision. */
async function putIfUnchanged(kv: KV, pkey: string, value: object, revision: number): Promise<number> {
  try {
    return await kv.put(pkey, encoder.encode(JSON.stringify(value)), { previousSeq: revision });
  } catch (e) {
    if ((e as { api_error?: { err_code?: unknown } } | null)?.api_error?.err_code === WRONG_LAST_SEQUENCE) {
      throw new ProgressMovedError(`progress key "${pkey}" changed while this commit ran`);
    }
    throw e;
  }
}

class JetStreamCommitter implements SinkCommitter<JetStreamCommittable> {
  private session: Session | undefined;
  private readonly tried = new TriedCheckpoints();
  /** Messages the server reported as duplicates (re-commits), for the log. */
  duplicates = 0;
  /** The stream checked again at this committer's first commit (each attempt has its own committers). */
  private streamChecked: Promise<void> | undefined;
  /** The stream's duplicate window as this committer's check found it: what its re-commits are judged by. */
  windowMs: number | undefined;

  constructor(private readonly sink: JetStreamSink<never>, private readonly ctx: SinkContext) {}

  private async connected(): Promise<Session> {
    if (this.session === undefined || this.session.nc.isClosed()) this.session = await this.sink.connect();
    return this.session;
  }

  /**
   * The start check runs once per sink object, and a restart in the same process keeps the
   * object: a duplicate window shortened while the job was down went unnoticed, and a re-commit
   * past the real window published duplicates without a log line. Each committer reads the
   * stream again before its first commit (the restore's re-commit is the first).
   */
  private checkStream(): Promise<void> {
    this.streamChecked ??= retrying(this.sink.options.retry, isTransientNats, async () => {
      await this.sink.checkStream((await this.connected()).nc);
      this.windowMs = this.sink.duplicateWindowMs;
    }).catch((e) => {
      this.streamChecked = undefined;
      throw this.sink.wrap(e, 'checking the stream before its first commit');
    });
    return this.streamChecked;
  }

  async commit(list: readonly JetStreamCommittable[]): Promise<void> {
    await this.sink.start();
    await this.checkStream();
    for (const item of list) {
      const triedBefore = this.tried.tryOnce(item.sub, item.chk);
      try {
        await retrying(this.sink.options.retry, isTransientNats, (attempt) => this.commitOne(item, triedBefore || attempt > 0), { signal: this.ctx.signal });
      } catch (e) {
        throw this.sink.wrap(e, `committing checkpoint ${item.chk}`);
      }
    }
  }

  private async commitOne(item: JetStreamCommittable, triedBefore: boolean): Promise<void> {
    const o = this.sink.options;
    const session = await this.connected();
    const { js, kv } = session;
    const key = this.sink.key(this.ctx, item.sub);
    const pkey = this.sink.progressKey(key);
    const entry = await kv.get(pkey);
    const state = parseProgress(entry === null || entry.operation !== 'PUT' ? undefined : decoder.decode(entry.value), `progress key "${pkey}" in bucket ${o.progressBucket}`);
    // Every write below is conditional on the revision read here, so the key never moves back.
    let revision = entry?.revision ?? 0;
    const windowMs = this.windowMs ?? o.minDuplicateWindowMs;
    const d = decideCommit(state, item.chk, this.ctx.restoredCheckpointId === undefined, triedBefore, Date.now(), windowMs);
    if (d.action === 'skip') return;
    if (d.action === 'foreign') throw foreignProgressError(this.sink.name, `progress key "${pkey}" in bucket ${o.progressBucket}`, key, d.committed, item.chk);
    // Past the window the server no longer drops every repeat: the messages of this checkpoint
    // already in the stream are looked for (by their ids) and left out.
    let present: ReadonlySet<number> | undefined;
    if (d.late) {
      const late = `weir: jetstream sink ${o.stream}: checkpoint ${item.chk} of subtask ${item.sub} is published again ${Math.round((Date.now() - d.since) / 1000)} s after its first try, past the stream's ${windowMs / 1000} s duplicate window`;
      const found = await this.alreadyPublished(session, messageIdPrefix(key.job, key.operator, key.subtask, item.chk), d.since);
      if (typeof found === 'string') {
        this.ctx.log(`${late}: repeats of messages published then may not be dropped (the stream could not be searched for them: ${found})`);
      } else {
        present = found.ids;
        this.ctx.log(`${late}: ${found.ids.size} of its ${item.msgs.length} messages are in the stream already (found by their ids among ${found.scanned} read from ${new Date(d.since - CLOCK_SLACK_MS).toISOString()}), the others are published`);
      }
    }
    if (!d.again) revision = await putIfUnchanged(kv, pkey, { committed: state.committed ?? null, publishing: item.chk, since: d.since }, revision);
    // Bounded in flight: at most maxInFlight acknowledgements outstanding.
    let pending: Promise<PubAck>[] = [];
    const settle = async () => {
      for (const ack of await Promise.all(pending)) if (ack.duplicate) this.duplicates++;
      pending = [];
    };
    for (let i = 0; i < item.msgs.length; i++) {
      if (present?.has(i)) continue;
      const [subject, body] = item.msgs[i]!;
      pending.push(js.publish(subject, body, { msgID: messageId(key.job, key.operator, key.subtask, item.chk, i), expect: { streamName: o.stream }, timeout: o.requestTimeoutMs }));
      if (pending.length >= o.maxInFlight) await settle();
    }
    await settle();
    await putIfUnchanged(kv, pkey, { committed: item.chk }, revision);
  }

  /**
   * The indexes of the messages with ids `prefix<index>` in the stream, read (headers only,
   * through an ephemeral consumer of its own) from `since` less CLOCK_SLACK_MS (the server stamps
   * messages with its own clock) to the stream's end; or why they could not be found: more than
   * SCAN_MAX_MESSAGES to read, longer than SCAN_BUDGET_MS, a message lost on the way, or a
   * failed or unanswered request (each bounded by requestTimeoutMs).
   */
  private async alreadyPublished(session: Session, prefix: string, since: number): Promise<{ ids: Set<number>; scanned: number } | string> {
    const o = this.sink.options;
    const deadline = Date.now() + SCAN_BUDGET_MS;
    const { AckPolicy, DeliverPolicy, nanos } = await import('nats');
    let jsm: JetStreamManager | undefined;
    let name: string | undefined;
    try {
      jsm = await withTimeout(session.nc.jetstreamManager({ timeout: o.requestTimeoutMs }), o.requestTimeoutMs, 'JetStream');
      const info = await jsm.consumers.add(o.stream, {
        ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(since - CLOCK_SLACK_MS).toISOString(),
        headers_only: true, mem_storage: true, inactive_threshold: nanos(60_000),
      });
      name = info.name;
      const ids = new Set<number>();
      let scanned = 0;
      let pending = info.num_pending;
      if (pending === 0) return { ids, scanned };
      if (pending > SCAN_MAX_MESSAGES) return `${pending} messages to read, more than ${SCAN_MAX_MESSAGES}`;
      const consumer = await session.js.consumers.get(o.stream, name);
      const expires = Math.min(o.requestTimeoutMs, 5_000);
      while (pending > 0) {
        if (Date.now() > deadline) return `still reading after ${SCAN_BUDGET_MS / 1000} s (${scanned} messages read, ${pending} to go)`;
        const batch = await consumer.fetch({ max_messages: 1000, expires });
        const read = async () => {
          let got = 0;
          for await (const m of batch) {
            // Acks are off: a message lost on the way is never sent again, and its id would be missed.
            if (m.info.deliverySequence !== scanned + 1) throw new Error(`message ${scanned + 1} of the search never arrived`);
            scanned++;
            got++;
            pending = m.info.pending;
            const id = m.headers?.get('Nats-Msg-Id');
            if (id !== undefined && id.startsWith(prefix) && /^(0|[1-9]\d{0,14})$/.test(id.slice(prefix.length))) ids.add(Number(id.slice(prefix.length)));
            if (pending === 0) break; // not waiting out the fetch's expiry for messages that are not there
          }
          if (got === 0) throw new Error(`no messages within ${expires} ms, ${pending} expected`);
        };
        await withTimeout(read(), expires + o.requestTimeoutMs, 'a fetch').finally(() => batch.stop());
      }
      return { ids, scanned };
    } catch (e) {
      return messageOf(e);
    } finally {
      if (jsm !== undefined && name !== undefined) await withTimeout(jsm.consumers.delete(o.stream, name), o.requestTimeoutMs, 'deleting a consumer').catch(() => {});
    }
  }

  async close(): Promise<void> {
    const s = this.session;
    this.session = undefined;
    await s?.nc.close().catch(() => {});
  }
}
