/**
 * Which snapshots a running attempt asks for beyond the periodic ones, and what follows
 * when they end, as pure decisions (the house style of checkpoint/coordinator.ts): a manual
 * checkpoint, a savepoint, stop-with-savepoint (with or without drain), and the final
 * checkpoint of a bounded job. The coordinator decides how a checkpoint runs; this decides
 * what the job asks for, when it tries again and when it gives up. Every input is an event
 * that carries the time; no clock, no I/O, no randomness in here.
 *
 * Bounds: each request triggers at most its number of tries (1; the drain savepoint
 * drainSavepointMaxAttempts; the final checkpoint finalCheckpointMaxAttempts, then the
 * attempt fails); a drain waits at most drainTimeoutMs; at most maxPendingRequests requests
 * are open; every request settles (resolved or rejected) at the latest when the attempt ends.
 */
import { CheckpointFailureReason as R, type CheckpointFailureReason } from '../../checkpoint/failure-reason.ts';
import type { CheckpointType } from '../../core/checkpoint-format.ts';
import type { JobManagerConfig } from '../job-manager-config.ts';

/** Stop-with-savepoint: 'drain' ends the sources first (as if their input ended); 'stop' suspends them at the barrier. */
export type StopMode = 'drain' | 'stop';

/** The request id of a bounded job's final checkpoint (user requests get random ids). */
export const FINAL_REQUEST_ID = 'final';

export type RequestEvent =
  | { readonly type: 'request'; readonly now: number; readonly requestId: string; readonly kind: CheckpointType; readonly stop?: StopMode; readonly running: boolean }
  /** Every task has processed all its input (or a drain ended the sources). */
  | { readonly type: 'all-tasks-waiting'; readonly now: number }
  /** The coordinator completed the snapshot of a request. */
  | { readonly type: 'completed'; readonly now: number; readonly requestId: string; readonly checkpointId: number; readonly reference: string; readonly final: boolean }
  /** The coordinator aborted the snapshot of a request. */
  | { readonly type: 'aborted'; readonly now: number; readonly requestId: string; readonly reason: CheckpointFailureReason; readonly message: string }
  /** The coordinator refused to trigger for a request. */
  | { readonly type: 'rejected'; readonly now: number; readonly requestId: string; readonly reason: CheckpointFailureReason; readonly message: string }
  | { readonly type: 'tick'; readonly now: number }
  /** The attempt ended: whatever is open can never complete. */
  | { readonly type: 'ended'; readonly status: string };

export type RequestDecision =
  /** Ask the coordinator for a snapshot (forced: no min pause, no concurrency limit). */
  /** `stop`: the savepoint that stops the job (its sinks commit; an intermediate savepoint's do not). */
  | { readonly type: 'trigger'; readonly requestId: string; readonly checkpointType: CheckpointType; readonly final: boolean; readonly suspendSourcesAfter: boolean; readonly stop: boolean }
  | { readonly type: 'suspend-periodic' }
  | { readonly type: 'resume-periodic' }
  | { readonly type: 'end-sources'; readonly drain: boolean }
  | { readonly type: 'resume-sources' }
  /** The last snapshot is done: every waiting task closes. */
  | { readonly type: 'finish-tasks' }
  | { readonly type: 'resolve'; readonly requestId: string; readonly kind: CheckpointType; readonly checkpointId: number; readonly reference: string }
  /** The stop's savepoint completed (logged now; its request resolves when the job has stopped). */
  | { readonly type: 'stop-savepoint-taken'; readonly checkpointId: number; readonly reference: string }
  | { readonly type: 'reject'; readonly requestId: string; readonly message: string }
  | { readonly type: 'fail-job'; readonly message: string };

export type SnapshotRequestsConfig = Pick<JobManagerConfig, 'finalCheckpointMaxAttempts' | 'drainSavepointMaxAttempts' | 'drainTimeoutMs' | 'maxPendingRequests'>;

interface OpenRequest {
  readonly id: string;
  readonly kind: CheckpointType;
  /** Triggers asked for so far. */
  tries: number;
}

interface Stop {
  readonly id: string;
  readonly mode: StopMode;
  /** draining: sources ended, waiting for every task; snapshot: the savepoint is being taken; taken: it completed. */
  phase: 'draining' | 'snapshot' | 'taken';
  readonly since: number;
  /** The savepoint, once taken: the request resolves with it when the attempt ends FINISHED. */
  taken?: { readonly checkpointId: number; readonly reference: string };
}

export class SnapshotRequestLogic {
  private readonly open = new Map<string, OpenRequest>();
  private stop: Stop | undefined;
  private final: { tries: number; done: boolean } | undefined;
  private allWaiting = false;
  /** The sources were ended by a drain (they end once; a later drain just waits again). */
  private sourcesDrained = false;
  private ended = false;

  constructor(
    private readonly config: SnapshotRequestsConfig,
    /** Periodic checkpoints are on: a bounded job then ends with a final checkpoint. */
    private readonly checkpointing: boolean,
  ) {}

  /** Open requests (for tests and invariants). */
  openRequests(): string[] {
    return [...this.open.keys()];
  }
  stopping(): boolean {
    return this.stop !== undefined;
  }

  /** When the shell should next send a tick (the drain deadline), or undefined. */
  nextWakeup(): number | undefined {
    const s = this.stop;
    return s?.mode === 'drain' && s.phase === 'draining' && !this.ended ? s.since + this.config.drainTimeoutMs : undefined;
  }

  handle(e: RequestEvent): RequestDecision[] {
    if (this.ended) return [];
    switch (e.type) {
      case 'request':
        return this.onRequest(e.now, e.requestId, e.kind, e.stop, e.running);
      case 'all-tasks-waiting':
        return this.onAllTasksWaiting();
      case 'completed':
        return this.onCompleted(e.requestId, e.checkpointId, e.reference, e.final);
      case 'aborted':
        return this.onFailed(e.requestId, `failed: ${e.reason}: ${e.message}`, e.reason, true);
      case 'rejected':
        return this.onFailed(e.requestId, `rejected: ${e.reason}: ${e.message}`, e.reason, false);
      case 'tick':
        return this.onTick(e.now);
      case 'ended':
        return this.onEnded(e.status);
    }
  }

  private onRequest(now: number, id: string, kind: CheckpointType, stop: StopMode | undefined, running: boolean): RequestDecision[] {
    const refuse = (message: string): RequestDecision[] => [{ type: 'reject', requestId: id, message }];
    if (id === FINAL_REQUEST_ID || this.open.has(id)) return refuse(`request id ${id} is already in use`);
    if (kind === 'checkpoint' && stop !== undefined) return refuse('only a savepoint can stop the job');
    if (!running) return refuse(kind === 'checkpoint' ? 'the job is not running' : 'the job is still starting (not all tasks are running)');
    if (kind === 'savepoint' && this.stop !== undefined) return refuse('the job is already stopping');
    if (stop !== undefined && this.final !== undefined) return refuse('the job is already finishing');
    if (this.open.size >= this.config.maxPendingRequests) return refuse(`too many snapshot requests in progress (${this.config.maxPendingRequests})`);
    this.open.set(id, { id, kind, tries: 0 });
    if (stop === undefined) return [this.trigger(id, kind, false)];
    this.stop = { id, mode: stop, phase: stop === 'drain' ? 'draining' : 'snapshot', since: now };
    // The stop's savepoint is the job's last snapshot: no periodic checkpoint after it.
    if (stop === 'drain') {
      if (this.sourcesDrained) return [{ type: 'suspend-periodic' }];
      this.sourcesDrained = true;
      return [{ type: 'suspend-periodic' }, { type: 'end-sources', drain: true }];
    }
    return [{ type: 'suspend-periodic' }, this.trigger(id, 'savepoint', false)];
  }

  private onAllTasksWaiting(): RequestDecision[] {
    if (this.allWaiting) return [];
    this.allWaiting = true;
    const s = this.stop;
    // Stop without drain: the savepoint was the last snapshot; the tasks ended without finishing.
    if (s?.mode === 'stop' && s.phase === 'taken') return [{ type: 'finish-tasks' }];
    // The input ended by itself while the stop's savepoint was still being taken: the tasks wait
    // for it (they join it directly), and finishing them now would end the job with neither the
    // savepoint nor a final checkpoint, its output since the last checkpoint never committed.
    // Its completion finishes them (onCompleted); its failure asks for the final checkpoint (onFailed).
    if (s?.mode === 'stop') return [];
    if (s?.mode === 'drain') {
      // Drained: the final snapshot is the savepoint, so sinks commit everything into it.
      s.phase = 'snapshot';
      return [this.trigger(s.id, 'savepoint', true)];
    }
    return this.finishWithoutSavepoint();
  }

  /** One last checkpoint commits all output; without checkpointing the tasks just close. */
  private finishWithoutSavepoint(): RequestDecision[] {
    if (!this.checkpointing) return [{ type: 'finish-tasks' }];
    // Reached once per attempt: from the end of the input, or from a drain that gave up.
    if (this.final !== undefined) throw new Error('the final checkpoint was requested twice');
    this.final = { tries: 0, done: false };
    return [this.trigger(FINAL_REQUEST_ID, 'checkpoint', true)];
  }

  private onCompleted(id: string, checkpointId: number, reference: string, final: boolean): RequestDecision[] {
    const out: RequestDecision[] = [];
    if (id === FINAL_REQUEST_ID && this.final !== undefined) this.final.done = true;
    const r = this.open.get(id);
    if (r !== undefined) {
      this.open.delete(id);
      if (this.stop?.id === id) {
        // Resolved only once the job has stopped (onEnded), as Flink's stop-with-savepoint:
        // resolved here, `weir stop` printed the path and exited 0 while a failure in the tasks'
        // last steps (a sink's close, a commit) restarted the job from that savepoint, and a
        // copy started from it elsewhere ran beside it.
        this.stop.phase = 'taken';
        this.stop.taken = { checkpointId, reference };
        out.push({ type: 'stop-savepoint-taken', checkpointId, reference });
        // Stop without drain: the savepoint holds everything; sources end without finishing.
        if (this.stop.mode === 'stop') {
          out.push({ type: 'end-sources', drain: false });
          // Every task already waits (its input ended while the savepoint was taken): none will say so again.
          if (this.allWaiting) out.push({ type: 'finish-tasks' });
        }
      } else {
        out.push({ type: 'resolve', requestId: id, kind: r.kind, checkpointId, reference });
      }
    }
    if (final) out.push({ type: 'finish-tasks' });
    return out;
  }

  private onFailed(id: string, what: string, reason: CheckpointFailureReason, aborted: boolean): RequestDecision[] {
    if (id === FINAL_REQUEST_ID) return this.onFinalFailed(what, reason);
    const r = this.open.get(id);
    if (r === undefined) return [];
    const s = this.stop?.id === id ? this.stop : undefined;
    // Drained already (sources ended): the final savepoint is tried again, a bounded number of times.
    if (aborted && s?.mode === 'drain' && s.phase === 'snapshot' && r.tries < this.config.drainSavepointMaxAttempts) {
      return [this.trigger(id, 'savepoint', true)];
    }
    this.open.delete(id);
    const out: RequestDecision[] = [];
    if (s !== undefined) {
      this.stop = undefined;
      if (s.phase === 'snapshot' && (s.mode === 'drain' || this.allWaiting)) {
        // Drained, or the input ended by itself meanwhile: every task waits, for the final checkpoint now.
        out.push(...this.finishWithoutSavepoint());
      } else {
        // A failed stop leaves the job running: suspended sources read on, checkpoints resume.
        if (aborted) out.push({ type: 'resume-sources' });
        out.push({ type: 'resume-periodic' });
      }
    }
    out.push({ type: 'reject', requestId: id, message: `${r.kind} ${what}` });
    return out;
  }

  private onFinalFailed(what: string, reason: CheckpointFailureReason): RequestDecision[] {
    const f = this.final;
    if (f === undefined || f.done || reason === R.CHECKPOINT_COORDINATOR_SHUTDOWN) return [];
    // The final checkpoint must happen for the output to be committed: ask again, a bounded
    // number of times; then the attempt fails and the restart strategy decides.
    if (f.tries < this.config.finalCheckpointMaxAttempts) return [this.trigger(FINAL_REQUEST_ID, 'checkpoint', true)];
    return [{ type: 'fail-job', message: `the final checkpoint ${what}, after ${f.tries} tries` }];
  }

  private onTick(now: number): RequestDecision[] {
    const s = this.stop;
    if (s?.mode !== 'drain' || s.phase !== 'draining' || now < s.since + this.config.drainTimeoutMs) return [];
    // The sources have ended and cannot be resumed: the job goes on draining and finishes by
    // itself (with a final checkpoint); the caller learns that the stop did not happen.
    this.stop = undefined;
    this.open.delete(s.id);
    return [
      { type: 'resume-periodic' },
      { type: 'reject', requestId: s.id, message: `the job did not drain within ${this.config.drainTimeoutMs} ms; it finishes by itself without a savepoint` },
    ];
  }

  private onEnded(status: string): RequestDecision[] {
    this.ended = true;
    const out: RequestDecision[] = [];
    const taken = this.stop?.taken;
    if (taken !== undefined) {
      const id = this.stop!.id;
      if (status === 'FINISHED') {
        out.push({ type: 'resolve', requestId: id, kind: 'savepoint', checkpointId: taken.checkpointId, reference: taken.reference });
      } else {
        const how = status === 'FAILED' ? 'failed before it stopped (its restart strategy decides whether it runs on, from that savepoint)' : `ended ${status} before it stopped`;
        out.push({ type: 'reject', requestId: id, message: `savepoint ${taken.checkpointId} was taken at ${taken.reference}, but the job ${how}; do not start another job from it while this one may run` });
      }
    }
    for (const r of this.open.values()) out.push({ type: 'reject', requestId: r.id, message: `the job ended (${status}) before the ${r.kind} completed` });
    this.open.clear();
    return out;
  }

  private trigger(id: string, kind: CheckpointType, final: boolean): RequestDecision {
    if (id === FINAL_REQUEST_ID) this.final!.tries++;
    else this.open.get(id)!.tries++;
    const stop = this.stop?.id === id;
    return { type: 'trigger', requestId: id, checkpointType: kind, final, suspendSourcesAfter: stop && this.stop!.mode === 'stop', stop };
  }
}
