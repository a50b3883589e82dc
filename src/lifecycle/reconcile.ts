/**
 * Reconciliation as a pure decision (issue 13 point 3): observe -> validate -> reconcile.
 * reconcile(desired, status, observation, now) returns the next status and at most one action;
 * the shell writes the status first (the write-ahead log: the action's intent is in
 * status.operation) and only then carries the action out. No I/O and no clock here, so every
 * race (a savepoint that fails, a job that dies mid-upgrade, a manager killed between two
 * steps) is replayed deterministically in tests.
 *
 * Rules (the Flink Kubernetes operator's, see shared/reference/flink-operator-and-managed-flink.md):
 * - upgrade modes: stateless cancels and starts empty; savepoint stops with a savepoint and
 *   starts from it (a failed or timed-out savepoint is an error event and a retry after a
 *   backoff, never a fallback to stateless; a job that is not running falls back to its latest
 *   checkpoint); last-state cancels and resumes from the latest checkpoint, or takes a savepoint
 *   when that checkpoint is older than lastState.maxCheckpointAge.
 * - a job that ends on its own is FAILED with its reason ("manual restore required" when no
 *   snapshot of it is known); a new spec, suspend or resume still takes effect on it.
 * - an upgrade not stable (running with a completed checkpoint) within the readiness timeout
 *   rolls back to the last stable spec and its state; the user's spec is not rewritten, and a
 *   newer spec interrupts the rollback.
 */
import { actionOf, type Action } from './actions.ts';
import { foldRestarts, unhealthy } from './health.ts';
import { backoffMs, nextDisposal, SAVEPOINT_MAX_FAILURES } from './snapshots.ts';
import { deploymentKey, type AppSpec } from './spec.ts';
import {
  MAX_EVENTS, MAX_FAILED_SAVEPOINT_RECORDS, TERMINAL, opKey, stopSavepointsToProbe,
  type AppStatus, type CheckpointRef, type Deployment, type Desired, type Lifecycle, type Observation, type Operation, type Purpose, type SavepointRecord, type SavepointTrigger,
} from './status.ts';

export interface ReconcileInput {
  readonly desired: Desired;
  readonly status: AppStatus;
  readonly observed: Observation;
  /** Epoch ms from the injected clock. */
  readonly nowMs: number;
}

export interface Decision {
  readonly status: AppStatus;
  /** To carry out after `status` is written. */
  readonly action?: Action;
}

/** A start or cancel the target knows of but has not shown progress on within this long is issued again (both are idempotent). */
export const REISSUE_AFTER_MS = 60_000;

export function reconcile(input: ReconcileInput): Decision {
  const r = new Step(input);
  const action = r.run();
  r.s.lifecycle = r.lifecycle();
  return action === undefined ? { status: r.s } : { status: r.s, action };
}

class Step {
  readonly s: AppStatus;
  private readonly desired: Desired;
  private readonly observed: Observation;
  private readonly now: number;
  /**
   * The generation accepted before this pass: what a deployment found ended in this pass was
   * running. A spec applied just before the end is noticed is newer, and is started, not held.
   */
  private runningGeneration = 0;

  constructor(input: ReconcileInput) {
    this.s = structuredClone(input.status);
    this.desired = input.desired;
    this.observed = input.observed;
    this.now = input.nowMs;
  }

  run(): Action | undefined {
    this.observeDeployment();
    if (this.s.operation !== undefined) {
      const waiting = this.progress(this.s.operation);
      if (waiting !== 'done') return waiting.reissue ? actionOf(this.s.operation!, this.s) : undefined;
      this.s.operation = undefined;
    }
    this.runningGeneration = this.s.observedGeneration;
    this.acceptGeneration();
    return this.decide(0);
  }

  // ---- observe

  private observeDeployment(): void {
    const d = this.s.deployment;
    if (d === undefined) return;
    const o = this.observed.deployments[d.id];
    if (o === undefined) return;
    if (o.lastCheckpoint !== undefined && (d.lastCheckpoint === undefined || o.lastCheckpoint.completedAt > d.lastCheckpoint.completedAt)) d.lastCheckpoint = o.lastCheckpoint;
    foldRestarts(d, o.restarts, d.spec, this.now);
    if (o.state !== 'RUNNING') return;
    d.runningSince ??= this.now;
    const checkpoints = d.spec.configuration['execution.checkpointing.interval'] !== undefined;
    const stableNow = !checkpoints || (d.lastCheckpoint !== undefined && d.lastCheckpoint.completedAt >= d.startedAt);
    if (stableNow && !d.stable) {
      d.stable = true;
      this.s.lastStableSpec = d.spec;
      this.s.upgradeFailures = 0;
      this.event('Normal', d.rollback ? 'RolledBack' : 'Stable', `deployment ${d.id} (version ${d.spec.job.version}) is running${checkpoints ? ' with a completed checkpoint' : ''}`);
    }
  }

  // ---- an operation in flight

  private progress(op: Operation): 'done' | { reissue: boolean } {
    const outcome = this.observed.operations[opKey(op)];
    const age = this.now - op.issuedAt;
    const spec = this.s.deployment?.spec ?? this.desired.spec;
    switch (op.kind) {
      case 'start': {
        if (this.observed.deployments[op.deploymentId] !== undefined) {
          this.event('Normal', 'Submit', `started deployment ${op.deploymentId}${this.s.deployment?.from !== undefined ? ` from ${this.s.deployment.from}` : ' with empty state'}`);
          return 'done';
        }
        // Never carried out (a manager killed before it; starts are idempotent by deployment id): again, at once.
        if (outcome === undefined) return { reissue: true };
        return this.reissueIfOld(op, age);
      }
      case 'stop': {
        const o = this.observed.deployments[op.deploymentId];
        const ended = o === undefined || TERMINAL.has(o.state);
        const rec = op.savepointId !== undefined ? this.record(op.savepointId) : undefined;
        if (rec !== undefined) {
          if (ended && this.ranOnPastStopSavepoint(op, rec)) return 'done';
          if (outcome?.state === 'completed' && outcome.path !== undefined && ended) {
            this.complete(rec, outcome.path);
            this.stopped(op, outcome.path);
            return 'done';
          }
          const failed = outcome?.state === 'failed' || age > spec.savepoints.timeoutMs;
          // A stop the target knows nothing of (a restarted manager: outcomes live in its memory) is
          // issued again at once, keeping issuedAt for the timeout: the target then finds the
          // savepoint the first stop wrote, or finishes the stop. Never waited out into a fallback.
          if (!failed) return { reissue: outcome === undefined };
          // Before giving up: the job ended and its savepoint is on disk (the stop completed while
          // the manager was down past the timeout, or after the target stopped waiting for it).
          const found = this.observed.savepoints?.[rec.id];
          if (found !== undefined && ended) {
            this.complete(rec, found.path);
            this.stopped(op, found.path);
            return 'done';
          }
          const why = outcome?.error ?? `no savepoint within ${spec.savepoints.timeoutMs} ms`;
          // Or an earlier stop of this deployment, given up on and retried, completed after all
          // and ended the job (whose checkpoints went with it): resume from that savepoint, never
          // from the checkpoint before it (discarded, or state rewound and output written again).
          const d = this.s.deployment;
          const late = ended && d !== undefined && d.id === op.deploymentId ? this.lateStopSavepoint(d) : undefined;
          if (late !== undefined) {
            rec.state = 'FAILED';
            rec.error = `${why}; savepoint ${late.rec.id} of an earlier stop completed instead`;
            this.complete(late.rec, late.found.path);
            this.event('Normal', 'SavepointCompleted', `deployment ${op.deploymentId} ended after its stop with savepoint ${late.rec.id}, given up on, completed at ${late.found.path}: it resumes from that savepoint`);
            this.stopped(op, late.found.path);
            return 'done';
          }
          rec.state = 'FAILED';
          rec.error = why;
          rec.failures++;
          this.event('Warning', 'SavepointError', `stop with savepoint ${rec.id} of ${op.deploymentId} (${op.purpose}) failed: ${why}`);
          if (ended) {
            // The job ended anyway: it resumes from its latest checkpoint (never from empty state).
            this.stopped({ ...op, savepointId: undefined, keepState: true }, undefined);
            return 'done';
          }
          this.s.upgradeFailures++;
          this.s.upgradeRetryAt = this.now + backoffMs(this.s.upgradeFailures);
          return 'done';
        }
        if (ended) {
          // A cancel that fell back from a stop with savepoint given up on: if that stop finished
          // after all, the job ended after its savepoint (its checkpoints discarded, output of the
          // savepoint committed), so the next start takes the savepoint, never the checkpoint before it.
          const d = this.s.deployment;
          const late = d !== undefined && d.id === op.deploymentId ? this.lateStopSavepoint(d) : undefined;
          if (late !== undefined) {
            this.complete(late.rec, late.found.path);
            this.event('Normal', 'SavepointCompleted', `deployment ${op.deploymentId} ended after its stop with savepoint ${late.rec.id}, given up on, completed at ${late.found.path}: it resumes from that savepoint`);
          }
          this.stopped(op, late?.found.path);
          return 'done';
        }
        return this.reissueIfOld(op, age);
      }
      case 'savepoint': {
        const rec = this.record(op.savepointId);
        if (rec === undefined) return 'done';
        if (outcome?.state === 'completed' && outcome.path !== undefined) {
          this.complete(rec, outcome.path);
          this.event('Normal', 'SavepointCompleted', `${rec.trigger.toLowerCase()} savepoint ${rec.id} at ${outcome.path}`);
          return 'done';
        }
        const o = this.observed.deployments[op.deploymentId];
        if (o === undefined || TERMINAL.has(o.state)) {
          rec.state = 'ABANDONED';
          rec.error = `deployment ${op.deploymentId} ended before the savepoint completed`;
          this.event('Warning', 'SnapshotAbandoned', `savepoint ${rec.id}: ${rec.error}`);
          return 'done';
        }
        const failed = outcome?.state === 'failed' || age > spec.savepoints.timeoutMs;
        if (!failed) return { reissue: outcome === undefined }; // unknown to the target (a restarted manager): again, at once
        rec.failures++;
        rec.error = outcome?.error ?? `no savepoint within ${spec.savepoints.timeoutMs} ms`;
        if (rec.failures >= SAVEPOINT_MAX_FAILURES) {
          rec.state = 'FAILED';
          this.event('Warning', 'SnapshotError', `savepoint ${rec.id} failed ${rec.failures} times, giving up: ${rec.error}`);
        } else {
          rec.state = 'PENDING';
          rec.retryAt = this.now + backoffMs(rec.failures);
          this.event('Warning', 'SnapshotError', `savepoint ${rec.id} failed (${rec.error}); retry in ${backoffMs(rec.failures)} ms`);
        }
        return 'done';
      }
      case 'dispose': {
        const rec = this.record(op.savepointId);
        if (outcome?.state === 'completed') {
          this.s.savepoints = this.s.savepoints.filter((r) => r.id !== op.savepointId);
          this.event('Normal', 'Cleanup', `disposed savepoint ${op.savepointId} (${op.path})`);
          return 'done';
        }
        if (outcome?.state === 'failed') {
          if (rec !== undefined) rec.retryAt = this.now + backoffMs(SAVEPOINT_MAX_FAILURES);
          this.event('Warning', 'CleanupFailed', `cannot dispose savepoint ${op.savepointId}: ${outcome.error ?? 'unknown reason'}`);
          return 'done';
        }
        if (outcome === undefined) return { reissue: true }; // unknown to the target (a restarted manager): again, at once
        return this.reissueIfOld(op, age);
      }
    }
  }

  private reissueIfOld(op: Operation, age: number): { reissue: boolean } {
    if (age <= REISSUE_AFTER_MS) return { reissue: false };
    this.s.operation = { ...op, issuedAt: this.now };
    return { reissue: true };
  }

  /** The deployment ended as `op` asked: remember what it resumes from. */
  private stopped(op: Extract<Operation, { kind: 'stop' }>, savepointPath: string | undefined): void {
    const d = this.s.deployment;
    if (d === undefined || d.id !== op.deploymentId) return;
    this.s.restorePath = savepointPath ?? (op.keepState ? d.lastCheckpoint?.path ?? d.from : undefined);
    this.s.deployment = undefined;
    const what = savepointPath !== undefined ? `with savepoint ${savepointPath}` : op.keepState ? `keeping its state${this.s.restorePath !== undefined ? ` (${this.s.restorePath})` : ''}` : 'without state';
    this.event('Normal', op.purpose === 'suspend' ? 'Suspended' : 'Stopped', `stopped deployment ${d.id} (${op.purpose}) ${what}`);
  }

  /**
   * A stop whose savepoint was taken, then failed (a sink's close threw after it): the job
   * restarted from that savepoint and ran on, completing and committing newer checkpoints, before
   * it ended. Its savepoint is older than its state now: a start from it rewound the state and
   * wrote the output of those checkpoints again. The next start takes the newest checkpoint.
   */
  private ranOnPastStopSavepoint(op: Extract<Operation, { kind: 'stop' }>, rec: SavepointRecord): boolean {
    const d = this.s.deployment;
    const found = this.observed.savepoints?.[rec.id];
    const last = d?.id === op.deploymentId ? d.lastCheckpoint : undefined;
    if (found === undefined || last === undefined || last.completedAt <= found.completedAt) return false;
    // A good savepoint all the same: kept in the history (and disposed of by its limits, never left on disk unlisted).
    this.complete(rec, found.path);
    rec.error = `superseded: the job ran on after its stop and completed checkpoint ${last.path}`;
    this.event('Warning', 'SavepointSuperseded', `stop with savepoint ${rec.id} of ${op.deploymentId} (${op.purpose}) failed after its savepoint ${found.path}; the job ran on and completed ${last.path} before it ended: resuming from that checkpoint`);
    this.stopped({ ...op, savepointId: undefined, keepState: true }, undefined);
    return true;
  }

  private complete(rec: SavepointRecord, path: string): void {
    rec.state = 'COMPLETED';
    rec.path = path;
    rec.completedAt = this.now;
    rec.error = undefined;
    rec.retryAt = undefined;
  }

  private record(id: string): SavepointRecord | undefined {
    return this.s.savepoints.find((r) => r.id === id);
  }

  // ---- validate: what the user asks for now

  private acceptGeneration(): void {
    const g = this.desired.generation;
    if (g === this.s.observedGeneration) return;
    if (this.s.observedGeneration !== 0) this.event('Normal', 'SpecChanged', `spec generation ${g} (version ${this.desired.spec.job.version}, state ${this.desired.spec.state})`);
    this.s.observedGeneration = g;
    this.s.upgradeRetryAt = undefined;
    this.s.upgradeFailures = 0;
    if (this.s.rollback !== undefined && this.s.rollback.generation !== g) {
      this.event('Normal', 'RollbackInterrupted', 'a new spec replaces the rollback');
      this.s.rollback = undefined;
    }
  }

  /**
   * The spec to run: the user's; while rolling back, the last stable one's job, configuration and
   * restore setting (what is deployed), with the user's policies (state, savepoints, health).
   */
  private effective(): AppSpec {
    const stable = this.s.lastStableSpec;
    if (this.s.rollback === undefined || stable === undefined) return this.desired.spec;
    return { ...this.desired.spec, job: stable.job, configuration: stable.configuration, allowNonRestoredState: stable.allowNonRestoredState };
  }

  // ---- reconcile: the next operation

  private decide(depth: number): Action | undefined {
    if (depth > 3) return undefined; // each recursion removes a deployment or starts a rollback: a bound, not a loop
    const gen = this.desired.generation;
    if (this.desired.rollbackGeneration === gen && this.s.rollback === undefined && this.s.lastStableSpec !== undefined) {
      this.s.rollback = { generation: gen };
      this.s.ended = undefined; // a failed upgrade may be rolled back by hand: the stable version starts from the failed job's latest state
      this.event('Warning', 'Rollback', `rollback requested: returning to version ${this.s.lastStableSpec.job.version}`);
    }
    const spec = this.effective();
    const d = this.s.deployment;

    if (this.desired.deletion !== undefined) {
      if (d === undefined) return undefined;
      // A failed stop with savepoint is retried after its backoff, like an upgrade's (before: at once, every pass).
      if (this.s.upgradeRetryAt !== undefined && this.s.upgradeRetryAt > this.now) return undefined;
      const o = this.observed.deployments[d.id];
      const savepoint = this.desired.deletion.savepoint && o?.state === 'RUNNING';
      return this.stop(d, savepoint ? 'UPGRADE' : undefined, this.desired.deletion.savepoint, 'delete');
    }

    if (d === undefined) {
      if (this.s.ended !== undefined && this.s.ended.generation === gen && spec.state === 'running') return undefined;
      if (spec.state === 'suspended') {
        // Suspend takes effect on a failed job too: nothing runs, the restore point is kept.
        // Created suspended, its first spec's nonce asks for nothing either (see start).
        if (this.s.lastReconciledSpec === undefined) this.s.lastNonce = spec.savepointTriggerNonce;
        this.s.lastReconciledSpec = spec;
        this.s.ended = undefined;
        return undefined;
      }
      return this.start(spec);
    }

    const o = this.observed.deployments[d.id];
    const state = o?.state ?? 'GONE';
    if (TERMINAL.has(state)) {
      const late = this.lateStopSavepoint(d);
      if (late !== undefined) {
        this.complete(late.rec, late.found.path);
        this.s.restorePath = late.found.path;
        this.s.deployment = undefined;
        this.s.upgradeRetryAt = undefined;
        this.event('Normal', 'SavepointCompleted', `deployment ${d.id} ended (${state}) after its stop with savepoint ${late.rec.id}, given up on, completed at ${late.found.path}: it resumes from that savepoint`);
        return this.decide(depth + 1);
      }
      if (this.brokenUpgrade(d)) {
        this.beginRollback(d, `deployment ${d.id} ended (${state}${o?.error !== undefined ? `: ${o.error}` : ''}) before it was stable`);
        this.s.restorePath = d.lastCheckpoint?.path ?? d.from;
        this.s.deployment = undefined;
        return this.decide(depth + 1);
      }
      this.ended(d, state, o?.error);
      return this.decide(depth + 1);
    }

    if (spec.state === 'suspended') {
      // Waiting to retry a failed suspend savepoint, as an upgrade does (before: a new stop, and a
      // new savepoint record and event, on every pass).
      if (this.s.upgradeRetryAt !== undefined && this.s.upgradeRetryAt > this.now) return undefined;
      return this.stopKeepingState(d, state, spec, 'suspend');
    }
    if (deploymentKey(spec) !== deploymentKey(d.spec)) {
      // Waiting to retry a failed upgrade savepoint: the job runs on, and so does its savepoint cleanup.
      if (this.s.upgradeRetryAt !== undefined && this.s.upgradeRetryAt > this.now) return state === 'RUNNING' ? this.cleanup(spec) : undefined;
      const purpose: Purpose = this.s.rollback !== undefined ? 'rollback' : 'upgrade';
      if (purpose === 'rollback') return this.stop(d, undefined, true, purpose); // the rollback restores the stable version's own state
      if (spec.upgradeMode === 'stateless') return this.stop(d, undefined, false, purpose);
      return this.stopKeepingState(d, state, spec, purpose);
    }
    if (!d.stable && this.brokenUpgrade(d) && this.now - d.startedAt > this.desired.spec.rollback.readinessTimeoutMs) {
      this.beginRollback(d, `deployment ${d.id} not stable within ${this.desired.spec.rollback.readinessTimeoutMs} ms`);
      return this.decide(depth + 1);
    }
    const sick = state === 'RUNNING' || state === 'RESTARTING' ? unhealthy(d, d.spec, this.now) : undefined;
    if (sick !== undefined && this.brokenUpgrade(d)) {
      // A health restart is a new deployment whose readiness clock starts again: restarting an
      // upgrade that never became stable put its rollback off for ever.
      this.beginRollback(d, `deployment ${d.id} is unhealthy before it was stable: ${sick}`);
      return this.decide(depth + 1);
    }
    if (sick !== undefined) {
      this.event('Warning', 'RestartUnhealthyJob', `deployment ${d.id} is unhealthy: ${sick}; restarting it from its latest state`);
      return this.stop(d, undefined, true, 'restart');
    }
    if (state !== 'RUNNING') return undefined;
    return this.snapshots(d, spec);
  }

  /** An upgrade that may roll back: enabled, a different stable spec to return to, not already rolling back. */
  private brokenUpgrade(d: Deployment): boolean {
    const stable = this.s.lastStableSpec;
    return !d.stable && !d.rollback && this.s.rollback === undefined && this.desired.spec.rollback.enabled && stable !== undefined && stable.state === 'running' && deploymentKey(stable) !== deploymentKey(d.spec);
  }

  private beginRollback(d: Deployment, why: string): void {
    this.s.rollback = { generation: this.desired.generation };
    this.event('Warning', 'Rollback', `${why}: rolling back to version ${this.s.lastStableSpec!.job.version}`);
    void d;
  }

  /**
   * A stop with savepoint of `d` that was given up on (timed out while the job went on stopping)
   * but whose savepoint is on disk, newer than the job's latest checkpoint. A weir job ends after
   * its stop savepoint, and a FINISHED job's checkpoints are gone: read as a job that finished on
   * its own, the upgrade or suspend was lost and the next start had no state.
   */
  private lateStopSavepoint(d: Deployment): { rec: SavepointRecord; found: CheckpointRef } | undefined {
    for (let i = this.s.savepoints.length - 1; i >= 0; i--) {
      const rec = this.s.savepoints[i]!;
      if (rec.deploymentId !== d.id || rec.trigger !== 'UPGRADE' || rec.state === 'COMPLETED') continue;
      const found = this.observed.savepoints?.[rec.id];
      if (found === undefined) continue;
      if (d.lastCheckpoint !== undefined && d.lastCheckpoint.completedAt > found.completedAt) return undefined;
      return { rec, found };
    }
    return undefined;
  }

  /** A job that ended on its own (or whose process vanished). */
  private ended(d: Deployment, state: string, error: string | undefined): void {
    this.s.deployment = undefined;
    if (state === 'FINISHED') {
      this.s.ended = { state: 'FINISHED', reason: `deployment ${d.id} finished`, generation: this.runningGeneration };
      this.s.restorePath = undefined;
      this.event('Normal', 'JobStatusChanged', `deployment ${d.id} finished`);
      return;
    }
    const restore = d.lastCheckpoint?.path ?? d.from;
    this.s.restorePath = restore;
    const needsState = d.spec.upgradeMode !== 'stateless' && d.runningSince !== undefined;
    const reason = restore === undefined && needsState
      ? `manual restore required: deployment ${d.id} ${state.toLowerCase()} and no checkpoint or savepoint of it is known (apply a spec with initialSavepointPath, or suspend)`
      : `deployment ${d.id} ${state.toLowerCase()}${error !== undefined ? `: ${error}` : ''}`;
    this.s.ended = { state: 'FAILED', reason, generation: this.runningGeneration };
    this.event('Warning', 'JobStatusChanged', reason);
  }

  private start(spec: AppSpec): Action {
    const first = this.s.lastReconciledSpec === undefined;
    // A failed application given another initialSavepointPath restores from it: the user's way out
    // when what it would resume from cannot be restored (no stuck resource).
    const chosen = this.s.ended?.state === 'FAILED' && spec.initialSavepointPath !== undefined && spec.initialSavepointPath !== this.s.lastReconciledSpec?.initialSavepointPath;
    // initialSavepointPath is for the first deployment, or when newly given: a later start without
    // state to resume (a stateless upgrade) starts empty, not from the same old snapshot again.
    const fresh = (this.s.deployedOnce !== true && this.s.lastStableSpec === undefined) || spec.initialSavepointPath !== this.s.lastReconciledSpec?.initialSavepointPath;
    // A failed application applied in stateless mode starts empty: the user's way out when what
    // it would resume from cannot be restored, without a new savepoint to give it.
    const statelessAfterFailure = spec.upgradeMode === 'stateless' && this.s.ended?.state === 'FAILED';
    const from = chosen ? spec.initialSavepointPath : statelessAfterFailure ? undefined : this.s.restorePath ?? (fresh ? spec.initialSavepointPath : undefined);
    this.s.deployedOnce = true;
    const id = `${spec.name}-${this.s.nextDeployment++}`;
    const purpose: Purpose = first ? 'deploy' : this.s.rollback !== undefined ? 'rollback' : 'upgrade';
    if (first) this.s.lastNonce = spec.savepointTriggerNonce; // a nonce present at creation asks for nothing
    this.s.deployment = { id, spec, ...(from !== undefined ? { from } : {}), startedAt: this.now, rollback: this.s.rollback !== undefined, stable: false, restarts: 0, restartTimes: [] };
    this.s.restorePath = undefined;
    this.s.ended = undefined;
    this.s.lastReconciledSpec = spec;
    return this.intend({ kind: 'start', deploymentId: id, purpose, issuedAt: this.now });
  }

  /** Savepoint mode on a running job: stop with a savepoint; otherwise (or last-state) cancel and resume from the latest checkpoint. */
  private stopKeepingState(d: Deployment, state: string, spec: AppSpec, purpose: Purpose): Action | undefined {
    if (spec.upgradeMode === 'stateless') return this.stop(d, undefined, false, purpose);
    const running = state === 'RUNNING';
    let savepoint = spec.upgradeMode === 'savepoint' && running;
    if (spec.upgradeMode === 'last-state' && running) {
      // Last-state resumes from the latest checkpoint; a job without one (it ran without
      // checkpointing, say in savepoint mode before this spec) would lose its state to a cancel.
      const c = d.lastCheckpoint;
      const maxAge = spec.lastState.maxCheckpointAgeMs;
      if (c === undefined || (maxAge !== undefined && this.now - c.completedAt > maxAge)) {
        savepoint = true;
        this.event('Normal', 'CheckpointTooOld', `latest checkpoint of ${d.id} is ${c === undefined ? 'missing' : `${this.now - c.completedAt} ms old`}; taking a savepoint instead`);
      }
    }
    if (!running && d.runningSince !== undefined && (d.lastCheckpoint?.path ?? d.from) === undefined && state === 'RESTARTING') {
      // Restarting with nothing to restore: the restart begins from empty state too, so a cancel
      // loses nothing it keeps. Waiting for it to run (below) never ended for a job in a crash
      // loop, and held the suspend or upgrade, and the health check after it, for good.
      this.event('Warning', 'UpgradeFallback', `deployment ${d.id} is restarting with no checkpoint or savepoint to restore (its restart starts from empty state too): the ${purpose} cancels it and starts without state`);
      return this.stop(d, undefined, true, purpose);
    }
    if (!running && d.runningSince !== undefined && (d.lastCheckpoint?.path ?? d.from) === undefined) {
      // Not running now (restarting, or its status not readable this pass), and nothing to resume
      // from: a cancel would start the new spec with empty state, which savepoint and last-state
      // never do (Flink's operator holds such an upgrade too). Wait until it runs to take a savepoint.
      const message = `deployment ${d.id} is not running and has no checkpoint: the ${purpose} waits until it runs again, to take a savepoint`;
      if (this.s.events.at(-1)?.message !== message) this.event('Warning', 'UpgradePending', message);
      return undefined;
    }
    if (spec.upgradeMode === 'savepoint' && !running) this.event('Warning', 'UpgradeFallback', `deployment ${d.id} is not running: ${purpose} resumes from its latest checkpoint`);
    return this.stop(d, savepoint ? 'UPGRADE' : undefined, true, purpose);
  }

  private stop(d: Deployment, trigger: SavepointTrigger | undefined, keepState: boolean, purpose: Purpose): Action {
    const rec = trigger !== undefined ? this.newSavepoint(trigger, d.id, 'IN_PROGRESS') : undefined;
    return this.intend({ kind: 'stop', deploymentId: d.id, ...(rec !== undefined ? { savepointId: rec.id } : {}), keepState, purpose, issuedAt: this.now });
  }

  private snapshots(d: Deployment, spec: AppSpec): Action | undefined {
    const nonce = this.desired.spec.savepointTriggerNonce;
    if (nonce !== undefined && nonce !== this.s.lastNonce) {
      this.s.lastNonce = nonce;
      const rec = this.newSavepoint('MANUAL', d.id, 'IN_PROGRESS', nonce);
      return this.intend({ kind: 'savepoint', deploymentId: d.id, savepointId: rec.id, attempt: 0, issuedAt: this.now });
    }
    const retry = this.s.savepoints.find((r) => r.state === 'PENDING' && r.retryAt !== undefined && r.retryAt <= this.now);
    if (retry !== undefined) {
      retry.state = 'IN_PROGRESS';
      retry.retryAt = undefined;
      return this.intend({ kind: 'savepoint', deploymentId: d.id, savepointId: retry.id, attempt: retry.failures, issuedAt: this.now });
    }
    const interval = spec.savepoints.intervalMs;
    if (interval !== undefined && d.runningSince !== undefined && this.now - Math.max(this.s.lastPeriodicAt ?? 0, d.runningSince) >= interval) {
      this.s.lastPeriodicAt = this.now;
      const rec = this.newSavepoint('PERIODIC', d.id, 'IN_PROGRESS');
      return this.intend({ kind: 'savepoint', deploymentId: d.id, savepointId: rec.id, attempt: 0, issuedAt: this.now });
    }
    return this.cleanup(spec);
  }

  /** Disposes one savepoint beyond the history limits, if any (lazily: only while the job runs, as the Flink operator). */
  private cleanup(spec: AppSpec): Action | undefined {
    const old = nextDisposal(this.s, spec, this.now);
    if (old !== undefined) return this.intend({ kind: 'dispose', savepointId: old.id, path: old.path!, issuedAt: this.now });
    return undefined;
  }

  private newSavepoint(trigger: SavepointTrigger, deploymentId: string, state: SavepointRecord['state'], nonce?: number | string): SavepointRecord {
    const rec: SavepointRecord = { id: `sp-${this.s.nextSavepoint++}`, trigger, state, deploymentId, createdAt: this.now, failures: 0, ...(nonce !== undefined ? { nonce } : {}) };
    this.s.savepoints.push(rec);
    this.forgetOldFailures();
    return rec;
  }

  /**
   * Keeps the newest MAX_FAILED_SAVEPOINT_RECORDS failed or abandoned records (they hold nothing
   * to restore; the events say what happened): a periodic savepoint failing for a day made ~1,000
   * records, and the status, rewritten every pass, grew without bound. Never one the target is
   * asked about (a stop of the current deployment, whose savepoint may yet show up on disk).
   */
  private forgetOldFailures(): void {
    const probed = new Set(stopSavepointsToProbe(this.s));
    const failed = this.s.savepoints.filter((r) => (r.state === 'FAILED' || r.state === 'ABANDONED') && !probed.has(r.id));
    const excess = failed.length - MAX_FAILED_SAVEPOINT_RECORDS;
    if (excess <= 0) return;
    const drop = new Set(failed.slice(0, excess));
    this.s.savepoints = this.s.savepoints.filter((r) => !drop.has(r));
  }

  /** Writes the intent into the status; the shell persists it before carrying out the action. */
  private intend(op: Operation): Action {
    this.s.operation = op;
    return actionOf(op, this.s);
  }

  private event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.s.events.push({ at: this.now, type, reason, message });
    if (this.s.events.length > MAX_EVENTS) this.s.events.splice(0, this.s.events.length - MAX_EVENTS);
  }

  // ---- the lifecycle state shown to users

  lifecycle(): Lifecycle {
    const s = this.s;
    const d = s.deployment;
    if (this.desired.deletion !== undefined) return d === undefined && s.operation === undefined ? 'DELETED' : 'DELETING';
    if (d === undefined && s.ended !== undefined) return s.ended.state;
    if (s.rollback !== undefined) return d?.rollback === true && d.stable ? 'ROLLED_BACK' : 'ROLLING_BACK';
    const op = s.operation;
    if ((op?.kind === 'stop' || op?.kind === 'start') && op.purpose === 'upgrade') return 'UPGRADING';
    if (d !== undefined && deploymentKey(d.spec) !== deploymentKey(this.desired.spec)) return 'UPGRADING';
    if (d === undefined) {
      if (s.lastReconciledSpec === undefined) return 'CREATED';
      return this.effective().state === 'suspended' ? 'SUSPENDED' : 'UPGRADING';
    }
    if (op?.kind === 'stop' && op.purpose === 'suspend') return 'DEPLOYED';
    return d.stable ? 'STABLE' : 'DEPLOYED';
  }
}
