/**
 * A deterministic world for the reconciler's simulation tests: jobs that start, run, count
 * (their state is one number, `position`), checkpoint, fail and stop with savepoints, on a fake
 * clock, with seeded faults. The world (jobs and "disk") outlives the manager; the SimTarget
 * adapter, like the real local target, keeps operation outcomes in memory, so a killed manager
 * loses them and must rebuild them from what the world shows (the savepoint on disk, the job's end).
 * This is the in-memory fake the project allows for deterministic protocol tests.
 */
import type { Action } from '../../src/lifecycle/actions.ts';
import type { DeploymentTarget } from '../../src/lifecycle/target.ts';
import type { JobState, Observation, ObservedDeployment, OperationOutcome } from '../../src/lifecycle/status.ts';
import { Rng } from '../../src/core/random.ts';

export interface SimJob {
  readonly app: string;
  readonly id: string;
  readonly version: string;
  state: JobState;
  position: number;
  readonly startPosition: number;
  readonly from: string | undefined;
  restarts: number;
  ticks: number;
  lastCheckpoint?: { path: string; completedAt: number };
  error?: string;
  stopping?: { savepointId: string | undefined; ticksLeft: number; fails: boolean };
}

export interface WorldFaults {
  /** Probability that a stop-with-savepoint fails (the job keeps running). */
  readonly stopFailure: number;
  /** Probability that a plain savepoint fails. */
  readonly savepointFailure: number;
}

export class SimWorld {
  nowMs = 1_000_000;
  readonly jobs = new Map<string, SimJob>();
  /** Snapshots on "disk": path -> position. */
  readonly disk = new Map<string, number>();
  /** Every savepoint ever written, and every one disposed. */
  readonly written: string[] = [];
  readonly disposed: string[] = [];
  /** Every snapshot (checkpoint or savepoint) by the job that took it, with its position. */
  readonly snapshots: { path: string; jobId: string; position: number; stop: boolean }[] = [];
  /** Jobs in the order they were started. */
  readonly started: string[] = [];
  /** Violations of "never two copies of a job". */
  readonly violations: string[] = [];
  /** When each savepoint on "disk" was written. */
  readonly writtenAt = new Map<string, number>();
  /** Versions that throw at start. */
  readonly broken = new Set<string>();
  private readonly pendingSavepoints = new Map<string, { jobId: string; ticksLeft: number; fails: boolean }>();
  /** Outcomes of finished savepoints by savepoint id (the disk holds the path; failures are lost on restart). */
  constructor(readonly rng: Rng, public faults: WorldFaults, readonly checkpointEveryTicks = 3) {}

  live(app: string): SimJob[] {
    return [...this.jobs.values()].filter((j) => j.app === app && !['FINISHED', 'FAILED', 'CANCELED', 'GONE'].includes(j.state));
  }

  start(app: string, id: string, version: string, from: string | undefined): void {
    if (this.jobs.has(id)) return; // idempotent
    if (this.live(app).length > 0) this.violations.push(`t=${this.nowMs}: ${id} started while ${this.live(app).map((j) => j.id).join(', ')} runs`);
    let position = 0;
    let error: string | undefined;
    if (from !== undefined) {
      const p = this.disk.get(from);
      if (p === undefined) error = `cannot restore from ${from}: no such snapshot`;
      else position = p;
    }
    this.started.push(id);
    this.jobs.set(id, { app, id, version, state: error ? 'FAILED' : 'STARTING', position, startPosition: position, from, restarts: 0, ticks: 0, ...(error ? { error } : {}) });
  }

  /** One second passes. */
  tick(): void {
    this.nowMs += 1000;
    for (const j of this.jobs.values()) {
      if (['FINISHED', 'FAILED', 'CANCELED', 'GONE'].includes(j.state)) continue;
      j.ticks++;
      if (this.broken.has(j.version)) {
        j.state = 'RESTARTING';
        j.restarts++;
        if (j.restarts > 4) {
          j.state = 'FAILED';
          j.error = `version ${j.version} throws at start`;
        }
        continue;
      }
      if (j.state === 'STARTING' && j.ticks >= 2) j.state = 'RUNNING';
      if (j.state !== 'RUNNING') continue;
      j.position++;
      if (j.ticks % this.checkpointEveryTicks === 0) {
        const path = `chk:${j.id}:${j.ticks}`;
        this.disk.set(path, j.position);
        this.snapshots.push({ path, jobId: j.id, position: j.position, stop: false });
        j.lastCheckpoint = { path, completedAt: this.nowMs };
      }
      if (j.stopping !== undefined && --j.stopping.ticksLeft <= 0) {
        const sp = j.stopping.savepointId;
        if (sp !== undefined && j.stopping.fails) {
          j.stopping = undefined; // the savepoint failed: the job keeps running
        } else {
          if (sp !== undefined) this.writeSavepoint(sp, j, true);
          j.state = sp !== undefined ? 'FINISHED' : 'CANCELED';
          j.stopping = undefined;
        }
      }
    }
    for (const [sp, p] of this.pendingSavepoints) {
      const j = this.jobs.get(p.jobId)!;
      if (j.state !== 'RUNNING') continue;
      if (--p.ticksLeft > 0) continue;
      this.pendingSavepoints.delete(sp);
      if (!p.fails) this.writeSavepoint(sp, j, false);
    }
  }

  private writeSavepoint(savepointId: string, j: SimJob, stop: boolean): void {
    const path = `sp:${savepointId}`;
    if (!this.disk.has(path)) this.written.push(path);
    this.disk.set(path, j.position);
    this.writtenAt.set(path, this.nowMs);
    this.snapshots.push({ path, jobId: j.id, position: j.position, stop });
  }

  stop(id: string, savepointId: string | undefined): void {
    const j = this.jobs.get(id);
    if (j === undefined || ['FINISHED', 'FAILED', 'CANCELED', 'GONE'].includes(j.state) || j.stopping !== undefined) return;
    if (savepointId === undefined) {
      j.state = 'CANCELED';
      return;
    }
    if (j.state !== 'RUNNING') return; // refused: not running
    j.stopping = { savepointId, ticksLeft: 1 + this.rng.int(3), fails: this.rng.next() < this.faults.stopFailure };
  }

  savepoint(id: string, savepointId: string): void {
    if (this.pendingSavepoints.has(savepointId)) return;
    this.pendingSavepoints.set(savepointId, { jobId: id, ticksLeft: 1 + this.rng.int(2), fails: this.rng.next() < this.faults.savepointFailure });
  }

  savepointFailed(savepointId: string): boolean {
    return !this.pendingSavepoints.has(savepointId) && !this.disk.has(`sp:${savepointId}`);
  }
}

/** The target adapter; a new one per manager life (its memory of outcomes dies with the manager). */
export class SimTarget implements DeploymentTarget {
  private readonly keys = new Map<string, { savepointId?: string; jobId?: string; kind: Action['kind']; path?: string }>();

  constructor(private readonly world: SimWorld) {}

  async observe(_app: string, ids: readonly string[], keys: readonly string[], stopSavepointIds: readonly string[] = []): Promise<Observation> {
    const deployments: Record<string, ObservedDeployment> = {};
    for (const id of ids) {
      const j = this.world.jobs.get(id);
      if (j === undefined) continue;
      deployments[id] = { state: j.state, restarts: j.restarts, ...(j.lastCheckpoint ? { lastCheckpoint: j.lastCheckpoint } : {}), ...(j.error ? { error: j.error } : {}) };
    }
    const operations: Record<string, OperationOutcome> = {};
    for (const key of keys) {
      const k = this.keys.get(key);
      if (k === undefined) continue; // not issued by this manager life: no outcome known
      operations[key] = this.outcome(k);
    }
    // What is on disk, as the local target finds it in the records' folders.
    const savepoints: Record<string, { path: string; completedAt: number }> = {};
    for (const id of stopSavepointIds) {
      const path = `sp:${id}`;
      const at = this.world.writtenAt.get(path);
      if (at !== undefined && this.world.disk.has(path)) savepoints[id] = { path, completedAt: at };
    }
    return { deployments, operations, savepoints };
  }

  private outcome(k: { savepointId?: string; jobId?: string; kind: Action['kind']; path?: string }): OperationOutcome {
    const w = this.world;
    if (k.kind === 'dispose') return { state: 'completed' };
    if (k.kind === 'start') return { state: 'completed' };
    const path = k.savepointId !== undefined ? `sp:${k.savepointId}` : undefined;
    if (path !== undefined && w.disk.has(path)) return { state: 'completed', path };
    const j = w.jobs.get(k.jobId!);
    if (k.kind === 'stop') {
      if (j === undefined) return { state: 'failed', error: 'no such job' };
      if (j.stopping !== undefined) return { state: 'in-progress' };
      if (k.savepointId === undefined) return { state: j.state === 'CANCELED' ? 'completed' : 'in-progress' };
      return { state: 'failed', error: j.state === 'RUNNING' ? 'savepoint declined' : `job is ${j.state}` };
    }
    return w.savepointFailed(k.savepointId!) ? { state: 'failed', error: 'savepoint declined' } : { state: 'in-progress' };
  }

  async act(_app: string, a: Action): Promise<void> {
    const w = this.world;
    switch (a.kind) {
      case 'start':
        this.keys.set(a.key, { kind: 'start', jobId: a.deploymentId });
        w.start(a.spec.name, a.deploymentId, a.spec.job.version, a.from);
        return;
      case 'stop':
        this.keys.set(a.key, { kind: 'stop', jobId: a.deploymentId, ...(a.savepointId ? { savepointId: a.savepointId } : {}) });
        if (a.savepointId !== undefined && w.disk.has(`sp:${a.savepointId}`)) return; // done already
        w.stop(a.deploymentId, a.savepointId);
        return;
      case 'savepoint':
        this.keys.set(a.key, { kind: 'savepoint', jobId: a.deploymentId, savepointId: a.savepointId });
        if (!w.disk.has(`sp:${a.savepointId}`)) w.savepoint(a.deploymentId, a.savepointId);
        return;
      case 'dispose':
        this.keys.set(a.key, { kind: 'dispose', path: a.path });
        if (w.disk.delete(a.path)) w.disposed.push(a.path);
        return;
    }
  }
}
