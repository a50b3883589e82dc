/**
 * Savepoints, stop-with-savepoint and the final checkpoint as pure decisions: every case is a
 * sequence of events with explicit times (a fake clock is a number here, as in the
 * coordinator's tests). The last test runs seeded random schedules and checks the invariants:
 * every request settles exactly once, every retry loop is bounded by its limit, the tasks are
 * finished at most once. It prints its seed (SEED=... replays it).
 */
import { describe, expect, it } from 'vitest';
import { CheckpointFailureReason as R, type CheckpointFailureReason } from '../../src/checkpoint/failure-reason.ts';
import { Rng } from '../../src/core/random.ts';
import { FINAL_REQUEST_ID, SnapshotRequestLogic, type RequestDecision, type StopMode } from '../../src/cluster/decisions/snapshot-requests.ts';
import { resolveJobManagerConfig } from '../../src/cluster/job-manager-config.ts';

const CONFIG = resolveJobManagerConfig({ finalCheckpointMaxAttempts: 3, drainSavepointMaxAttempts: 4, drainTimeout: 5000, maxPendingRequests: 4 });

function logic(checkpointing = true, config = CONFIG): SnapshotRequestLogic {
  return new SnapshotRequestLogic(config, checkpointing);
}

function types(ds: RequestDecision[]): string[] {
  return ds.map((d) => (d.type === 'end-sources' ? `end-sources(${d.drain ? 'drain' : 'stop'})` : d.type));
}

const request = (requestId: string, kind: 'checkpoint' | 'savepoint', stop?: StopMode, now = 0, running = true) =>
  ({ type: 'request', now, requestId, kind, ...(stop ? { stop } : {}), running }) as const;
const completed = (requestId: string, checkpointId: number, final = false, now = 0) => ({ type: 'completed', now, requestId, checkpointId, reference: `/sp/${checkpointId}`, final }) as const;
const aborted = (requestId: string, reason: CheckpointFailureReason = R.CHECKPOINT_EXPIRED, now = 0) => ({ type: 'aborted', now, requestId, reason, message: 'boom' }) as const;
const rejected = (requestId: string, reason: CheckpointFailureReason = R.NOT_ALL_REQUIRED_TASKS_RUNNING, now = 0) => ({ type: 'rejected', now, requestId, reason, message: 'no' }) as const;

describe('manual checkpoints and savepoints', () => {
  it('trigger once; completion resolves with the id (checkpoint) or the reference (savepoint)', () => {
    const l = logic();
    expect(l.handle(request('c1', 'checkpoint'))).toEqual([{ type: 'trigger', requestId: 'c1', checkpointType: 'checkpoint', final: false, suspendSourcesAfter: false, stop: false }]);
    // An intermediate savepoint: not a stop, so its sinks do not commit (coordinator's notifyTasks).
    expect(l.handle(request('s1', 'savepoint'))).toEqual([{ type: 'trigger', requestId: 's1', checkpointType: 'savepoint', final: false, suspendSourcesAfter: false, stop: false }]);
    expect(l.handle(completed('c1', 7))).toEqual([{ type: 'resolve', requestId: 'c1', kind: 'checkpoint', checkpointId: 7, reference: '/sp/7' }]);
    expect(l.handle(completed('s1', 8))).toEqual([{ type: 'resolve', requestId: 's1', kind: 'savepoint', checkpointId: 8, reference: '/sp/8' }]);
    expect(l.openRequests()).toEqual([]);
  });

  it('a failed one is rejected with the reason, and not tried again', () => {
    const l = logic();
    l.handle(request('s1', 'savepoint'));
    expect(l.handle(aborted('s1'))).toEqual([{ type: 'reject', requestId: 's1', message: 'savepoint failed: CHECKPOINT_EXPIRED: boom' }]);
    l.handle(request('c1', 'checkpoint'));
    expect(l.handle(rejected('c1'))).toEqual([{ type: 'reject', requestId: 'c1', message: 'checkpoint rejected: NOT_ALL_REQUIRED_TASKS_RUNNING: no' }]);
    expect(l.handle(aborted('s1'))).toEqual([]); // settled already: late news is ignored
  });

  it('refuses what cannot be done now, saying why', () => {
    const l = logic();
    const refusal = (ds: RequestDecision[]) => (ds[0]?.type === 'reject' ? ds[0].message : `not refused: ${types(ds).join(',')}`);
    expect(refusal(l.handle(request('c1', 'checkpoint', undefined, 0, false)))).toBe('the job is not running');
    expect(refusal(l.handle(request('s1', 'savepoint', undefined, 0, false)))).toBe('the job is still starting (not all tasks are running)');
    expect(refusal(l.handle(request('c2', 'checkpoint', 'stop')))).toBe('only a savepoint can stop the job');
    expect(refusal(l.handle(request(FINAL_REQUEST_ID, 'checkpoint')))).toBe('request id final is already in use');
    for (const id of ['a', 'b', 'c', 'd']) l.handle(request(id, 'checkpoint'));
    expect(refusal(l.handle(request('a', 'checkpoint')))).toBe('request id a is already in use');
    expect(refusal(l.handle(request('e', 'checkpoint')))).toBe('too many snapshot requests in progress (4)');
  });
});

describe('stop with a savepoint (no drain)', () => {
  it('suspends periodic checkpoints, stops the sources at the barrier, ends them after, and finishes the waiting tasks', () => {
    const l = logic();
    expect(l.handle(request('s', 'savepoint', 'stop'))).toEqual([
      { type: 'suspend-periodic' },
      { type: 'trigger', requestId: 's', checkpointType: 'savepoint', final: false, suspendSourcesAfter: true, stop: true },
    ]);
    expect(l.handle(request('x', 'savepoint'))).toEqual([{ type: 'reject', requestId: 'x', message: 'the job is already stopping' }]);
    expect(types(l.handle(completed('s', 3)))).toEqual(['stop-savepoint-taken', 'end-sources(stop)']);
    expect(l.handle({ type: 'all-tasks-waiting', now: 1 })).toEqual([{ type: 'finish-tasks' }]);
    expect(l.handle({ type: 'all-tasks-waiting', now: 2 })).toEqual([]);
    // The request resolves once the job has stopped, not when the savepoint completed.
    expect(l.handle({ type: 'ended', status: 'FINISHED' })).toEqual([{ type: 'resolve', requestId: 's', kind: 'savepoint', checkpointId: 3, reference: '/sp/3' }]);
  });

  it('a job that fails (or is cancelled) after its stop savepoint was taken rejects the stop naming the savepoint (before: resolved, `weir stop` printed the path and exited 0 while the job restarted from it and ran on)', () => {
    for (const [status, how] of [['FAILED', /but the job failed before it stopped \(its restart strategy decides whether it runs on, from that savepoint\)/], ['CANCELED', /but the job ended CANCELED before it stopped/]] as const) {
      for (const mode of ['stop', 'drain'] as const) {
        const l = logic();
        l.handle(request('s', 'savepoint', mode));
        if (mode === 'drain') l.handle({ type: 'all-tasks-waiting', now: 1 });
        expect(types(l.handle(completed('s', 3, mode === 'drain')))).toContain('stop-savepoint-taken');
        const out = l.handle({ type: 'ended', status });
        expect(out).toHaveLength(1);
        expect(out[0]).toMatchObject({ type: 'reject', requestId: 's' });
        expect((out[0] as { message: string }).message).toMatch(/^savepoint 3 was taken at \/sp\/3, /);
        expect((out[0] as { message: string }).message).toMatch(how);
      }
    }
  });

  it('a failed stop leaves the job running: sources resume, periodic checkpoints resume', () => {
    const l = logic();
    l.handle(request('s', 'savepoint', 'stop'));
    expect(types(l.handle(aborted('s')))).toEqual(['resume-sources', 'resume-periodic', 'reject']);
    expect(l.stopping()).toBe(false);
    l.handle(request('s2', 'savepoint', 'stop'));
    // Refused before a barrier went out: the sources were never suspended.
    expect(types(l.handle(rejected('s2')))).toEqual(['resume-periodic', 'reject']);
    // After a failed stop, the end of the input ends the job with the final checkpoint.
    expect(l.handle({ type: 'all-tasks-waiting', now: 0 })).toMatchObject([{ type: 'trigger', requestId: FINAL_REQUEST_ID, final: true }]);
  });
  it('the input ending by itself while the stop savepoint is taken: the tasks wait for it, and it (or else the final checkpoint) ends the job (before: finished at once, neither taken: the output since the last checkpoint never committed, exit 0)', () => {
    const l = logic();
    l.handle(request('s', 'savepoint', 'stop'));
    // Every task waits: their input ended before the barrier reached them (they join the savepoint directly).
    expect(l.handle({ type: 'all-tasks-waiting', now: 1 })).toEqual([]);
    expect(types(l.handle(completed('s', 3)))).toEqual(['stop-savepoint-taken', 'end-sources(stop)', 'finish-tasks']);
    expect(l.handle({ type: 'ended', status: 'FINISHED' })).toEqual([{ type: 'resolve', requestId: 's', kind: 'savepoint', checkpointId: 3, reference: '/sp/3' }]);

    // The savepoint fails: the job finishes as a bounded job does, with its final checkpoint.
    const f = logic();
    f.handle(request('s', 'savepoint', 'stop'));
    expect(f.handle({ type: 'all-tasks-waiting', now: 1 })).toEqual([]);
    const failed = f.handle(aborted('s', R.CHECKPOINT_DECLINED));
    expect(failed).toContainEqual({ type: 'trigger', requestId: FINAL_REQUEST_ID, checkpointType: 'checkpoint', final: true, suspendSourcesAfter: false, stop: false });
    expect(types(failed)).not.toContain('finish-tasks');
    expect(failed.at(-1)).toEqual({ type: 'reject', requestId: 's', message: 'savepoint failed: CHECKPOINT_DECLINED: boom' });
    expect(f.handle(completed(FINAL_REQUEST_ID, 4, true))).toEqual([{ type: 'finish-tasks' }]);
  });
});

describe('stop with drain', () => {
  it('ends the sources first; once all is drained the savepoint is the final snapshot', () => {
    const l = logic();
    expect(types(l.handle(request('d', 'savepoint', 'drain', 100)))).toEqual(['suspend-periodic', 'end-sources(drain)']);
    expect(l.nextWakeup()).toBe(100 + 5000);
    expect(l.handle({ type: 'all-tasks-waiting', now: 200 })).toEqual([{ type: 'trigger', requestId: 'd', checkpointType: 'savepoint', final: true, suspendSourcesAfter: false, stop: true }]);
    expect(l.nextWakeup()).toBeUndefined();
    expect(types(l.handle(completed('d', 4, true)))).toEqual(['stop-savepoint-taken', 'finish-tasks']);
    expect(types(l.handle({ type: 'ended', status: 'FINISHED' }))).toEqual(['resolve']);
  });

  it('the final savepoint is tried drainSavepointMaxAttempts times, then the job finishes with a final checkpoint', () => {
    const l = logic();
    l.handle(request('d', 'savepoint', 'drain'));
    l.handle({ type: 'all-tasks-waiting', now: 1 });
    for (let i = 2; i <= 4; i++) expect(types(l.handle(aborted('d', R.CHECKPOINT_DECLINED)))).toEqual(['trigger']);
    const last = l.handle(aborted('d', R.CHECKPOINT_DECLINED));
    expect(last).toEqual([
      { type: 'trigger', requestId: FINAL_REQUEST_ID, checkpointType: 'checkpoint', final: true, suspendSourcesAfter: false, stop: false },
      { type: 'reject', requestId: 'd', message: 'savepoint failed: CHECKPOINT_DECLINED: boom' },
    ]);
    expect(types(l.handle(completed(FINAL_REQUEST_ID, 9, true)))).toEqual(['finish-tasks']);
  });

  it('without checkpointing, a drain that cannot take its savepoint just finishes the tasks', () => {
    const l = logic(false, resolveJobManagerConfig({ drainSavepointMaxAttempts: 1 }));
    l.handle(request('d', 'savepoint', 'drain'));
    l.handle({ type: 'all-tasks-waiting', now: 1 });
    expect(types(l.handle(aborted('d')))).toEqual(['finish-tasks', 'reject']);
  });

  it('a drain that takes longer than drainTimeoutMs fails the request; the job drains on and finishes by itself', () => {
    const l = logic();
    l.handle(request('d', 'savepoint', 'drain', 1000));
    expect(l.handle({ type: 'tick', now: 5999 })).toEqual([]);
    expect(l.handle({ type: 'tick', now: 6000 })).toEqual([
      { type: 'resume-periodic' },
      { type: 'reject', requestId: 'd', message: 'the job did not drain within 5000 ms; it finishes by itself without a savepoint' },
    ]);
    expect(l.nextWakeup()).toBeUndefined();
    expect(l.handle({ type: 'all-tasks-waiting', now: 9000 })).toMatchObject([{ type: 'trigger', requestId: FINAL_REQUEST_ID }]);
  });

  it('after a drain that timed out, another drain waits again without ending the (already ended) sources', () => {
    const l = logic();
    l.handle(request('d1', 'savepoint', 'drain', 0));
    l.handle({ type: 'tick', now: 5000 });
    expect(types(l.handle(request('d2', 'savepoint', 'drain', 6000)))).toEqual(['suspend-periodic']);
    expect(l.handle({ type: 'all-tasks-waiting', now: 7000 })).toMatchObject([{ type: 'trigger', requestId: 'd2', final: true }]);
  });

  it('a stop while the job is already finishing is refused', () => {
    const l = logic();
    l.handle({ type: 'all-tasks-waiting', now: 0 });
    expect(l.handle(request('d', 'savepoint', 'drain'))).toEqual([{ type: 'reject', requestId: 'd', message: 'the job is already finishing' }]);
    expect(types(l.handle(request('s', 'savepoint')))).toEqual(['trigger']); // a plain savepoint is fine
  });
});

describe('the final checkpoint of a bounded job', () => {
  it('is asked for once every task waits; its completion finishes the tasks', () => {
    const l = logic();
    expect(l.handle({ type: 'all-tasks-waiting', now: 0 })).toEqual([{ type: 'trigger', requestId: FINAL_REQUEST_ID, checkpointType: 'checkpoint', final: true, suspendSourcesAfter: false, stop: false }]);
    expect(l.handle(completed(FINAL_REQUEST_ID, 5, true))).toEqual([{ type: 'finish-tasks' }]);
  });

  it('without checkpointing the tasks finish at once', () => {
    expect(logic(false).handle({ type: 'all-tasks-waiting', now: 0 })).toEqual([{ type: 'finish-tasks' }]);
  });

  it('is tried finalCheckpointMaxAttempts times, then the attempt fails (the restart strategy decides)', () => {
    const l = logic();
    l.handle({ type: 'all-tasks-waiting', now: 0 });
    expect(types(l.handle(aborted(FINAL_REQUEST_ID)))).toEqual(['trigger']);
    expect(types(l.handle(rejected(FINAL_REQUEST_ID)))).toEqual(['trigger']);
    expect(l.handle(aborted(FINAL_REQUEST_ID, R.CHECKPOINT_DECLINED))).toEqual([{ type: 'fail-job', message: 'the final checkpoint failed: CHECKPOINT_DECLINED: boom, after 3 tries' }]);
  });

  it('is not retried when the coordinator is shutting down', () => {
    const l = logic();
    l.handle({ type: 'all-tasks-waiting', now: 0 });
    expect(l.handle(aborted(FINAL_REQUEST_ID, R.CHECKPOINT_COORDINATOR_SHUTDOWN))).toEqual([]);
  });
});

describe('the end of the attempt', () => {
  it('rejects every open request, and nothing happens after', () => {
    const l = logic();
    l.handle(request('c', 'checkpoint'));
    l.handle(request('d', 'savepoint', 'drain'));
    expect(l.handle({ type: 'ended', status: 'CANCELED' })).toEqual([
      { type: 'reject', requestId: 'c', message: 'the job ended (CANCELED) before the checkpoint completed' },
      { type: 'reject', requestId: 'd', message: 'the job ended (CANCELED) before the savepoint completed' },
    ]);
    expect(l.handle(completed('c', 1))).toEqual([]);
    expect(l.handle(request('e', 'checkpoint'))).toEqual([]);
    expect(l.nextWakeup()).toBeUndefined();
  });
});

describe('invariants under seeded random schedules', () => {
  it('every request settles exactly once, retries stay within their limits, tasks finish at most once', () => {
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    console.log(`snapshot request simulation seed=${seed} (replay with SEED=${seed})`);
    for (let round = 0; round < 300; round++) simulate(new Rng(seed, round), `seed=${seed} round=${round}`);
  });
});

/** One random schedule against a fake coordinator that completes, aborts or rejects what was triggered. */
function simulate(rng: Rng, label: string): void {
  const config = resolveJobManagerConfig({
    finalCheckpointMaxAttempts: rng.range(1, 4), drainSavepointMaxAttempts: rng.range(1, 4), drainTimeout: rng.range(10, 200), maxPendingRequests: rng.range(1, 5),
  });
  const checkpointing = rng.bool();
  const l = new SnapshotRequestLogic(config, checkpointing);
  let now = 0;
  let running = false;
  let n = 0;
  const asked = new Set<string>();
  const settled = new Map<string, string>();
  const kindOf = new Map<string, { kind: string; stop?: StopMode }>();
  const triggers = new Map<string, number>();
  const outstanding: { id: string; final: boolean }[] = [];
  /** Mutated by check(): an object, so reads after the calls are not narrowed away. */
  const st = { finished: 0, failed: false };
  let drainEnds = 0;
  let suspended = 0;
  const check = (ds: RequestDecision[]) => {
    for (const d of ds) {
      const where = `${label}: ${JSON.stringify(d)}`;
      switch (d.type) {
        case 'trigger': {
          triggers.set(d.requestId, (triggers.get(d.requestId) ?? 0) + 1);
          outstanding.push({ id: d.requestId, final: d.final });
          const k = kindOf.get(d.requestId);
          expect(d.suspendSourcesAfter, where).toBe(k?.stop === 'stop');
          expect(d.stop, where).toBe(k?.stop !== undefined);
          const limit = d.requestId === FINAL_REQUEST_ID ? config.finalCheckpointMaxAttempts : k?.stop === 'drain' ? config.drainSavepointMaxAttempts : 1;
          expect(triggers.get(d.requestId)!, where).toBeLessThanOrEqual(limit);
          break;
        }
        case 'resolve':
        case 'reject':
          expect(asked.has(d.requestId), where).toBe(true);
          expect(settled.has(d.requestId), `${where}: settled twice`).toBe(false);
          settled.set(d.requestId, d.type);
          break;
        case 'finish-tasks':
          st.finished++;
          expect(st.finished, where).toBe(1);
          break;
        case 'end-sources':
          // Sources end once by a drain, even if a drain timed out and another stop drains again.
          if (d.drain) drainEnds++;
          expect(drainEnds, where).toBeLessThanOrEqual(1);
          break;
        case 'suspend-periodic':
          suspended++;
          expect(suspended, where).toBe(1);
          break;
        case 'resume-periodic':
          suspended--;
          expect(suspended, where).toBe(0);
          break;
        case 'fail-job':
          st.failed = true;
          break;
      }
    }
    expect(l.openRequests().length, label).toBeLessThanOrEqual(config.maxPendingRequests);
  };
  const answer = (i: number) => {
    const [t] = outstanding.splice(i, 1);
    const r = rng.next();
    if (r < 0.5) check(l.handle({ type: 'completed', now, requestId: t!.id, checkpointId: ++n, reference: `/x/${n}`, final: t!.final }));
    else if (r < 0.85) check(l.handle({ type: 'aborted', now, requestId: t!.id, reason: rng.pick([R.CHECKPOINT_EXPIRED, R.CHECKPOINT_DECLINED, R.TASK_FAILURE]), message: 'x' }));
    else check(l.handle({ type: 'rejected', now, requestId: t!.id, reason: R.NOT_ALL_REQUIRED_TASKS_RUNNING, message: 'x' }));
  };
  for (let step = 0; step < 60 && !st.failed && st.finished === 0; step++) {
    now += rng.int(40);
    const r = rng.next();
    if (r < 0.1) running = true;
    else if (r < 0.4) {
      const id = `r${step}`;
      const kind = rng.bool(0.3) ? 'checkpoint' : 'savepoint';
      const stop = kind === 'savepoint' && rng.bool(0.4) ? rng.pick(['stop', 'drain'] as const) : undefined;
      asked.add(id);
      kindOf.set(id, { kind, ...(stop ? { stop } : {}) });
      check(l.handle({ type: 'request', now, requestId: id, kind, ...(stop ? { stop } : {}), running }));
    } else if (r < 0.75 && outstanding.length > 0) answer(rng.int(outstanding.length));
    else if (r < 0.85 && running) check(l.handle({ type: 'all-tasks-waiting', now }));
    else check(l.handle({ type: 'tick', now }));
    // A tick at the wakeup time consumes it: the shell's timer never spins.
    const wake = l.nextWakeup();
    if (wake !== undefined && rng.bool(0.3)) {
      now = Math.max(now, wake);
      check(l.handle({ type: 'tick', now }));
      expect(l.nextWakeup() ?? Number.POSITIVE_INFINITY, label).toBeGreaterThan(now);
    }
  }
  // Liveness: once the job drains and the coordinator answers everything, every request
  // settles without the attempt ending (or the attempt fails, bounded by the final checkpoint's tries).
  if (!st.failed && st.finished === 0) {
    running = true;
    now += config.drainTimeoutMs;
    check(l.handle({ type: 'tick', now }));
    check(l.handle({ type: 'all-tasks-waiting', now }));
    for (let guard = 0; outstanding.length > 0 && guard < 1000; guard++) answer(0);
    expect(outstanding, label).toEqual([]);
    expect(st.failed || (st.finished as number) === 1, `${label}: the job neither finished nor failed`).toBe(true);
    if (!st.failed) expect(l.openRequests(), label).toEqual([]);
  }
  check(l.handle({ type: 'ended', status: st.failed ? 'FAILED' : 'FINISHED' }));
  expect([...asked].filter((id) => !settled.has(id)), `${label}: unsettled`).toEqual([]);
  expect(l.handle({ type: 'tick', now: now + 1e9 }), label).toEqual([]);
}

describe('job manager settings', () => {
  it('come from the option registry: defaults, durations read as written, bounds enforced with the setting named', () => {
    expect(resolveJobManagerConfig()).toEqual({
      deployTimeoutMs: 120_000, restoreTimeoutMs: 600_000, finalCheckpointMaxAttempts: 10, drainSavepointMaxAttempts: 4,
      drainTimeoutMs: 600_000, maxCorruptFallbacks: 10, maxPendingRequests: 100, progressIntervalMs: 1000,
    });
    expect(resolveJobManagerConfig({ restoreTimeout: '5 s', deployTimeout: 250 }).restoreTimeoutMs).toBe(5000);
    expect(resolveJobManagerConfig({ deployTimeout: 250 }).deployTimeoutMs).toBe(250);
    expect(() => resolveJobManagerConfig({ finalCheckpointMaxAttempts: 0 }, 'w.json')).toThrow(/final checkpoint attempts/);
    expect(() => resolveJobManagerConfig({ drainTimeout: 'soon' }, 'w.json')).toThrow(/drain timeout/);
    expect(() => resolveJobManagerConfig({ nope: 1 } as never, 'w.json')).toThrow(/unknown job manager setting "nope"/);
  });
});
