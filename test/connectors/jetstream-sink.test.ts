/**
 * NATS JetStream sink against the real server at 127.0.0.1:4222: messages staged until the
 * checkpoint completes, a re-commit after a restore publishes nothing (progress key), a commit
 * interrupted half way is published again and the server drops the repeats (deterministic
 * Nats-Msg-Id), the duplicate window checked at start, a missing stream and an unreachable
 * server named.
 */
import { AckPolicy, connect, headers, type JetStreamManager, type NatsConnection, type StreamConfig } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../../src/core/errors.ts';
import { JetStreamSink, type JetStreamCommittable } from '../../src/connectors/jetstream/index.ts';
import { messageId } from '../../src/connectors/jetstream/progress-state.ts';
import { freePort, sinkCtx, uniqueName } from './postgres/helpers.ts';

interface Ev { n: number }
const ts = (n: number) => new Array<number>(n).fill(0);
const failure = (p: unknown): Promise<unknown> => Promise.resolve(p).then(() => undefined, (x: unknown) => x);
const BUCKET = 'weir_test_progress';
let nc: NatsConnection;
let jsm: JetStreamManager;
const streams: string[] = [];

beforeAll(async () => {
  nc = await connect({ servers: '127.0.0.1:4222', timeout: 10_000 });
  jsm = await nc.jetstreamManager();
});
afterAll(async () => {
  for (const s of streams) await jsm.streams.delete(s).catch(() => {});
  await jsm.streams.delete(`KV_${BUCKET}`).catch(() => {});
  await nc.close();
});

async function stream(windowNs = 120e9, extra: Partial<StreamConfig> = {}): Promise<{ name: string; subject: string }> {
  const name = uniqueName('weirtest').replace(/_/g, '-');
  streams.push(name);
  await jsm.streams.add({ name, subjects: [`${name}.>`], duplicate_window: windowNs, ...extra });
  return { name, subject: `${name}.out` };
}

async function bodies(name: string): Promise<Ev[]> {
  const info = await jsm.streams.info(name);
  const out: Ev[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq });
    out.push(JSON.parse(new TextDecoder().decode(m.data)) as Ev);
  }
  return out;
}
const evs = (from: number, n: number): Ev[] => Array.from({ length: n }, (_, i) => ({ n: from + i }));

function sink(name: string, subject: string, jobId: string, extra: Record<string, unknown> = {}) {
  return new JetStreamSink<Ev>({ stream: name, subject, jobId, progressBucket: BUCKET, ...extra });
}

/** What a commit of checkpoint 3 that crashed left: `written` records prepared, the progress key saying publishing began, the first `published` of them in the stream. */
async function crashedCommit(subject: string, job: string, k: JetStreamSink<Ev>, written: number, published: number): Promise<JetStreamCommittable> {
  const w = k.createWriter(sinkCtx());
  w.write(evs(0, written), ts(written));
  const [item] = w.prepareCommit(3);
  const js = nc.jetstream();
  const kv = await js.views.kv(BUCKET, { history: 1 });
  await kv.put(`${job}.sink.0`, JSON.stringify({ committed: null, publishing: 3, since: Date.now() }));
  for (let i = 0; i < published; i++) await js.publish(subject, item!.msgs[i]![1], { msgID: messageId(job, 'sink', 0, 3, i) });
  return item!;
}

describe('jetstream sink', () => {
  it('publishes at completion with deterministic ids; a re-commit after a restore publishes nothing', async () => {
    const { name, subject } = await stream();
    const k = sink(name, subject, uniqueName('job'));
    const w = k.createWriter(sinkCtx());
    const c = k.createCommitter(sinkCtx());
    w.write(evs(0, 1500), ts(1500));
    const first = w.prepareCommit(1);
    w.write(evs(1500, 7), ts(7));
    const second = w.prepareCommit(2);
    expect((await jsm.streams.info(name)).state.messages).toBe(0);
    await c.commit(first);
    expect((await jsm.streams.info(name)).state.messages).toBe(1500);
    await c.commit(second);
    expect(await k.lastCommittedCheckpointOf('sink', 0)).toBe(2);
    const c2 = k.createCommitter(sinkCtx({ restoredCheckpointId: 2, attemptNumber: 1 }));
    await c2.commit([...first, ...second]);
    expect(await bodies(name)).toEqual(evs(0, 1507));
    await c.close?.();
    await c2.close?.();
  });

  it('a commit interrupted half way is published again after the restore; the server drops the repeats', async () => {
    const { name, subject } = await stream();
    const job = uniqueName('job');
    const k = sink(name, subject, job);
    // What a crashed commit left: the progress key says publishing began, 150 messages are in.
    const item = await crashedCommit(subject, job, k, 400, 150);
    // Part of checkpoint 3 is visible: a restore from before it would publish those again (before: nothing committed).
    expect(await k.lastCommittedCheckpointOf('sink', 0)).toBe(3);
    const logged: string[] = [];
    const c = k.createCommitter(sinkCtx({ restoredCheckpointId: 3, attemptNumber: 1 }, logged));
    await c.commit([item]);
    expect(await bodies(name)).toEqual(evs(0, 400));
    expect((c as unknown as { duplicates: number }).duplicates).toBe(150);
    expect(logged).toEqual([]);
    expect(await k.lastCommittedCheckpointOf('sink', 0)).toBe(3);
    await c.close?.();
  });

  it('a restart in the same process reads the stream again: a duplicate window shortened while the job was down is noticed (before: the start check\'s value was kept, and a re-commit past the real window published duplicates without a log line); a re-commit past the window leaves out the messages found in the stream by their ids', async () => {
    const shorten = async (name: string, windowNs: number) => {
      const info = await jsm.streams.info(name);
      await jsm.streams.update(name, { ...info.config, duplicate_window: windowNs });
    };
    // Below minDuplicateWindowMs now: the restored attempt's commit fails as a new process's start would, publishing nothing.
    {
      const { name, subject } = await stream();
      const job = uniqueName('job');
      const k = sink(name, subject, job);
      await k.start();
      const item = await crashedCommit(subject, job, k, 10, 6);
      await shorten(name, 1e9);
      const c = k.createCommitter(sinkCtx({ restoredCheckpointId: 3, attemptNumber: 1 }));
      const e = await failure(c.commit([item]));
      expect(errorCode(e)).toBe('CONFIG');
      expect((e as Error).message).toContain(`stream "${name}" has a duplicate window of 1 s, less than minDuplicateWindowMs (120 s)`);
      expect((await jsm.streams.info(name)).state.messages).toBe(6);
      await c.close?.();
    }
    // Still above it, but the re-commit comes later than the new window: said in the log.
    {
      const { name, subject } = await stream();
      const job = uniqueName('job');
      const k = sink(name, subject, job, { minDuplicateWindowMs: 1000 });
      await k.start();
      const item = await crashedCommit(subject, job, k, 10, 6);
      await shorten(name, 1e9);
      // Others' messages in between, one with the id of message 7 of checkpoint 30 (not of checkpoint 3).
      await nc.jetstream().publish(subject, new TextEncoder().encode(JSON.stringify({ n: 1000 })), { msgID: messageId(job, 'sink', 0, 30, 7) });
      await nc.jetstream().publish(`${name}.other`, new TextEncoder().encode(JSON.stringify({ n: 1001 })));
      await new Promise((r) => setTimeout(r, 1500));
      const logged: string[] = [];
      const c = k.createCommitter(sinkCtx({ restoredCheckpointId: 3, attemptNumber: 1 }, logged));
      await c.commit([item]);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatch(new RegExp(`^weir: jetstream sink ${name}: checkpoint 3 of subtask 0 is published again \\d+ s after its first try, past the stream's 1 s duplicate window: 6 of its 10 messages are in the stream already \\(found by their ids among 8 read from .*\\), the others are published$`));
      // Past the window the server dropped no repeat: the six found were left out, not published twice.
      expect((await bodies(name)).map((e) => e.n)).toEqual([0, 1, 2, 3, 4, 5, 1000, 1001, 6, 7, 8, 9]);
      expect(await k.lastCommittedCheckpointOf('sink', 0)).toBe(3);
      await c.close?.();
    }
  });

  it('a late re-commit pages through the stream to find what is there; one that cannot search the stream publishes all again and says why', async () => {
    const late = async (extra: Partial<StreamConfig>, count: number, before: number, occupy = false) => {
      const { name, subject } = await stream(1e9, extra);
      const job = uniqueName('job');
      const k = sink(name, subject, job, { minDuplicateWindowMs: 1000 });
      const w = k.createWriter(sinkCtx());
      w.write(evs(0, count), ts(count));
      const [item] = w.prepareCommit(5);
      const js = nc.jetstream();
      const kv = await js.views.kv(BUCKET, { history: 1 });
      await kv.put(`${job}.sink.0`, JSON.stringify({ committed: null, publishing: 5, since: Date.now() }));
      for (let i = 0; i < before; i += 500) {
        await Promise.all(item!.msgs.slice(i, Math.min(before, i + 500)).map(([, body], j) => js.publish(subject, body, { msgID: messageId(job, 'sink', 0, 5, i + j) })));
      }
      if (occupy) await jsm.consumers.add(name, { durable_name: 'occupant', ack_policy: AckPolicy.None });
      await new Promise((r) => setTimeout(r, 1500));
      const logged: string[] = [];
      const c = k.createCommitter(sinkCtx({ restoredCheckpointId: 5, attemptNumber: 1 }, logged));
      await c.commit([item!]);
      await c.close?.();
      return { name, logged };
    };
    const paged = await late({}, 2500, 1700);
    expect(paged.logged[0]).toMatch(/: 1700 of its 2500 messages are in the stream already \(found by their ids among 1700 read from /);
    expect((await jsm.streams.info(paged.name)).state.messages).toBe(2500);
    // No room for the consumer that searches (max_consumers 1, taken): as before the search, with the reason.
    const blind = await late({ max_consumers: 1 }, 10, 6, true);
    expect(blind.logged).toHaveLength(1);
    expect(blind.logged[0]).toMatch(/past the stream's 1 s duplicate window: repeats of messages published then may not be dropped \(the stream could not be searched for them: .*maximum consumers limit reached/);
    expect((await jsm.streams.info(blind.name)).state.messages).toBe(16);
  }, 60_000);

  it('a commit still running when a later attempt commits past it does not set the progress key back', async () => {
    const { name, subject } = await stream();
    const job = uniqueName('job');
    // One acknowledgement at a time: the old attempt's commit of checkpoint 2 takes long enough.
    const k = sink(name, subject, job, { maxInFlight: 1 });
    const w = k.createWriter(sinkCtx());
    w.write(evs(0, 4000), ts(4000));
    const old = k.createCommitter(sinkCtx());
    let oldDone = false;
    const oldCommit = Promise.resolve(old.commit(w.prepareCommit(2))).then(() => { oldDone = true; });
    const kv = await (await nc.jetstream()).views.kv(BUCKET);
    const pkey = k.progressKey(k.key({ operatorId: 'sink', subtaskIndex: 0 }));
    const deadline = Date.now() + 10_000;
    while (!(new TextDecoder().decode((await kv.get(pkey))?.value ?? new Uint8Array()).includes('"publishing":2'))) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 2));
    }
    // The later attempt (restored from checkpoint 2, whose messages its re-commit would cover) commits 3.
    const k2 = sink(name, subject, job);
    const w2 = k2.createWriter(sinkCtx({ restoredCheckpointId: 2, attemptNumber: 1 }));
    w2.write(evs(4000, 5), ts(5));
    const later = k2.createCommitter(sinkCtx({ restoredCheckpointId: 2, attemptNumber: 1 }));
    await later.commit(w2.prepareCommit(3));
    expect(oldDone).toBe(false);
    expect(await k2.lastCommittedCheckpointOf('sink', 0)).toBe(3);
    await oldCommit;
    // Before: the old commit's last write set it back to 2; a restore from 3 would then publish
    // checkpoint 3 again, past the duplicate window a duplicate.
    expect(await k.lastCommittedCheckpointOf('sink', 0)).toBe(3);
    expect((await jsm.streams.info(name)).state.messages).toBe(4005);
    await old.close?.();
    await later.close?.();
  });

  it('a stream whose duplicate window is shorter than minDuplicateWindowMs fails at start, naming both', async () => {
    const { name, subject } = await stream(5e9);
    const k = sink(name, subject, uniqueName('job'));
    const w = k.createWriter(sinkCtx());
    const e = await failure(k.start());
    expect(errorCode(e)).toBe('CONFIG');
    expect(String((e as Error).message)).toContain(`stream "${name}" has a duplicate window of 5 s, less than minDuplicateWindowMs (120 s)`);
    expect(() => w.write(evs(0, 1), ts(1))).toThrow(/duplicate window of 5 s/);
    // Accepted when the job asks for no more than the stream has.
    await sink(name, subject, uniqueName('job'), { minDuplicateWindowMs: 5_000 }).start();
  });

  it('a missing stream and an unreachable server are named', async () => {
    const e = await failure(sink('weir-no-such-stream', 'x.y', 'j').start());
    expect(errorCode(e)).toBe('CONFIG');
    expect(String((e as Error).message)).toContain('stream "weir-no-such-stream" does not exist at 127.0.0.1:4222');
    const port = await freePort();
    const e2 = await failure(new JetStreamSink<Ev>({ servers: `127.0.0.1:${port}`, stream: 's', subject: 'x', jobId: 'j', retryDeadlineMs: 1_500, connectTimeoutMs: 1_000 }).start());
    expect(errorCode(e2)).toBe('CONNECTOR');
    expect(String((e2 as Error).message)).toContain(`127.0.0.1:${port}`);
  });

  it('a message over the stream\'s max_msg_size or the server\'s max_payload is refused at write, before it enters a checkpoint (before: the commit failed after publishing the messages before it, and every restore\'s re-commit again)', async () => {
    const { name, subject } = await stream(120e9, { max_msg_size: 1000 });
    const job = uniqueName('job');
    const k = new JetStreamSink<string>({ stream: name, subject, jobId: job, progressBucket: BUCKET, payload: (v) => v });
    const w = k.createWriter(sinkCtx());
    await k.start();
    // The headers as the client encodes them, at the longest id (a 16-digit checkpoint id).
    const h = headers();
    h.set('Nats-Msg-Id', messageId(job, 'sink', 0, Number.MAX_SAFE_INTEGER, 1_000_000));
    h.set('Nats-Expected-Stream', name);
    const largest = 1000 - (h as unknown as { encode(): Uint8Array }).encode().length;
    w.write(['a', 'x'.repeat(largest)], ts(2));
    const c = k.createCommitter(sinkCtx());
    await c.commit(w.prepareCommit(1));
    expect((await jsm.streams.info(name)).state.messages).toBe(2); // the largest message that fits is published
    await c.close?.();
    let e: unknown;
    try {
      w.write(['b', 'y'.repeat(largest + 1), 'c'], ts(3));
    } catch (caught) {
      e = caught;
    }
    expect(errorCode(e)).toBe('MALFORMED_RECORD');
    expect((e as Error).message).toMatch(new RegExp(`^jetstream sink: stream "${name}" at 127\\.0\\.0\\.1:4222 \\(subtask 1\\): a message of ${largest + 1} bytes on subject ${subject.replaceAll('.', '\\.')} \\(with up to \\d+ bytes of headers\\) is over the stream's max_msg_size of 1000 bytes, and would fail every commit of its checkpoint; the record: "yyy`));

    // The server's max_payload (1 MiB here) when the stream sets no limit.
    const other = await stream();
    const k2 = new JetStreamSink<string>({ stream: other.name, subject: other.subject, jobId: uniqueName('job'), progressBucket: BUCKET, payload: (v) => v });
    const w2 = k2.createWriter(sinkCtx());
    // Written before the start check has told the limit: checked before the checkpoint is acknowledged (a rejection declines it).
    w2.write(['z'.repeat(2 * 1024 * 1024)], ts(1));
    w2.prepareCommit(1);
    const e2 = await failure(w2.whenPrepared?.(1));
    expect(errorCode(e2)).toBe('MALFORMED_RECORD');
    expect((e2 as Error).message).toContain(`a message of ${2 * 1024 * 1024} bytes on subject ${other.subject} (with up to`);
    expect((e2 as Error).message).toMatch(/is over the server's max_payload of \d+ bytes, and would fail every commit of its checkpoint$/);
    expect(() => w2.write(['ok'], ts(1))).toThrow(/max_payload/);
  });

  it('bad options are refused with the option named', () => {
    expect(() => new JetStreamSink({ stream: 'a.b', subject: 'x', jobId: 'j' })).toThrow(/stream must be a stream name/);
    expect(() => new JetStreamSink({ stream: 's', subject: 'x.*', jobId: 'j' })).toThrow(/subject must be a subject without wildcards/);
    expect(() => new JetStreamSink({ stream: 's', subject: 'x', jobId: 'j', maxInFlight: 0 })).toThrow(/maxInFlight must be a positive integer/);
  });

  it('a progress value it did not write fails reading the progress and the commit, and is left as found', async () => {
    const { name, subject } = await stream();
    const k = sink(name, subject, uniqueName('job'));
    const pkey = k.progressKey(k.key({ operatorId: 'sink', subtaskIndex: 0 }));
    const kv = await (await nc.jetstream()).views.kv(BUCKET);
    await kv.put(pkey, new TextEncoder().encode('{"committed":"7"}'));
    const e = await failure(k.lastCommittedCheckpointOf('sink', 0));
    expect(errorCode(e)).toBe('CONNECTOR');
    expect((e as Error).message).toContain(`progress key "${pkey}" in bucket ${BUCKET} holds "{\\"committed\\":\\"7\\"}"`);
    const w = k.createWriter(sinkCtx());
    const c = k.createCommitter(sinkCtx());
    w.write(evs(0, 3), ts(3));
    const e2 = await failure(c.commit(w.prepareCommit(1)));
    expect((e2 as Error).message).toContain('committed is not a checkpoint id');
    expect((await jsm.streams.info(name)).state.messages).toBe(0);
    expect(new TextDecoder().decode((await kv.get(pkey))!.value)).toBe('{"committed":"7"}');
    await c.close?.();
  });

  it('a server given with credentials is refused, and the error does not repeat them', () => {
    // Every error of the sink names its servers: credentials in one would reach logs and the REST API.
    for (const servers of ['nats://app:s3cret@127.0.0.1:4222', ['127.0.0.1:4222', 'app:s3cret@127.0.0.1:4223']]) {
      let e: unknown;
      try {
        new JetStreamSink({ servers, stream: 's', subject: 'x', jobId: 'j' });
      } catch (caught) {
        e = caught;
      }
      expect(errorCode(e)).toBe('CONFIG');
      expect((e as Error).message).toMatch(/servers must be host:port .*without credentials \(use user\/pass or token\)/);
      expect((e as Error).message).not.toContain('s3cret');
    }
    // Lists and comma-separated strings of host:port still work.
    expect(() => new JetStreamSink({ servers: '127.0.0.1:4222, 127.0.0.1:4223', stream: 's', subject: 'x', jobId: 'j' })).not.toThrow();
    expect(() => new JetStreamSink({ servers: ['nats://127.0.0.1:4222'], stream: 's', subject: 'x', jobId: 'j' })).not.toThrow();
  });
});
