/**
 * The coordinator's decisions as pure functions of events: every race is a sequence of
 * events with explicit times. The last test is a seeded random simulation checking the
 * protocol's invariants; it prints its seed (set SEED=... to replay).
 */
import { describe, expect, it } from 'vitest';
import { applyCheckpointSettings, DEFAULT_CHECKPOINT_CONFIG, type CheckpointConfig } from '../../src/checkpoint/config.ts';
import { CheckpointCoordinatorLogic, type Decision } from '../../src/checkpoint/coordinator.ts';
import { CheckpointFailureReason as R } from '../../src/checkpoint/failure-reason.ts';
import type { TaskAck } from '../../src/core/checkpoint-format.ts';
import { Rng } from '../../src/core/random.ts';
import { taskId, type TaskId } from '../../src/core/task-id.ts';

const TASKS = [
  { id: taskId(0, 0), isSource: true },
  { id: taskId(0, 1), isSource: true },
  { id: taskId(1, 0), isSource: false },
];

function cfg(s: Parameters<typeof applyCheckpointSettings>[1]): CheckpointConfig {
  return applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, s, 'test');
}

function ack(task: TaskId, size = 10): TaskAck {
  return { task, operators: [{ operatorId: 'op', stateSize: size }], stats: { syncMs: 1, asyncMs: 2, alignmentMs: 0, startDelayMs: 0, stateSize: size } };
}

function running(c: CheckpointCoordinatorLogic, now = -1_000_000): void {
  for (const t of TASKS) c.handle({ type: 'task-status', now, task: t.id, status: 'running' });
}

function types(ds: Decision[]): string[] {
  return ds.map((d) => d.type);
}

function ackAll(c: CheckpointCoordinatorLogic, id: number, now: number): Decision[] {
  const out: Decision[] = [];
  for (const t of TASKS) out.push(...c.handle({ type: 'ack', now, id, ack: ack(t.id) }));
  return out;
}

describe('checkpoint coordinator decisions', () => {
  it('triggers periodically at the interval, only when all tasks run, at the sources', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 1000 }), TASKS);
    expect(c.handle({ type: 'tick', now: 0 })).toEqual([]); // tasks still deploying
    running(c, -1000); // every task running at -1000: the first checkpoint is due one interval later
    expect(c.nextWakeup()).toBe(0);
    const d = c.handle({ type: 'tick', now: 0 });
    expect(d).toHaveLength(1);
    expect(d[0]).toMatchObject({ type: 'trigger', id: 1, timestamp: 0, checkpointType: 'checkpoint', tasks: [taskId(0, 0), taskId(0, 1)] });
    // max concurrent 1: no second trigger while 1 is pending, even past the interval
    expect(c.handle({ type: 'tick', now: 1500 })).toEqual([]);
    const fin = ackAll(c, 1, 1600);
    expect(types(fin)).toEqual(['finalize']);
    expect(types(c.handle({ type: 'finalized', now: 1700, id: 1 }))).toEqual(['notify-complete']);
    expect(c.handle({ type: 'tick', now: 1700 })).toMatchObject([{ type: 'trigger', id: 2 }]);
  });

  it('honours min pause from the end of the last checkpoint', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 100, minPause: 500 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 });
    ackAll(c, 1, 300);
    c.handle({ type: 'finalized', now: 300, id: 1 });
    expect(c.handle({ type: 'tick', now: 400 })).toEqual([]);
    expect(c.handle({ type: 'tick', now: 799 })).toEqual([]);
    expect(c.handle({ type: 'tick', now: 800 })).toMatchObject([{ type: 'trigger', id: 2 }]);
    expect(c.nextWakeup()).toBe(800 + 600_000); // only the timeout of checkpoint 2 is ahead
  });

  it('allows max-concurrent checkpoints in flight', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 100, maxConcurrent: 2 }), TASKS);
    running(c);
    expect(types(c.handle({ type: 'tick', now: 0 }))).toEqual(['trigger']);
    expect(types(c.handle({ type: 'tick', now: 100 }))).toEqual(['trigger']);
    expect(c.handle({ type: 'tick', now: 200 })).toEqual([]);
    expect(c.pendingIds()).toEqual([1, 2]);
  });

  it('expires a checkpoint at the timeout; with tolerable 0 that fails the job', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 1000, timeout: 5000 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 });
    expect(c.handle({ type: 'tick', now: 4999 })).toEqual([]);
    const d = c.handle({ type: 'tick', now: 5000 });
    expect(d[0]).toMatchObject({ type: 'abort', id: 1, reason: R.CHECKPOINT_EXPIRED });
    expect(d[1]).toMatchObject({ type: 'fail-job' });
    expect((d[1] as { message: string }).message).toContain('Exceeded checkpoint tolerable failure threshold');
  });

  it('counts only consecutive failures of counted reasons, newer than the last success', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, tolerableFailures: 2, maxConcurrent: 5 }), TASKS);
    running(c);
    let now = 0;
    const trig = () => (c.handle({ type: 'tick', now: (now += 10) })[0] as { id: number }).id;
    // Declines count; subsumed and task failures do not.
    let id = trig();
    expect(types(c.handle({ type: 'decline', now, id, task: taskId(1, 0), reason: R.CHECKPOINT_DECLINED, message: 'x' }))).toEqual(['abort']);
    expect(c.failureCount()).toBe(1);
    id = trig();
    c.handle({ type: 'task-failed', now, task: taskId(1, 0) });
    expect(c.failureCount()).toBe(1);
    id = trig();
    expect(types(c.handle({ type: 'finalize-failed', now, id, message: 'disk full' }))).toEqual([]); // not finalizing: ignored
    c.handle({ type: 'decline', now, id, task: taskId(0, 0), reason: R.CHECKPOINT_DECLINED_TASK_NOT_READY, message: 'not ready' });
    expect(c.failureCount()).toBe(1);
    // A success resets the count.
    id = trig();
    ackAll(c, id, now);
    c.handle({ type: 'finalized', now, id });
    expect(c.failureCount()).toBe(0);
    // Three counted failures in a row exceed tolerable = 2.
    const reasons = [R.CHECKPOINT_DECLINED, R.CHECKPOINT_ASYNC_EXCEPTION, R.IO_EXCEPTION];
    let failed = false;
    for (const reason of reasons) {
      id = trig();
      const d = c.handle({ type: 'decline', now, id, task: taskId(0, 1), reason, message: 'boom' });
      failed = failed || d.some((x) => x.type === 'fail-job');
    }
    expect(failed).toBe(true);
  });

  it('does not count a failure of a checkpoint older than the last completed one', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, maxConcurrent: 2 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 }); // 1
    c.handle({ type: 'tick', now: 10 }); // 2
    ackAll(c, 2, 20);
    const d = c.handle({ type: 'finalized', now: 20, id: 2 });
    // Completing 2 subsumes pending 1: an abort with CHECKPOINT_SUBSUMED, no job failure.
    expect(d.map((x) => (x.type === 'abort' ? x.reason : x.type))).toEqual([R.CHECKPOINT_SUBSUMED, 'notify-complete']);
    expect(c.failureCount()).toBe(0);
  });

  it('an older checkpoint whose metadata write ends after a newer one completed is subsumed, not completed', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, maxConcurrent: 2 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 }); // 1
    c.handle({ type: 'tick', now: 10 }); // 2
    expect(types(ackAll(c, 1, 11))).toEqual(['finalize']);
    expect(types(ackAll(c, 2, 12))).toEqual(['finalize']);
    expect(c.handle({ type: 'finalized', now: 13, id: 2 })).toMatchObject([{ type: 'notify-complete', id: 2 }]);
    expect(c.handle({ type: 'finalized', now: 14, id: 1 })).toMatchObject([{ type: 'abort', id: 1, reason: R.CHECKPOINT_SUBSUMED }]);
    expect(c.completedCheckpoints().map((x) => x.id)).toEqual([2]);
    expect(c.failureCount()).toBe(0);
  });

  it('classifies late, duplicate and unknown acknowledgements and discards their state', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, timeout: 100 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 });
    expect(c.handle({ type: 'ack', now: 1, id: 1, ack: ack(taskId(0, 0)) })).toEqual([]);
    expect(c.lastAckResult).toBe('SUCCESS');
    c.handle({ type: 'ack', now: 2, id: 1, ack: ack(taskId(0, 0)) });
    expect(c.lastAckResult).toBe('DUPLICATE');
    const unknownTask = c.handle({ type: 'ack', now: 2, id: 1, ack: ack(taskId(9, 9)) });
    expect(c.lastAckResult).toBe('UNKNOWN');
    expect(types(unknownTask)).toEqual(['discard-ack']);
    const future = c.handle({ type: 'ack', now: 2, id: 77, ack: ack(taskId(0, 1)) });
    expect(c.lastAckResult).toBe('UNKNOWN');
    expect(types(future)).toEqual(['discard-ack']);
    // Expire 1, then a late ack arrives: DISCARDED and its state deleted.
    const exp = c.handle({ type: 'tick', now: 100 });
    expect(exp[0]).toMatchObject({ type: 'abort', id: 1, reason: R.CHECKPOINT_EXPIRED });
    expect((exp[0] as unknown as { discard: TaskAck[] }).discard.map((a) => a.task)).toEqual([taskId(0, 0)]);
    const late = c.handle({ type: 'ack', now: 101, id: 1, ack: ack(taskId(1, 0)) });
    expect(c.lastAckResult).toBe('DISCARDED');
    expect(late).toMatchObject([{ type: 'discard-ack', id: 1 }]);
  });

  it('retains the configured number of completed checkpoints and discards older ones', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, numRetained: 2 }), TASKS);
    running(c);
    const discarded: number[] = [];
    for (let i = 1; i <= 4; i++) {
      c.handle({ type: 'tick', now: i * 10 });
      ackAll(c, i, i * 10 + 1);
      for (const d of c.handle({ type: 'finalized', now: i * 10 + 2, id: i })) if (d.type === 'discard-completed') discarded.push(...d.ids);
    }
    expect(discarded).toEqual([1, 2]);
    expect(c.completedCheckpoints().map((x) => x.id)).toEqual([3, 4]);
  });

  it('savepoints are forced, never subsume checkpoints and are never retained as checkpoints', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 1000, minPause: 10_000 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 }); // checkpoint 1 pending
    const sp = c.handle({ type: 'request', now: 1, checkpointType: 'savepoint', requestId: 'r1' });
    expect(sp).toMatchObject([{ type: 'trigger', id: 2, checkpointType: 'savepoint', requestId: 'r1' }]);
    ackAll(c, 2, 5);
    const done = c.handle({ type: 'finalized', now: 6, id: 2 });
    expect(done).toMatchObject([{ type: 'notify-complete', id: 2, checkpointType: 'savepoint', requestId: 'r1' }]);
    expect(c.pendingIds()).toEqual([1]);
    expect(c.completedCheckpoints()).toEqual([]);
  });

  it('a task that finished processing joins pending checkpoints by a direct trigger', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 });
    c.handle({ type: 'ack', now: 1, id: 1, ack: ack(taskId(0, 0)) });
    const d = c.handle({ type: 'task-status', now: 2, task: taskId(0, 0), status: 'waiting-final' });
    expect(d).toEqual([]); // already acked
    const d2 = c.handle({ type: 'task-status', now: 2, task: taskId(1, 0), status: 'waiting-final' });
    expect(d2).toMatchObject([{ type: 'trigger-task', id: 1, task: taskId(1, 0) }]);
    // New checkpoints trigger waiting tasks directly, along with running sources.
    ackAll(c, 1, 3);
    c.handle({ type: 'finalized', now: 3, id: 1 });
    expect(c.handle({ type: 'tick', now: 10 })).toMatchObject([{ type: 'trigger', tasks: [taskId(0, 0), taskId(0, 1), taskId(1, 0)] }]);
  });

  it('the final checkpoint is a forced request once every task waits', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10_000 }), TASKS);
    running(c);
    for (const t of TASKS) c.handle({ type: 'task-status', now: 1, task: t.id, status: 'waiting-final' });
    expect(c.handle({ type: 'tick', now: 20_000 })).toEqual([]); // periodic trigger stands aside
    const d = c.handle({ type: 'request', now: 2, checkpointType: 'checkpoint', requestId: 'final', final: true });
    expect(d).toMatchObject([{ type: 'trigger', final: true, tasks: [taskId(0, 0), taskId(0, 1), taskId(1, 0)] }]);
  });

  it('a stop-with-savepoint suspends periodic checkpoints until it fails', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 100 }), TASKS);
    running(c);
    c.handle({ type: 'suspend-periodic' });
    expect(c.handle({ type: 'tick', now: 0 })).toEqual([]);
    expect(c.handle({ type: 'request', now: 1, checkpointType: 'savepoint', requestId: 'stop' })).toMatchObject([{ type: 'trigger', checkpointType: 'savepoint' }]);
    expect(c.handle({ type: 'tick', now: 500 })).toEqual([]);
    c.handle({ type: 'resume-periodic', now: 600 });
    expect(c.handle({ type: 'tick', now: 600 })).toMatchObject([{ type: 'trigger', checkpointType: 'checkpoint' }]);
  });

  it('shutdown aborts pending checkpoints and rejects requests', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 });
    expect(c.handle({ type: 'shutdown', now: 1 })).toMatchObject([{ type: 'abort', id: 1, reason: R.CHECKPOINT_COORDINATOR_SHUTDOWN }]);
    expect(c.handle({ type: 'request', now: 2, checkpointType: 'savepoint', requestId: 'x' })).toMatchObject([{ type: 'request-rejected', reason: R.CHECKPOINT_COORDINATOR_SHUTDOWN }]);
    expect(c.handle({ type: 'tick', now: 100 })).toEqual([]);
  });

  it('rejects invalid configuration with messages that name the setting', () => {
    expect(() => cfg({ interval: 5 })).toThrow(/at least 10 ms/);
    expect(() => cfg({ interval: 'fast' })).toThrow(/cannot read "fast" as a duration/);
    expect(() => cfg({ mode: 'twice' as never })).toThrow(/exactly-once/);
    expect(() => cfg({ maxConcurrent: 0 })).toThrow(/max concurrent checkpoints must be an integer >= 1/);
    expect(() => cfg({ tolerableFailures: -1 })).toThrow(/tolerable failed checkpoints/);
    expect(() => cfg({ retention: 'forever' as never })).toThrow(/retention/);
    expect(() => cfg({ numRetained: 1.5 })).toThrow(/retained/);
    expect(() => cfg({ bogus: 1 } as never)).toThrow(/unknown checkpoint setting "bogus"/);
  });

  it('keeps its invariants under a seeded random schedule of acks, declines, failures and time', () => {
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    console.log(`coordinator simulation seed=${seed} (replay with SEED=${seed})`);
    const rng = new Rng(seed);
    const config = cfg({ interval: 50, timeout: 400, minPause: rng.int(60), maxConcurrent: 1 + rng.int(3), tolerableFailures: rng.int(3), numRetained: 1 + rng.int(3) });
    const c = new CheckpointCoordinatorLogic(config, TASKS);
    running(c);
    let now = 0;
    const completed: number[] = [];
    const aborted = new Set<number>();
    const triggeredAt = new Map<number, number>();
    let lastEnd = Number.NEGATIVE_INFINITY;
    let counted = 0;
    for (let step = 0; step < 3000; step++) {
      now += rng.int(30);
      const pending = c.pendingIds();
      const r = rng.next();
      let ds: Decision[];
      if (r < 0.3 || pending.length === 0) ds = c.handle({ type: 'tick', now });
      else {
        const id = rng.pick(pending.concat([pending[0]! - 1, 999]));
        if (r < 0.8) ds = c.handle({ type: 'ack', now, id, ack: ack(rng.pick(TASKS).id) });
        else if (r < 0.85) ds = c.handle({ type: 'decline', now, id, task: taskId(1, 0), reason: rng.pick([R.CHECKPOINT_DECLINED, R.CHECKPOINT_DECLINED_SUBSUMED]), message: 'sim' });
        else if (r < 0.88) ds = c.handle({ type: 'task-failed', now, task: rng.pick(TASKS).id });
        else if (r < 0.95) ds = c.handle({ type: 'finalized', now, id });
        else ds = c.handle({ type: 'finalize-failed', now, id, message: 'sim io' });
      }
      for (const d of ds) {
        if (d.type === 'trigger') {
          expect(triggeredAt.has(d.id)).toBe(false); // ids are never reused
          triggeredAt.set(d.id, now);
          expect(now).toBeGreaterThanOrEqual(lastEnd + config.minPauseMs);
          expect(c.pendingIds().length).toBeLessThanOrEqual(config.maxConcurrent);
        }
        if (d.type === 'notify-complete') {
          expect(aborted.has(d.id)).toBe(false);
          expect(completed.includes(d.id)).toBe(false);
          if (completed.length > 0) expect(d.id).toBeGreaterThan(completed[completed.length - 1]!);
          completed.push(d.id);
          lastEnd = now;
          counted = 0;
        }
        if (d.type === 'abort') {
          expect(completed.includes(d.id)).toBe(false);
          aborted.add(d.id);
          if ([R.CHECKPOINT_EXPIRED, R.CHECKPOINT_DECLINED, R.FINALIZE_CHECKPOINT_FAILURE].includes(d.reason as never)) counted++;
        }
        if (d.type === 'fail-job') {
          expect(counted).toBeGreaterThan(config.tolerableFailures);
          counted = 0;
        }
      }
      expect(c.completedCheckpoints().length).toBeLessThanOrEqual(config.numRetained);
    }
    expect(completed.length).toBeGreaterThan(0);
    expect(aborted.size).toBeGreaterThan(0);
  });
});
