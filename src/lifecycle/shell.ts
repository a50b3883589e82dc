/**
 * The shell around the pure reconciler for one application: observe the target, reconcile,
 * write the status (the write-ahead log), then carry out the action. On start (a manager that
 * was killed) it first issues the action of an operation found in the status again: actions are
 * idempotent, so this finishes an upgrade in progress without starting a second copy of a job.
 */
import { actionOf, type Action } from './actions.ts';
import { reconcile } from './reconcile.ts';
import { initialStatus, opKey, stopSavepointsToProbe, type AppStatus } from './status.ts';
import type { AppStore } from './store.ts';
import type { DeploymentTarget } from './target.ts';

export interface StepHooks {
  /** Called after the status is written and before the action (tests kill the manager here). */
  beforeAction?(action: Action): void;
}

export class AppShell {
  constructor(
    readonly app: string,
    private readonly store: AppStore,
    private readonly target: DeploymentTarget,
    private readonly now: () => number,
    private readonly hooks: StepHooks = {},
  ) {}

  status(): AppStatus {
    return this.store.loadStatus(this.app) ?? initialStatus();
  }

  /** After a restart: carries out the operation the status says is in flight, again. */
  async recover(): Promise<Action | undefined> {
    const s = this.store.loadStatus(this.app);
    if (s?.operation === undefined) return undefined;
    const action = actionOf(s.operation, s);
    await this.target.act(this.app, action);
    return action;
  }

  /** One pass: observe -> reconcile -> persist -> act. Returns the action carried out, if any. */
  async step(): Promise<Action | undefined> {
    const desired = this.store.loadDesired(this.app);
    if (desired === undefined) return undefined;
    const status = this.status();
    const ids = new Set<string>();
    if (status.deployment !== undefined) ids.add(status.deployment.id);
    if (status.operation !== undefined && 'deploymentId' in status.operation) ids.add(status.operation.deploymentId);
    const keys = status.operation !== undefined ? [opKey(status.operation)] : [];
    const observed = await this.target.observe(this.app, [...ids], keys, stopSavepointsToProbe(status));
    const decision = reconcile({ desired, status, observed, nowMs: this.now() });
    this.store.saveStatus(this.app, decision.status);
    if (decision.action === undefined) return undefined;
    this.hooks.beforeAction?.(decision.action);
    await this.target.act(this.app, decision.action);
    return decision.action;
  }
}
