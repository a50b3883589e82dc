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
    // The attempt ends: the same tick triggers no new checkpoint (before: 'trigger 2' followed).
    expect(types(d)).toEqual(['abort', 'fail-job']);
  });

  it('checkpoint storage failing while triggering counts (IO_EXCEPTION, as in Flink); a trigger failing otherwise does not', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 1000, timeout: 5000 }), TASKS);
    running(c);
    expect(types(c.handle({ type: 'tick', now: 0 }))).toEqual(['trigger']);
    expect(types(c.handle({ type: 'trigger-failed', now: 1, id: 1, message: 'savepoint target refused' }))).toEqual(['abort']);
    expect(types(c.handle({ type: 'tick', now: 1000 }))).toEqual(['trigger']);
    const d = c.handle({ type: 'trigger-failed', now: 1001, id: 2, message: 'cannot create chk-2: ENOSPC', io: true });
    expect(d[0]).toMatchObject({ type: 'abort', id: 2, reason: R.IO_EXCEPTION });
    expect(types(d)).toEqual(['abort', 'fail-job']);
  });

  describe('tolerable failed checkpoints (CheckpointFailureManager)', () => {
    type Counted = 'declined' | 'async' | 'io' | 'expired' | 'finalize';
    const COUNTED_REASON: Record<Counted, R> = {
      declined: R.CHECKPOINT_DECLINED,
      async: R.CHECKPOINT_ASYNC_EXCEPTION,
      io: R.IO_EXCEPTION,
      expired: R.CHECKPOINT_EXPIRED,
      finalize: R.FINALIZE_CHECKPOINT_FAILURE,
    };
    const TIMEOUT = 1000;

    /** A coordinator with every task running, and helpers that make one checkpoint end a given way. */
    function driver(tolerableFailures: number) {
      const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, timeout: TIMEOUT, tolerableFailures }), TASKS);
      running(c);
      let now = 0;
      /** The pending checkpoint, or a new one triggered by the next tick. */
      const next = (): number => {
        const p = c.pendingIds();
        if (p.length > 0) return p[0]!;
        now += 10;
        const d = c.handle({ type: 'tick', now });
        expect(types(d)).toEqual(['trigger']);
        return (d[0] as { id: number }).id;
      };
      /** Fails a checkpoint with a counted reason; returns its id and the decisions of the failing event. */
      const fail = (how: Counted): { id: number; ds: Decision[] } => {
        const id = next();
        const triggeredAt = now;
        let ds: Decision[];
        switch (how) {
          case 'expired':
            now = triggeredAt + TIMEOUT;
            ds = c.handle({ type: 'tick', now });
            break;
          case 'finalize':
            expect(types(ackAll(c, id, now))).toEqual(['finalize']);
            ds = c.handle({ type: 'finalize-failed', now, id, message: 'disk full' });
            break;
          default:
            ds = c.handle({ type: 'decline', now, id, task: taskId(1, 0), reason: COUNTED_REASON[how], message: 'boom' });
        }
        const abort = ds.find((d) => d.type === 'abort');
        expect(abort).toMatchObject({ type: 'abort', id, reason: COUNTED_REASON[how] });
        return { id, ds };
      };
      const complete = (): number => {
        const id = next();
        expect(types(ackAll(c, id, now))).toEqual(['finalize']);
        expect(types(c.handle({ type: 'finalized', now, id }))).toEqual(['notify-complete']);
        return id;
      };
      return { c, fail, complete, next, now: () => now };
    }

    const failJobs = (ds: Decision[]) => ds.filter((d) => d.type === 'fail-job') as { type: 'fail-job'; message: string }[];

    for (const tolerable of [0, 1, 3]) {
      for (const how of ['declined', 'async', 'io', 'expired', 'finalize'] as const) {
        it(`tolerable ${tolerable}: the ${tolerable + 1}th consecutive ${COUNTED_REASON[how]} fails the job, not one before`, () => {
          const { c, fail } = driver(tolerable);
          for (let k = 1; k <= tolerable; k++) {
            const { ds } = fail(how);
            expect(failJobs(ds), `failure ${k}`).toEqual([]);
            expect(c.failureCount()).toBe(k);
          }
          const { id, ds } = fail(how);
          const fj = failJobs(ds);
          expect(fj).toHaveLength(1);
          // After the abort it reports, naming the threshold and the checkpoint that crossed it.
          expect(types(ds).indexOf('fail-job')).toBe(types(ds).indexOf('abort') + 1);
          expect(fj[0]!.message).toBe(
            `Exceeded checkpoint tolerable failure threshold (${tolerable}); last failure: checkpoint ${id}: ${COUNTED_REASON[how]}: ` +
              (how === 'expired' ? `checkpoint ${id} expired before completing (timeout ${TIMEOUT} ms)` : how === 'finalize' ? 'disk full' : 'boom (task 1:0)'),
          );
          expect(c.failureCount()).toBe(0); // counting starts over after the job fails
        });
      }
    }

    it('counted reasons of different kinds add up; the job fails at exactly the (n+1)-th', () => {
      const { c, fail } = driver(3);
      expect(failJobs(fail('declined').ds)).toEqual([]);
      expect(failJobs(fail('expired').ds)).toEqual([]);
      expect(failJobs(fail('finalize').ds)).toEqual([]);
      expect(c.failureCount()).toBe(3);
      const { id, ds } = fail('async');
      expect(failJobs(ds)).toHaveLength(1);
      expect(failJobs(ds)[0]!.message).toContain(`checkpoint ${id}: ${R.CHECKPOINT_ASYNC_EXCEPTION}`);
    });

    it('reasons that are not counted never fail the job, even with tolerable 0, and do not reset the count', () => {
      const { c, next, now } = driver(1);
      // One counted failure first: the count is 1, one more counted failure would fail the job.
      const first = next();
      expect(failJobs(c.handle({ type: 'decline', now: now(), id: first, task: taskId(1, 0), reason: R.CHECKPOINT_DECLINED, message: 'x' }))).toEqual([]);
      expect(c.failureCount()).toBe(1);
      const notCounted = [
        R.CHECKPOINT_DECLINED_SUBSUMED, R.CHECKPOINT_DECLINED_TASK_NOT_READY, R.CHECKPOINT_DECLINED_TASK_CLOSING,
        R.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER, R.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM, R.TASK_CHECKPOINT_FAILURE,
        R.CHECKPOINT_SUBSUMED, R.TASK_FAILURE, R.CHECKPOINT_COORDINATOR_SUSPEND, R.JOB_FAILOVER_REGION,
      ];
      for (const reason of notCounted) {
        const id = next();
        const ds = c.handle({ type: 'decline', now: now(), id, task: taskId(1, 0), reason, message: 'not counted' });
        expect(ds, reason).toMatchObject([{ type: 'abort', id, reason }]);
        expect(c.failureCount(), reason).toBe(1);
      }
      // The other paths to a non-counted failure: a task failure and a failed trigger.
      let id = next();
      expect(c.handle({ type: 'task-failed', now: now(), task: taskId(0, 1) })).toMatchObject([{ type: 'abort', id, reason: R.TASK_FAILURE }]);
      id = next();
      expect(c.handle({ type: 'trigger-failed', now: now(), id, message: 'mkdir failed' })).toMatchObject([{ type: 'abort', id, reason: R.TRIGGER_CHECKPOINT_FAILURE }]);
      expect(c.failureCount()).toBe(1);
      // The count was neither raised nor reset by any of them: the next counted failure is the second.
      id = next();
      const ds = c.handle({ type: 'decline', now: now(), id, task: taskId(1, 0), reason: R.CHECKPOINT_DECLINED, message: 'y' });
      expect(types(ds)).toEqual(['abort', 'fail-job']);
    });

    it('with tolerable 0, a non-counted failure alone leaves the job running', () => {
      const { c, next, now } = driver(0);
      const id = next();
      expect(types(c.handle({ type: 'decline', now: now(), id, task: taskId(1, 0), reason: R.CHECKPOINT_DECLINED_TASK_NOT_READY, message: 'not ready' }))).toEqual(['abort']);
      expect(c.failureCount()).toBe(0);
    });

    it('a completed checkpoint resets the count: n failures, a success, n failures again leave the job running', () => {
      const { c, fail, complete } = driver(2);
      expect(failJobs(fail('declined').ds)).toEqual([]);
      expect(failJobs(fail('io').ds)).toEqual([]);
      expect(c.failureCount()).toBe(2);
      complete();
      expect(c.failureCount()).toBe(0);
      expect(failJobs(fail('expired').ds)).toEqual([]);
      expect(failJobs(fail('async').ds)).toEqual([]);
      expect(c.failureCount()).toBe(2);
      // Without a success in between, the third one fails the job.
      const { ds } = fail('declined');
      expect(types(ds)).toEqual(['abort', 'fail-job']);
    });

    it('a counted failure of a checkpoint older than the last completed one is not counted', () => {
      const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, maxConcurrent: 2, tolerableFailures: 0 }), TASKS);
      running(c);
      c.handle({ type: 'tick', now: 0 }); // 1
      c.handle({ type: 'tick', now: 10 }); // 2
      expect(types(ackAll(c, 1, 11))).toEqual(['finalize']); // 1 is writing its metadata
      expect(types(ackAll(c, 2, 12))).toEqual(['finalize']);
      expect(types(c.handle({ type: 'finalized', now: 13, id: 2 }))).toEqual(['notify-complete']);
      // 1's metadata write fails after 2 completed: a counted reason, but for an id below the last success.
      expect(c.handle({ type: 'finalize-failed', now: 14, id: 1, message: 'disk full' })).toMatchObject([{ type: 'abort', id: 1, reason: R.FINALIZE_CHECKPOINT_FAILURE }]);
      expect(c.failureCount()).toBe(0);
    });

    it('failed savepoints are not counted', () => {
      const c = new CheckpointCoordinatorLogic(cfg({ interval: 10_000, tolerableFailures: 0 }), TASKS);
      running(c);
      const sp = c.handle({ type: 'request', now: 1, checkpointType: 'savepoint', requestId: 'r' });
      const id = (sp[0] as { id: number }).id;
      expect(types(c.handle({ type: 'decline', now: 2, id, task: taskId(1, 0), reason: R.CHECKPOINT_DECLINED, message: 'x' }))).toEqual(['abort']);
      expect(c.failureCount()).toBe(0);
    });

    it('a finalize failure is only possible while the metadata is written: earlier it is ignored', () => {
      const { c, next, now } = driver(0);
      const id = next();
      expect(c.handle({ type: 'finalize-failed', now: now(), id, message: 'disk full' })).toEqual([]);
      expect(c.pendingIds()).toEqual([id]);
      expect(c.failureCount()).toBe(0);
    });
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

  it('retention discards checkpoints off the job\'s history (newer than the one restored from) before the one restored from', () => {
    // Retained 7 and 8; 8 failed to restore, the job restored from 7. Before: 9 completing
    // discarded 7, leaving the corrupt 8 and 9, and nothing good to fall back to.
    const restored = [{ id: 7, timestamp: 70, completedAt: 71 }, { id: 8, timestamp: 80, completedAt: 81, abandoned: true }];
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, numRetained: 2 }), TASKS, 9, restored);
    running(c);
    c.handle({ type: 'tick', now: 100 });
    ackAll(c, 9, 101);
    const done = c.handle({ type: 'finalized', now: 102, id: 9 });
    expect(done.filter((d) => d.type === 'discard-completed')).toMatchObject([{ ids: [8] }]);
    expect(c.completedCheckpoints().map((x) => x.id)).toEqual([7, 9]);
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

  it('the savepoint that stops the job subsumes the checkpoints still in flight, so the finishing tasks dropping them fails nothing (before: their decline counted, and with tolerable 0 the stopped job failed over and ran on)', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 100, tolerableFailures: 0 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 }); // checkpoint 1: one task's snapshot still being written
    c.handle({ type: 'ack', now: 5, id: 1, ack: ack(TASKS[0]!.id) });
    expect(c.handle({ type: 'request', now: 10, checkpointType: 'savepoint', requestId: 'stop', stop: true })).toMatchObject([{ type: 'trigger', id: 2 }]);
    ackAll(c, 2, 20);
    const done = c.handle({ type: 'finalized', now: 21, id: 2 });
    expect(done).toMatchObject([{ type: 'abort', id: 1, reason: R.CHECKPOINT_SUBSUMED }, { type: 'notify-complete', id: 2, requestId: 'stop', notifyTasks: true }]);
    // The tasks end after the stop: a snapshot of checkpoint 1 still in flight is dropped, and declined.
    expect(c.handle({ type: 'decline', now: 30, id: 1, task: taskId(1, 0), reason: R.CHECKPOINT_ASYNC_EXCEPTION, message: 'aborted' })).toEqual([]);
    // An intermediate savepoint still subsumes nothing (the job runs on, and checkpoint 3 with it).
    c.handle({ type: 'request', now: 40, checkpointType: 'checkpoint', requestId: 'c' });
    c.handle({ type: 'request', now: 41, checkpointType: 'savepoint', requestId: 'sp' });
    ackAll(c, 4, 50);
    expect(types(c.handle({ type: 'finalized', now: 51, id: 4 }))).toEqual(['notify-complete']);
    expect(c.pendingIds()).toEqual([3]);
  });

  it('a savepoint in progress holds back the periodic checkpoint (counted against max concurrent, as in Flink), unaligned or not', () => {
    for (const unaligned of [true, false]) {
      const c = new CheckpointCoordinatorLogic(cfg({ interval: 1000, unaligned }), TASKS);
      running(c, -1000);
      expect(c.handle({ type: 'request', now: -500, checkpointType: 'savepoint', requestId: 'sp' })).toMatchObject([{ type: 'trigger', id: 1, checkpointType: 'savepoint' }]);
      // Before: checkpoint 2 triggered here; unaligned, its barrier overtook the savepoint's.
      expect(types(c.handle({ type: 'tick', now: 600 }))).not.toContain('trigger');
      ackAll(c, 1, 700);
      c.handle({ type: 'finalized', now: 710, id: 1 });
      expect(c.handle({ type: 'tick', now: 720 })).toMatchObject([{ type: 'trigger', id: 2, checkpointType: 'checkpoint' }]);
    }
  });

  it('tasks hear of a completed checkpoint and of the savepoint that stops the job, not of an intermediate savepoint', () => {
    // Recovery starts from the latest checkpoint, never from a savepoint: output committed at an
    // intermediate savepoint newer than that checkpoint would be written twice after a failure.
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 1000 }), TASKS);
    running(c);
    const notified = (id: number, now: number) => c.handle({ type: 'finalized', now, id }).find((d) => d.type === 'notify-complete');
    c.handle({ type: 'tick', now: 0 });
    ackAll(c, 1, 1);
    expect(notified(1, 2)).toMatchObject({ id: 1, checkpointType: 'checkpoint', notifyTasks: true });
    c.handle({ type: 'request', now: 3, checkpointType: 'savepoint', requestId: 'sp' });
    ackAll(c, 2, 4);
    expect(notified(2, 5)).toMatchObject({ id: 2, checkpointType: 'savepoint', requestId: 'sp', notifyTasks: false });
    c.handle({ type: 'request', now: 6, checkpointType: 'savepoint', requestId: 'stop', stop: true });
    ackAll(c, 3, 7);
    expect(notified(3, 8)).toMatchObject({ id: 3, checkpointType: 'savepoint', requestId: 'stop', notifyTasks: true });
    c.handle({ type: 'request', now: 9, checkpointType: 'savepoint', requestId: 'drained', final: true, stop: true });
    ackAll(c, 4, 10);
    expect(notified(4, 11)).toMatchObject({ id: 4, checkpointType: 'savepoint', final: true, notifyTasks: true });
  });

  it('a checkpoint whose metadata is being written does not expire: the write ends it', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 1000, timeout: 500 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 0 });
    expect(ackAll(c, 1, 100).map((d) => d.type)).toContain('finalize');
    // The metadata write is slow: the timeout passes while it runs. Nothing to wake for meanwhile
    // (before: the passed timeout, 500, at every tick: the shell's timer spun).
    expect(c.nextWakeup()).toBeUndefined();
    expect(c.handle({ type: 'tick', now: 10_000 }).filter((d) => d.type === 'abort')).toEqual([]);
    expect(c.nextWakeup()).toBeUndefined();
    expect(c.handle({ type: 'finalized', now: 10_001, id: 1 })).toMatchObject([{ type: 'notify-complete', id: 1 }]);
    // One still waiting for acks does expire.
    c.handle({ type: 'tick', now: 20_000 });
    expect(c.handle({ type: 'tick', now: 20_600 }).filter((d) => d.type === 'abort')).toMatchObject([{ type: 'abort', id: 2, reason: 'CHECKPOINT_EXPIRED' }]);
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

  it('the final checkpoint waits for a periodic checkpoint in flight, then triggers: the periodic one completes instead of being subsumed', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10 }), TASKS);
    running(c);
    expect(types(c.handle({ type: 'tick', now: 10 }))).toEqual(['trigger']); // periodic checkpoint 1
    for (const t of TASKS) c.handle({ type: 'task-status', now: 11, task: t.id, status: 'waiting-final' });
    expect(c.handle({ type: 'request', now: 12, checkpointType: 'checkpoint', requestId: 'final', final: true })).toEqual([]);
    expect(c.handle({ type: 'request', now: 12, checkpointType: 'checkpoint', requestId: 'again', final: true })).toMatchObject([{ type: 'request-rejected', requestId: 'again' }]);
    expect(c.pendingIds()).toEqual([1]);
    expect(types(ackAll(c, 1, 13))).toEqual(['finalize']);
    const d = c.handle({ type: 'finalized', now: 14, id: 1 });
    expect(d).toMatchObject([{ type: 'notify-complete', id: 1 }, { type: 'trigger', id: 2, final: true, requestId: 'final', timestamp: 14 }]);
    expect(c.completedCheckpoints().map((x) => x.id)).toEqual([1]);
  });

  it('a deferred final checkpoint triggers when the periodic one in flight fails, and is rejected on shutdown', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 10, tolerableFailures: 3 }), TASKS);
    running(c);
    c.handle({ type: 'tick', now: 10 });
    c.handle({ type: 'request', now: 12, checkpointType: 'checkpoint', requestId: 'final', final: true });
    const d = c.handle({ type: 'decline', now: 13, id: 1, task: taskId(1, 0), reason: R.CHECKPOINT_DECLINED, message: 'x' });
    expect(d).toMatchObject([{ type: 'abort', id: 1 }, { type: 'trigger', id: 2, final: true, requestId: 'final' }]);
    const c2 = new CheckpointCoordinatorLogic(cfg({ interval: 10 }), TASKS);
    running(c2);
    c2.handle({ type: 'tick', now: 10 });
    c2.handle({ type: 'request', now: 12, checkpointType: 'checkpoint', requestId: 'final', final: true });
    expect(c2.handle({ type: 'shutdown', now: 13 })).toMatchObject([{ type: 'abort', id: 1 }, { type: 'request-rejected', requestId: 'final' }]);
  });

  it('a stop-with-savepoint suspends periodic checkpoints until it fails', () => {
    const c = new CheckpointCoordinatorLogic(cfg({ interval: 100 }), TASKS);
    running(c);
    c.handle({ type: 'suspend-periodic' });
    expect(c.handle({ type: 'tick', now: 0 })).toEqual([]);
    expect(c.handle({ type: 'request', now: 1, checkpointType: 'savepoint', requestId: 'stop' })).toMatchObject([{ type: 'trigger', checkpointType: 'savepoint' }]);
    expect(c.handle({ type: 'tick', now: 500 })).toEqual([]);
    c.handle({ type: 'decline', now: 550, id: 1, task: taskId(1, 0), reason: R.CHECKPOINT_DECLINED, message: 'x' }); // the stop failed
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
      let failDue = false;
      for (const [i, d] of ds.entries()) {
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
          // Counted: the counted reasons, for ids newer than the last completed checkpoint.
          if ([R.CHECKPOINT_EXPIRED, R.CHECKPOINT_DECLINED, R.FINALIZE_CHECKPOINT_FAILURE].includes(d.reason as never) && d.id > (completed.at(-1) ?? 0)) {
            counted++;
            if (counted > config.tolerableFailures) {
              // Exactly the (n+1)-th consecutive counted failure fails the job, right after its abort.
              expect(ds[i + 1]?.type, `step ${step}: failure ${counted} with tolerable ${config.tolerableFailures}`).toBe('fail-job');
              failDue = true;
              counted = 0;
            }
          }
        }
        if (d.type === 'fail-job') {
          expect(failDue, `step ${step}: fail-job without the threshold crossed`).toBe(true);
          failDue = false;
        }
      }
      expect(c.failureCount(), `step ${step}`).toBe(counted);
      expect(c.completedCheckpoints().length).toBeLessThanOrEqual(config.numRetained);
    }
    expect(completed.length).toBeGreaterThan(0);
    expect(aborted.size).toBeGreaterThan(0);
  });
});
