/**
 * Chaos on S3: `weir run` with checkpoints on S3 and the exactly-once file sink writing to an
 * S3 prefix (s3rver in this process), killed with SIGKILL at seeded random moments and resumed
 * with --from latest-or-empty. The committed objects must hold exactly the failure-free run's
 * lines (nothing lost, nothing twice), and no multipart upload may be left once the job has
 * finished: each start completed the restored checkpoint's open parts and aborted the uploads
 * the killed run left. Two jobs: examples/exactly-once.ts as it is (small files: tails only),
 * and the same pipeline with lines padded to ~3 KiB, so each subtask's file passes S3's 5 MiB
 * part size and parts are uploaded across checkpoints before the kills; and the example writing
 * Parquet (test/fixtures/jobs/parquet-totals.ts), whose committed objects DuckDB reads back (an
 * open Parquet part is completed on restore from its tail and the footer the checkpoint holds);
 * and the example with compaction on S3 (compactBelow 8 MiB from 2 files), so kills can land
 * inside compactions (not checked that one did): the merged output still equals the oracle and
 * no intent is left.
 * Each run is killed after a checkpoint whose sink state holds an open part with bytes, so
 * every resume completes a file from a checkpoint. Seeded; prints the seed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../src/checkpoint/s3/object-store.ts';
import { resolveS3Config } from '../../src/checkpoint/s3/settings.ts';
import { parseMetadata, type CheckpointMetadata } from '../../src/checkpoint/metadata.ts';
import { decodeValue } from '../../src/core/codec.ts';
import { Rng } from '../../src/core/random.ts';
import { readParquet } from '../helpers/duckdb.ts';
import { startS3Server, type S3TestServer } from '../helpers/s3rver.ts';
import { chaosSeed, committedLines, ROOT, runWeir, startWeir } from './harness.ts';

const EVENTS = 150_000;
// Read slowly enough that a run is killed 4 times before the job ends: a kill waits for a
// checkpoint holding an open part with bytes, and at 40,000 records/s the job often finished
// after one or two kills.
const RATE = '15000';
let work: string;
let input: string;
let expected: string[];
let server: S3TestServer;
let store: S3ObjectStore;

beforeAll(async () => {
  server = await startS3Server();
  store = new S3ObjectStore(resolveS3Config(server.settings));
  work = mkdtempSync(join(tmpdir(), 'weir-s3-chaos-'));
  input = join(work, 'events.jsonl');
  const gen = await new Promise<number | null>((res) =>
    spawn(process.execPath, ['--import', 'tsx', 'examples/generate-events.ts', String(EVENTS), input, '300', '13'], { cwd: ROOT, stdio: 'ignore' }).on('exit', res));
  expect(gen).toBe(0);
  const r = await runWeir(['run', 'examples/exactly-once.ts', '-p', '2', '-w', '2', '--', input, join(work, 'expected')]);
  expect(r.code, r.stderr).toBe(0);
  expected = committedLines(join(work, 'expected'));
  expect(expected.length).toBeGreaterThan(1000);
}, 120_000);

afterAll(async () => {
  if (!process.env.KEEP_CHAOS) rmSync(work, { recursive: true, force: true });
  await store?.close();
  await server?.close();
});

/** Committed lines under the prefix (visible part files), trailing padding trimmed, sorted. */
async function committedS3Lines(prefix: string): Promise<string[]> {
  const lines: string[] = [];
  for (const o of (await store.list(server.bucket, `${prefix}/part-`)).objects) {
    const text = Buffer.from((await store.getObject(server.bucket, o.key))!).toString('utf8');
    for (const l of text.split('\n')) if (l !== '') lines.push(l.trimEnd());
  }
  return lines.sort();
}

/** Committed Parquet objects under the prefix, read by DuckDB, as the JSON lines the example writes, sorted. */
async function committedS3ParquetLines(prefix: string): Promise<string[]> {
  const files: string[] = [];
  for (const o of (await store.list(server.bucket, `${prefix}/part-`)).objects) {
    const f = join(work, `dl-${files.length}.parquet`);
    writeFileSync(f, (await store.getObject(server.bucket, o.key))!);
    files.push(f);
  }
  const rows = await readParquet(files);
  return rows.map((r) => JSON.stringify({ key: r.key, windowStart: Number(r.windowStart), sum: r.sum, count: Number(r.count), total: r.total })).sort();
}

/** Checkpoint metadata objects s3rver holds under `prefix` (its store is a directory tree), by path. */
function checkpointsOnS3(prefix: string): Set<string> {
  const dir = join(server.directory, server.bucket, prefix);
  if (!existsSync(dir)) return new Set();
  // A checkpoint directory deleted while it is read (the job subsumes checkpoints): read again.
  for (let attempt = 1; ; attempt++) {
    try {
      return new Set(readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('_metadata._S3rver_object')).map((f) => join(dir, f)));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 20) throw e;
    }
  }
}

/**
 * Whether a checkpoint's metadata (s3rver's object file) names an open part file with bytes in
 * it: a resume from it must complete that file from the checkpoint (what the test is after).
 * False while s3rver is still writing the object (it does not parse yet).
 */
function holdsOpenPart(metadataFile: string): boolean {
  let m: CheckpointMetadata;
  try {
    m = parseMetadata(readFileSync(metadataFile, 'utf8'), metadataFile);
  } catch {
    return false;
  }
  for (const op of m.operators) {
    for (const st of op.subtasks) {
      if (st.inline === undefined) continue;
      const inline = decodeValue<{ committables?: { s3?: { kind: string; parts: number; tail?: string } }[] }>(Buffer.from(st.inline, 'base64'));
      if ((inline.committables ?? []).some((c) => c.s3?.kind === 'open' && (c.s3.parts > 0 || (c.s3.tail ?? '') !== ''))) return true;
    }
  }
  return false;
}

/**
 * Runs the job `kills` times, each killed a seeded 0 to 1,500 ms after a checkpoint it took
 * reached S3 holding an open part with bytes (so every resume restores one and completes its
 * file: on a loaded machine the first checkpoints of a run can have none yet), then once to the
 * end. Returns how many runs were killed that way (a run may finish first).
 */
async function killAfterCheckpoints(args: () => string[], chkPrefix: string, kills: number, rng: Rng, log: (s: string) => void): Promise<number> {
  let killed = 0;
  for (let k = 0; k < kills; k++) {
    const seen = checkpointsOnS3(chkPrefix);
    const extraMs = rng.int(1500);
    const { child, done } = startWeir(args());
    let fired = false;
    const poll = setInterval(() => {
      if (fired) return;
      for (const c of checkpointsOnS3(chkPrefix)) {
        if (seen.has(c) || !holdsOpenPart(c)) continue;
        fired = true;
        setTimeout(() => child.kill('SIGKILL'), extraMs);
        return;
      }
    }, 50);
    const fallback = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const r = await done;
    clearInterval(poll);
    clearTimeout(fallback);
    // A kill that lands after the job finished (up to 1.5 s after a checkpoint, the input may
    // end) finds its checkpoints discarded, as a finished job discards them; a run killed
    // mid-way always leaves its newest. Then there is nothing to resume: the job is done.
    if (r.signal === 'SIGKILL' && fired && checkpointsOnS3(chkPrefix).size === 0) {
      log(`run ${k}: the job had finished (its checkpoints discarded) when the kill landed`);
      return killed;
    }
    if (r.signal === 'SIGKILL' && fired) killed++;
    else if (r.code !== 0) throw new Error(`run ${k} failed (code ${r.code}, signal ${r.signal}):\n${r.stderr}`);
    log(`run ${k}: ${r.signal === 'SIGKILL' ? (fired ? `killed ${extraMs} ms after a new checkpoint with an open part reached S3` : 'killed with no such checkpoint in 60 s') : 'finished before the kill'}`);
    if (r.code === 0) return killed;
  }
  const last = await runWeir(args(), 120_000);
  if (last.code !== 0) throw new Error(`final run failed (code ${last.code}, signal ${last.signal}):\n${last.stderr}`);
  return killed;
}

describe('chaos on S3: SIGKILL and resume, checkpoints and the exactly-once file sink on S3', () => {
  for (const [name, job, extra] of [
    ['example', 'examples/exactly-once.ts', [RATE]],
    ['padded', 'test/fixtures/jobs/compacting-totals.ts', [RATE, '3000', '0']],
    ['parquet', 'test/fixtures/jobs/parquet-totals.ts', [RATE]],
    // Compaction on S3 (compactBelow 8 MiB, from 2 files): kills can land inside compactions.
    ['compacting', 'test/fixtures/jobs/compacting-totals.ts', [RATE, '0', '8']],
  ] as const) {
    it(`committed objects equal the failure-free run after 4 kills, no upload left (${name}, p2, 2 workers)`, async () => {
      const seed = chaosSeed(`s3-${name}`);
      const rng = new Rng(seed);
      const out = `sink-${name}`;
      const args = () => ['run', job, '-p', '2', '-w', '2', '--checkpoint-dir', `s3://${server.bucket}/chk-${name}`, '--checkpoint-interval', '200ms',
        '--s3-endpoint', server.endpoint, '--s3-path-style', '--from', 'latest-or-empty', '--', input, `s3://${server.bucket}/${out}`, ...extra];
      const killed = await killAfterCheckpoints(args, `chk-${name}`, 4, rng, (s) => console.log(`[chaos s3-${name}] ${s}`));
      console.log(`[chaos s3-${name}] ${killed} runs killed mid-way`);
      const got = name === 'parquet' ? await committedS3ParquetLines(out) : await committedS3Lines(out);
      expect(got.length).toBe(expected.length);
      expect(got).toEqual(expected);
      expect(await store.listMultipartUploads(server.bucket, `${out}/`)).toEqual([]);
      const files = (await store.list(server.bucket, `${out}/part-`)).objects;
      console.log(`[chaos s3-${name}] ${files.length} files committed, ${files.reduce((a, o) => a + o.size, 0)} bytes: ${files.map((o) => `${o.key.slice(out.length + 1)} (${o.size} B)`).join(', ')}`);
      if (name === 'compacting') {
        // Small files were merged, and no compaction was left half done (its intent resolved by the next one).
        const records = (await store.list(server.bucket, `${out}/.weir-compact`)).objects.map((o) => o.key.slice(out.length + 1));
        console.log(`[chaos s3-${name}] compaction records: ${records.join(', ')}`);
        expect(records.some((k) => k.startsWith('.weir-compacted-'))).toBe(true);
        expect(records.filter((k) => k.startsWith('.weir-compact-'))).toEqual([]);
        expect(files.some((o) => /-c\d+\.jsonl$/.test(o.key))).toBe(true);
      } else {
        // Every resume completed the open parts of the checkpoint it restored: more files than subtasks.
        expect(files.length).toBeGreaterThan(2);
      }
      if (name === 'padded') expect(server.requests.some((r) => r.method === 'PUT' && r.path.startsWith(`/${server.bucket}/${out}/`) && r.query.includes('partNumber') && r.bytes >= 5 * 1024 * 1024)).toBe(true);
      expect(killed).toBeGreaterThanOrEqual(2);
    }, 300_000);
  }
});
