/**
 * What two threads can gain on this machine for a Nexmark query, whatever engine runs it: the
 * plain implementation (oracle.ts) in `threads` worker threads at once, started together behind
 * a gate. From the generator, thread k takes events k, k + threads, k + 2·threads, ... (the
 * lanes weir's generator source gives its subtasks at p = threads); from a JSON-lines file,
 * thread k reads and parses the k-th of `threads` equal byte ranges, each line read by the
 * range it starts in (as weir's block-splitting file source reads it). The child reports it
 * as variant `plain-2` beside `plain` (one thread, every event): their ratio is the ceiling for
 * "weir 2 workers ÷ weir 1 worker" with no exchange, no start-up and no engine at all.
 *
 * Checked: the threads saw every event once (from the generator, each exactly its lane's). A stateless query's outputs (q0, q1, q2,
 * q14) are the union of the threads' outputs, so their digests add up to the query's and the
 * suite compares them; a stateful query split by event index is not that query (a window or
 * join sees half its input), so only its event counts are checked: the ceiling measures the
 * same per-event work split in two, not a parallel plan of the query.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Rng } from 'weir';
import { arriveAndWait, runTogether, type Gated } from '../thread-gate.ts';
import type { Result } from '../workloads.ts';
import { OutputDigest, type QueryId } from './check.ts';
import { nexmarkEvent, SEED } from './generator.ts';
import type { Event } from './model.ts';
import { plainQuery } from './oracle.ts';

/** Queries whose output is a function of each event alone: split outputs add up to the query's. */
export const STATELESS_QUERIES: readonly QueryId[] = ['q0', 'q1', 'q2', 'q14'];

interface ThreadTask {
  readonly query: QueryId;
  readonly n: number;
  readonly lane: number;
  readonly lanes: number;
  /** A JSON-lines file of the events to read a byte range of; undefined: the generator. */
  readonly file: string | undefined;
}

interface ThreadReport {
  readonly seen: number;
  readonly result: Result;
}

/** Bytes read from the file at a time. */
const READ_BYTES = 1 << 20;

/** The offset just past the first newline at or after `at`, or `size` when there is none. */
function pastNewline(fd: number, size: number, at: number): number {
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (let pos = at; pos < size;) {
    const got = readSync(fd, buf, 0, Math.min(buf.length, size - pos), pos);
    if (got === 0) break;
    const nl = buf.subarray(0, got).indexOf(10);
    if (nl >= 0) return pos + nl + 1;
    pos += got;
  }
  return size;
}

/**
 * Calls fn with every line that starts in bytes [from, to) of the file, in order: the lines
 * from the first that starts at or after `from` to the one holding byte to - 1, read to its end.
 * Adjacent ranges so take every line exactly once. Read and decoded a MiB at a time as the
 * one-thread reader does (child.ts), a StringDecoder keeping characters cut by a block whole.
 */
export function forEachLineInRange(path: string, from: number, to: number, fn: (line: string) => void): void {
  if (to <= from) return; // an empty range starts no line
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const begin = from <= 0 ? 0 : pastNewline(fd, size, from - 1);
    const end = to >= size ? size : pastNewline(fd, size, to - 1);
    const buf = Buffer.allocUnsafe(READ_BYTES);
    const decoder = new StringDecoder('utf8');
    let rest = '';
    for (let pos = begin; pos < end;) {
      const got = readSync(fd, buf, 0, Math.min(READ_BYTES, end - pos), pos);
      if (got === 0) break;
      pos += got;
      const text = rest + decoder.write(buf.subarray(0, got));
      let at = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', at)) {
        if (nl > at) fn(text.slice(at, nl));
        at = nl + 1;
      }
      rest = text.slice(at);
    }
    rest += decoder.end();
    if (rest !== '') fn(rest);
  } finally {
    closeSync(fd);
  }
}

/** The plain query over one lane of the generator's events, or one byte range of the file. */
function runLane(t: Omit<ThreadTask, 'gate'>): ThreadReport {
  const digest = new OutputDigest(t.query);
  const q = plainQuery(t.query, (o) => digest.add(o));
  let seen = 0;
  if (t.file === undefined) {
    const rng = new Rng(SEED, 0);
    for (let i = t.lane; i < t.n; i += t.lanes) {
      q.add(nexmarkEvent(i, rng.reseed(SEED, i)));
      seen++;
    }
  } else {
    const fd = openSync(t.file, 'r');
    const size = fstatSync(fd).size;
    closeSync(fd);
    const from = Math.floor((size * t.lane) / t.lanes);
    const to = Math.floor((size * (t.lane + 1)) / t.lanes);
    forEachLineInRange(t.file, from, to, (line) => {
      q.add(JSON.parse(line) as Event);
      seen++;
    });
  }
  q.finish();
  return { seen, result: digest.result() };
}

/** In a worker: say ready, wait for the go, run the lane, report. */
function threadMain(t: ThreadTask & Gated): void {
  arriveAndWait(t, 'nexmark plain threads');
  parentPort!.postMessage(runLane(t));
}

/** Sums of the threads' digests (a stateless query's digest of the whole stream). */
function addResults(results: readonly Result[]): Result {
  const sum: Record<string, number> = {};
  for (const r of results) for (const [k, v] of Object.entries(r)) sum[k] = (sum[k] ?? 0) + v;
  return sum;
}

/**
 * Runs `query` over `n` events (from the generator, or the JSON-lines `file` holding them) in
 * `threads` worker threads at once; the time is from the go signal (every thread started and
 * loaded) until the last thread reported. Throws when the threads saw other than every event once.
 */
export async function runPlainThreads(query: QueryId, n: number, threads: number, file?: string): Promise<{ ms: number; seen: number; result: Result }> {
  if (!(Number.isInteger(threads) && threads >= 1 && threads <= 64)) throw new RangeError(`nexmark plain threads: threads must be an integer in [1, 64], got ${threads}`);
  const data = Array.from({ length: threads }, (_, lane): ThreadTask => ({ query, n, lane, lanes: threads, file }));
  const { ms, reports: done } = await runTogether<ThreadTask, ThreadReport>(new URL(import.meta.url), data, 'nexmark plain threads');
  if (file === undefined) {
    done.forEach((r, lane) => {
      const want = Math.ceil((n - lane) / threads);
      if (r.seen !== want) throw new Error(`nexmark plain threads: thread ${lane} saw ${r.seen} events, expected ${want}`);
    });
  }
  const seen = done.reduce((s, r) => s + r.seen, 0);
  if (seen !== n) throw new Error(`nexmark plain threads: the threads saw ${seen} events, expected ${n}`);
  return { ms, seen, result: addResults(done.map((r) => r.result)) };
}

if (!isMainThread && (workerData as Partial<Gated> | undefined)?.gate !== undefined) threadMain(workerData as ThreadTask & Gated);
