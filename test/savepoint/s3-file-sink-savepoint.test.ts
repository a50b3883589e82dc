/**
 * The exactly-once file sink on S3 (s3rver) and an intermediate savepoint (the job goes on):
 * the savepoint commits nothing, its open parts and closed parts wait in multipart uploads (and
 * its tails) for the next checkpoint's commit or a job started from it. A restore from an
 * earlier checkpoint completes that checkpoint's open parts from its own parts and tail, under
 * the same keys and from the same uploads the savepoint names, and aborts the uploads it does
 * not name: the savepoint's later state of those files is gone for good (an object has one
 * content; an upload, once completed, keeps only the parts its completion listed).
 * A restore from the savepoint then is refused, before it commits anything, naming the file and
 * the way out (the earlier checkpoint again, which replays the records).
 * Before: the restore from the savepoint took those files for committed ('already') and
 * finished: 4,854 of 20,000 ids missing, no log line (checkpoint 1, savepoint 2, cancel; the
 * checkpoint restored and cancelled before its first checkpoint; the savepoint restored).
 *
 * When the savepoint names no file the earlier snapshot held open (every file it names was
 * opened after that snapshot), nothing is refused: the restore of the earlier snapshot keeps
 * the uploads the savepoint's marker names (one log line), and the savepoint restores whole.
 * Before: that restore aborted them, and the restore from the savepoint logged each file as lost
 * and finished without its records.
 *
 * Fixture: test/fixtures/jobs/ids-to-files-with.ts (ids from a paced generator into the sink).
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { resolveS3Config } from '../../src/checkpoint/s3/settings.ts';
import { runJob } from '../../src/index.ts';
import { readParquet } from '../helpers/duckdb.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';
import { api, checkpointNow, fixture, savepoint, sleep, start, stopWithSavepoint, tempDir, waitRunning, type Handle } from './helpers.ts';

const JOB = fixture('ids-to-files-with.ts');
const N = 20_000;
/** 2 KB records: a subtask fills a 5 MiB part before the savepoint (uploads with parts, not only tails). */
const PAD = '2000';
const tmp = tempDir('sp-s3-savepoint');
let server: S3TestServer;
let store: S3ObjectStore;
const ALL = Array.from({ length: N }, (_, i) => i);

beforeAll(async () => {
  server = await startS3Server();
  store = new S3ObjectStore(resolveS3Config(server.settings));
});
afterAll(async () => {
  await store?.close();
  await server?.close();
  tmp.cleanup();
});

/** The ids in the visible part files under `prefix`, sorted (duplicates kept). */
async function visibleIds(prefix: string, format: string): Promise<number[]> {
  const ids: number[] = [];
  const keys = (await store.list(server.bucket, `${prefix}/part-`)).objects.map((o) => o.key);
  if (format === 'parquet') {
    const dir = mkdtempSync(join(tmpdir(), 'sp-s3-pq-'));
    try {
      const files = await Promise.all(keys.map(async (k, i) => {
        const f = join(dir, `${i}.parquet`);
        writeFileSync(f, (await store.getObject(server.bucket, k))!);
        return f;
      }));
      if (files.length > 0) for (const r of await readParquet(files)) ids.push(Number(r.id));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    for (const k of keys) {
      const text = Buffer.from((await store.getObject(server.bucket, k))!).toString('utf8');
      for (const l of text.split('\n')) if (l !== '') ids.push((JSON.parse(l) as { id: number }).id);
    }
  }
  return ids.sort((a, b) => a - b);
}

const cancel = async (h: Handle) => {
  await api(`${h.base}?mode=cancel`, 'PATCH');
  expect((await h.result).status).toBe('CANCELED');
};

interface Variant {
  readonly prefix: string;
  readonly format: 'jsonl' | 'parquet';
  readonly compactBelow: number;
  readonly rolloverMs: number;
}

/**
 * Checkpoint 1, savepoints 2 and 3 (the job goes on), cancel. The run writes 2,000 records of
 * 4 KB a second (as many bytes as 4,000 of 2 KB: a part filled before savepoint 2), so that its
 * N ids last 10 s: at 4,000 a second they lasted 5 s, and on a loaded machine (the savepoints'
 * uploads slow) the input ended before the test was done with the run: its final checkpoint
 * then discarded checkpoint 1 ("chk-1 does not exist" at the next start) or a savepoint was
 * refused ("job ... is finished, not running").
 */
async function firstRun(v: Variant) {
  const chk = tmp.fresh('chk');
  const args = (rate: string, pad = PAD) => [`s3://${server.bucket}/${v.prefix}`, String(N), rate, pad, v.format, String(v.compactBelow), String(v.rolloverMs)];
  const manual = { interval: 3_600_000, dir: chk };
  const a = await start(JOB, { workers: 1, parallelism: 2, args: args('2000', String(2 * Number(PAD))), s3: server.settings, checkpoint: manual });
  await waitRunning(a);
  await sleep(800);
  const c1 = await checkpointNow(a);
  await sleep(800);
  const sp2 = await savepoint(a, tmp.fresh('sp'));
  await sleep(400);
  const sp3 = await savepoint(a, tmp.fresh('sp'));
  await cancel(a);
  return { chk, args, manual, sp2, sp3, c1: join(chk, readdirSync(chk)[0]!, `chk-${c1}`) };
}

async function restored(v: Variant, args: string[], from: string, parallelism: number) {
  const r = await runJob(JOB, { workers: 1, parallelism, args, from, s3: server.settings, checkpoint: { interval: 300, dir: tmp.fresh('chk') }, stdout: () => {}, log: () => {} });
  const got = await visibleIds(v.prefix, v.format);
  return { r, got, twice: got.length - new Set(got).size, missing: N - new Set(got).size };
}

/** The checkpoint restored and cancelled before a checkpoint of its own; both savepoints refused; the checkpoint again: every id once. */
async function refusedAfterEarlierRestore(v: Variant) {
  const { args, manual, sp2, sp3, c1 } = await firstRun(v);
  const b = await start(JOB, { workers: 1, parallelism: 2, args: args('4000'), s3: server.settings, from: c1, checkpoint: manual });
  await waitRunning(b);
  // Its recovery commits checkpoint 1's files beside the running job: cancelled once some are
  // visible (up to 30 s), not at a fixed 300 ms that a loaded machine's recovery can outlast.
  for (let i = 0; i < 300 && (await visibleIds(v.prefix, v.format)).length === 0; i++) await sleep(100);
  await cancel(b);
  const afterB = await visibleIds(v.prefix, v.format);
  expect(afterB.length, 'the premise: the checkpoint committed some ids').toBeGreaterThan(0);
  if (v.compactBelow > 0) {
    const compacted = (await store.list(server.bucket, `${v.prefix}/.weir-compacted-`)).objects.length;
    console.log(`compactions recorded: ${compacted}`);
  }

  for (const sp of [sp3, sp2]) {
    const c = await restored(v, args('0'), sp, 3);
    // Before: FINISHED, thousands of ids missing, no log line.
    expect(c.r.status, `ids missing: ${c.missing}, twice: ${c.twice}`).toBe('FAILED');
    expect(c.r.error?.message).toMatch(/committed with \d+ bytes.*, fewer than the \d+ this snapshot holds.*restore that earlier checkpoint/);
    expect(c.got, 'the refused restore committed nothing').toEqual(afterB);
  }
  const d = await restored(v, args('0'), c1, 2);
  expect(d.r.status, d.r.error?.message).toBe('FINISHED');
  expect(d.got, 'the checkpoint again: every id once').toEqual(ALL);
}

describe('the S3 file sink after an intermediate savepoint', () => {
  it('JSON lines, parts open across both: a restore from either savepoint after one from the checkpoint before them is refused; the checkpoint again writes every id once', async () => {
    await refusedAfterEarlierRestore({ prefix: 'open-out', format: 'jsonl', compactBelow: 0, rolloverMs: 60_000 });
  }, 120_000);

  it('Parquet, parts rolled every 300 ms, compaction on: the same', async () => {
    await refusedAfterEarlierRestore({ prefix: 'pq-out', format: 'parquet', compactBelow: 64 * 2 ** 20, rolloverMs: 300 });
  }, 120_000);

  it('without the restore from the checkpoint: the first savepoint restores at another parallelism, every id once (nothing refused)', async () => {
    const v: Variant = { prefix: 'direct-out', format: 'jsonl', compactBelow: 0, rolloverMs: 60_000 };
    const { args, sp2 } = await firstRun(v);
    const c = await restored(v, args('0'), sp2, 3);
    expect(c.r.status, c.r.error?.message).toBe('FINISHED');
    expect(c.got).toEqual(ALL);
  }, 120_000);

  it('a run restored from the checkpoint that commits a checkpoint of its own: the restore from the savepoint is refused (committed output)', async () => {
    const v: Variant = { prefix: 'committed-out', format: 'jsonl', compactBelow: 0, rolloverMs: 60_000 };
    const { args, manual, sp2, c1 } = await firstRun(v);
    const b = await start(JOB, { workers: 1, parallelism: 2, args: args('4000'), s3: server.settings, from: c1, checkpoint: manual });
    await waitRunning(b);
    await sleep(300);
    await checkpointNow(b);
    await cancel(b);
    const afterB = await visibleIds(v.prefix, v.format);
    const c = await runJob(JOB, { workers: 1, parallelism: 2, args: args('0'), from: sp2, s3: server.settings, stdout: () => {}, log: () => {} }).then((r) => r.error?.message ?? `ran: ${r.status}`, (e: Error) => e.message);
    // Not the committed-output check: a commit holding only open parts writes no commit record,
    // so the record still says checkpoint 1; the file check refuses it.
    expect(c).toMatch(/committed with \d+ bytes.*, fewer than the \d+ this snapshot holds/);
    expect(await visibleIds(v.prefix, v.format)).toEqual(afterB);
  }, 120_000);

  it('every file of the savepoint opened after the restored snapshot: the restore of that snapshot keeps their uploads, the savepoint then restores every id once', async () => {
    // The earlier snapshot holds no open part: a stop-with-savepoint rolls and commits them all
    // (a checkpoint taken under load always holds the part being written, which the savepoint
    // then names too, and that case is refused, above). Parts roll every 300 ms, so the
    // intermediate savepoint's files were all opened after it, closed ones with an upload each.
    const v: Variant = { prefix: 'kept-out', format: 'jsonl', compactBelow: 0, rolloverMs: 300 };
    const args = (rate: string) => [`s3://${server.bucket}/${v.prefix}`, String(N), rate, PAD, v.format, String(v.compactBelow), String(v.rolloverMs)];
    const manual = { interval: 3_600_000, dir: tmp.fresh('chk') };
    const a0 = await start(JOB, { workers: 1, parallelism: 2, args: args('4000'), s3: server.settings, checkpoint: manual });
    await waitRunning(a0);
    await sleep(500);
    const s0 = await stopWithSavepoint(a0, tmp.fresh('sp'));
    expect((await a0.result).status).toBe('FINISHED');

    const a = await start(JOB, { workers: 1, parallelism: 2, args: args('4000'), s3: server.settings, from: s0, checkpoint: manual });
    await waitRunning(a);
    await sleep(900);
    const sp = await savepoint(a, tmp.fresh('sp'));
    await sleep(400);
    await cancel(a);
    const markers = (await store.list(server.bucket, `${v.prefix}/.weir-savepoint-`)).objects.length;
    const uploads = (await store.listMultipartUploads(server.bucket, `${v.prefix}/part-`)).length;
    console.log(`savepoint markers: ${markers}, uploads left by the cancelled run: ${uploads}`);

    // The earlier snapshot restored (its own restart, or --from), cancelled before a checkpoint of its own.
    // The restore's recovery runs beside the running job: cancelled once it has said what it
    // kept (a cancel 300 ms after RUNNING came before it in the CI run of 5 December).
    const b = await start(JOB, { workers: 1, parallelism: 2, args: args('4000'), s3: server.settings, from: s0, checkpoint: manual });
    await waitRunning(b);
    const isKept = (l: string) => /kept \d+ multipart upload\(s\) that savepoint\(s\)/.test(l);
    for (let i = 0; i < 300 && !b.logs.some(isKept); i++) await sleep(100);
    await cancel(b);
    const keptLines = b.logs.filter(isKept);
    console.log(keptLines.join('\n') || 'no kept line within 30 s');

    const logs: string[] = [];
    const r = await runJob(JOB, { workers: 1, parallelism: 3, args: args('0'), from: sp, s3: server.settings, checkpoint: { interval: 300, dir: tmp.fresh('chk') }, stdout: () => {}, log: (l) => logs.push(l) });
    const got = await visibleIds(v.prefix, v.format);
    const lost = logs.filter((l) => l.includes('its records are lost'));
    const missing = N - new Set(got).size;
    // Before: FINISHED, thousands of ids missing, one 'lost' line per file whose upload was aborted.
    expect(lost, `ids missing: ${missing}`).toEqual([]);
    expect(r.status, r.error?.message).toBe('FINISHED');
    expect(got, `ids missing: ${missing}, twice: ${got.length - new Set(got).size}`).toEqual(ALL);
    expect(keptLines.length, 'the restore of the earlier snapshot said what it kept').toBeGreaterThan(0);
    // Nothing left open once the savepoint's files are committed.
    expect((await store.listMultipartUploads(server.bucket, `${v.prefix}/part-`)).length).toBe(0);
  }, 120_000);
});
