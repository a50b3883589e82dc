/**
 * NATS JetStream source against the real server on 127.0.0.1:4222 (a unique stream per test):
 * the whole stream or subject filters as splits, resuming right after a stored sequence and
 * ending at the end captured at start, per-split event time, malformed messages (dead-letter or
 * failure naming stream and sequence), an unreachable server and a missing stream (errors naming
 * them), option validation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, RetentionPolicy, type JetStreamClient, type JetStreamManager, type NatsConnection, type StreamConfig } from 'nats';
import {
  DEAD_LETTERS, JetStreamSource, TumblingEventTimeWindows, WatermarkStrategy, type MalformedRecord, type ReaderOutput, type SourceReaderContext,
} from '../../../src/index.ts';
import { consumerInfoAnswer, deliveryGap, silentPullStep, streamReset, subjectMatchingBoth, type JetStreamSplit } from '../../../src/connectors/nats/jetstream-source.ts';
import { runInline, sorted } from '../../helpers/run.ts';
import { errorCode } from '../../../src/core/errors.ts';

let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
const streams: string[] = [];
let n = 0;

beforeAll(async () => {
  nc = await connect({ servers: '127.0.0.1:4222', timeout: 5000 });
  jsm = await nc.jetstreamManager();
  js = nc.jetstream();
});
afterAll(async () => {
  for (const s of streams) await jsm.streams.delete(s).catch(() => {});
  await nc.close();
});

async function stream(name: string, extra: Partial<StreamConfig> = {}): Promise<string> {
  const s = `weirtest_${process.pid}_${Date.now()}_${n++}_${name}`;
  streams.push(s);
  await jsm.streams.add({ name: s, subjects: [`${s}.>`], ...extra });
  return s;
}

const readerCtx = (logs: string[], wake: () => void): SourceReaderContext => ({
  subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake,
  schedule: () => ({ cancel() {} }), log: (l) => void logs.push(l),
  metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest() {} },
});

/** Reads one split with a bare reader until `until` or `ms` pass: what it emitted, logged and failed with. */
async function readSplit(src: JetStreamSource<Ev>, split: JetStreamSplit, until: (got: number[]) => boolean, ms = 3000): Promise<{ got: number[]; logs: string[]; error: string | undefined }> {
  const logs: string[] = [];
  const got: number[] = [];
  let wake: () => void = () => {};
  const reader = src.createReader(readerCtx(logs, () => wake()));
  reader.addSplits([split]);
  const out: ReaderOutput<Ev> = { collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); }, forSplit: () => out, splitFinished: () => {} };
  let error: string | undefined;
  try {
    for (const end = Date.now() + ms; Date.now() < end && !until(got);) {
      const st = reader.poll(out, 50);
      if (st === 'end') break;
      if (st === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 100); });
    }
  } catch (e) {
    error = (e as Error).message;
  } finally {
    await reader.close?.();
  }
  return { got, logs, error };
}

/**
 * A bare reader of several splits, driven by hand: `until` polls until `done` holds, the reader
 * ends or fails, or `ms` pass, waiting for its wake (or 100 ms) between polls. Records are kept
 * per split id, with the reader's log lines and its error.
 */
function driveReader(src: JetStreamSource<Ev>, splits: JetStreamSplit[]) {
  const logs: string[] = [];
  const got = new Map<string, number[]>(splits.map((sp) => [sp.id, []]));
  let wake: () => void = () => {};
  const reader = src.createReader(readerCtx(logs, () => wake()));
  reader.addSplits(splits);
  const malformed = (): void => { throw new Error('unexpected'); };
  const out: ReaderOutput<Ev> = {
    collect: () => { throw new Error('records go through forSplit'); }, malformed,
    forSplit: (id) => ({ collect: (v: Ev) => void got.get(id)!.push(v.i), malformed }) as never, splitFinished: () => {},
  };
  const state = { error: undefined as string | undefined, ended: false };
  return {
    logs, got, state, reader, out,
    setWake: (f: () => void) => { wake = f; },
    async until(done: () => boolean, ms: number): Promise<void> {
      try {
        for (const end = Date.now() + ms; Date.now() < end && !done();) {
          const st = reader.poll(out, 100);
          if (st === 'end') { state.ended = true; return; }
          if (st === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 100); });
        }
      } catch (e) {
        state.error = (e as Error).message;
      }
    },
    close: () => reader.close?.(),
  };
}

/** The log line for sequences removed before the split read them, as docs/connectors.md gives it. */
function goneLine(split: { stream: string; subject?: string }, from: number, to: number): string {
  const what = split.subject === undefined ? 'these messages were not read' : 'any messages of this subject among them were not read';
  return `stream "${split.stream}"${split.subject === undefined ? '' : ` subject ${split.subject}`}: sequences ${from} to ${to} (${to - from + 1}) are gone, removed from the stream (by its limits, a purge or a delete) before this source read them: ${what}`;
}

interface Ev { i: number; k: string; ts: number }
/** Publishes records {i, k, ts} as JSON on `subject` (or `subject(i)`), 500 in flight at a time. */
async function fill(subject: string | ((i: number) => string), count: number, from = 0, t0 = 1_700_000_000_000): Promise<void> {
  for (let start = from; start < from + count; start += 500) {
    const ps: Promise<unknown>[] = [];
    for (let i = start; i < Math.min(from + count, start + 500); i++) ps.push(js.publish(typeof subject === 'string' ? subject : subject(i), JSON.stringify({ i, k: `k${i % 3}`, ts: t0 + i * 10 })));
    await Promise.all(ps);
  }
}

describe('JetStreamSource', () => {
  it('reads the whole stream as one split to the end captured at start (the second reader holds no split)', async () => {
    const s = await stream('whole');
    await fill(`${s}.a`, 1500);
    await fill(`${s}.b`, 700);
    const r = await runInline((env) => {
      env.fromSource(new JetStreamSource<Ev>({ stream: s, stopAt: 'latest', batchSize: 300 })).collect('out');
    }, { parallelism: 2 });
    const got = r.collected<Ev>('out');
    expect(got.length).toBe(2200);
    expect(sorted(got.map((e) => e.i))).toEqual(sorted([...Array(1500).keys(), ...Array(700).keys()]));
    expect(r.progress.bytesIn).toBeGreaterThan(2200 * 20);
  }, 60_000);

  it('subject filters are splits, read by different readers, each to its end', async () => {
    const s = await stream('subjects');
    await fill(`${s}.a`, 1000);
    await fill(`${s}.b`, 600, 5000);
    await fill(`${s}.c`, 50, 9000); // not selected
    const r = await runInline((env) => {
      env.fromSource(new JetStreamSource<Ev>({ stream: s, subjects: [`${s}.a`, `${s}.b`], stopAt: 'latest', batchSize: 128 })).collect('out');
    }, { parallelism: 2 });
    const got = r.collected<Ev>('out').map((e) => e.i);
    expect(sorted(got)).toEqual(sorted([...Array.from({ length: 1000 }, (_, k) => k), ...Array.from({ length: 600 }, (_, k) => 5000 + k)]));
  }, 60_000);

  it('a reader resumes right after the stored stream sequence and ends at the split end', async () => {
    const s = await stream('resume');
    await fill(`${s}.a`, 100);
    const src = new JetStreamSource<Ev>({ stream: s, stopAt: 'latest' });
    const got: number[] = [];
    let wake: () => void = () => {};
    const ctx: SourceReaderContext = {
      subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake: () => wake(),
      schedule: () => ({ cancel() {} }), log: () => {},
      metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest() {} },
    };
    const reader = src.createReader(ctx);
    const split: JetStreamSplit = { id: s, stream: s, lastSeq: 42, endSeq: 90 };
    reader.addSplits([split]);
    const out: ReaderOutput<Ev> = {
      collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); },
      forSplit: () => out, splitFinished: () => {},
    };
    for (let k = 0; k < 1000; k++) {
      const st = reader.poll(out, 7);
      if (st === 'end') break;
      if (st === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 2000); });
    }
    await reader.close?.();
    // Sequence k + 1 holds record k: after 42 comes record 42, and sequence 90 is record 89.
    expect(got).toEqual(Array.from({ length: 48 }, (_, k) => 42 + k));
  }, 60_000);

  it('a reader that said wait is woken again after its look at the stream (before: the look held the pull back, woke no one, and a reader polled only when woken read 10 messages, then nothing)', async () => {
    const s = await stream('woken');
    const src = new JetStreamSource<Ev>({ stream: s, blockMs: 500 });
    const [split] = await src.planSplits();
    const got: number[] = [];
    let wake: () => void = () => {};
    const reader = src.createReader(readerCtx([], () => wake()));
    reader.addSplits([split!]);
    const out: ReaderOutput<Ev> = { collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); }, forSplit: () => out, splitFinished: () => {} };
    const TOTAL = 30;
    let published = 0;
    const publisher = setInterval(() => { if (published < TOTAL) void js.publish(`${s}.a`, JSON.stringify({ i: published++, k: 'a', ts: 0 })); }, 150);
    let stalled = false;
    try {
      // Polled only when woken, as the task does: a reader must never say 'wait' without a wake to come.
      while (got.length < TOTAL && !stalled) {
        if (reader.poll(out, 50) !== 'wait') continue;
        stalled = await new Promise<boolean>((res) => { wake = () => res(false); setTimeout(() => res(true), 10_000); });
      }
    } finally {
      clearInterval(publisher);
      await reader.close?.();
    }
    expect(stalled, `no wake for 10 s after ${got.length} of ${published} messages`).toBe(false);
    expect(got).toEqual(Array.from({ length: TOTAL }, (_, k) => k));
  }, 60_000);

  it('a position in a stream deleted and created again is refused, not read on in the new one (before: as many of its messages as the old position counted were skipped without a word)', async () => {
    const s = await stream('recreated');
    await fill(`${s}.a`, 20);
    const src = new JetStreamSource<Ev>({ stream: s });
    const [planned] = await src.planSplits();
    expect(planned!.streamCreated).toBe((await jsm.streams.info(s)).created);
    await jsm.streams.delete(s);
    await jsm.streams.add({ name: s, subjects: [`${s}.>`] });
    await fill(`${s}.a`, 15, 100);
    const errorOf = async (split: JetStreamSplit): Promise<string> => {
      let wake: () => void = () => {};
      const reader = src.createReader({
        subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake: () => wake(),
        schedule: () => ({ cancel() {} }), log: () => {},
        metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest() {} },
      });
      reader.addSplits([split]);
      const got: number[] = [];
      const out: ReaderOutput<Ev> = { collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); }, forSplit: () => out, splitFinished: () => {} };
      try {
        for (let k = 0; k < 200; k++) {
          if (reader.poll(out, 100) === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 200); });
        }
        return `no error; read ${got.join(',')}`;
      } catch (e) {
        expect(got).toEqual([]);
        return (e as Error).message;
      } finally {
        await reader.close?.();
      }
    };
    // Checkpointed at sequence 10 of the old stream: the new one has 15, its first 10 would be skipped.
    expect(await errorOf({ ...planned!, lastSeq: 10 })).toMatch(new RegExp(String.raw`^JetStream stream "${s}" at 127\.0\.0\.1:4222: it was created again \(at .*; the position 10 is in the stream created at ${planned!.streamCreated!.replaceAll('.', String.raw`\.`)}\); .* Start the job without this checkpoint`));
    // A split of an older weir (no creation time): caught when the position is past the new stream's end.
    expect(await errorOf({ id: s, stream: s, lastSeq: 18 })).toMatch(/its last sequence is 15, before the position 18 \(deleted and created again\?\)/);
    // Purged or trimmed (sequences kept) is not a reset.
    expect(streamReset({ streamCreated: 'T1' }, 10, 'T1', 40)).toBeUndefined();
    expect(streamReset({}, 10, 'T2', 10)).toBeUndefined();
  }, 60_000);

  it('a stream with interest or work-queue retention is refused, at planning and at a restored split (before: read with acks off, the server deleted each message at delivery, and a restart before the next checkpoint found them gone)', async () => {
    for (const retention of [RetentionPolicy.Interest, RetentionPolicy.Workqueue]) {
      const s = await stream(retention, { retention });
      const src = new JetStreamSource<Ev>({ stream: s, subjects: [`${s}.a`] });
      const message = `JetStream stream "${s}" at 127.0.0.1:4222 has retention "${retention}": the server deletes its messages once delivered, before a checkpoint covers them`;
      const planned = await src.planSplits().then(() => undefined, (e: unknown) => e);
      expect(errorCode(planned)).toBe('CONFIG');
      expect((planned as Error).message).toContain(message);
      // A split restored from a checkpoint (the stream's retention changed since, or made so by hand): no consumer, nothing deleted.
      await fill(`${s}.a`, 10);
      const r = await readSplit(src, { id: `${s}:${s}.a`, stream: s, subject: `${s}.a`, lastSeq: 0 }, () => false);
      expect(r.got).toEqual([]);
      expect(r.error).toContain(message);
      const info = await jsm.streams.info(s);
      expect(info.state.consumer_count).toBe(0);
      expect(info.state.messages).toBe(retention === RetentionPolicy.Workqueue ? 10 : 0); // interest: kept only while a consumer is there
    }
  }, 60_000);

  it('a split resumed after messages past its position were removed says so once, the whole stream as a subject does, and so does a position 0 (before: nothing for 0)', async () => {
    const s = await stream('purged');
    await fill(`${s}.a`, 50);
    await jsm.streams.purge(s, { seq: 41 }); // sequences 1 to 40 gone (a limit or an admin while the job was down)
    const created = (await jsm.streams.info(s)).created;
    const src = new JetStreamSource<Ev>({ stream: s, subjects: [`${s}.a`] });
    const split = (lastSeq: number): JetStreamSplit => ({ id: `${s}:${s}.a`, stream: s, subject: `${s}.a`, lastSeq, streamCreated: created });
    const r = await readSplit(src, split(10), (got) => got.length >= 10);
    expect(r.error).toBeUndefined();
    expect(r.got).toEqual(Array.from({ length: 10 }, (_, k) => 40 + k));
    expect(r.logs).toEqual([`stream "${s}" subject ${s}.a: sequences 11 to 40 (30) are gone, removed from the stream (by its limits, a purge or a delete) before this source read them: any messages of this subject among them were not read`]);
    // The whole stream: the same, once (when its consumer is created, not again at the first message).
    const whole = await readSplit(new JetStreamSource<Ev>({ stream: s }), { id: s, stream: s, lastSeq: 10, streamCreated: created }, (got) => got.length >= 10);
    expect(whole.logs).toEqual([`stream "${s}": sequences 11 to 40 (30) are gone, removed from the stream (by its limits, a purge or a delete) before this source read them: these messages were not read`]);
    // A position 0 (a split planned on an empty stream, restored after messages came and went): 1 to 40.
    expect((await readSplit(src, split(0), (got) => got.length >= 10)).logs).toEqual([goneLine({ stream: s, subject: `${s}.a` }, 1, 40)]);
    // Nothing said for a position just before the first sequence; a first start from 'earliest' is planned there.
    expect((await readSplit(src, split(40), (got) => got.length >= 10)).logs).toEqual([]);
    const planned = await src.planSplits();
    expect(planned.map((p) => p.lastSeq)).toEqual([40]);
    expect((await readSplit(src, planned[0]!, (got) => got.length >= 10)).logs).toEqual([]);
  }, 60_000);

  it('a bounded split whose stream was purged says which sequences went and ends, whole or by subject, with or without messages since (before: it was done without a word)', async () => {
    for (const later of [5, 0]) {
      for (const subject of [undefined, 'a']) {
        const s = await stream(`purgedown${later}${subject ?? ''}`);
        await fill((i) => `${s}.${i % 2 ? 'a' : 'b'}`, 50);
        const info = await jsm.streams.info(s);
        await jsm.streams.purge(s);
        await fill(`${s}.a`, later, 100);
        const split: JetStreamSplit = subject === undefined
          ? { id: s, stream: s, lastSeq: 10, endSeq: info.state.last_seq, streamCreated: info.created }
          : { id: `${s}:${s}.a`, stream: s, subject: `${s}.a`, lastSeq: 10, endSeq: info.state.last_seq, streamCreated: info.created };
        const src = new JetStreamSource<Ev>(subject === undefined ? { stream: s, stopAt: 'latest' } : { stream: s, subjects: [`${s}.a`], stopAt: 'latest' });
        const r = driveReader(src, [split]);
        await r.until(() => false, 20_000);
        await r.close();
        expect(r.state.error).toBeUndefined();
        expect(r.state.ended, `${later} ${subject}`).toBe(true);
        expect(r.got.get(split.id)).toEqual([]);
        expect(r.logs).toEqual([goneLine(split, 11, 50)]);
      }
    }
  }, 120_000);

  it('a bounded split whose rest is purged while it reads says so and ends, whole or by subject (before: it waited for ever)', async () => {
    for (const subject of [undefined, 'a']) {
      const s = await stream(`purgeend${subject ?? ''}`);
      await fill((i) => `${s}.${i % 2 ? 'b' : 'a'}`, 2000); // record i at sequence i + 1
      const info = await jsm.streams.info(s);
      const split: JetStreamSplit = { id: subject === undefined ? s : `${s}:${s}.a`, stream: s, ...(subject === undefined ? {} : { subject: `${s}.a` }), lastSeq: 0, endSeq: 2000, streamCreated: info.created };
      const r = driveReader(new JetStreamSource<Ev>({ stream: s, ...(subject === undefined ? {} : { subjects: [`${s}.a`] }), stopAt: 'latest', batchSize: 50 }), [split]);
      const got = r.got.get(split.id)!;
      for (let k = 0; k < 200 && got.length < 100; k++) {
        if (r.reader.poll(r.out, 10) === 'wait') await new Promise((res) => setTimeout(res, 20));
      }
      await jsm.streams.purge(s);
      await r.until(() => false, 20_000);
      await r.close();
      expect(r.state.error).toBeUndefined();
      expect(r.state.ended, String(subject)).toBe(true);
      expect(got.length).toBeLessThan(subject === undefined ? 2000 : 1000);
      expect(got).toEqual(Array.from({ length: got.length }, (_, k) => (subject === undefined ? k : 2 * k)));
      expect(r.logs).toEqual([goneLine(split, got.at(-1)! + 2, 2000)]);
    }
  }, 90_000);

  it('a subject split reading while its stream is purged says which sequences went, from the last one it read (before: read on without a word)', async () => {
    const s = await stream('purgerunning');
    await fill((i) => `${s}.${i % 2 ? 'b' : 'a'}`, 2000); // record i at sequence i + 1, subject a the even ones
    const src = new JetStreamSource<Ev>({ stream: s, subjects: [`${s}.a`], batchSize: 50 });
    const id = `${s}:${s}.a`;
    const r = driveReader(src, [{ id, stream: s, subject: `${s}.a`, lastSeq: 0, streamCreated: (await jsm.streams.info(s)).created }]);
    try {
      // A few records, then the task takes no more (its buffer full, or pulled and not yet emitted).
      const a = r.got.get(id)!;
      for (let k = 0; k < 200 && a.length < 100; k++) {
        if (r.reader.poll(r.out, 10) === 'wait') await new Promise((res) => setTimeout(res, 20));
      }
      await jsm.streams.purge(s);
      await fill((i) => `${s}.${i % 2 ? 'b' : 'a'}`, 20, 5000);
      // The gap is seen at the split's next look at the stream (every 2 s).
      await r.until(() => a.includes(5018) && r.logs.length > 0, 30_000);
      expect(r.state.error).toBeUndefined();
      const old = a.filter((i) => i < 5000);
      // Read in order up to the purge, then what came after it.
      expect(old).toEqual(Array.from({ length: old.length }, (_, k) => 2 * k));
      expect(a.slice(old.length)).toEqual(Array.from({ length: 10 }, (_, k) => 5000 + 2 * k));
      expect(old.length).toBeLessThan(1000);
      // The last record read before the purge is at sequence old.at(-1) + 1.
      expect(r.logs).toEqual([goneLine({ stream: s, subject: `${s}.a` }, old.at(-1)! + 2, 2000)]);
    } finally {
      await r.close();
    }
  }, 60_000);

  it('a split that did not pull for longer than the consumer\'s inactive threshold (backpressure) goes on with a new consumer: before, its pull went unanswered and the reader failed', async () => {
    const s = await stream('inactive');
    await fill(`${s}.a`, 60);
    const logs: string[] = [];
    const src = new JetStreamSource<Ev>({ stream: s, stopAt: 'latest', batchSize: 10, consumerInactiveMs: 1000 });
    let wake: () => void = () => {};
    const reader = src.createReader({
      subtaskIndex: 0, parallelism: 1, now: () => Date.now(), wake: () => wake(),
      schedule: () => ({ cancel() {} }), log: (l) => void logs.push(l),
      metrics: { addBytesRead() {}, setPendingRecords() {}, setMillisBehindLatest() {} },
    });
    reader.addSplits([{ id: s, stream: s, lastSeq: 0, endSeq: 60 }]);
    const got: number[] = [];
    const out: ReaderOutput<Ev> = { collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); }, forSplit: () => out, splitFinished: () => {} };
    const drive = async (until: () => boolean) => {
      for (let k = 0; k < 1000 && !until(); k++) {
        const st = reader.poll(out, 5);
        if (st === 'end') break;
        if (st === 'wait') await new Promise<void>((res) => { wake = res; setTimeout(res, 200); });
      }
    };
    await drive(() => got.length >= 5); // the buffer holds a pull's worth; the task then takes nothing
    await new Promise((res) => setTimeout(res, 4000)); // the server drops the idle consumer (checked every few seconds)
    await drive(() => false);
    await reader.close?.();
    expect(got).toEqual(Array.from({ length: 60 }, (_, k) => k));
    expect(logs.some((l) => /no pull for \d+ s \(the server drops a consumer idle for 1 s\); recreating the consumer at sequence \d+/.test(l)), logs.join('\n')).toBe(true);
    expect(() => new JetStreamSource({ stream: s, consumerInactiveMs: 10 })).toThrow('JetStreamSource: consumerInactiveMs must be at least 1000, got 10');
  }, 60_000);

  it('a pull sent to a consumer the server deleted gets no answer: the server, asked about the consumer, knows it no more, and a new consumer reads on (before: the reader failed after blockMs + timeoutMs)', async () => {
    const s = await stream('delcons');
    await fill(`${s}.a`, 20);
    const r = driveReader(new JetStreamSource<Ev>({ stream: s, blockMs: 200, timeoutMs: 1000 }), [{ id: s, stream: s, lastSeq: 0 }]);
    try {
      await r.until(() => r.got.get(s)!.length >= 20, 20_000);
      expect(r.state.error).toBeUndefined();
      // Not polled, the reader sends no pull: wait for the one out to end (408 at its expiry), then delete the consumer.
      const consumers = async () => { const names: string[] = []; for await (const c of await jsm.consumers.list(s)) names.push(c.name); return names; };
      for (let k = 0; k < 100; k++) {
        const [name] = await consumers();
        if (name !== undefined && (await jsm.consumers.info(s, name)).num_waiting === 0) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      const [old] = await consumers();
      await jsm.consumers.delete(s, old!);
      await fill(`${s}.a`, 20, 20);
      // The next pull goes to the deleted consumer: the server says nothing (2.9.10).
      await r.until(() => r.got.get(s)!.length >= 40, 20_000);
      expect(r.state.error).toBeUndefined();
      expect(r.got.get(s)).toEqual([...Array(40).keys()]);
      expect(r.logs).toEqual([`stream "${s}": a pull ended without a word from the server after 1200 ms, with nothing delivered, and the server knows its consumer no more; recreating the consumer at sequence 21`]);
      expect(await consumers()).not.toContain(old);
    } finally {
      await r.close();
    }
  }, 60_000);

  it('a subject split whose next message takes the server longer than a pull to find reads on through the same consumer (before: the consumer was recreated after every quiet pull, the scan started over, and nothing was ever read)', async () => {
    // The server (2.9) finds a wildcard filter's next message by reading every message of a block
    // that holds more than 32 subjects, matching each subject: 3,000,000 small messages of 100,000
    // subjects took it 3 to 7 s. Here 100,000 messages whose subjects are 3 KB long (1,000
    // subjects) make the scan take about 2 to 4 s with a fill of about 5 s.
    const s = await stream('scan');
    const long = 'a.'.repeat(1500);
    const payload = new Uint8Array(10);
    for (let i = 0; i < 100_000; i++) {
      nc.publish(`${s}.o.${i % 1000}.${long}z`, payload);
      if (i % 10_000 === 0) await nc.flush();
    }
    await fill(`${s}.t.x`, 3);
    const info = await jsm.streams.info(s);
    expect(info.state.messages).toBe(100_003);
    const subject = `${s}.t.>`;
    const src = new JetStreamSource<Ev>({ stream: s, subjects: [subject], stopAt: 'latest', blockMs: 200 });
    const id = `${s}:${subject}`;
    const r = driveReader(src, [{ id, stream: s, subject, lastSeq: 0, endSeq: info.state.last_seq, streamCreated: info.created }]);
    try {
      await r.until(() => false, 40_000);
      expect(r.state.error).toBeUndefined();
      expect(r.got.get(id)).toEqual([0, 1, 2]);
      expect(r.state.ended).toBe(true);
      // The first quiet pull is logged, once; the consumer is never recreated.
      expect(r.logs.filter((l) => l.includes('recreating'))).toEqual([]);
      expect(r.logs).toEqual([`stream "${s}" subject ${subject}: a pull ended without a word from the server after 1200 ms, with nothing delivered, and its consumer is still there (the server is still looking for the next message of the filter: far behind in a long stream of other subjects, or of large messages); reading on through the same consumer (said once per consumer)`]);
    } finally {
      await r.close();
    }
  }, 90_000);

  it('a subject split whose consumer the server takes longer than timeoutMs to create, or to scan for its next message, reads on while the server answers a connection of its own (before: the reader failed at "no answer to a ping", and the creation at TIMEOUT on every start)', async () => {
    // The server (2.9) handles a connection's requests in its read loop, in order; a consumer's
    // info, a pull or a creation waits there while the consumer scans or counts its pending
    // messages, and everything the reader's connection sends next waits too, its pings as well.
    const s = await stream('busy');
    await fill(`${s}.t.x`, 3);
    const subject = `${s}.t.>`;
    const id = `${s}:${subject}`;
    const opts = { stream: s, subjects: [subject], blockMs: 200, timeoutMs: 1000 };
    const logs: string[] = [];
    const got: number[] = [];
    let wake: () => void = () => {};
    const reader = new JetStreamSource<Ev>(opts).createReader(readerCtx(logs, () => wake()));
    reader.addSplits([{ id, stream: s, subject, lastSeq: 0 }]);
    const out: ReaderOutput<Ev> = { collect: (v) => void got.push(v.i), malformed: () => { throw new Error('unexpected'); }, forSplit: () => out, splitFinished: () => {} };
    /** Polled only when woken, as the task does (20 s without a wake is a stall). */
    const readTo = async (n: number, r = reader): Promise<string> => {
      try {
        for (;;) {
          const st = r.poll(out, 100);
          if (got.length >= n || st === 'end') return st === 'end' ? 'end' : 'read';
          if (st === 'wait' && await new Promise<boolean>((res) => { wake = () => res(false); setTimeout(() => res(true), 20_000); })) return `stalled after ${got.length}`;
        }
      } catch (e) {
        return (e as Error).message;
      }
    };
    try {
      expect(await readTo(3)).toBe('read');
      // Backpressure: no pull while 150,000 messages of other subjects (3 KB long, 1,000 of
      // them) come in; the next pull's scan takes the server seconds (about 3 to 6 here).
      const long = 'a.'.repeat(1500);
      const payload = new Uint8Array(10);
      for (let i = 0; i < 150_000; i++) {
        nc.publish(`${s}.o.${i % 1000}.${long}z`, payload);
        if (i % 10_000 === 0) await nc.flush();
      }
      await fill(`${s}.t.x`, 3, 3);
      expect(await readTo(6)).toBe('read');
      expect(got).toEqual([0, 1, 2, 3, 4, 5]);
      expect(logs.some((l) => l.includes('while the server answers another connection'))).toBe(true);
    } finally {
      await reader.close?.();
    }
    // A restart there: creating the consumer at the start counts all 150,006 messages (seconds).
    got.length = 0;
    logs.length = 0;
    const info = await jsm.streams.info(s);
    const again = new JetStreamSource<Ev>({ ...opts, stopAt: 'latest' }).createReader(readerCtx(logs, () => wake()));
    again.addSplits([{ id, stream: s, subject, lastSeq: 0, endSeq: info.state.last_seq, streamCreated: info.created }]);
    try {
      expect(await readTo(6, again)).toBe('read');
      expect(got).toEqual([0, 1, 2, 3, 4, 5]);
      expect(logs[0]).toBe(`stream "${s}" subject ${subject}: creating the consumer at sequence 1 takes the server longer than 1000 ms (it counts the filter's pending messages, far behind in a long stream of other subjects); waiting for it while the server answers`);
    } finally {
      await again.close?.();
    }
  }, 180_000);

  it('a quiet pull: the consumer is recreated only when the server refuses its info; a pull that delivered, or an info unanswered, ends at a ping\'s answer', () => {
    expect(silentPullStep({ delivered: false })).toBe('info');
    expect(silentPullStep({ delivered: false, info: 'exists' })).toBe('pull');
    expect(silentPullStep({ delivered: false, info: 'refused' })).toBe('recreate');
    expect(silentPullStep({ delivered: false, info: 'none' })).toBe('ping');
    expect(silentPullStep({ delivered: false, info: 'none', ping: 'answered' })).toBe('pull');
    expect(silentPullStep({ delivered: false, info: 'none', ping: 'none' })).toBe('probe');
    expect(silentPullStep({ delivered: false, info: 'none', ping: 'none', probe: 'answered' })).toBe('pull');
    expect(silentPullStep({ delivered: false, info: 'none', ping: 'none', probe: 'none' })).toBe('fail');
    expect(silentPullStep({ delivered: true })).toBe('ping');
    expect(silentPullStep({ delivered: true, ping: 'answered' })).toBe('pull');
    expect(silentPullStep({ delivered: true, ping: 'none' })).toBe('probe');
    expect(silentPullStep({ delivered: true, ping: 'none', probe: 'answered' })).toBe('pull');
    expect(silentPullStep({ delivered: true, ping: 'none', probe: 'none' })).toBe('fail');
    expect(consumerInfoAnswer(Object.assign(new Error('consumer not found'), { code: '404', api_error: { code: 404, err_code: 10014, description: 'consumer not found' } }))).toBe('refused');
    expect(consumerInfoAnswer(Object.assign(new Error('TIMEOUT'), { code: 'TIMEOUT' }))).toBe('none');
    expect(consumerInfoAnswer(new Error('NATS at x: consumer info did not finish within 10000 ms'))).toBe('none');
  });

  it('subject splits restored far into an interleaved stream read on although their pulls end without a 408 (before: the server sends none when the expiry falls during a delivery, and the reader failed, so restores crawled and restarted)', async () => {
    const s = await stream('silent');
    const K = 4;
    await fill((i) => `${s}.k${i % K}`, 12_000);
    const info = await jsm.streams.info(s);
    const subjects = Array.from({ length: K }, (_, k) => `${s}.k${k}`);
    const src = new JetStreamSource<Ev>({ stream: s, subjects, stopAt: 'latest', blockMs: 200, timeoutMs: 1000 });
    // Restored at sequence 4,000 (record 3,999): 2,000 records left per subject, more than one pull delivers before its expiry.
    const r = driveReader(src, subjects.map((subject) => ({ id: `${s}:${subject}`, stream: s, subject, lastSeq: 4000, endSeq: info.state.last_seq, streamCreated: info.created })));
    try {
      await r.until(() => false, 120_000);
      expect(r.state.error).toBeUndefined();
      expect(r.state.ended).toBe(true);
      for (let k = 0; k < K; k++) {
        expect(r.got.get(`${s}:${subjects[k]}`)).toEqual(Array.from({ length: 2000 }, (_, j) => 4000 + k + j * K));
      }
    } finally {
      await r.close();
    }
  }, 150_000);

  it('a message is emitted while its pull still waits on the server (before: only at the pull\'s end, blockMs later)', async () => {
    const s = await stream('early');
    const blockMs = 15_000;
    const r = driveReader(new JetStreamSource<Ev>({ stream: s, blockMs }), [{ id: s, stream: s, lastSeq: 0 }]);
    const waiting = async (): Promise<number> => {
      let n = 0;
      for await (const c of await jsm.consumers.list(s)) n += c.num_waiting;
      return n;
    };
    try {
      // Until the first pull waits on the server (polled only when the reader wakes, or every 100 ms).
      for (let k = 0; k < 100 && await waiting() === 0; k++) await r.until(() => false, 100);
      expect(await waiting()).toBe(1);
      // From now on polled only when the reader wakes (the pull ends at blockMs: its 408 would wake it then).
      const woken = () => new Promise<void>((res) => { r.setWake(res); setTimeout(res, 2 * blockMs); });
      const first = woken();
      await fill(`${s}.a`, 3);
      await first;
      // Woken by a message, not by the pull's end: the pull still waits for the rest of its batch
      // (the reader sends none before it is polled).
      expect(await waiting()).toBe(1);
      for (let k = 0; k < 10; k++) {
        const polled = r.reader.poll(r.out, 100);
        if (r.got.get(s)!.length >= 3) break;
        if (polled === 'wait') await woken();
      }
      expect(r.got.get(s)).toEqual([0, 1, 2]);
    } finally {
      await r.close();
    }
  }, 90_000);

  it('a pull asks for at most a few MiB, at least a message of max_payload: 1,000 messages of 200 KB are read while the task thread is busy (before: a pull of the whole batch passed the 64 MiB the server keeps pending for a connection, and the server cut it)', async () => {
    const s = await stream('large');
    const pad = 'x'.repeat(200_000);
    const N = 1000;
    for (let i = 0; i < N; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => js.publish(`${s}.a`, JSON.stringify({ i: i + k, pad }))));
    // What the reader asks the server for: the pulls' bodies.
    const pulls: { batch: number; max_bytes?: number }[] = [];
    const monitor = nc.subscribe(`$JS.API.CONSUMER.MSG.NEXT.${s}.*`, { callback: (_e, m) => void pulls.push(JSON.parse(new TextDecoder().decode(m.data))) });
    await nc.flush();
    const info = await jsm.streams.info(s);
    const r = driveReader(new JetStreamSource<Ev>({ stream: s, stopAt: 'latest', timeoutMs: 5000 }), [{ id: s, stream: s, lastSeq: 0, endSeq: info.state.last_seq }]);
    try {
      await r.until(() => pulls.length > 0, 20_000);
      // The task thread busy for a while (a slow operator, a long GC): nothing reads the socket meanwhile.
      for (const end = Date.now() + 2000; Date.now() < end;) { /* busy */ }
      await r.until(() => false, 60_000);
      expect(r.state.error).toBeUndefined();
      expect(r.state.ended).toBe(true);
      expect(r.got.get(s)).toEqual([...Array(N).keys()]);
      const maxPayload = nc.info!.max_payload;
      expect(pulls.length).toBeGreaterThan(1);
      for (const p of pulls) {
        expect(p.max_bytes).toBeGreaterThan(maxPayload);
        expect(p.max_bytes).toBeLessThanOrEqual(Math.max(8 * 1024 * 1024, 2 * maxPayload));
      }
    } finally {
      monitor.unsubscribe();
      await r.close();
    }
  }, 120_000);

  it('event time per subject: nothing is late although one subject is 25 s behind the other', async () => {
    const s = await stream('et');
    await fill(`${s}.a`, 3000);
    await fill(`${s}.b`, 3000, 0, 1_700_000_000_000 - 25_000);
    const run = (perSplit: boolean) => runInline((env) => {
      env.setAutoWatermarkInterval(1);
      const src = new JetStreamSource<Ev>({ stream: s, subjects: [`${s}.a`, `${s}.b`], stopAt: 'latest', batchSize: 500 });
      const strategy = WatermarkStrategy.forMonotonousTimestamps<Ev>().withTimestampAssigner((e) => e.ts);
      (perSplit ? env.fromSource(src, { watermarks: strategy }) : env.fromSource(src).assignTimestampsAndWatermarks(strategy))
        .keyBy((e) => e.k)
        .window(TumblingEventTimeWindows.of('1 s'))
        .aggregate({ createAccumulator: () => 0, add: (_e, c: number) => c + 1, getResult: (c: number) => c, merge: (x: number, y: number) => x + y })
        .collect('out');
    });
    const perSplit = await run(true);
    expect(perSplit.progress.lateRecordsDropped ?? 0).toBe(0);
    expect(perSplit.collected<number>('out').reduce((x, y) => x + y, 0)).toBe(6000);
    const perReader = await run(false);
    expect(perReader.progress.lateRecordsDropped).toBeGreaterThan(0);
    expect(perReader.collected<number>('out').reduce((x, y) => x + y, 0) + perReader.progress.lateRecordsDropped!).toBe(6000);
  }, 90_000);

  it('a malformed message goes to the dead-letter output naming stream and sequence, or fails the job naming them', async () => {
    const s = await stream('bad');
    await fill(`${s}.a`, 3);
    const bad = await js.publish(`${s}.a`, '{not json');
    // Whole in the dead letter, however long (it was cut at 1,000 bytes), and bytes that are not
    // UTF-8 exactly, as base64 (they were U+FFFD, the message's bytes gone).
    const long = '{"x": "' + 'y'.repeat(3000);
    const binary = new Uint8Array([0x7b, 0xff, 0xfe, 0x00, 0x22]);
    await js.publish(`${s}.a`, long);
    await js.publish(`${s}.a`, binary);
    await fill(`${s}.a`, 2, 3);
    const r = await runInline((env) => {
      const main = env.fromSource(new JetStreamSource<Ev>({ stream: s, stopAt: 'latest' }), { malformed: 'dead-letter' });
      main.collect('main');
      main.getSideOutput(DEAD_LETTERS).collect('dead');
    });
    expect(r.collected<Ev>('main').map((e) => e.i)).toEqual([0, 1, 2, 3, 4]);
    const dead = r.collected<MalformedRecord>('dead');
    expect(dead.map((d) => d.location)).toEqual([0, 1, 2].map((k) => `NATS 127.0.0.1:4222 stream "${s}" sequence ${bad.seq + k} (subject ${s}.a)`));
    expect(dead[0]!.raw).toBe('{not json');
    expect(dead[0]!.rawBase64).toBeUndefined();
    expect(dead[1]!.raw).toBe(long);
    expect(dead[2]!.error).toMatch(/utf-8/i);
    expect(Buffer.from(dead[2]!.rawBase64!, 'base64')).toEqual(Buffer.from(binary));
    const failed = await runInline((env) => {
      env.fromSource(new JetStreamSource<Ev>({ stream: s, stopAt: 'latest' })).collect('x');
    }, { restartStrategy: { type: 'none' } }).then(() => undefined, (e: Error) => e);
    expect(failed?.message).toContain(`stream "${s}" sequence ${bad.seq}`);
  }, 60_000);

  it('an unreachable server and a missing stream fail with errors naming them, after bounded retries', async () => {
    const e1 = await runInline((env) => {
      env.fromSource(new JetStreamSource({ servers: '127.0.0.1:4299', token: 'tok-s3cret', stream: 'x', stopAt: 'latest', connectBudgetMs: 1500, timeoutMs: 1000 })).collect('x');
    }).then(() => undefined, (e: Error) => e);
    expect(e1?.message).toMatch(/^cannot connect to NATS at 127\.0\.0\.1:4299: .* \(gave up after \d+ tries/);
    expect(e1?.message).not.toContain('tok-s3cret');
    const missing = `weirtest_missing_${process.pid}_${Date.now()}`;
    const e2 = await runInline((env) => {
      env.fromSource(new JetStreamSource({ stream: missing, stopAt: 'latest' })).collect('x');
    }).then(() => undefined, (e: Error) => e);
    expect(e2?.message).toMatch(new RegExp(`^NATS at 127\\.0\\.0\\.1:4222: stream "${missing}": .*not found`));
  }, 90_000);

  it('overlapping subject filters are refused naming both (before: each filter had its own consumer, and a message matching two was read twice, 1,500 records for 1,000 messages into an exactly-once sink)', async () => {
    const s = await stream('overlap');
    await fill((i) => `${s}.${i % 2 ? 'eu' : 'us'}.x`, 1000);
    expect(() => new JetStreamSource<Ev>({ stream: s, subjects: [`${s}.>`, `${s}.eu.*`], stopAt: 'latest' })).toThrow(
      `JetStreamSource: subjects "${s}.>" and "${s}.eu.*" overlap (a message on ${s}.eu.x matches both, and each filter is read by its own consumer, so it would be read twice); give filters that no subject matches twice`,
    );
    // Filters no subject matches twice: every message once.
    const r = await runInline((env) => {
      env.fromSource(new JetStreamSource<Ev>({ stream: s, subjects: [`${s}.eu.*`, `${s}.us.>`], stopAt: 'latest' })).collect('out');
    }, { parallelism: 2 });
    expect(sorted(r.collected<Ev>('out').map((e) => e.i))).toEqual(sorted([...Array(1000).keys()]));
  }, 60_000);

  it('two filters overlap when some subject matches both, token by token with * and >', () => {
    const overlapping: [string, string, string][] = [
      ['a.b', 'a.b', 'a.b'], ['a.>', 'a.b.*', 'a.b.x'], ['a.*', 'a.b', 'a.b'], ['*.b', 'a.*', 'a.b'], ['>', 'a.b.c', 'a.b.c'],
      ['a.*.c', 'a.b.>', 'a.b.c'], ['a.>', 'a.>', 'a.x'], ['*.*', '>', 'x.x'], ['a.*.>', '*.b.c.d', 'a.b.c.d'],
    ];
    for (const [x, y, subject] of overlapping) {
      expect(subjectMatchingBoth(x, y), `${x} ${y}`).toBe(subject);
      expect(subjectMatchingBoth(y, x), `${y} ${x}`).toBe(subject);
    }
    for (const [x, y] of [['a.b', 'a.c'], ['a.>', 'a'], ['a.*', 'a.b.c'], ['a.*', 'a'], ['*.b', 'a.c'], ['a.b.>', 'a.c.>'], ['a.*.c', 'a.b.d'], ['ab', 'a']]) {
      expect(subjectMatchingBoth(x!, y!), `${x} ${y}`).toBeUndefined();
      expect(subjectMatchingBoth(y!, x!), `${y} ${x}`).toBeUndefined();
    }
    expect(() => new JetStreamSource({ stream: 'a', subjects: ['a.b', 'a.b'] })).toThrow('JetStreamSource: subjects "a.b" and "a.b" overlap (a message on a.b matches both');
    expect(() => new JetStreamSource({ stream: 'a', subjects: ['a.b', 'a.c', 'a.*.d', 'a.d.>'] })).toThrow('subjects "a.*.d" and "a.d.>" overlap (a message on a.d.d matches both');
    expect(new JetStreamSource({ stream: 'a', subjects: ['a.b', 'a.c.*', 'a.d.>'] }).subjects).toEqual(['a.b', 'a.c.*', 'a.d.>']);
  });

  it('a lost message is a gap in the consumer sequence, the first of a new consumer included', () => {
    // A new consumer delivers from consumer sequence 1: its first message lost (2 arrives first)
    // must recreate the consumer, not skip the message.
    expect(deliveryGap(0, 1)).toBe(false);
    expect(deliveryGap(0, 2)).toBe(true);
    expect(deliveryGap(5, 6)).toBe(false);
    expect(deliveryGap(5, 7)).toBe(true);
    expect(deliveryGap(5, 5)).toBe(true);
  });

  it('rejects bad options with one clear message', () => {
    expect(() => new JetStreamSource({ stream: 'a.b' })).toThrow(/stream must be a stream name/);
    expect(() => new JetStreamSource({ stream: 'a', subjects: [] })).toThrow(/subjects must be a non-empty array/);
    expect(() => new JetStreamSource({ stream: 'a', servers: 'nats://u:p@h:4222' })).toThrow(/without credentials/);
    expect(() => new JetStreamSource({ stream: 'a', stopAt: 'soon' as never })).toThrow(/stopAt must be "never" or "latest"/);
    expect(() => new JetStreamSource({ stream: 'a', blockMs: -1 })).toThrow(/blockMs must be a positive integer/);
  });
});
