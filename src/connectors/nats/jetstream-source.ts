/**
 * NATS JetStream source. A split is the whole stream or one subject filter of it; its position
 * is the stream sequence of the last message emitted. Each split is read through its own
 * ephemeral pull consumer with AckPolicy none, created at `last + 1` (nothing depends on acks or
 * on the server remembering where we were: the checkpoint is the only position), and fed by one
 * pull request at a time, sized to the room left in the split's bounded buffer. Messages land in
 * a subscription callback (no promise per message) and poll() emits them in batches. Only
 * streams with retention 'limits' are read: an interest or work-queue stream deletes a message
 * once its consumers have it (with no acks, at delivery), before a checkpoint covers it.
 */
import type { ConsumerInfo, JetStreamManager, Msg, NatsConnection, Subscription } from 'nats';
import { BufferedSplits } from '../common/buffered-splits.ts';
import type { MalformedRecord, PollStatus, ReaderOutput, Source, SourceOutput, SourceReader, SourceReaderContext, SourceSplit } from '../../core/source.ts';
import { connectNats, natsAnswers, natsError, natsLabel, validateServers, type NatsConnectionOptions } from './connection.ts';
import { withTimeout } from '../common/retry.ts';
import { reconcileNamedSplits } from '../common/restored-splits.ts';
import { parseJsonRecord } from '../../core/json-record.ts';
import { WeirError } from '../../core/errors.ts';
import { rawFields } from '../common/raw-bytes.ts';

export type JetStreamFormat = 'json' | 'string' | 'bytes';

export interface JetStreamSourceOptions<T> {
  /** host:port or a list (default 127.0.0.1:4222); credentials go in user/pass or token. */
  readonly servers?: string | readonly string[];
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** The stream to read. */
  readonly stream: string;
  /** Subject filters, one split each (server 2.9: one filter per consumer); default: the whole stream as one split. */
  readonly subjects?: readonly string[];
  /** Where a split is read from when the job starts without a checkpoint (default 'earliest'). */
  readonly startFrom?: 'earliest' | 'latest';
  /** 'latest': bounded, ending at the stream's last sequence when the job first starts (kept in the checkpoint). */
  readonly stopAt?: 'never' | 'latest';
  /** 'json' (default): JSON.parse of the payload; 'string': the payload as UTF-8; 'bytes': a Uint8Array. */
  readonly format?: JetStreamFormat;
  /** Custom decoding instead of `format` (a throw makes the message malformed). */
  readonly decode?: (data: Uint8Array, subject: string, sequence: number) => T;
  /** Messages per pull request (default 1000). */
  readonly batchSize?: number;
  /** How long a pull request waits for messages (default 500 ms). */
  readonly blockMs?: number;
  /**
   * The server deletes a split's consumer after this long without a pull (default 300,000 ms; at
   * least 1,000). A split that has not pulled for 80 % of it (its buffer full under backpressure,
   * or paused) gets a new consumer at its position before it pulls again.
   */
  readonly consumerInactiveMs?: number;
  /** Timeout of connecting and of every request (default 10,000 ms). */
  readonly timeoutMs?: number;
  /** Total time spent retrying to connect before the job fails (default 30,000 ms). */
  readonly connectBudgetMs?: number;
}

export interface JetStreamSplit extends SourceSplit {
  readonly stream: string;
  readonly subject?: string;
  /**
   * Stream sequence of the last message emitted; before the first, the sequence before where
   * the split starts (a first start from 'earliest': the one before the stream's first message).
   */
  lastSeq: number;
  /** With stopAt 'latest': the stream's last sequence at the first start; the split ends there. */
  readonly endSeq?: number;
  /**
   * When the stream was created (its info's `created`), learnt at planning or at the first
   * consumer: a stream deleted and created again numbers its messages from 1, and a position
   * in the old one would skip as many of the new (checkpoints of older weirs lack it).
   */
  streamCreated?: string;
}

export class JetStreamSource<T = unknown> implements Source<T, JetStreamSplit> {
  readonly name: string;
  readonly bounded: boolean;
  readonly conn: NatsConnectionOptions;
  readonly label: string;
  readonly stream: string;
  readonly subjects: readonly string[] | undefined;
  readonly startFrom: 'earliest' | 'latest';
  readonly format: JetStreamFormat;
  readonly decode: ((data: Uint8Array, subject: string, sequence: number) => T) | undefined;
  readonly batchSize: number;
  readonly blockMs: number;
  readonly consumerInactiveMs: number;

  constructor(options: JetStreamSourceOptions<T>) {
    const where = 'JetStreamSource';
    if (options === null || typeof options !== 'object') throw new TypeError(`${where}: expected options { stream: "..." }`);
    if (typeof options.stream !== 'string' || !/^[^\s.*>]+$/.test(options.stream)) {
      throw new TypeError(`${where}: stream must be a stream name (no spaces, dots or wildcards), got ${JSON.stringify(options.stream)}`);
    }
    this.stream = options.stream;
    const subjects = options.subjects;
    if (subjects !== undefined) {
      if (!Array.isArray(subjects) || subjects.length === 0 || !subjects.every((s) => typeof s === 'string' && /^[^\s]+$/.test(s))) {
        throw new TypeError(`${where}: subjects must be a non-empty array of subject filters`);
      }
      // Each filter is its own consumer: a message two filters match would be read twice.
      for (let i = 0; i < subjects.length; i++) {
        for (let j = i + 1; j < subjects.length; j++) {
          const both = subjectMatchingBoth(subjects[i]!, subjects[j]!);
          if (both !== undefined) {
            throw new RangeError(`${where}: subjects ${JSON.stringify(subjects[i])} and ${JSON.stringify(subjects[j])} overlap (a message on ${both} matches both, and each filter is read by its own consumer, so it would be read twice); give filters that no subject matches twice`);
          }
        }
      }
    }
    this.subjects = subjects === undefined ? undefined : [...subjects];
    for (const [k, v] of [['user', options.user], ['pass', options.pass], ['token', options.token]] as const) {
      if (v !== undefined && typeof v !== 'string') throw new TypeError(`${where}: ${k} must be a string`);
    }
    this.conn = {
      servers: validateServers(options.servers ?? '127.0.0.1:4222', where),
      user: options.user, pass: options.pass, token: options.token,
      timeoutMs: posInt(options.timeoutMs ?? 10_000, `${where}: timeoutMs`),
      connectBudgetMs: posInt(options.connectBudgetMs ?? 30_000, `${where}: connectBudgetMs`),
    };
    this.label = natsLabel(this.conn);
    this.startFrom = oneOf(options.startFrom ?? 'earliest', ['earliest', 'latest'], `${where}: startFrom`);
    this.bounded = oneOf(options.stopAt ?? 'never', ['never', 'latest'], `${where}: stopAt`) === 'latest';
    this.format = oneOf(options.format ?? 'json', ['json', 'string', 'bytes'], `${where}: format`);
    if (options.decode !== undefined && typeof options.decode !== 'function') throw new TypeError(`${where}: decode must be a function (data, subject, sequence) => record`);
    this.decode = options.decode;
    this.batchSize = posInt(options.batchSize ?? 1000, `${where}: batchSize`);
    this.blockMs = posInt(options.blockMs ?? 500, `${where}: blockMs`);
    this.consumerInactiveMs = posInt(options.consumerInactiveMs ?? 5 * 60_000, `${where}: consumerInactiveMs`);
    if (this.consumerInactiveMs < 1000) throw new RangeError(`${where}: consumerInactiveMs must be at least 1000, got ${this.consumerInactiveMs}`);
    this.name = `jetstream:${this.label}/${this.stream}${this.subjects ? `[${this.subjects.join(',')}]` : ''}`;
  }

  /** On the job manager at a fresh start: one split per subject filter (or the stream). */
  async planSplits(): Promise<JetStreamSplit[]> {
    const nc = await connectNats(this.conn);
    try {
      const jsm = await withTimeout(nc.jetstreamManager({ timeout: this.conn.timeoutMs }), this.conn.timeoutMs, `NATS at ${this.label}: JetStream`);
      let lastSeq: number;
      let firstSeq: number;
      let streamCreated: string;
      let retention: string;
      try {
        const info = await jsm.streams.info(this.stream);
        lastSeq = info.state.last_seq;
        firstSeq = info.state.first_seq;
        streamCreated = info.created;
        retention = info.config.retention;
      } catch (e) {
        throw natsError(this.conn, `stream "${this.stream}"`, e);
      }
      const refused = retentionRefused(this.stream, this.label, retention);
      if (refused !== undefined) throw refused;
      // 'earliest' is the stream's first message now: the sequences before it were removed before
      // the job existed, and are not reported as gone (the ones removed after are).
      const start = this.startFrom === 'latest' ? lastSeq : Math.max(0, firstSeq - 1);
      const end = this.bounded ? { endSeq: lastSeq } : {};
      if (this.subjects === undefined) return [{ id: this.stream, stream: this.stream, lastSeq: start, ...end, streamCreated }];
      return this.subjects.map((s) => ({ id: `${this.stream}:${s}`, stream: this.stream, subject: s, lastSeq: start, ...end, streamCreated }));
    } finally {
      await withTimeout(nc.close(), this.conn.timeoutMs, `NATS at ${this.label}: close`).catch(() => {});
    }
  }

  /** A restore: subjects (or the stream) added since the checkpoint are read from startFrom; removed ones no more (restored-splits.ts). */
  reconcileRestoredSplits(restored: readonly JetStreamSplit[], log: (line: string) => void): Promise<JetStreamSplit[]> {
    const configuredIds = this.subjects === undefined ? [this.stream] : this.subjects.map((s) => `${this.stream}:${s}`);
    return reconcileNamedSplits(restored, { configuredIds, bounded: this.bounded, plan: () => this.planSplits(), where: this.name, startFrom: this.startFrom }, log);
  }

  createReader(ctx: SourceReaderContext): SourceReader<T, JetStreamSplit> {
    return new JetStreamReader<T>(this, ctx);
  }
}

interface Item {
  readonly seq: number;
  readonly ts: number;
  readonly subject: string;
  readonly data: Uint8Array;
}

interface SplitState {
  readonly split: JetStreamSplit;
  /** Sequence of the last message received (ahead of split.lastSeq by what is buffered). */
  fetchedSeq: number;
  /**
   * Sequences up to here are accounted for: received, reported gone, or (a subject split) passed
   * by its consumer (lookAtStream). A stream whose first sequence is past it removed messages
   * the split did not read.
   */
  checkedSeq: number;
  /**
   * A subject split: the sequences received since its last look at the stream, in order. Its
   * consumer skips other subjects' sequences, so a jump says nothing by itself; the stream's
   * first sequence at the next look tells which of the sequences skipped are gone.
   */
  received: number[];
  /**
   * A look at the stream is under way (no pull goes out meanwhile); another is wanted after it
   * (it may have been answered before what it should see).
   */
  looking: boolean;
  lookAgain: boolean;
  lastLookAt: number;
  /** A bounded subject split at its end: done after a last look at the stream (reachEnd). */
  ending: boolean;
  buffer: Item[];
  at: number;
  out: SourceOutput<unknown> | undefined;
  /** No more messages up to the end (bounded). */
  done: boolean;
  consumer: string | undefined;
  creating: boolean;
  sub: Subscription | undefined;
  /** Messages still expected for the pull in flight (0: none in flight). */
  outstanding: number;
  /** Counts the split's pulls: tells a late answer to a ping about an earlier pull from the current one. */
  pulls: number;
  /** lastDseq when the pull in flight went out: still the same, the pull has delivered nothing. */
  dseqAtPull: number;
  pullTimer: ReturnType<typeof setTimeout> | undefined;
  /** Consumer sequence of the last message, to notice a gap. */
  lastDseq: number;
  /** When the consumer was created or last pulled from (the server's inactivity runs from then). */
  lastPullAt: number;
  /** Pulls in a row that ended with 409 (a message or an empty pull resets it). */
  conflicts: number;
  /** A quiet pull through the current consumer, still there, was logged (pullUnanswered: once per consumer). */
  slowNoted: boolean;
}

/** 409s in a row (each recreating the consumer) before the reader fails: one that keeps coming will not clear. */
const MAX_CONSECUTIVE_CONFLICTS = 5;

/**
 * How long past its expiry (blockMs) a pull may stay without an end before the server is pinged.
 * The server's 408 at expiry is queued behind the pull's messages, so this covers their delivery
 * on a busy connection; a pull that did end silently waits this long more, no longer.
 */
const PULL_END_GRACE_MS = 1000;

/**
 * Bytes a pull asks for at most (its max_bytes), raised to the server's max_payload plus
 * PULL_BYTES_SLACK so that any message fits. Unbounded, a batch of large messages (1,000 of
 * 200 KB) passed the server's limit of bytes pending for one connection (64 MiB) and the server
 * cut the connection.
 */
const PULL_MAX_BYTES = 4 * 1024 * 1024;
/** What the server counts in a message's size besides its payload and headers (subject, ack reply). */
const PULL_BYTES_SLACK = 64 * 1024;

/**
 * How often a split looks at the stream's first sequence (lookAtStream), to report messages
 * removed before it read them: a subject split's consumer skips them without a trace, a
 * whole-stream split that receives nothing more would never see its gap, and a bounded split
 * whose remaining messages were all removed would wait for ever.
 */
const STREAM_LOOK_INTERVAL_MS = 2000;
/**
 * The client's own limit on a consumer's creation, which waits as long as the server answers
 * (consumerCreated): the server counts the consumer's pending messages first, and for a wildcard
 * filter far behind in a long stream that took longer than timeoutMs (20,000,000 messages of
 * 100 bytes on 100,000 subjects: 26 to 51 s), so every start failed. Below 2^31 ms (setTimeout).
 */
const CREATE_REQUEST_MS = 24 * 3600_000;

/** Sequences a subject split keeps between two looks before it looks early (a bound of its memory). */
const RECEIVED_BEFORE_LOOK = 10_000;

class JetStreamReader<T> implements SourceReader<T, JetStreamSplit> {
  private readonly splits = new BufferedSplits<SplitState>();
  private nc: NatsConnection | undefined;
  /** A pull's max_bytes, once connected (PULL_MAX_BYTES). */
  private pullMaxBytes = PULL_MAX_BYTES;
  private jsm: JetStreamManager | undefined;
  /** For creating consumers only: its requests are not timed out by the client (CREATE_REQUEST_MS). */
  private jsmCreate: JetStreamManager | undefined;
  private connecting = false;
  private closed = false;
  private error: Error | undefined;
  /** For records: invalid UTF-8 is malformed, not silently replaced by U+FFFD (a dead letter keeps the bytes: rawFields). */
  private readonly strict = new TextDecoder('utf-8', { fatal: true });

  constructor(private readonly src: JetStreamSource<T>, private readonly ctx: SourceReaderContext) {}

  addSplits(splits: JetStreamSplit[]): void {
    for (const s of splits) {
      if (!Number.isSafeInteger(s.lastSeq) || s.lastSeq < 0 || (s.endSeq !== undefined && !Number.isSafeInteger(s.endSeq))) {
        throw new RangeError(`JetStream stream "${s.stream}": bad position in the split ${JSON.stringify(s)}`);
      }
      const st: SplitState = {
        split: { ...s }, fetchedSeq: s.lastSeq, checkedSeq: s.lastSeq, received: [], looking: false, lookAgain: false, lastLookAt: 0, ending: false, buffer: [], at: 0, out: undefined, done: s.endSeq !== undefined && s.lastSeq >= s.endSeq,
        consumer: undefined, creating: false, sub: undefined, outstanding: 0, pulls: 0, dseqAtPull: 0, pullTimer: undefined, lastDseq: 0, lastPullAt: 0, conflicts: 0, slowNoted: false,
      };
      this.splits.add(st);
    }
  }

  pauseOrResumeSplits(pause: readonly string[], resume: readonly string[]): void {
    this.splits.pauseOrResume(pause, resume);
  }

  poll(out: ReaderOutput<T>, maxRecords: number): PollStatus {
    if (this.error) throw this.error;
    this.splits.finishDrained(out, (st) => this.release(st));
    if (this.splits.size === 0) return this.src.bounded ? 'end' : 'wait';
    this.splits.startAll(out);
    this.splits.emitRoundRobin(maxRecords, (st, max) => this.emit(st, out, max));
    if (this.nc === undefined) this.connect();
    else {
      const now = this.ctx.now();
      for (const st of this.splits.states.values()) {
        // Between two pulls, none delivering: a message on its way would be taken for one gone.
        const due = now - st.lastLookAt >= STREAM_LOOK_INTERVAL_MS || st.received.length >= RECEIVED_BEFORE_LOOK;
        if (due && st.consumer !== undefined && st.outstanding === 0 && !st.ending && !this.splits.isPaused(st)) this.lookAtStream(st);
        this.pull(st);
      }
    }
    return this.splits.status();
  }

  private emit(st: SplitState, out: ReaderOutput<T>, max: number): number {
    const o = (st.out ??= out.forSplit(st.split.id)) as SourceOutput<T>;
    const split = st.split;
    const end = Math.min(st.buffer.length, st.at + max);
    let n = 0;
    let bytes = 0;
    const src = this.src;
    for (; st.at < end; st.at++) {
      const m = st.buffer[st.at]!;
      // The position moves before the record goes out: a record that fails the job is not re-read.
      split.lastSeq = m.seq;
      bytes += m.data.length;
      let v: unknown;
      try {
        v = src.decode !== undefined ? src.decode(m.data, m.subject, m.seq)
          : src.format === 'json' ? parseJsonRecord(this.strict.decode(m.data))
            : src.format === 'string' ? this.strict.decode(m.data) : m.data;
      } catch (e) {
        const record: MalformedRecord = {
          source: src.name,
          location: `NATS ${src.label} stream "${split.stream}" sequence ${m.seq} (subject ${m.subject})`,
          ...rawFields(m.data),
          error: e instanceof Error ? e.message : String(e),
        };
        o.malformed(record);
        n++;
        continue;
      }
      o.collect(v as T, m.ts);
      n++;
    }
    BufferedSplits.dropEmitted(st);
    this.ctx.metrics.addBytesRead(bytes);
    return n;
  }

  private connect(): void {
    if (this.connecting || this.closed || this.error) return;
    this.connecting = true;
    const o = this.src.conn;
    connectNats(o, (l) => this.ctx.log(l))
      .then(async (nc) => {
        if (this.closed) {
          await nc.close().catch(() => {});
          return;
        }
        natsConstants ??= await import('nats');
        this.nc = nc;
        this.pullMaxBytes = Math.max(PULL_MAX_BYTES, (nc.info?.max_payload ?? 0) + PULL_BYTES_SLACK);
        void nc.closed().then((err) => {
          if (!this.closed && this.error === undefined) {
            this.fail(natsError(o, 'connection closed', err ?? new Error('the server closed the connection')));
          }
        });
        this.jsm = await withTimeout(nc.jetstreamManager({ timeout: o.timeoutMs }), o.timeoutMs, `NATS at ${this.src.label}: JetStream`);
        this.jsmCreate = await nc.jetstreamManager({ timeout: CREATE_REQUEST_MS, checkAPI: false });
        this.connecting = false;
        this.ctx.wake();
      })
      .catch((e) => {
        this.connecting = false;
        this.fail(e instanceof Error && 'code' in e && (e as { code: unknown }).code === 'CONNECTOR' ? e : natsError(o, 'connect', e));
      });
  }

  private fail(e: Error): void {
    if (this.error === undefined) this.error = e;
    this.ctx.wake();
  }

  /** Creates the split's consumer at `fetchedSeq + 1` and its inbox subscription. */
  private createConsumer(st: SplitState): void {
    if (st.creating || this.jsm === undefined || this.jsmCreate === undefined || this.nc === undefined) return;
    st.creating = true;
    const { AckPolicy, DeliverPolicy, nanos, createInbox } = natsConstants!;
    const split = st.split;
    const cfg = {
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: st.fetchedSeq + 1,
      mem_storage: true,
      inactive_threshold: nanos(this.src.consumerInactiveMs),
      ...(split.subject !== undefined ? { filter_subject: split.subject } : {}),
    };
    const jsm = this.jsm;
    const jsmCreate = this.jsmCreate;
    jsm.streams.info(split.stream)
      .then((stream) => {
        const refused = retentionRefused(split.stream, this.src.label, stream.config.retention);
        if (refused !== undefined) throw refused;
        const reset = streamReset(split, st.fetchedSeq, stream.created, stream.state.last_seq);
        if (reset !== undefined) throw new WeirError('CONNECTOR', `JetStream stream "${split.stream}" at ${this.src.label}: ${reset}; the messages of the new stream are not the ones the position counts, and reading on would skip some of them. Start the job without this checkpoint (the source reads the new stream from startFrom), or restore the stream`);
        split.streamCreated ??= stream.created;
        // Before the consumer, which starts at the first message left and says nothing of the
        // ones removed (a bounded split whose rest is gone is done at once).
        this.removedBefore(st, stream.state.first_seq);
        return this.consumerCreated(st, jsmCreate.consumers.add(split.stream, cfg));
      })
      .then((info) => {
        st.creating = false;
        if (this.closed) return;
        st.consumer = info.name;
        st.lastDseq = 0;
        st.slowNoted = false;
        st.lastPullAt = this.ctx.now();
        // Nothing matches after our position: a bounded split is done (later messages are past its
        // end). The whole stream holds nothing after it, so what is left to its end is gone.
        if (split.endSeq !== undefined && info.num_pending === 0 && !st.done) {
          if (split.subject === undefined && st.checkedSeq < split.endSeq) this.reportGone(st, st.checkedSeq + 1, split.endSeq);
          st.done = true;
        }
        this.ctx.metrics.setPendingRecords(split.id, info.num_pending);
        const inbox = createInbox();
        st.sub = this.nc!.subscribe(inbox, { callback: (err, m) => this.onMessage(st, err, m) });
        this.ctx.wake();
      }, (e) => {
        st.creating = false;
        if (e instanceof WeirError) this.fail(e);
        else this.fail(natsError(this.src.conn, `cannot create a consumer on stream "${split.stream}"${split.subject ? ` for subject ${split.subject}` : ''}`, e));
      });
  }

  /**
   * The answer to a consumer's creation, however long it takes while the server answers a ping
   * on a connection of its own every timeoutMs (natsAnswers): the server counts the consumer's
   * pending messages before it answers, as long as a scan for a wildcard filter far behind in
   * a long stream, and holds up the reader's connection meanwhile. Bounded by timeoutMs, the
   * creation failed at every start of such a job. A server that does not answer fails it.
   */
  private async consumerCreated(st: SplitState, creating: Promise<ConsumerInfo>): Promise<ConsumerInfo> {
    const answer = creating.then((info) => ({ info }), (error: unknown) => ({ error }));
    const timeoutMs = this.src.conn.timeoutMs;
    const started = this.ctx.now();
    for (let noted = false; ;) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waited = new Promise<undefined>((res) => { timer = setTimeout(() => res(undefined), timeoutMs); });
      const got = await Promise.race([answer, waited]).finally(() => clearTimeout(timer));
      if (got !== undefined) {
        if ('error' in got) throw got.error;
        return got.info;
      }
      if (this.closed) throw new WeirError('CONNECTOR', `JetStream stream "${st.split.stream}": the reader closed while its consumer was being created`);
      if (!(await natsAnswers(this.src.conn))) {
        throw new WeirError('TIMEOUT', `NATS at ${this.src.label}: no answer to the consumer's creation within ${this.ctx.now() - started} ms, and none to a ping on a connection of its own within ${timeoutMs} ms`);
      }
      if (!noted) {
        noted = true;
        this.ctx.log(`stream "${st.split.stream}"${st.split.subject !== undefined ? ` subject ${st.split.subject}` : ''}: creating the consumer at sequence ${st.fetchedSeq + 1} takes the server longer than ${timeoutMs} ms (it counts the filter's pending messages, far behind in a long stream of other subjects); waiting for it while the server answers`);
      }
    }
  }

  /** One pull in flight per split, for the room left in its buffer. */
  private pull(st: SplitState): void {
    if (this.closed || this.error || st.done || st.ending || st.looking || st.outstanding > 0 || this.splits.isPaused(st)) return;
    if (st.consumer === undefined || st.sub === undefined) {
      this.createConsumer(st);
      return;
    }
    const room = this.src.batchSize - (st.buffer.length - st.at);
    if (room < this.src.batchSize / 2) return;
    const idleMs = this.ctx.now() - st.lastPullAt;
    if (idleMs > 0.8 * this.src.consumerInactiveMs) {
      // The server may have deleted the consumer for inactivity, and a pull to it gets no answer
      // (the reader failed at the pull's timeout after a long backpressure): a new one first.
      this.ctx.log(`stream "${st.split.stream}": no pull for ${Math.round(idleMs / 1000)} s (the server drops a consumer idle for ${Math.round(this.src.consumerInactiveMs / 1000)} s); recreating the consumer at sequence ${st.fetchedSeq + 1}`);
      this.release(st);
      this.createConsumer(st);
      return;
    }
    st.outstanding = room;
    const pull = ++st.pulls;
    st.dseqAtPull = st.lastDseq;
    st.lastPullAt = this.ctx.now();
    const body = JSON.stringify({ batch: room, expires: this.src.blockMs * 1_000_000, max_bytes: this.pullMaxBytes });
    try {
      this.nc!.publish(`$JS.API.CONSUMER.MSG.NEXT.${st.split.stream}.${st.consumer}`, new TextEncoder().encode(body), { reply: st.sub.getSubject() });
    } catch (e) {
      st.outstanding = 0;
      this.fail(natsError(this.src.conn, `pull from stream "${st.split.stream}"`, e));
      return;
    }
    // A pull ends with its batch or a 408 at expiry, but not always: the server (2.9.10) sends no
    // 408 when the expiry falls during a delivery (a filtered consumer scanning a long stream,
    // large messages), nor anything for a consumer deleted meanwhile. Failing the reader there
    // restarted jobs in a loop, so the consumer is asked about instead (pullUnanswered).
    st.pullTimer = setTimeout(() => this.pullUnanswered(st, pull), this.src.blockMs + PULL_END_GRACE_MS);
  }

  /**
   * Asks the server how far the split's consumer went (a subject split), then where the stream
   * starts: sequences past what the split accounted for, below the start, and not received are
   * gone (removedBefore). Only between two pulls: the server hands a consumer's messages to the
   * connection through a queue of its own, so one on its way could arrive after the answer and
   * be taken for gone. A failed look is let go (the pulls find a server that is gone).
   */
  private lookAtStream(st: SplitState): void {
    const jsm = this.jsm;
    if (jsm === undefined || this.closed || st.done) return;
    if (st.looking) {
      st.lookAgain = true;
      return;
    }
    st.looking = true;
    st.lookAgain = false;
    const { split, consumer } = st;
    const timeoutMs = this.src.conn.timeoutMs;
    void (async () => {
      // The consumer first: a purge since moves it past what it removed, and the stream's first
      // sequence, asked next, shows that purge to removedBefore before `passed` is counted.
      const passed = split.subject !== undefined && consumer !== undefined
        ? (await withTimeout(jsm.consumers.info(split.stream, consumer), timeoutMs, `NATS at ${this.src.label}: consumer info`)).delivered.stream_seq
        : 0;
      const stream = await withTimeout(jsm.streams.info(split.stream), timeoutMs, `NATS at ${this.src.label}: stream info`);
      if (this.closed) return;
      this.removedBefore(st, stream.state.first_seq);
      // A subject split's consumer passes other subjects' sequences without a trace: unmarked, a
      // rare subject in a stream its limits trim saw the first sequence pass its last message,
      // and other subjects' messages were reported gone.
      if (st.consumer === consumer) st.checkedSeq = Math.max(st.checkedSeq, passed);
    })().catch(() => {}).finally(() => {
      st.looking = false;
      st.lastLookAt = this.ctx.now();
      if (st.lookAgain) this.lookAtStream(st);
      else {
        if (st.ending && !st.done) st.done = true;
        // Pulls wait while a look runs (pull() returns early), so the reader said 'wait' with no
        // pull out: nothing but this wakes it (unwoken, it slept until a checkpoint's mail).
        if (!this.closed) this.ctx.wake();
      }
    });
  }

  /**
   * A bounded split has nothing more to read up to its end. A whole-stream split is done (its
   * gaps were seen on the way); a subject split first looks at the stream, for the sequences it
   * skipped on the way that a purge or a limit may have taken (the next look is the last one).
   */
  private reachEnd(st: SplitState): void {
    if (st.split.subject === undefined) {
      st.done = true;
      return;
    }
    if (st.ending) return;
    st.ending = true;
    this.lookAtStream(st);
    if (!st.looking && !st.done) st.done = true; // no look possible (closing)
  }

  /**
   * The stream starts at firstSeq: reports the sequences before it that the split neither
   * accounted for nor received, once, and ends a bounded split that has nothing left.
   */
  private removedBefore(st: SplitState, firstSeq: number): void {
    st.lastLookAt = this.ctx.now();
    let last = st.checkedSeq;
    for (const seq of st.received) if (seq < firstSeq && seq > last) last = seq;
    const gone = removedAfter(last, firstSeq);
    if (gone !== undefined) this.reportGone(st, gone.from, gone.to);
    if (st.received.length > 0) st.checkedSeq = Math.max(st.checkedSeq, st.received[st.received.length - 1]!);
    st.received = [];
    const end = st.split.endSeq;
    if (end !== undefined && firstSeq > end && !st.done) {
      st.done = true;
      this.ctx.wake();
    }
  }

  /** Logs sequences from to `to` (up to a bounded split's end) as gone before the split read them; they are accounted for since. */
  private reportGone(st: SplitState, from: number, to: number): void {
    const last = st.split.endSeq === undefined ? to : Math.min(to, st.split.endSeq);
    if (from <= last) this.ctx.log(goneLine(st.split, from, last));
    st.checkedSeq = Math.max(st.checkedSeq, to);
  }

  /**
   * A pull past its expiry without an end. The server (2.9) is silent both while a filtered
   * consumer looks for its next message (it scans the messages of other subjects one by one when
   * the filter is a wildcard and a block holds many subjects, or reads large ones: 3,000,000
   * small messages took 3 to 7 s; the expired pull gets nothing, but the consumer keeps where its
   * scan got to, so the next pull through it gets the message) and for a pull sent to a consumer
   * it deleted. Recreating the consumer after every pull that delivered nothing restarted the
   * scan, for ever, once it took longer than blockMs + PULL_END_GRACE_MS. So the consumer is
   * asked about (its info, which the server answers once the scan ends): still there, the next
   * pull goes through it; the server answers with an error (not found), it is created again; no
   * answer within timeoutMs, a ping (flush) tells a busy consumer (answered: pull on) from a
   * silent server (the reader fails). The steps are silentPullStep's.
   */
  private pullUnanswered(st: SplitState, pull: number): void {
    st.pullTimer = undefined;
    const nc = this.nc;
    const jsm = this.jsm;
    const consumer = st.consumer;
    if (this.closed || nc === undefined || jsm === undefined || consumer === undefined || st.pulls !== pull || st.outstanding <= 0) return;
    const waitedMs = this.src.blockMs + PULL_END_GRACE_MS;
    const timeoutMs = this.src.conn.timeoutMs;
    const { stream, subject } = st.split;
    const which = `stream "${stream}"${subject !== undefined ? ` subject ${subject}` : ''}`;
    const current = (): boolean => !this.closed && st.pulls === pull && st.outstanding > 0 && st.consumer === consumer; // else it ended meanwhile
    let pingError = '';
    const step = (state: SilentPull): void => {
      switch (silentPullStep(state)) {
        case 'info':
          withTimeout(jsm.consumers.info(stream, consumer), timeoutMs, `NATS at ${this.src.label}: consumer info`)
            .then((): ConsumerInfoAnswer => 'exists', consumerInfoAnswer)
            .then((info) => { if (current()) step({ ...state, info }); });
          return;
        case 'ping':
          withTimeout(nc.flush(), timeoutMs, `NATS at ${this.src.label}: ping`).then(() => 'answered' as const, (e: unknown) => {
            pingError = e instanceof Error ? e.message : String(e);
            return 'none' as const;
          }).then((ping) => { if (current()) step({ ...state, ping }); });
          return;
        case 'probe':
          natsAnswers(this.src.conn).then((answers) => { if (current()) step({ ...state, probe: answers ? 'answered' : 'none' }); });
          return;
        case 'pull':
          if (state.probe === 'answered' && !st.slowNoted) {
            st.slowNoted = true;
            this.ctx.log(`${which}: a pull ended without a word from the server after ${waitedMs} ms${state.delivered ? '' : `, with nothing delivered, its consumer's info unanswered within ${timeoutMs} ms`}, and a ping on the reader's connection unanswered within ${timeoutMs} ms, while the server answers another connection: it is busy with a request of the reader's connection (a filtered consumer far behind in a long stream of other subjects, or of large messages, looking for its next message or counting its pending ones, holds up all the connection sends after it); reading on through the same consumer (said once per consumer)`);
          } else if (!state.delivered && !st.slowNoted) {
            st.slowNoted = true;
            this.ctx.log(`${which}: a pull ended without a word from the server after ${waitedMs} ms, with nothing delivered, and its consumer is still there${state.info === 'none' ? ` (its info unanswered within ${timeoutMs} ms, the server answering a ping)` : ''} (the server is still looking for the next message of the filter: far behind in a long stream of other subjects, or of large messages); reading on through the same consumer (said once per consumer)`);
          }
          this.pullDone(st);
          return;
        case 'recreate':
          this.ctx.log(`${which}: a pull ended without a word from the server after ${waitedMs} ms, with nothing delivered, and the server knows its consumer no more; recreating the consumer at sequence ${st.fetchedSeq + 1}`);
          this.release(st);
          this.pullDone(st);
          return;
        case 'fail':
          this.fail(natsError(this.src.conn, `pull from stream "${stream}"`, new Error(`no end of the pull within ${waitedMs} ms, and no answer to a ping within ${timeoutMs} ms (${pingError}), nor on a connection of its own`)));
          return;
      }
    };
    step({ delivered: st.lastDseq !== st.dseqAtPull });
  }

  private pullDone(st: SplitState): void {
    st.outstanding = 0;
    if (st.pullTimer !== undefined) clearTimeout(st.pullTimer);
    st.pullTimer = undefined;
    this.ctx.wake();
  }

  private onMessage(st: SplitState, err: Error | null, m: Msg): void {
    if (this.closed || st.sub === undefined) return;
    if (err) {
      this.fail(natsError(this.src.conn, `subscription of stream "${st.split.stream}"`, err));
      return;
    }
    const h = m.headers;
    if (h !== undefined && m.data.length === 0 && h.code > 0) {
      const code = h.code;
      if (code === 404 || code === 408) {
        st.conflicts = 0;
        this.pullDone(st);
        return;
      }
      if (code === 100) return; // heartbeat / flow control
      if (code === 409) {
        // A limit of the server's configuration never clears: recreating the consumer at once
        // looped for ever, reading nothing (thousands of log lines a second).
        if (h.description.startsWith('Exceeded MaxRequest')) {
          this.fail(new WeirError('CONNECTOR', `JetStream stream "${st.split.stream}" at ${this.src.label}: the server refuses the pull: ${h.description}; set the source's batchSize (now ${this.src.batchSize}) within the server's limit`));
          return;
        }
        // The pull's max_bytes is reached: the next message did not fit, and the next pull takes it.
        if (h.description === 'Message Size Exceeds MaxBytes') {
          if (st.lastDseq === st.dseqAtPull) {
            // Not even one message fitted: the next pull would end the same way, for ever.
            this.fail(new WeirError('CONNECTOR', `JetStream stream "${st.split.stream}" at ${this.src.label}: the message after sequence ${st.fetchedSeq} is larger than a pull takes (${this.pullMaxBytes} bytes, the server's max_payload plus ${PULL_BYTES_SLACK})`));
            return;
          }
          st.conflicts = 0;
          this.pullDone(st);
          return;
        }
        if (++st.conflicts > MAX_CONSECUTIVE_CONFLICTS) {
          this.fail(new WeirError('CONNECTOR', `JetStream stream "${st.split.stream}" at ${this.src.label}: ${st.conflicts} pulls in a row ended with 409 (${h.description}), each on a new consumer`));
          return;
        }
        // Consumer deleted or a limit hit: start a new consumer at our position.
        this.ctx.log(`stream "${st.split.stream}": pull ended with 409 ${h.description}; recreating the consumer at sequence ${st.fetchedSeq + 1}`);
        this.release(st);
        this.pullDone(st);
        return;
      }
      this.fail(natsError(this.src.conn, `pull from stream "${st.split.stream}"`, new Error(`status ${code} ${h.description}`)));
      return;
    }
    const info = parseAckSubject(m.reply);
    if (info === undefined) {
      this.fail(natsError(this.src.conn, `stream "${st.split.stream}"`, new Error(`unexpected message without JetStream metadata on ${m.subject}`)));
      return;
    }
    if (deliveryGap(st.lastDseq, info.dseq)) {
      // A message of this consumer was lost on the way: read again from our position.
      this.ctx.log(`stream "${st.split.stream}": gap in consumer sequence (${st.lastDseq} then ${info.dseq}); recreating the consumer at sequence ${st.fetchedSeq + 1}`);
      this.release(st);
      this.pullDone(st);
      return;
    }
    st.lastDseq = info.dseq;
    st.conflicts = 0;
    st.outstanding--;
    const end = st.split.endSeq;
    if (st.split.subject === undefined) {
      // A whole-stream consumer delivers every sequence the stream holds: one skipped is gone
      // (checked before the end, which a purge may have taken too).
      if (info.seq > st.checkedSeq + 1) this.reportGone(st, st.checkedSeq + 1, info.seq - 1);
      st.checkedSeq = Math.max(st.checkedSeq, info.seq);
    } else {
      st.received.push(info.seq);
    }
    if (end !== undefined && info.seq > end) {
      this.reachEnd(st);
    } else {
      st.fetchedSeq = info.seq;
      st.buffer.push({ seq: info.seq, ts: Math.floor(info.tsNanos / 1e6), subject: m.subject, data: m.data });
      // Emitted while the pull goes on: a pull can take its whole expiry (or end without a word),
      // and its messages waited for pullDone's wake.
      if (st.buffer.length - st.at === 1) this.ctx.wake();
      if (end !== undefined && (info.seq >= end || info.pending === 0)) {
        // The whole stream holds nothing after this message: what is left to the end is gone.
        if (st.split.subject === undefined && info.seq < end) this.reportGone(st, info.seq + 1, end);
        this.reachEnd(st);
      }
    }
    this.ctx.metrics.setPendingRecords(st.split.id, info.pending);
    this.ctx.metrics.setMillisBehindLatest(st.split.id, info.pending === 0 ? 0 : Math.max(0, Date.now() - info.tsNanos / 1e6));
    if (st.outstanding <= 0 || st.done || st.ending) this.pullDone(st);
  }

  /** Drops the split's consumer and subscription (the next pull creates new ones at fetchedSeq + 1). */
  private release(st: SplitState): void {
    if (st.pullTimer !== undefined) clearTimeout(st.pullTimer);
    st.pullTimer = undefined;
    st.outstanding = 0;
    st.sub?.unsubscribe();
    st.sub = undefined;
    const name = st.consumer;
    st.consumer = undefined;
    if (name !== undefined && this.jsm !== undefined) void this.jsm.consumers.delete(st.split.stream, name).catch(() => {});
  }

  snapshotSplits(): JetStreamSplit[] {
    return [...this.splits.states.values()].map((s) => ({ ...s.split }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const st of this.splits.states.values()) this.release(st);
    const nc = this.nc;
    this.nc = undefined;
    if (nc !== undefined) await withTimeout(nc.drain().catch(() => nc.close()), this.src.conn.timeoutMs, `NATS at ${this.src.label}: close`).catch(() => nc.close());
  }
}

/**
 * A subject that both filters match, or undefined when none does. Filters are compared token by
 * token (tokens split at '.'): `*` matches any one token, `>` (last) one or more. A `>` in
 * either filter matches whatever the other has left, if it has a token left; two literal
 * tokens must be equal; both filters must end together otherwise.
 */
export function subjectMatchingBoth(a: string, b: string): string | undefined {
  const x = a.split('.');
  const y = b.split('.');
  const subject: string[] = [];
  const any = (t: string): string => (t === '*' || t === '>' ? 'x' : t);
  for (let i = 0; ; i++) {
    const s = x[i];
    const t = y[i];
    if (s === undefined || t === undefined) return s === t ? subject.join('.') : undefined;
    if (s === '>') return [...subject, ...y.slice(i).map(any)].join('.');
    if (t === '>') return [...subject, ...x.slice(i).map(any)].join('.');
    if (s !== '*' && t !== '*' && s !== t) return undefined;
    subject.push(s === '*' ? any(t) : s);
  }
}

/**
 * A CONFIG error unless the stream keeps messages by its limits alone. With retention
 * 'interest' or 'workqueue' the server deletes a message once every consumer has it (acks off:
 * as soon as it is delivered), before a checkpoint covers it: a restart would resume at the
 * checkpoint and find those messages gone, nothing replayed.
 */
export function retentionRefused(stream: string, label: string, retention: string | undefined): WeirError | undefined {
  if (retention === undefined || retention === 'limits') return undefined;
  return new WeirError('CONFIG', `JetStream stream "${stream}" at ${label} has retention "${retention}": the server deletes its messages once delivered, before a checkpoint covers them, so a restart could not read them again; the source reads only streams with retention "limits" (read a copy: a limits stream sourcing this one)`);
}

/**
 * Why the stream is not the one a split's position counts in, or undefined when it is: created
 * at another time (deleted and created again since), or holding fewer messages than the
 * position (the same, for a split of an older weir that did not record the creation time).
 * Purging or limits remove messages but keep the sequence, so they pass.
 */
export function streamReset(split: Pick<JetStreamSplit, 'streamCreated'>, position: number, created: string, lastSeq: number): string | undefined {
  if (split.streamCreated !== undefined && split.streamCreated !== created) {
    return `it was created again (at ${created}; the position ${position} is in the stream created at ${split.streamCreated})`;
  }
  if (lastSeq < position) return `its last sequence is ${lastSeq}, before the position ${position} (deleted and created again?)`;
  return undefined;
}

/**
 * The sequences after a position that are gone from the stream (its first sequence is past
 * position + 1), or undefined. Position 0 counts too: a split planned at 0 started before the
 * stream's first message (an empty stream), and what was removed since was never read.
 */
export function removedAfter(position: number, firstSeq: number): { from: number; to: number } | undefined {
  return firstSeq > position + 1 ? { from: position + 1, to: firstSeq - 1 } : undefined;
}

/** The log line for sequences from to `to` removed from the stream before the split read them. */
function goneLine(split: Pick<JetStreamSplit, 'stream' | 'subject'>, from: number, to: number): string {
  const which = split.subject === undefined ? '' : ` subject ${split.subject}`;
  const what = split.subject === undefined ? 'these messages were not read' : 'any messages of this subject among them were not read';
  return `stream "${split.stream}"${which}: sequences ${from} to ${to} (${to - from + 1}) are gone, removed from the stream (by its limits, a purge or a delete) before this source read them: ${what}`;
}

/**
 * Whether a message's consumer sequence shows that one before it never arrived. The consumer
 * sequence counts deliveries from 1 for a new consumer (acks are off: nothing is redelivered),
 * so `lastDseq` 0 (none received yet) expects 1: a lost first message is a gap like any other.
 */
export function deliveryGap(lastDseq: number, dseq: number): boolean {
  return dseq !== lastDseq + 1;
}

/** A pull that went quiet past its expiry, and what the server said since (pullUnanswered). */
export interface SilentPull {
  /** It delivered messages before it went quiet: its consumer is there. */
  readonly delivered: boolean;
  /** The answer to the consumer's info, once asked. */
  readonly info?: ConsumerInfoAnswer;
  /** The answer to a ping (a flush), once sent. */
  readonly ping?: 'answered' | 'none';
  /** The answer to a ping on a connection of its own (natsAnswers), once sent. */
  readonly probe?: 'answered' | 'none';
}

/**
 * The consumer's info: 'exists'; 'refused', the server answered with an error (consumer not
 * found: deleted, as for inactivity, or lost with a restarted server's memory); 'none', no
 * answer within timeoutMs (the server answers it once the consumer's scan for its next message
 * ends, which may take longer, or the server is gone).
 */
export type ConsumerInfoAnswer = 'exists' | 'refused' | 'none';

/** How a failed consumer info request counts: an error the server sent (its api_error) is a refusal; a timeout or a closed connection is no answer. */
export function consumerInfoAnswer(e: unknown): ConsumerInfoAnswer {
  const api = typeof e === 'object' && e !== null ? (e as { api_error?: unknown }).api_error : undefined;
  return typeof api === 'object' && api !== null ? 'refused' : 'none';
}

/**
 * The next step for a pull that went quiet: 'info' (ask about its consumer), 'ping', 'probe' (a
 * ping on a connection of its own), 'pull' (the pull is over; the next goes through the same
 * consumer), 'recreate' (then pull), or 'fail' (the server is silent). A pull that delivered is
 * over once the server answers a ping. One that delivered nothing recreates its consumer only
 * when the server refuses its info: a consumer that is there may be scanning for its next
 * message, longer than any pull, and a new one would start the scan over (a reader that
 * recreated it read nothing, for ever). An info unanswered (a long scan holds it) is a busy
 * consumer if the server answers a ping, on the reader's connection or, held up behind the
 * scan there, on one of its own.
 */
export function silentPullStep(s: SilentPull): 'info' | 'ping' | 'probe' | 'pull' | 'recreate' | 'fail' {
  if (!s.delivered) {
    if (s.info === undefined) return 'info';
    if (s.info === 'exists') return 'pull';
    if (s.info === 'refused') return 'recreate';
  }
  if (s.ping === undefined) return 'ping';
  if (s.ping === 'answered') return 'pull';
  // The server (2.9) handles the connection's requests in order, and one that waits for a
  // consumer's scan (the info above, a pull, a creation, any split's) holds up the ping: a
  // busy server still answers a connection of its own, a silent one does not.
  if (s.probe === undefined) return 'probe';
  return s.probe === 'answered' ? 'pull' : 'fail';
}

/** The nats module's constants, loaded with the first connection (jobs that read no NATS never load it). */
let natsConstants: typeof import('nats') | undefined;

/**
 * Stream sequence, consumer sequence, timestamp and pending count from a JetStream message's
 * reply subject: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>, or the
 * newer form with domain and account hash after $JS.ACK (and an optional token at the end).
 */
export function parseAckSubject(reply: string | undefined): { seq: number; dseq: number; tsNanos: number; pending: number } | undefined {
  if (reply === undefined || !reply.startsWith('$JS.ACK.')) return undefined;
  const t = reply.split('.');
  const base = t.length === 9 ? 2 : t.length >= 11 ? 4 : -1;
  if (base < 0) return undefined;
  const seq = Number(t[base + 3]);
  const dseq = Number(t[base + 4]);
  const tsNanos = Number(t[base + 5]);
  const pending = Number(t[base + 6]);
  if (![seq, dseq, tsNanos, pending].every(Number.isFinite)) return undefined;
  return { seq, dseq, tsNanos, pending };
}

function oneOf<V extends string>(v: unknown, allowed: readonly V[], what: string): V {
  if (!(allowed as readonly unknown[]).includes(v)) throw new RangeError(`${what} must be ${allowed.map((a) => `"${a}"`).join(' or ')}, got ${JSON.stringify(v)}`);
  return v as V;
}

function posInt(v: unknown, what: string): number {
  if (!(typeof v === 'number' && Number.isInteger(v) && v > 0)) throw new RangeError(`${what} must be a positive integer, got ${String(v)}`);
  return v;
}
