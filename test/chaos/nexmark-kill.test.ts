/**
 * Chaos for the stateful Nexmark queries (bench/nexmark/queries.ts): keyed co-process functions
 * with timers (q3, q4, q9), sliding windows kept as panes (q5), windowAll (q7), coGroup windows
 * (q8) and merging session windows (q11), each as a real `weir run` (the generator's event time,
 * bounded out of order; the exactly-once file sink; checkpoints every 100 to 300 ms) through one
 * seeded scenario: killed with SIGKILL right after a checkpoint completed, resumed from the latest
 * checkpoint at the other parallelism (1 -> 2 or 2 -> 1), stopped with a savepoint, resumed from
 * it at the other parallelism again, killed again, and run to the end at the other parallelism.
 * The committed output must equal the plain implementation's (bench/nexmark/oracle.ts) exactly,
 * compared order-insensitively by the benchmark's own digest (bench/nexmark/check.ts): nothing
 * lost, nothing twice, no window or auction closed twice. Seed printed; replay with CHAOS_SEED.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputDigest, type QueryId } from '../../bench/nexmark/check.ts';
import { forEachEvent } from '../../bench/nexmark/generator.ts';
import type { Event } from '../../bench/nexmark/model.ts';
import { plainQuery } from '../../bench/nexmark/oracle.ts';
import type { Result } from '../../bench/workloads.ts';
import { verifyCheckpoint } from '../../src/checkpoint/storage.ts';
import { Rng } from '../../src/core/random.ts';
import { chaosSeed, completedCheckpoints, controlHeaders, hiddenFiles, runWeir, startWeir, type Run } from './harness.ts';

const QUERIES = ['q3', 'q4', 'q5', 'q7', 'q8', 'q9', 'q11'] as const satisfies readonly QueryId[];
/** 15 s of event time: auctions close, sessions end and 10 s windows fire many times over. */
const EVENTS = 150_000;
/** The interrupted runs read at most this many events per second, so each is stopped mid-way (the last reads at full speed). */
const RATE = '40000';
const JOB = 'test/fixtures/jobs/nexmark-exactly-once.ts';

let work: string;
const events: Event[] = [];

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-chaos-nexmark-'));
  process.env.WEIR_HOME = join(work, 'home'); // the jobs' registry entries (tokens for the stop requests)
  forEachEvent(EVENTS, (e) => events.push(e));
});
afterAll(() => { if (!process.env.KEEP_CHAOS) rmSync(work, { recursive: true, force: true }); else console.log('kept', work); });

function oracleDigest(q: QueryId): Result {
  const d = new OutputDigest(q);
  const plain = plainQuery(q, (o) => d.add(o));
  for (const e of events) plain.add(e);
  plain.finish();
  return d.result();
}

/**
 * The digest of what the sink committed. q4's output is a changelog checked on its last record
 * per category: files do not keep the order across subtasks, so its records are added in the
 * order of their running count.
 */
function committedDigest(q: QueryId, dir: string): Result {
  const records: { count?: number }[] = [];
  if (existsSync(dir)) {
    for (const f of readdirSync(dir)) {
      if (f.startsWith('.') || !f.endsWith('.jsonl')) continue;
      for (const l of readFileSync(join(dir, f), 'utf8').split('\n')) if (l !== '') records.push(JSON.parse(l) as { count?: number });
    }
  }
  if (q === 'q4') records.sort((a, b) => a.count! - b.count!);
  const d = new OutputDigest(q);
  for (const r of records) d.add(r);
  return d.result();
}

/** The newest snapshot that verifies, among the checkpoints under `chk` and the savepoints in `sp`. */
async function newestSnapshot(chk: string, sp: string): Promise<string | undefined> {
  const list = (d: string) => (existsSync(d) ? readdirSync(d) : []);
  const candidates = list(sp).map((s) => join(sp, s));
  for (const job of list(chk)) for (const c of list(join(chk, job))) if (c.startsWith('chk-')) candidates.push(join(chk, job, c));
  let best: { path: string; completedAt: number } | undefined;
  for (const c of candidates) {
    const v = await verifyCheckpoint(c);
    if (v.ok && (best === undefined || v.metadata.completedAt > best.completedAt)) best = { path: c, completedAt: v.metadata.completedAt };
  }
  return best?.path;
}

interface Step { readonly run: Run; readonly done: string }

/** Kills the run 0 to 30 ms after the 1st to 3rd checkpoint it completes (seeded); at 30 s if none completes. */
async function killAfterCompletion(args: string[], rng: Rng, chk: string): Promise<Step> {
  const target = 1 + rng.int(3);
  const extraMs = rng.int(2) === 0 ? 0 : rng.int(30);
  const before = completedCheckpoints(chk);
  const { child, done } = startWeir(args);
  let seen = 0;
  const poll = setInterval(() => {
    for (const c of completedCheckpoints(chk)) if (!before.has(c)) { before.add(c); seen++; }
    if (seen >= target) {
      clearInterval(poll);
      setTimeout(() => child.kill('SIGKILL'), extraMs);
    }
  }, 2);
  const fallback = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const run = await done;
  clearInterval(poll);
  clearTimeout(fallback);
  if (run.signal !== 'SIGKILL') return { run, done: 'finished' };
  return { run, done: seen >= target ? `killed ${extraMs} ms after completion ${target}` : 'killed at 30 s with no completion' };
}

/** Stops the run with a savepoint into `sp` 300 to 1,500 ms (seeded) after all its tasks run. */
async function stopWithSavepoint(args: string[], rng: Rng, sp: string): Promise<Step> {
  const { child, done } = startWeir(args);
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  let rest: RegExpExecArray | null = null;
  for (let i = 0; i < 750 && rest === null; i++) {
    await new Promise((r) => setTimeout(r, 20));
    rest = /job ([0-9a-f]{32}) running; control API on http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
  }
  if (rest === null) throw new Error(`no control API within 15 s:\n${err}`);
  const [, id, port] = rest;
  const url = `http://127.0.0.1:${port}/jobs/${id}`;
  // A stop while the job is still starting is refused.
  for (let i = 0; i < 300; i++) {
    const st = await fetch(url).then((r) => r.json() as Promise<{ state?: string }>).catch(() => ({ state: 'GONE' }));
    if (st.state !== 'INITIALIZING' && st.state !== 'RESTARTING') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  await new Promise((r) => setTimeout(r, 300 + rng.int(1200)));
  const res = await fetch(`${url}/stop`, { method: 'POST', headers: controlHeaders(id!), body: JSON.stringify({ targetDirectory: sp, drain: false }) }).catch(() => undefined);
  const run = await done;
  const stopped = /savepoint \d+ completed/.test(run.stderr);
  return { run, done: stopped ? 'stopped with a savepoint' : run.code === 0 ? 'finished' : `not stopped (stop answered ${res?.status ?? 'nothing'})` };
}

describe('chaos: Nexmark queries killed, stopped with a savepoint and rescaled', () => {
  const seed = chaosSeed('nexmark');
  const outcomes: string[] = [];

  it.each(QUERIES)('%s: committed output equals the plain implementation', async (q) => {
    const rng = new Rng(seed, QUERIES.indexOf(q));
    const [out, chk, sp] = ['out', 'chk', 'sp'].map((d) => join(work, `${q}-${d}`)) as [string, string, string];
    mkdirSync(sp, { recursive: true });
    const first = 1 + rng.int(2);
    const parallelism = (run: number) => String(run % 2 === 0 ? first : 3 - first);
    const args = (run: number, from: string | undefined, rate = RATE) => [
      'run', JOB, '-p', parallelism(run), '-w', parallelism(run), '--rest-port', '0', '--checkpoint-dir', chk, '--checkpoint-interval', `${100 + rng.int(201)}ms`,
      ...(from !== undefined ? ['--from', from] : []), '--', q, String(EVENTS), out, rate,
    ];
    const steps = [
      () => killAfterCompletion(args(0, undefined), rng, chk),
      () => stopWithSavepoint(args(1, 'latest-or-empty'), rng, sp),
      async () => killAfterCompletion(args(2, await newestSnapshot(chk, sp)), rng, chk),
      async () => ({ run: await runWeir(args(3, await newestSnapshot(chk, sp), '0')), done: 'finished' }),
    ];
    for (const [run, step] of steps.entries()) {
      const { run: r, done } = await step();
      const line = `[chaos nexmark] ${q} run ${run} at p=${parallelism(run)}: ${done}`;
      outcomes.push(line);
      console.log(line);
      if (r.signal !== 'SIGKILL' && r.code !== 0) throw new Error(`${q} run ${run} failed (code ${r.code}):\n${r.stderr}`);
      if (done === 'finished') break; // ran to the end of its input (a fast machine): nothing left to resume
    }
    expect(committedDigest(q, out)).toEqual(oracleDigest(q));
    expect(hiddenFiles(out), `hidden files left in ${out}`).toEqual([]);
  }, 120_000);

  it('the scenario happened: kills right after completions, savepoints, rescales', () => {
    // Each query's runs alternate parallelism 1 and 2, so every resume is a rescale; a loaded
    // machine may miss a kill or a stop here and there, not most of them.
    expect(outcomes.filter((o) => o.includes('after completion')).length).toBeGreaterThanOrEqual(QUERIES.length);
    expect(outcomes.filter((o) => o.includes('stopped with a savepoint')).length).toBeGreaterThanOrEqual(QUERIES.length - 2);
  });
});
