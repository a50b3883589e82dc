/**
 * Failover at its edges, end to end with runJob (each case failed before its fix):
 * - a stop-with-savepoint whose commit fails afterwards restarts from that savepoint, not from
 *   the checkpoint before it (whose replay the exactly-once file sink refused: the job died);
 * - a run resumed from an older checkpoint of the same job (claim mode) restarts from there,
 *   never from the newer checkpoints of the earlier run it went back past (records skipped);
 * - a sink that cannot tell what it committed (its system down) while a restart is prepared
 *   fails that restart, which the restart strategy retries (runJob rejected, no JobResult);
 * - a cancel while an attempt is being prepared ends the job (it ran to its end).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineJob, ExactlyOnceFileSink, runJob, type RunOptions, type TwoPhaseCommitSink } from '../../src/index.ts';
import type { JobControl } from '../../src/cluster/job-control.ts';
import { committedLines } from '../helpers/output.ts';

let work: string;
let n = 0;
const fresh = (name: string) => join(work, `${name}-${n++}`);
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'weir-failover-edges-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** runJob with a handle on its control, its log lines collected. */
function start(job: Parameters<typeof runJob>[0], options: RunOptions): { result: ReturnType<typeof runJob>; control: () => JobControl; logs: string[] } {
  let control: JobControl | undefined;
  const logs: string[] = [];
  const result = runJob(job, {
    workers: 1, parallelism: 1, stdout: () => {}, log: (l) => logs.push(l),
    restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 0 },
    services: [{ start: async (c) => { control = c; }, stop: async () => {} }],
    ...options,
  });
  return { result, logs, control: () => control! };
}

async function whenRunning(control: () => JobControl): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (control() !== undefined && control().overview()['state'] === 'RUNNING') return;
    await sleep(10);
  }
  throw new Error('the job did not start running');
}

/** Committed numbers, ascending; fails on a duplicate or a gap, and when they do not end at `last`. */
function expectRun(lines: string[], last: number): number[] {
  const xs = lines.map(Number).sort((a, b) => a - b);
  for (let i = 1; i < xs.length; i++) expect(xs[i], `after ${xs[i - 1]}`).toBe(xs[i - 1]! + 1);
  expect(xs.at(-1)).toBe(last);
  return xs;
}

describe('failover at its edges', () => {
  it('a failure after a stop-with-savepoint completed fails the stop and restarts from that savepoint: every record committed exactly once', async () => {
    const chk = fresh('chk');
    const out = fresh('out');
    const N = 3000;
    let armed = false;
    let failed = false;
    const inner = new ExactlyOnceFileSink<number>(out);
    const sink: TwoPhaseCommitSink<number, unknown> = Object.create(inner);
    sink.createCommitter = (ctx) => {
      const c = inner.createCommitter(ctx);
      return Object.assign(Object.create(c), {
        commit(cs: unknown[], id: number) {
          // The savepoint's commit (no chk-<id> in checkpoint storage) fails once on subtask 1, after subtask 0 committed it.
          const isSavepoint = !readdirSync(chk).some((j) => existsSync(join(chk, j, `chk-${id}`)));
          if (armed && isSavepoint && ctx.subtaskIndex === 1 && !failed) {
            failed = true;
            throw new Error('transient commit failure');
          }
          return c.commit(cs as Parameters<typeof c.commit>[0], id);
        },
      });
    };
    const job = defineJob((env) => void env.fromGenerator((i) => i, { count: N, ratePerSecond: 1500 }).uid('src').rebalance().map((x) => x).uid('m').sinkTo(sink).uid('sink'));
    const run = start(job, { parallelism: 2, checkpoint: { interval: 300, dir: chk } });
    await whenRunning(run.control);
    await sleep(700);
    armed = true;
    // The stop fails naming its savepoint (the job failed before it stopped, as in Flink), and
    // the job runs on from that savepoint (before: the stop answered with the path and the job ran on).
    const stop = await run.control().stop(fresh('sp'), false).then(() => undefined, (e: Error) => e);
    expect(stop?.message).toMatch(/^savepoint \d+ was taken at .*, but the job failed before it stopped/);
    const savepoint = /was taken at (.*), but the job failed/.exec(stop!.message)![1]!;
    const r = await run.result;
    expect(failed).toBe(true);
    expect(r.status, r.error?.message).toBe('FINISHED');
    expect(run.logs.some((l) => l.includes('restarting') && l.includes('from savepoint'))).toBe(true);
    expect(existsSync(savepoint)).toBe(true);
    expect(expectRun(committedLines(out), N - 1)[0]).toBe(0);
  });

  it('a run resumed from an older checkpoint of its job restarts from there, not from the newer checkpoints it went back past', async () => {
    const chk = fresh('chk');
    const N = 1500;
    let phase = 1;
    let seen = 0;
    let failed = false;
    const job = (out: string) => defineJob((env) => void env.fromGenerator((i) => i, { count: N, ratePerSecond: 500 }).uid('src')
      .map((x) => {
        if (phase === 2 && !failed && ++seen === 20) {
          failed = true;
          throw new Error('injected before the first checkpoint of the resumed run');
        }
        return x;
      }).uid('m')
      .sinkTo(new ExactlyOnceFileSink<number>(out)).uid('sink'));
    const first = start(job(fresh('out')), { checkpoint: { interval: 300, dir: chk, numRetained: 5 } });
    await whenRunning(first.control);
    await sleep(2000);
    first.control().cancel();
    const r1 = await first.result;
    expect(r1.status).toBe('CANCELED');
    const jobDir = join(chk, r1.jobId);
    const ids = readdirSync(jobDir).filter((e) => /^chk-\d+$/.test(e)).map((e) => Number(e.slice(4))).sort((a, b) => a - b);
    expect(ids.length).toBeGreaterThan(2);
    phase = 2;
    const out = fresh('out');
    const second = start(job(out), { from: join(jobDir, `chk-${ids[0]}`), claimMode: 'claim', checkpoint: { interval: 300, dir: chk, numRetained: 5 } });
    const r2 = await second.result;
    expect(failed).toBe(true);
    expect(r2.status, r2.error?.message).toBe('FINISHED');
    expect(second.logs.some((l) => l.includes(`restarting`) && l.includes(`from checkpoint ${ids[0]}`)), second.logs.join('\n')).toBe(true);
    // From the first retained checkpoint's position to the end, none skipped, none twice.
    expectRun(committedLines(out), N - 1);
  });

  it('a sink that cannot tell what it committed while a restart is prepared fails that restart; the next one goes on', async () => {
    let asks = 0;
    let failed = false;
    const sink: TwoPhaseCommitSink<number, number[]> = {
      name: 'db-sink',
      createWriter: () => {
        let b: number[] = [];
        return { write(v) { b.push(...v); }, prepareCommit() { const c = [b]; b = []; return c; } };
      },
      createCommitter: () => ({ commit() {} }),
      lastCommittedCheckpoint() {
        if (++asks === 2) throw new Error('connect ECONNREFUSED (database restarting)');
        return undefined;
      },
    };
    const job = defineJob((env) => void env.fromGenerator((i) => i, { count: 1000, ratePerSecond: 2000 }).uid('src')
      .map((x) => {
        if (!failed && x === 200) {
          failed = true;
          throw new Error('database connection lost');
        }
        return x;
      }).uid('m').sinkTo(sink).uid('sink'));
    const run = start(job, { checkpoint: { interval: 50, dir: fresh('chk') }, restartStrategy: { type: 'fixed-delay', attempts: 5, delay: 50 } });
    const r = await run.result;
    expect(r.status, r.error?.message).toBe('FINISHED');
    expect(asks).toBe(3);
    expect(run.logs.filter((l) => l.includes('restarting')).map((l) => /attempt (\d) of 5/.exec(l)?.[1])).toEqual(['1', '2']);
    expect(run.logs.some((l) => l.includes('cannot tell what it committed last: connect ECONNREFUSED'))).toBe(true);
  });

  it('a cancel while an attempt is being prepared ends the job', async () => {
    let control: (() => JobControl) | undefined;
    const sink: TwoPhaseCommitSink<number, number[]> = {
      name: 'slow-to-ask',
      createWriter: () => ({ write() {}, prepareCommit: () => [] }),
      createCommitter: () => ({ commit() {} }),
      async lastCommittedCheckpoint() {
        control!().cancel();
        await sleep(50);
        return undefined;
      },
    };
    const job = defineJob((env) => void env.fromGenerator((i) => i, { count: 1_000_000, ratePerSecond: 1000 }).uid('src').sinkTo(sink).uid('sink'));
    const run = start(job, { checkpoint: { interval: 200, dir: fresh('chk') } });
    control = run.control;
    const r = await run.result;
    expect(r.status).toBe('CANCELED');
    expect(r.attempts).toBe(0);
  });
});
