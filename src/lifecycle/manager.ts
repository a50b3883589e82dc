/**
 * `weir manager`: the long-running process that reconciles every application it was given
 * against its deployment target, one pass per application every intervalMs. What the user asks
 * (apply, suspend, resume, delete, savepoint, rollback) only changes the desired application in
 * the store (bumping its generation); the reconciler does the rest. Jobs outlive the manager; a
 * restarted manager first carries out any operation its statuses say was in flight.
 */
import { WeirError } from '../core/errors.ts';
import { AppShell } from './shell.ts';
import { deploymentKey, type AppSpec } from './spec.ts';
import { initialStatus, type AppStatus, type Desired } from './status.ts';
import type { AppStore } from './store.ts';
import type { DeploymentTarget } from './target.ts';

export interface ManagerOptions {
  readonly store: AppStore;
  readonly target: DeploymentTarget;
  /** Time between reconciliation passes. */
  readonly intervalMs?: number;
  readonly now?: () => number;
  readonly log?: (line: string) => void;
}

export interface AppSummary {
  readonly name: string;
  readonly lifecycle: string;
  readonly version: string;
  readonly state: string;
  readonly generation: number;
  readonly deployment?: string;
  readonly runningVersion?: string;
}

export class Manager {
  private readonly shells = new Map<string, AppShell>();
  private timer: NodeJS.Timeout | undefined;
  private passing: Promise<void> | undefined;
  private stopped = false;
  private readonly now: () => number;
  private readonly log: (line: string) => void;

  constructor(private readonly options: ManagerOptions) {
    this.now = options.now ?? Date.now;
    this.log = options.log ?? (() => {});
  }

  /** Recovers in-flight operations, then reconciles every intervalMs until stop(). */
  async start(): Promise<void> {
    for (const app of this.options.store.apps()) {
      // One application that cannot be recovered (a corrupt status, a failing spawn) must not keep
      // the manager from serving the others: it is reported, and its passes report it again.
      try {
        const a = await this.shell(app).recover();
        if (a !== undefined) this.log(`weir manager: ${app}: carrying on with ${a.kind} after a restart`);
      } catch (e) {
        this.log(`weir manager: ${app}: cannot carry on with its operation in flight: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    const tick = () => {
      if (this.stopped) return;
      this.passing = this.pass().finally(() => {
        this.passing = undefined;
        if (!this.stopped) this.timer = setTimeout(tick, this.options.intervalMs ?? 500);
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.passing;
  }

  /** One reconciliation pass over every application (serially: the machine is small). */
  async pass(): Promise<void> {
    for (const app of this.options.store.apps()) {
      try {
        await this.shell(app).step();
        const s = this.options.store.loadStatus(app);
        if (s?.lifecycle === 'DELETED') {
          this.options.store.forget(app);
          this.shells.delete(app);
          this.log(`weir manager: ${app}: deleted`);
        }
      } catch (e) {
        this.log(`weir manager: ${app}: reconciliation failed: ${(e as Error).message}`);
      }
    }
  }

  private shell(app: string): AppShell {
    let s = this.shells.get(app);
    if (s === undefined) {
      s = new AppShell(app, this.options.store, this.options.target, this.now);
      this.shells.set(app, s);
    }
    return s;
  }

  // ---- what users ask for

  apply(spec: AppSpec): Desired {
    const prev = this.options.store.loadDesired(spec.name);
    if (prev?.deletion !== undefined) throw new WeirError('CONTROL', `application ${spec.name} is being deleted; apply it again once it is gone`);
    if (prev !== undefined && JSON.stringify(prev.spec) === JSON.stringify(spec)) return prev; // unchanged: no new generation
    const old = prev === undefined ? this.options.store.loadStatus(spec.name) : undefined;
    if (old !== undefined) {
      // A deleted application of this name: start afresh, but never reuse its deployment ids or
      // savepoint folders (its savepoints stay where they are).
      this.options.store.saveStatus(spec.name, { ...initialStatus(), nextDeployment: old.nextDeployment, nextSavepoint: old.nextSavepoint });
    }
    return this.save(spec.name, { spec, generation: (prev?.generation ?? 0) + 1 });
  }

  suspend(app: string): Desired {
    const d = this.notBeingDeleted(app);
    return this.save(app, { spec: { ...d.spec, state: 'suspended' }, generation: d.generation + 1 });
  }

  resume(app: string): Desired {
    const d = this.notBeingDeleted(app);
    return this.save(app, { spec: { ...d.spec, state: 'running' }, generation: d.generation + 1 });
  }

  /** Its desired state; refused while it is being deleted (a new spec would drop the deletion and start it again). */
  private notBeingDeleted(app: string): Desired {
    const d = this.desired(app);
    if (d.deletion !== undefined) throw new WeirError('CONTROL', `application ${app} is being deleted; apply it again once it is gone`);
    return d;
  }

  /**
   * A manual savepoint: a new nonce. The generation stays: asking for a savepoint is not a new
   * spec, so it neither interrupts a rollback nor lifts a failed application's hold.
   */
  savepoint(app: string): Desired {
    const d = this.desired(app);
    return this.save(app, { ...d, spec: { ...d.spec, savepointTriggerNonce: `manual-${this.now()}` } });
  }

  rollback(app: string): Desired {
    const d = this.desired(app);
    const s = this.status(app);
    if (s.lastStableSpec === undefined) throw new WeirError('CONTROL', `application ${app} has no stable version to roll back to`);
    if (s.deployment !== undefined && deploymentKey(s.deployment.spec) === deploymentKey(s.lastStableSpec) && s.deployment.stable) {
      throw new WeirError('CONTROL', `application ${app} already runs its last stable version (${s.lastStableSpec.job.version})`);
    }
    return this.save(app, { ...d, rollbackGeneration: d.generation });
  }

  delete(app: string, savepoint: boolean): Desired {
    const d = this.desired(app);
    return this.save(app, { ...d, deletion: { savepoint } });
  }

  list(): AppSummary[] {
    return this.options.store.apps().map((name) => {
      const d = this.desired(name);
      const s = this.status(name);
      return {
        name, lifecycle: s.lifecycle, version: d.spec.job.version, state: d.spec.state, generation: d.generation,
        ...(s.deployment !== undefined ? { deployment: s.deployment.id, runningVersion: s.deployment.spec.job.version } : {}),
      };
    });
  }

  describe(app: string): { desired: Desired; status: AppStatus } {
    return { desired: this.desired(app), status: this.status(app) };
  }

  desired(app: string): Desired {
    const d = this.options.store.loadDesired(app);
    if (d === undefined) throw new WeirError('CONTROL', `no application ${app} (see weir apps list)`);
    return d;
  }

  status(app: string): AppStatus {
    return this.options.store.loadStatus(app) ?? initialStatus();
  }

  private save(app: string, d: Desired): Desired {
    this.options.store.saveDesired(app, d);
    return d;
  }
}
