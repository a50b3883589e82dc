/**
 * One measurement of the checkpoint suite, in a fresh process:
 *   node --import tsx bench/checkpoint-child.ts '<json spec>'
 * Everything is imported before anything is timed. Prints one RESULT_MARK line on stdout
 * (a ChildOutput); weir sinks of the word-count job report on stderr (PARTIAL_MARK lines),
 * which the runner sums. Every kind checks its own result and fails (exit code 1) when it is
 * wrong; the runner checks more (across runs and variants).
 *
 * Kinds:
 * - throughput: the word-count job with checkpoints every second (exactly-once or
 *   at-least-once) or without; reports the wall time and the checkpoints it took.
 * - snapshot: the keyed-state job builds N keys, then takes checkpoints and savepoints one
 *   after the other through the REST API; statistics from checkpoint-history.jsonl; the keys
 *   of the last checkpoint and savepoint are counted; both are kept as fixtures for restores.
 * - restore: the keyed-state job restored from a checkpoint or savepoint (any parallelism);
 *   times runJob() to every keyed subtask's open() returning (state read and decoded), then
 *   checks a sample of restored values, takes a checkpoint and counts its keys.
 * - disk: the sequential write speed of the disk under the benchmark's temporary directory.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { runJob, type JobResult, type RunOptions } from 'weir';
import { openSnapshot, summarize } from '../src/checkpoint/inspect.ts';
import { CHANNEL, epochMs, keyedStateArgs, OPERATOR_UID, STATE_NAME, type JobEvent } from './jobs/keyed-state.ts';
import { importedWeirRuntime, RESULT_MARK } from './workloads.ts';
import { controlApi } from '../src/observe/control-api.ts';

const JOBS = resolve(fileURLToPath(new URL('.', import.meta.url)), 'jobs');
const WORD_COUNT = join(JOBS, 'word-count.ts');
const KEYED_STATE = join(JOBS, 'keyed-state.ts');

export type ThroughputMode = 'off' | 'exactly-once' | 'at-least-once';

export type ChildSpec =
  | { readonly kind: 'throughput'; readonly mode: ThroughputMode; readonly workers: number; readonly n: number; readonly keys: number; readonly intervalMs: number; readonly dir: string }
  | { readonly kind: 'snapshot'; readonly keys: number; readonly workers: number; readonly parallelism: number; readonly checkpoints: number; readonly savepoints: number; readonly dir: string }
  | { readonly kind: 'restore'; readonly from: string | undefined; readonly keys: number; readonly workers: number; readonly parallelism: number; readonly samples: number; readonly dir: string }
  | { readonly kind: 'disk'; readonly bytes: number; readonly dir: string };

/** Per-checkpoint figures from checkpoint-history.jsonl (maxima over subtasks). */
export interface CheckpointFigures {
  readonly id: number;
  readonly type: 'checkpoint' | 'savepoint';
  readonly triggerTimestamp: number;
  readonly endToEndMs: number;
  readonly syncMs: number;
  readonly asyncMs: number;
  readonly alignmentMs: number;
  readonly startDelayMs: number;
  readonly stateSize: number;
  /** Asked for over REST: from the POST to the response saying it completed (savepoints: polled every 5 ms). */
  readonly requestMs?: number;
}

export type ChildOutput =
  | {
      readonly kind: 'throughput';
      /** runJob() wall time (includes the final checkpoint of a job with checkpointing). */
      readonly ms: number;
      readonly cpuMs: number;
      /** Epoch ms just before runJob(); sinks report when they saw the end of input. */
      readonly startedAt: number;
      readonly recordsIn: number;
      readonly checkpoints: readonly CheckpointFigures[];
      readonly failedCheckpoints: number;
      /** Why each failed checkpoint failed ("id: REASON message"). */
      readonly failures: readonly string[];
      readonly processCpuMs: number;
      /** Which weir this process imported: the suite runs this kind from dist/, as `npx weir run` runs weir. */
      readonly runtime: 'dist' | 'sources';
    }
  | {
      readonly kind: 'snapshot';
      /** runJob() to the last source subtask having emitted every key. */
      readonly buildMs: number;
      /**
       * The job's first checkpoint, taken before the others: it fills the heap backend's key
       * column caches (key-column-cache.ts), which every later full snapshot reuses.
       */
      readonly first: CheckpointFigures;
      readonly checkpoints: readonly CheckpointFigures[];
      readonly savepoints: readonly CheckpointFigures[];
      readonly checkpointPath: string | undefined;
      readonly savepointPath: string | undefined;
      readonly keysInCheckpoint: number | undefined;
      readonly keysInSavepoint: number | undefined;
      /** Resident set size of the process (all threads) once every key was emitted, MB. */
      readonly rssMb: number;
      readonly processCpuMs: number;
    }
  | {
      readonly kind: 'restore';
      /** runJob() to the last keyed subtask's open() returning. */
      readonly ms: number;
      /** The same from the last worker thread having loaded the job module (from runJob() with 1 worker). */
      readonly fromWorkersMs: number;
      readonly cpuMs: number;
      readonly samplesOk: number;
      /** The checkpoint taken after the restore (a check: the same keyed bytes, N keys). */
      readonly after: CheckpointFigures;
      readonly keysAfter: number;
      readonly rangesAfter: number;
      /** Bytes of keyed state in the restored snapshot (and in the checkpoint after). */
      readonly restoredStateSize: number;
      readonly processCpuMs: number;
    }
  | { readonly kind: 'disk'; readonly bytes: number; readonly ms: number; readonly bytesPerSec: number; readonly processCpuMs: number };

function cpuSince(start?: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

class ChildFailure extends Error {}
function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new ChildFailure(message);
}

// ---- statistics and snapshots --------------------------------------------------------

interface HistoryLine {
  readonly id: number;
  readonly status: 'COMPLETED' | 'FAILED';
  readonly type: 'checkpoint' | 'savepoint';
  readonly triggerTimestamp: number;
  readonly endToEndDurationMs: number;
  readonly stateSize: number;
  readonly subtasks: Record<string, { syncMs: number; asyncMs: number; alignmentMs: number; startDelayMs: number; stateSize: number }>;
  readonly failureMessage?: string;
}

/** The job's checkpoint-history.jsonl (appended asynchronously: waits briefly for `atLeast` lines). */
async function history(dir: string, jobId: string, atLeast = 0): Promise<HistoryLine[]> {
  const file = join(dir, jobId, 'checkpoint-history.jsonl');
  for (let i = 0; ; i++) {
    let lines: HistoryLine[] = [];
    try {
      lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as HistoryLine);
    } catch {
      // not written yet
    }
    if (lines.length >= atLeast || i >= 200) return lines;
    await sleep(10);
  }
}

function figures(h: HistoryLine, requestMs?: number): CheckpointFigures {
  const subs = Object.values(h.subtasks);
  const max = (f: (s: (typeof subs)[number]) => number) => Math.max(0, ...subs.map(f));
  return {
    id: h.id, type: h.type, triggerTimestamp: h.triggerTimestamp, endToEndMs: h.endToEndDurationMs, syncMs: max((s) => s.syncMs), asyncMs: max((s) => s.asyncMs),
    alignmentMs: max((s) => s.alignmentMs), startDelayMs: max((s) => s.startDelayMs), stateSize: h.stateSize, ...(requestMs !== undefined ? { requestMs } : {}),
  };
}

/**
 * Keys of the keyed-state operator's state in a snapshot, and its number of key-group ranges
 * (state files), as `weir state inspect` counts them (summarize(): every block read, its CRC
 * checked, its entries decoded and counted).
 */
async function countKeys(path: string): Promise<{ keys: number; ranges: number }> {
  const op = (await summarize(path)).operators.find((o) => o.uid === OPERATOR_UID);
  check(op !== undefined, `${path}: no operator with uid ${OPERATOR_UID}`);
  const state = op.states.find((st) => st.name === STATE_NAME);
  return { keys: state?.keys ?? 0, ranges: op.ranges.length };
}

/** Bytes of keyed state of the keyed-state operator in a snapshot (the same at any parallelism: a block per key group). */
/**
 * Bytes of the operator's keyed state in a snapshot: each subtask's state size without its
 * inline operator state, which every subtask has of its own, so that the total grows with the
 * parallelism (21 bytes a subtask in the quick run's job): with it, a restore from 2 subtasks
 * into 1 failed the equality below although every key and sampled value was there.
 */
async function keyedBytes(path: string): Promise<number> {
  const op = (await openSnapshot(path)).operators.find((o) => o.uid === OPERATOR_UID);
  check(op !== undefined, `${path}: no operator with uid ${OPERATOR_UID}`);
  return op.subtasks.reduce((a, s) => a + s.stateSize - (s.inline === undefined ? 0 : Buffer.from(s.inline, 'base64').byteLength), 0);
}

// ---- the REST API of a job started here ----------------------------------------------

interface Started {
  readonly result: Promise<JobResult>;
  readonly base: string;
  readonly jobId: string;
  readonly abort: AbortController;
}

async function startWithRest(job: string, options: RunOptions): Promise<Started> {
  let listening!: (v: [number, string]) => void;
  const ready = new Promise<[number, string]>((r) => (listening = r));
  const abort = new AbortController();
  const result = runJob(job, { ...options, services: [controlApi({ port: 0, onListening: (port, jobId) => listening([port, jobId]) })], signal: abort.signal, stdout: () => {} });
  const [port, jobId] = await Promise.race([
    ready,
    result.then((r): never => {
      throw new ChildFailure(`job ended (${r.status}) before its REST API listened: ${r.error?.message ?? ''}`);
    }),
  ]);
  return { result, base: `http://127.0.0.1:${port}/jobs/${jobId}`, jobId, abort };
}

async function api(url: string, method = 'GET', body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method, ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new ChildFailure(`${method} ${url}: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Takes a checkpoint over REST (answered at once with a request id, as Flink), polling its status every 5 ms. */
async function checkpointNow(base: string): Promise<{ id: number; ms: number }> {
  const t0 = epochMs();
  const r = await api(`${base}/checkpoints`, 'POST', {});
  for (;;) {
    const s = await api(`${base}/checkpoints/${String(r['request-id'])}`);
    if ((s['status'] as { id: string }).id === 'COMPLETED') {
      const op = s['operation'] as { checkpointId?: number; 'failure-cause'?: { message: string } };
      check(op.checkpointId !== undefined, `checkpoint failed: ${op['failure-cause']?.message ?? JSON.stringify(s)}`);
      return { id: op.checkpointId, ms: epochMs() - t0 };
    }
    await sleep(5);
  }
}

/** Takes a savepoint over REST, polling its status every 5 ms. */
async function savepointNow(base: string, dir: string): Promise<{ location: string; ms: number }> {
  const t0 = epochMs();
  const r = await api(`${base}/savepoints`, 'POST', { 'target-directory': dir });
  for (;;) {
    const s = await api(`${base}/savepoints/${String(r['request-id'])}`);
    const status = (s['status'] as { id: string }).id;
    if (status === 'COMPLETED') {
      const op = s['operation'] as { location?: string; 'failure-cause'?: { message: string } };
      check(op.location !== undefined, `savepoint failed: ${op['failure-cause']?.message ?? JSON.stringify(s)}`);
      return { location: op.location, ms: epochMs() - t0 };
    }
    await sleep(5);
  }
}

/** Cancels the job and checks that it ended as cancelled (not failed). */
async function cancel(s: Started): Promise<JobResult> {
  s.abort.abort();
  const r = await s.result;
  check(r.status === 'CANCELED', `job ${r.status} instead of CANCELED: ${r.error?.message ?? ''}`);
  return r;
}

/** Job events on the BroadcastChannel, with waiters. */
class Events {
  private readonly ch = new BroadcastChannel(CHANNEL);
  /** Threads that loaded the job module, when (the child's own import included). */
  readonly loaded = new Map<number, number>();
  readonly emitted = new Map<number, number>();
  readonly opened = new Map<number, { at: number; parallelism: number }>();
  readonly checked = new Map<number, { ok: number; bad: number; badKeys: readonly string[] }>();
  private waiters: (() => void)[] = [];
  constructor() {
    this.ch.onmessage = (ev) => {
      const e = (ev as { data: JobEvent }).data;
      if (e.kind === 'loaded') this.loaded.set(e.thread, e.at);
      else if (e.kind === 'emitted') this.emitted.set(e.subtask, e.at);
      else if (e.kind === 'opened') this.opened.set(e.subtask, { at: e.at, parallelism: e.parallelism });
      else this.checked.set(e.subtask, { ok: e.ok, bad: e.bad, badKeys: e.badKeys });
      for (const w of this.waiters) w();
    };
  }
  /** Resolves once `cond` holds; rejects when the job ends first or after `timeoutMs`. */
  until(cond: () => boolean, what: string, job: Promise<JobResult>, timeoutMs = 600_000): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new ChildFailure(`timed out waiting for ${what}`)), timeoutMs);
      const w = () => {
        if (!cond()) return;
        clearTimeout(timer);
        this.waiters = this.waiters.filter((x) => x !== w);
        resolvePromise();
      };
      this.waiters.push(w);
      void job.then((r) => {
        clearTimeout(timer);
        reject(new ChildFailure(`job ended (${r.status}) while waiting for ${what}: ${r.error?.message ?? ''}`));
      });
    });
  }
  close(): void {
    this.ch.close();
  }
}

// ---- the kinds -----------------------------------------------------------------------

async function throughput(spec: Extract<ChildSpec, { kind: 'throughput' }>): Promise<ChildOutput> {
  // From the sources the job module is transpiled before the timing (runJob finds it in the
  // module cache); from dist/, runJob bundles it inside the timing, as `npx weir run` does (child.ts).
  if (importedWeirRuntime() === 'sources') await import(pathToFileURL(WORD_COUNT).href);
  const options: RunOptions = {
    workers: spec.workers, parallelism: spec.workers, args: [String(spec.n), String(spec.keys)], stdout: () => {},
    ...(spec.mode === 'off' ? {} : { checkpoint: { dir: spec.dir, interval: spec.intervalMs, mode: spec.mode } }),
  };
  const c0 = process.cpuUsage();
  const startedAt = epochMs();
  const r = await runJob(WORD_COUNT, options);
  const ms = epochMs() - startedAt;
  const cpuMs = cpuSince(c0);
  check(r.status === 'FINISHED', `word-count ${r.status}: ${r.error?.message ?? ''}`);
  let checkpoints: CheckpointFigures[] = [];
  let failed = 0;
  let failures: string[] = [];
  if (spec.mode !== 'off') {
    const lines = await history(spec.dir, r.jobId, r.checkpoints.counts.completed + r.checkpoints.counts.failed);
    checkpoints = lines.filter((l) => l.status === 'COMPLETED').map((l) => figures(l));
    const bad = lines.filter((l) => l.status === 'FAILED');
    failed = bad.length;
    failures = bad.map((l) => `${l.id}: ${String((l as { failureReason?: unknown }).failureReason)} ${String((l as { failureMessage?: unknown }).failureMessage ?? '')}`);
    check(checkpoints.length >= 1, 'no checkpoint completed');
  }
  return { kind: 'throughput', ms, cpuMs, startedAt, recordsIn: r.progress.recordsIn, checkpoints, failedCheckpoints: failed, failures, processCpuMs: cpuSince(), runtime: importedWeirRuntime() };
}

async function snapshot(spec: Extract<ChildSpec, { kind: 'snapshot' }>): Promise<ChildOutput> {
  await import(pathToFileURL(KEYED_STATE).href);
  const events = new Events();
  const cpDir = join(spec.dir, 'checkpoints');
  const spDir = join(spec.dir, 'savepoints');
  const t0 = epochMs();
  const job = await startWithRest(KEYED_STATE, {
    workers: spec.workers, parallelism: spec.parallelism, args: [String(spec.keys), 'build'],
    checkpoint: { dir: cpDir, retention: 'retain-on-cancel', numRetained: 1 },
  });
  await events.until(() => events.emitted.size === spec.parallelism, 'the sources to emit every key', job.result);
  const buildMs = Math.max(...events.emitted.values()) - t0;
  const rssMb = process.memoryUsage().rss / 2 ** 20;
  // A first checkpoint, then checkpoints and savepoints alternate (when there are both), one at a time.
  const requested: { type: 'checkpoint' | 'savepoint'; ms: number; id?: number; location?: string }[] = [];
  const firstCheckpoint = await checkpointNow(job.base);
  requested.push({ type: 'checkpoint', ms: firstCheckpoint.ms, id: firstCheckpoint.id });
  for (let i = 0; i < Math.max(spec.checkpoints, spec.savepoints); i++) {
    if (i < spec.checkpoints) {
      const c = await checkpointNow(job.base);
      requested.push({ type: 'checkpoint', ms: c.ms, id: c.id });
    }
    if (i < spec.savepoints) {
      const s = await savepointNow(job.base, spDir);
      requested.push({ type: 'savepoint', ms: s.ms, location: s.location });
    }
  }
  await cancel(job);
  events.close();
  const lines = (await history(cpDir, job.jobId, requested.length)).filter((l) => l.status === 'COMPLETED');
  check(lines.length === requested.length, `history has ${lines.length} completed entries, ${requested.length} were taken`);
  const cps: CheckpointFigures[] = [];
  const sps: CheckpointFigures[] = [];
  let first: CheckpointFigures | undefined;
  lines.sort((a, b) => a.id - b.id).forEach((l, k) => {
    const req = requested[k]!;
    check(req.type === l.type && (req.id === undefined || req.id === l.id), `history entry ${l.id} (${l.type}) does not match request ${k} (${req.type})`);
    if (k === 0) first = figures(l, req.ms);
    else (l.type === 'checkpoint' ? cps : sps).push(figures(l, req.ms));
  });
  const sizes = new Set(lines.map((l) => l.stateSize));
  check(sizes.size === 1, `the snapshots of the same state differ in size: ${[...sizes].join(', ')}`);
  let checkpointPath: string | undefined;
  let keysInCheckpoint: number | undefined;
  if (spec.checkpoints > 0) {
    checkpointPath = join(cpDir, job.jobId, `chk-${cps[cps.length - 1]!.id}`);
    const c = await countKeys(checkpointPath);
    keysInCheckpoint = c.keys;
    check(c.keys === spec.keys && c.ranges === spec.parallelism, `checkpoint ${checkpointPath} holds ${c.keys} keys in ${c.ranges} state files, expected ${spec.keys} in ${spec.parallelism}`);
  }
  let savepointPath: string | undefined;
  let keysInSavepoint: number | undefined;
  if (spec.savepoints > 0) {
    savepointPath = requested.filter((r) => r.type === 'savepoint').pop()!.location!;
    const c = await countKeys(savepointPath);
    keysInSavepoint = c.keys;
    check(c.keys === spec.keys && c.ranges === spec.parallelism, `savepoint ${savepointPath} holds ${c.keys} keys in ${c.ranges} state files, expected ${spec.keys} in ${spec.parallelism}`);
  }
  return { kind: 'snapshot', buildMs, first: first!, checkpoints: cps, savepoints: sps, checkpointPath, savepointPath, keysInCheckpoint, keysInSavepoint, rssMb, processCpuMs: cpuSince() };
}

async function restore(spec: Extract<ChildSpec, { kind: 'restore' }>): Promise<ChildOutput> {
  await import(pathToFileURL(KEYED_STATE).href);
  const restoredStateSize = spec.from === undefined ? 0 : await keyedBytes(spec.from);
  const events = new Events();
  const cpDir = join(spec.dir, 'checkpoints');
  const mode = spec.from === undefined ? 'empty' : 'restore';
  const c0 = process.cpuUsage();
  const t0 = epochMs();
  const job = await startWithRest(KEYED_STATE, {
    workers: spec.workers, parallelism: spec.parallelism, args: [String(spec.keys), mode, String(spec.from === undefined ? 0 : spec.samples)],
    checkpoint: { dir: cpDir, retention: 'retain-on-cancel', numRetained: 1 },
    ...(spec.from !== undefined ? { from: spec.from } : {}),
  });
  await events.until(() => events.opened.size === spec.parallelism, 'every keyed subtask to open', job.result);
  const openedAt = Math.max(...[...events.opened.values()].map((o) => o.at));
  const ms = openedAt - t0;
  const cpuMs = cpuSince(c0);
  // Worker threads load the job module after they start (tsx, the runtime): from the last of
  // them on, what remains is deployment, the restore and open().
  const workersLoaded = [...events.loaded.values()].filter((at) => at >= t0);
  const fromWorkersMs = openedAt - Math.max(t0, ...workersLoaded);
  const expected = spec.from === undefined ? 0 : spec.samples;
  const tally = () => [...events.checked.values()].reduce((a, c) => ({ ok: a.ok + c.ok, bad: a.bad + c.bad }), { ok: 0, bad: 0 });
  await events.until(() => tally().ok + tally().bad >= expected, `${expected} sample checks`, job.result);
  const t = tally();
  const badKeys = [...events.checked.values()].flatMap((c) => c.badKeys);
  check(t.bad === 0 && t.ok === expected, `${t.bad} of ${expected} sampled keys do not hold their value after the restore (e.g. ${badKeys.join(', ')})`);
  for (const o of events.opened.values()) check(o.parallelism === spec.parallelism, `a keyed subtask runs at parallelism ${o.parallelism}, expected ${spec.parallelism}`);
  const overview = await api(job.base);
  check(overview['state'] === 'RUNNING', `job is ${String(overview['state'])} after the restore, expected RUNNING`);
  // The restored state, checkpointed again: all its keys, the same bytes per key group.
  const c = await checkpointNow(job.base);
  await cancel(job);
  events.close();
  const line = (await history(cpDir, job.jobId, 1)).find((l) => l.id === c.id && l.status === 'COMPLETED');
  check(line !== undefined, `checkpoint ${c.id} after the restore is not in the history`);
  const after = figures(line, c.ms);
  const afterPath = join(cpDir, job.jobId, `chk-${c.id}`);
  const counted = await countKeys(afterPath);
  const afterBytes = await keyedBytes(afterPath);
  const expectKeys = spec.from === undefined ? 0 : spec.keys;
  check(counted.keys === expectKeys, `the checkpoint after the restore holds ${counted.keys} keys, expected ${expectKeys}`);
  if (spec.from !== undefined) {
    check(afterBytes === restoredStateSize, `the checkpoint after the restore has ${afterBytes} bytes of keyed state, the restored snapshot ${restoredStateSize}`);
    check(counted.ranges === spec.parallelism, `the checkpoint after the restore has ${counted.ranges} state files, expected ${spec.parallelism}`);
  }
  return { kind: 'restore', ms, fromWorkersMs, cpuMs, samplesOk: t.ok, after, keysAfter: counted.keys, rangesAfter: counted.ranges, restoredStateSize, processCpuMs: cpuSince() };
}

/** Sequential writes of 8 MiB (as `dd bs=8M conv=fsync`), then fsync; the file is removed. */
function disk(spec: Extract<ChildSpec, { kind: 'disk' }>): ChildOutput {
  mkdirSync(spec.dir, { recursive: true });
  const file = join(spec.dir, 'disk-speed.bin');
  const chunk = Buffer.alloc(8 << 20);
  for (let i = 0; i < chunk.length; i += 4) chunk.writeUInt32LE((i * 2654435761) >>> 0, i); // not all zeros
  const t0 = epochMs();
  const fd = openSync(file, 'w');
  try {
    let written = 0;
    while (written < spec.bytes) written += writeSync(fd, chunk, 0, Math.min(chunk.length, spec.bytes - written));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const ms = epochMs() - t0;
  rmSync(file, { force: true });
  return { kind: 'disk', bytes: spec.bytes, ms, bytesPerSec: spec.bytes / (ms / 1000), processCpuMs: cpuSince() };
}

async function main(argv: string[]): Promise<void> {
  const spec = JSON.parse(argv[0] ?? '') as ChildSpec;
  // Jobs started with a REST API register for `weir list`: in the benchmark's own directory.
  if (spec.kind !== 'disk') process.env['WEIR_HOME'] = join(spec.dir, 'weir-home');
  let out: ChildOutput;
  switch (spec.kind) {
    case 'throughput':
      out = await throughput(spec);
      break;
    case 'snapshot':
      out = await snapshot(spec);
      break;
    case 'restore':
      out = await restore(spec);
      break;
    case 'disk':
      out = disk(spec);
      break;
  }
  process.stdout.write(RESULT_MARK + JSON.stringify(out) + '\n', () => process.exit(0));
}

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`bench child failed: ${e instanceof ChildFailure ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
