/**
 * The checkpoint coordinator's decisions, kept pure: every input is an event that carries
 * the time, every output is a list of decisions for a thin shell to carry out (timers, RPCs
 * to tasks, storage I/O). No clock, no I/O, no randomness in here, so every race (late acks,
 * timeouts against completion, failures mid-checkpoint) can be replayed in a unit test.
 * Behaviour follows Flink's CheckpointCoordinator, CheckpointRequestDecider and
 * CheckpointFailureManager (see shared/reference/flink-checkpointing.md, section 2).
 */
import type { CheckpointConfig } from './config.ts';
import { CheckpointFailureReason as R, countsTowardTolerableFailures, type CheckpointFailureReason } from './failure-reason.ts';
import type { CheckpointType, TaskAck } from '../core/checkpoint-format.ts';
import type { TaskId } from '../core/task-id.ts';

export type TaskStatus = 'deploying' | 'running' | 'waiting-final' | 'finished';

export interface TaskInfoForCoordinator {
  readonly id: TaskId;
  readonly isSource: boolean;
}

export type CoordinatorEvent =
  | { readonly type: 'tick'; readonly now: number }
  | { readonly type: 'task-status'; readonly now: number; readonly task: TaskId; readonly status: TaskStatus }
  /** `stop`: the savepoint that stops the job (stop-with-savepoint, drained or not). */
  | { readonly type: 'request'; readonly now: number; readonly checkpointType: CheckpointType; readonly requestId: string; readonly final?: boolean; readonly stop?: boolean }
  | { readonly type: 'ack'; readonly now: number; readonly id: number; readonly ack: TaskAck }
  | { readonly type: 'decline'; readonly now: number; readonly id: number; readonly task: TaskId; readonly reason: CheckpointFailureReason; readonly message: string }
  | { readonly type: 'task-failed'; readonly now: number; readonly task: TaskId }
  | { readonly type: 'finalized'; readonly now: number; readonly id: number }
  | { readonly type: 'finalize-failed'; readonly now: number; readonly id: number; readonly message: string }
  /** io: the checkpoint storage failed (creating the location, recording the id): counted, as Flink's IO_EXCEPTION. */
  | { readonly type: 'trigger-failed'; readonly now: number; readonly id: number; readonly message: string; readonly io?: boolean }
  | { readonly type: 'shutdown'; readonly now: number }
  /** Stop-with-savepoint in progress: no periodic checkpoints (Flink stops the scheduler). */
  | { readonly type: 'suspend-periodic' }
  | { readonly type: 'resume-periodic'; readonly now: number };

export type Decision =
  /** Snapshot coordinator-side state (split enumerators), then trigger `tasks` directly. */
  | { readonly type: 'trigger'; readonly id: number; readonly timestamp: number; readonly checkpointType: CheckpointType; readonly tasks: readonly TaskId[]; readonly requestId: string | undefined; readonly final: boolean }
  /** A task that finished processing joins a pending checkpoint by a direct trigger. */
  | { readonly type: 'trigger-task'; readonly id: number; readonly timestamp: number; readonly checkpointType: CheckpointType; readonly task: TaskId }
  /** All acks are in: write the metadata (last, atomically), then report 'finalized'. */
  | { readonly type: 'finalize'; readonly id: number; readonly timestamp: number; readonly checkpointType: CheckpointType; readonly acks: readonly TaskAck[]; readonly requestId: string | undefined }
  /**
   * Checkpoint or savepoint `id` completed. `notifyTasks`: whether tasks hear of it (their
   * notifyCheckpointComplete: sinks commit, sources acknowledge). Not for an intermediate
   * savepoint, as since Flink 1.15: recovery after a failure starts from the latest checkpoint,
   * not from a savepoint, so output committed at a savepoint newer than that checkpoint would
   * be written again (or the restart refused). Its committables are committed by the next
   * checkpoint, or at a restore from the savepoint itself.
   */
  | { readonly type: 'notify-complete'; readonly id: number; readonly checkpointType: CheckpointType; readonly requestId: string | undefined; readonly final: boolean; readonly notifyTasks: boolean }
  | { readonly type: 'abort'; readonly id: number; readonly reason: CheckpointFailureReason; readonly message: string; readonly checkpointType: CheckpointType; readonly discard: readonly TaskAck[]; readonly requestId: string | undefined }
  /** Completed checkpoints beyond the retained number: delete what no retained checkpoint references. */
  | { readonly type: 'discard-completed'; readonly ids: readonly number[] }
  /** State of an ack that belongs to no live checkpoint (late, or for an unknown id). */
  | { readonly type: 'discard-ack'; readonly id: number; readonly ack: TaskAck }
  | { readonly type: 'fail-job'; readonly message: string }
  | { readonly type: 'request-rejected'; readonly requestId: string; readonly reason: CheckpointFailureReason; readonly message: string };

export type AckResult = 'SUCCESS' | 'DUPLICATE' | 'UNKNOWN' | 'DISCARDED';

interface Pending {
  readonly id: number;
  readonly timestamp: number;
  readonly type: CheckpointType;
  readonly requestId: string | undefined;
  readonly final: boolean;
  /** A savepoint that stops the job: committed, unlike an intermediate one. */
  readonly stop: boolean;
  readonly waitingFor: Set<TaskId>;
  readonly acks: Map<TaskId, TaskAck>;
  finalizing: boolean;
}

export interface CompletedCheckpointInfo {
  readonly id: number;
  readonly timestamp: number;
  readonly completedAt: number;
  /** Files of the job's shared directory its incremental chains name (rebuilds the shared-state registry). */
  readonly sharedFiles?: readonly string[];
  /**
   * Restored from storage but off the job's history now: newer than the checkpoint the attempt
   * restored from (it failed to restore, or the user went back past it). Retention discards
   * these first, so they never cost the job a good checkpoint (the one it restored from).
   */
  readonly abandoned?: boolean;
}

/** Retention order, first discarded first: abandoned checkpoints, then by id. */
function retentionOrder(a: CompletedCheckpointInfo, b: CompletedCheckpointInfo): number {
  return (a.abandoned === true ? 0 : 1) - (b.abandoned === true ? 0 : 1) || a.id - b.id;
}

export class CheckpointCoordinatorLogic {
  private readonly pending = new Map<number, Pending>();
  private readonly completed: CompletedCheckpointInfo[] = [];
  private readonly tasks = new Map<TaskId, { isSource: boolean; status: TaskStatus }>();
  /** Ids aborted recently: acks for them are late ("ghost") acks. */
  private readonly recentlyAborted: number[] = [];
  private nextId: number;
  private lastTriggerAt = Number.NEGATIVE_INFINITY;
  private lastCompletedAt = Number.NEGATIVE_INFINITY;
  private lastCompletedId = 0;
  private consecutiveFailures = 0;
  private shutDown = false;
  private periodicSuspended = false;
  /**
   * The final checkpoint of a bounded job, requested while a periodic checkpoint was still in
   * flight: it waits for that one to end. Forced past it, the final checkpoint could complete
   * first and subsume a periodic checkpoint whose acks were all in (reported as a failure for
   * nothing); every task has finished, so the periodic one ends soon, by its timeout at worst.
   */
  private deferredFinal: { readonly requestId: string } | undefined;
  private lastNow = Number.NEGATIVE_INFINITY;
  lastAckResult: AckResult | undefined;

  constructor(
    readonly config: CheckpointConfig,
    tasks: readonly TaskInfoForCoordinator[],
    /** The first id to use (after a restore: one past every id seen in storage). */
    firstId = 1,
    /** Checkpoints already completed (restored): they count toward retention. */
    restoredCompleted: readonly CompletedCheckpointInfo[] = [],
  ) {
    for (const t of tasks) this.tasks.set(t.id, { isSource: t.isSource, status: 'deploying' });
    this.nextId = firstId;
    for (const c of restoredCompleted) this.completed.push(c);
    this.completed.sort(retentionOrder);
    if (restoredCompleted.length > 0) this.lastCompletedId = Math.max(...restoredCompleted.map((c) => c.id));
  }

  /** Ids of pending checkpoints, for tests and stats. */
  pendingIds(): number[] {
    return [...this.pending.keys()];
  }
  completedCheckpoints(): readonly CompletedCheckpointInfo[] {
    return this.completed;
  }
  failureCount(): number {
    return this.consecutiveFailures;
  }

  /** When the periodic scheduler should next look (for the shell's timer), or undefined. */
  nextWakeup(): number | undefined {
    if (this.shutDown) return undefined;
    const times: number[] = [];
    // A checkpoint whose metadata is being written does not expire (see expire): its timeout is
    // no reason to wake, and once passed it asked for a wake-up in the past at every tick.
    for (const p of this.pending.values()) if (!p.finalizing) times.push(p.timestamp + this.config.timeoutMs);
    const interval = this.config.intervalMs;
    if (interval !== undefined && !this.periodicSuspended && this.pendingForPeriodic() < this.config.maxConcurrent) {
      times.push(Math.max(this.lastTriggerAt + interval, this.lastCompletedAt + this.config.minPauseMs));
    }
    const finite = times.filter((t) => Number.isFinite(t));
    return finite.length > 0 ? Math.min(...finite) : undefined;
  }

  handle(e: CoordinatorEvent): Decision[] {
    const out: Decision[] = [];
    if ('now' in e) this.lastNow = e.now;
    this.dispatch(e, out);
    this.maybeTriggerDeferredFinal(out);
    return out;
  }

  private dispatch(e: CoordinatorEvent, out: Decision[]): void {
    switch (e.type) {
      case 'tick':
        this.expire(e.now, out);
        // An expiry that fails the job ends the attempt: no new checkpoint in the same tick.
        if (!out.some((d) => d.type === 'fail-job')) this.maybeTriggerPeriodic(e.now, out);
        break;
      case 'task-status':
        this.onTaskStatus(e.task, e.status, out);
        // The first periodic checkpoint comes one interval after every task is running.
        if (this.lastTriggerAt === Number.NEGATIVE_INFINITY && this.allTasksReady()) this.lastTriggerAt = e.now;
        break;
      case 'request':
        this.onRequest(e.now, e.checkpointType, e.requestId, e.final ?? false, e.stop ?? false, out);
        break;
      case 'ack':
        this.lastAckResult = this.onAck(e.id, e.ack, out);
        break;
      case 'decline':
        if (this.pending.has(e.id)) this.abort(e.id, e.reason, `${e.message} (task ${e.task})`, out);
        break;
      case 'task-failed':
        for (const p of [...this.pending.values()]) {
          if (!p.acks.has(e.task)) this.abort(p.id, R.TASK_FAILURE, `task ${e.task} failed`, out);
        }
        break;
      case 'finalized':
        this.onFinalized(e.id, e.now, out);
        break;
      case 'finalize-failed':
        // Only a checkpoint whose metadata is being written can fail to finalize.
        if (this.pending.get(e.id)?.finalizing) this.abort(e.id, R.FINALIZE_CHECKPOINT_FAILURE, e.message, out);
        break;
      case 'trigger-failed':
        // Storage that cannot take checkpoints counts toward tolerable failures (Flink: an
        // IOException while triggering is IO_EXCEPTION); before, every checkpoint failed
        // uncounted and the job ran on without any, its exactly-once sinks committing nothing.
        if (this.pending.has(e.id)) this.abort(e.id, e.io === true ? R.IO_EXCEPTION : R.TRIGGER_CHECKPOINT_FAILURE, e.message, out);
        break;
      case 'suspend-periodic':
        this.periodicSuspended = true;
        break;
      case 'resume-periodic':
        this.periodicSuspended = false;
        break;
      case 'shutdown':
        this.shutDown = true;
        for (const p of [...this.pending.values()]) this.abort(p.id, R.CHECKPOINT_COORDINATOR_SHUTDOWN, 'the job is shutting down', out);
        if (this.deferredFinal !== undefined) {
          out.push({ type: 'request-rejected', requestId: this.deferredFinal.requestId, reason: R.CHECKPOINT_COORDINATOR_SHUTDOWN, message: 'the job is shutting down' });
          this.deferredFinal = undefined;
        }
        break;
    }
  }

  private maybeTriggerDeferredFinal(out: Decision[]): void {
    if (this.deferredFinal === undefined || this.shutDown || this.pendingPeriodic() > 0) return;
    if (out.some((d) => d.type === 'fail-job')) return; // the attempt ends; the next one asks again
    const { requestId } = this.deferredFinal;
    this.deferredFinal = undefined;
    this.trigger(this.lastNow, 'checkpoint', requestId, true, false, out);
  }

  private pendingPeriodic(): number {
    let n = 0;
    for (const p of this.pending.values()) if (p.type === 'checkpoint' && !p.final) n++;
    return n;
  }

  /**
   * Snapshots that hold back a periodic trigger: checkpoints and savepoints in progress (Flink
   * counts pending savepoints against max-concurrent-checkpoints too). An unaligned checkpoint
   * started under a savepoint overtakes the savepoint's barrier queued behind the backlog, and
   * downstream drops that barrier as stale or aborts its alignment: under backpressure
   * savepoints then almost never completed.
   */
  private pendingForPeriodic(): number {
    let n = 0;
    for (const p of this.pending.values()) if (!p.final) n++;
    return n;
  }

  private allTasksReady(): boolean {
    for (const t of this.tasks.values()) if (t.status === 'deploying' || t.status === 'finished') return false;
    return true;
  }

  /** Tasks the checkpoint starts at: running sources, and tasks that finished processing (they get no barrier). */
  private triggerTasks(): TaskId[] {
    const ids: TaskId[] = [];
    for (const [id, t] of this.tasks) if ((t.isSource && t.status === 'running') || t.status === 'waiting-final') ids.push(id);
    return ids;
  }

  private maybeTriggerPeriodic(now: number, out: Decision[]): void {
    const interval = this.config.intervalMs;
    if (interval === undefined || this.shutDown || this.periodicSuspended) return;
    if (now < this.lastTriggerAt + interval) return;
    if (this.pendingForPeriodic() >= this.config.maxConcurrent) return;
    // min-pause: from the end of the last completed checkpoint to the start of the next.
    if (now < this.lastCompletedAt + this.config.minPauseMs) return;
    if (!this.allTasksReady()) return; // NOT_ALL_REQUIRED_TASKS_RUNNING: retried on the next tick, not counted
    // While every task waits for the final checkpoint, the final request triggers instead.
    if ([...this.tasks.values()].every((t) => t.status === 'waiting-final')) return;
    this.trigger(now, 'checkpoint', undefined, false, false, out);
  }

  private trigger(now: number, type: CheckpointType, requestId: string | undefined, final: boolean, stop: boolean, out: Decision[]): void {
    const id = this.nextId++;
    this.lastTriggerAt = now;
    const waitingFor = new Set([...this.tasks.keys()]);
    this.pending.set(id, { id, timestamp: now, type, requestId, final, stop, waitingFor, acks: new Map(), finalizing: false });
    out.push({ type: 'trigger', id, timestamp: now, checkpointType: type, tasks: this.triggerTasks(), requestId, final });
  }

  private onRequest(now: number, type: CheckpointType, requestId: string, final: boolean, stop: boolean, out: Decision[]): void {
    if (this.shutDown) {
      out.push({ type: 'request-rejected', requestId, reason: R.CHECKPOINT_COORDINATOR_SHUTDOWN, message: 'the job is shutting down' });
      return;
    }
    if (!this.allTasksReady()) {
      out.push({ type: 'request-rejected', requestId, reason: R.NOT_ALL_REQUIRED_TASKS_RUNNING, message: 'not all tasks are running yet' });
      return;
    }
    if (final && type === 'checkpoint' && this.pendingPeriodic() > 0) {
      // Waits for the periodic checkpoint in flight (see deferredFinal); one final request at a time.
      if (this.deferredFinal !== undefined) {
        out.push({ type: 'request-rejected', requestId, reason: R.CHECKPOINT_DECLINED, message: 'a final checkpoint is already waiting' });
        return;
      }
      this.deferredFinal = { requestId };
      return;
    }
    // Savepoints and the final checkpoint are forced: no min pause, no max-concurrent limit.
    this.trigger(now, type, requestId, final, stop, out);
  }

  private onTaskStatus(task: TaskId, status: TaskStatus, out: Decision[]): void {
    const t = this.tasks.get(task);
    if (t === undefined) return;
    t.status = status;
    if (status !== 'waiting-final') return;
    // A task that finished processing will see no more barriers: it joins pending checkpoints directly.
    for (const p of this.pending.values()) {
      if (!p.acks.has(task) && p.waitingFor.has(task)) {
        out.push({ type: 'trigger-task', id: p.id, timestamp: p.timestamp, checkpointType: p.type, task });
      }
    }
  }

  private onAck(id: number, ack: TaskAck, out: Decision[]): AckResult {
    const p = this.pending.get(id);
    if (p === undefined) {
      // Late acks for aborted checkpoints, and acks for ids never seen: their state is garbage.
      out.push({ type: 'discard-ack', id, ack });
      return this.recentlyAborted.includes(id) || id < this.nextId ? 'DISCARDED' : 'UNKNOWN';
    }
    if (p.acks.has(ack.task)) return 'DUPLICATE';
    if (!p.waitingFor.has(ack.task)) {
      out.push({ type: 'discard-ack', id, ack });
      return 'UNKNOWN';
    }
    p.acks.set(ack.task, ack);
    if (p.acks.size === p.waitingFor.size && !p.finalizing) {
      p.finalizing = true;
      out.push({ type: 'finalize', id, timestamp: p.timestamp, checkpointType: p.type, acks: [...p.acks.values()], requestId: p.requestId });
    }
    return 'SUCCESS';
  }

  private onFinalized(id: number, now: number, out: Decision[]): void {
    const p = this.pending.get(id);
    if (p === undefined || !p.finalizing) return;
    if (p.type === 'checkpoint' && id < this.lastCompletedId) {
      // A newer checkpoint completed while this one's metadata was being written: it is
      // subsumed rather than completed out of order (its directory is deleted).
      this.abort(id, R.CHECKPOINT_SUBSUMED, `subsumed by checkpoint ${this.lastCompletedId}`, out);
      return;
    }
    this.pending.delete(id);
    if (p.type === 'savepoint') {
      // Savepoints belong to the user: they neither subsume nor get subsumed. Only the one that
      // stops the job is committed (the job ends there: it is what a resume starts from).
      if (p.stop) this.subsumeOlder(id, `subsumed by the savepoint ${id} that stops the job`, out);
      out.push({ type: 'notify-complete', id, checkpointType: p.type, requestId: p.requestId, final: p.final, notifyTasks: p.stop || p.final });
      return;
    }
    this.completed.push({ id, timestamp: p.timestamp, completedAt: now });
    this.completed.sort(retentionOrder);
    this.lastCompletedAt = now;
    if (id > this.lastCompletedId) this.lastCompletedId = id;
    this.consecutiveFailures = 0;
    this.subsumeOlder(id, `subsumed by checkpoint ${id}`, out);
    out.push({ type: 'notify-complete', id, checkpointType: p.type, requestId: p.requestId, final: p.final, notifyTasks: true });
    const excess = this.completed.length - this.config.numRetained;
    if (excess > 0) {
      const dropped = this.completed.splice(0, excess).map((c) => c.id);
      out.push({ type: 'discard-completed', ids: dropped });
    }
  }

  /**
   * Older pending checkpoints (savepoints excepted) are of no use once `id` completed: aborted as
   * subsumed, which counts no failure. Also for the savepoint that stops the job: the tasks end
   * after it, dropping the snapshots still in flight, and those declines counted toward the
   * tolerable failures (with 0, a stopped job failed over and ran on past its savepoint).
   */
  private subsumeOlder(id: number, message: string, out: Decision[]): void {
    for (const older of [...this.pending.values()]) {
      if (older.id < id && older.type === 'checkpoint' && !older.finalizing) this.abort(older.id, R.CHECKPOINT_SUBSUMED, message, out);
    }
  }

  private abort(id: number, reason: CheckpointFailureReason, message: string, out: Decision[]): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    this.recentlyAborted.push(id);
    if (this.recentlyAborted.length > 64) this.recentlyAborted.shift();
    out.push({ type: 'abort', id, reason, message, checkpointType: p.type, discard: [...p.acks.values()], requestId: p.requestId });
    // Only consecutive failures of counted reasons, newer than the last success, count (CheckpointFailureManager).
    if (p.type === 'checkpoint' && countsTowardTolerableFailures(reason) && id > this.lastCompletedId) {
      this.consecutiveFailures++;
      if (this.consecutiveFailures > this.config.tolerableFailures) {
        out.push({ type: 'fail-job', message: `Exceeded checkpoint tolerable failure threshold (${this.config.tolerableFailures}); last failure: checkpoint ${id}: ${reason}: ${message}` });
        this.consecutiveFailures = 0;
      }
    }
  }

  /**
   * Aborts checkpoints past the timeout, except those whose metadata is being written: that
   * write ends them ('finalized' or 'finalize-failed', bounded by the storage's own timeouts).
   * Aborted meanwhile, the shell deleted the directory and released the shared files while the
   * write could still land: a checkpoint reported failed, and its tasks told so, would then
   * exist on storage, its chain files gone.
   */
  private expire(now: number, out: Decision[]): void {
    for (const p of [...this.pending.values()]) {
      if (p.finalizing) continue;
      if (now >= p.timestamp + this.config.timeoutMs) {
        this.abort(p.id, R.CHECKPOINT_EXPIRED, `checkpoint ${p.id} expired before completing (timeout ${this.config.timeoutMs} ms)`, out);
      }
    }
  }
}
