/**
 * The reconciler's decisions on a fake clock (issue 13 points 4 to 7): upgrade modes, snapshots,
 * rollback and health. Each test feeds observations step by step and checks the action and the
 * status the pure function returns.
 */
import { describe, expect, it } from 'vitest';
import type { Action } from '../../src/lifecycle/actions.ts';
import { reconcile } from '../../src/lifecycle/reconcile.ts';
import { validateSpec, type AppSpec } from '../../src/lifecycle/spec.ts';
import { initialStatus, stopSavepointsToProbe, type AppStatus, type CheckpointRef, type Desired, type ObservedDeployment, type OperationOutcome } from '../../src/lifecycle/status.ts';

const spec = (version: string, extra: Record<string, unknown> = {}): AppSpec =>
  validateSpec({ name: 'app', job: { module: '/j.ts', version }, configuration: { 'execution.checkpointing.interval': '1s' }, ...extra }, 'test', '/');

class H {
  status: AppStatus = initialStatus();
  now = 1_000_000;
  generation = 1;
  desired: Desired;
  deployments: Record<string, ObservedDeployment> = {};
  operations: Record<string, OperationOutcome> = {};
  /** Savepoints on disk by record id; observed only for the records the shell would ask about. */
  onDisk: Record<string, CheckpointRef> = {};
  constructor(s: AppSpec) {
    this.desired = { spec: s, generation: 1 };
  }
  apply(s: AppSpec, extra: Partial<Desired> = {}): void {
    this.desired = { spec: s, generation: ++this.generation, ...extra };
  }
  step(advanceMs = 1000): Action | undefined {
    this.now += advanceMs;
    const savepoints: Record<string, CheckpointRef> = {};
    for (const id of stopSavepointsToProbe(this.status)) if (this.onDisk[id] !== undefined) savepoints[id] = this.onDisk[id];
    const d = reconcile({ desired: this.desired, status: this.status, observed: { deployments: this.deployments, operations: this.operations, savepoints }, nowMs: this.now });
    this.status = d.status;
    return d.action;
  }
  /** The current deployment runs with a checkpoint completed now. */
  running(id: string, restarts = 0): void {
    this.deployments[id] = { state: 'RUNNING', restarts, lastCheckpoint: { path: `/chk/${id}/${this.now}`, completedAt: this.now } };
  }
  events(): string[] {
    return this.status.events.map((e) => e.reason);
  }
  /** Deploys v1 and makes it stable. */
  stable(): string {
    const a = this.step();
    expect(a?.kind).toBe('start');
    const id = (a as { deploymentId: string }).deploymentId;
    this.running(id);
    this.step();
    expect(this.status.lifecycle).toBe('STABLE');
    return id;
  }
}

/** v1 deployed without checkpointing and seen running once. */
function runningWithoutCheckpoints(): { h: H; a: { key: string; deploymentId: string } } {
  const h = new H(spec('v1', { configuration: {} }));
  const a = h.step() as { key: string; deploymentId: string };
  h.operations[a.key] = { state: 'completed' };
  h.deployments[a.deploymentId] = { state: 'RUNNING', restarts: 0 };
  h.step();
  return { h, a };
}

describe('upgrades (point 4)', () => {
  it('stateless: cancels, then starts the new version with empty state', () => {
    const h = new H(spec('v1', { upgradeMode: 'stateless' }));
    const d1 = h.stable();
    h.apply(spec('v2', { upgradeMode: 'stateless' }));
    const stop = h.step();
    expect(stop).toEqual({ kind: 'stop', key: `stop:${d1}:cancel`, deploymentId: d1, timeoutMs: 600_000 });
    expect(h.status.lifecycle).toBe('UPGRADING');
    h.deployments[d1] = { state: 'CANCELED', restarts: 0 };
    const start = h.step();
    expect(start).toMatchObject({ kind: 'start', deploymentId: 'app-2', spec: { job: { version: 'v2' } } });
    expect(start).not.toHaveProperty('from');
  });

  it('savepoint: stops with a savepoint and starts from it; a failed savepoint is an error event and a retry, never a stateless start', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.apply(spec('v2'));
    const stop = h.step();
    expect(stop).toEqual({ kind: 'stop', key: `stop:${d1}:sp-1`, deploymentId: d1, savepointId: 'sp-1', timeoutMs: 600_000 });
    expect(h.status.operation).toMatchObject({ kind: 'stop', savepointId: 'sp-1', purpose: 'upgrade' }); // the intent, written with the action
    h.operations[`stop:${d1}:sp-1`] = { state: 'failed', error: 'task declined' };
    expect(h.step()).toBeUndefined();
    expect(h.events()).toContain('SavepointError');
    expect(h.status.savepoints[0]).toMatchObject({ id: 'sp-1', trigger: 'UPGRADE', state: 'FAILED', error: 'task declined' });
    expect(h.status.lifecycle).toBe('UPGRADING');
    // Nothing until the backoff (10 s) has passed; then a new stop with a new savepoint.
    for (let i = 0; i < 8; i++) expect(h.step()).toBeUndefined();
    const retry = h.step(2000);
    expect(retry).toMatchObject({ kind: 'stop', savepointId: 'sp-2' });
    h.operations[`stop:${d1}:sp-2`] = { state: 'completed', path: '/sp/sp-2/savepoint-1' };
    expect(h.step(), 'the job has not ended yet').toBeUndefined();
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    expect(h.step()).toMatchObject({ kind: 'start', from: '/sp/sp-2/savepoint-1', spec: { job: { version: 'v2' } } });
    expect(h.status.savepoints[1]).toMatchObject({ id: 'sp-2', state: 'COMPLETED', path: '/sp/sp-2/savepoint-1' });
  });

  it('an operation the target knows nothing of (a restarted manager) is issued again at once, its timeout still counted from the first issue', () => {
    const h = new H(spec('v1', { savepoints: { timeout: '5s' } }));
    const start = h.step();
    expect(start?.kind).toBe('start');
    expect(h.step(), 'a start never carried out').toEqual(start);
    h.operations[(start as { key: string }).key] = { state: 'completed' };
    expect(h.step(), 'a start the target knows of is waited for').toBeUndefined();
    const d1 = (start as { deploymentId: string }).deploymentId;
    h.running(d1);
    h.step();
    h.apply(spec('v2', { savepoints: { timeout: '5s' } }));
    const stop = h.step();
    const issuedAt = h.status.operation!.issuedAt;
    expect(h.step(), 'the stop with savepoint again: the target finds what the first one wrote').toEqual(stop);
    expect(h.status.operation!.issuedAt).toBe(issuedAt);
    h.operations[`stop:${d1}:sp-1`] = { state: 'in-progress' };
    expect(h.step()).toBeUndefined();
    delete h.operations[`stop:${d1}:sp-1`];
    expect(h.step(4000), 'past the timeout it has failed, whatever the target knows').toBeUndefined();
    expect(h.status.savepoints[0]).toMatchObject({ state: 'FAILED', error: 'no savepoint within 5000 ms' });
    expect(h.events()).toContain('SavepointError');
  });

  it('savepoint: a stop that never answers times out as a failure', () => {
    const h = new H(spec('v1', { savepoints: { timeout: '5s' } }));
    const d1 = h.stable();
    h.apply(spec('v2'));
    h.step();
    h.operations[`stop:${d1}:sp-1`] = { state: 'in-progress' };
    expect(h.step(3000)).toBeUndefined();
    expect(h.step(3000)).toBeUndefined();
    expect(h.status.savepoints[0]).toMatchObject({ state: 'FAILED', error: 'no savepoint within 5000 ms' });
  });

  it('a stop given up on that completes later: the job ends FINISHED and the upgrade starts from that savepoint, not empty', () => {
    const h = new H(spec('v1', { savepoints: { timeout: '5s' } }));
    const d1 = h.stable();
    h.apply(spec('v2', { savepoints: { timeout: '5s' } }));
    expect(h.step()).toMatchObject({ kind: 'stop', savepointId: 'sp-1' });
    h.operations[`stop:${d1}:sp-1`] = { state: 'in-progress' };
    h.step(3000);
    h.step(3000);
    expect(h.status.savepoints[0]).toMatchObject({ id: 'sp-1', state: 'FAILED' });
    // The job went on stopping: its savepoint is written, it ends FINISHED (its checkpoints discarded).
    h.onDisk['sp-1'] = { path: '/sp/sp-1/savepoint-9', completedAt: h.now };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    expect(h.step()).toMatchObject({ kind: 'start', from: '/sp/sp-1/savepoint-9', spec: { job: { version: 'v2' } } });
    expect(h.status.savepoints[0]).toMatchObject({ id: 'sp-1', state: 'COMPLETED', path: '/sp/sp-1/savepoint-9' });
    expect(h.events()).toContain('SavepointCompleted');
    expect(h.status.lifecycle).toBe('UPGRADING');
  });

  it('a suspend whose stop completed while the manager was down past the timeout resumes from its savepoint', () => {
    const noCheckpoints = { configuration: {} };
    const h = new H(spec('v1', noCheckpoints));
    const d1 = h.stable();
    h.apply(spec('v1', { ...noCheckpoints, state: 'suspended' }));
    expect(h.step()).toMatchObject({ kind: 'stop', savepointId: 'sp-1' });
    // The manager is down for 11 minutes (the timeout is 10): the stop completed meanwhile.
    h.operations = {};
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    h.onDisk['sp-1'] = { path: '/sp/sp-1/savepoint-4', completedAt: h.now + 1000 };
    h.step(11 * 60_000);
    expect(h.status.lifecycle).toBe('SUSPENDED');
    expect(h.status.restorePath).toBe('/sp/sp-1/savepoint-4');
    h.apply(spec('v1', noCheckpoints));
    expect(h.step()).toMatchObject({ kind: 'start', from: '/sp/sp-1/savepoint-4' });
  });

  it('last-state from a deployment without any checkpoint takes a savepoint instead of cancelling its state away', () => {
    const h = new H(spec('v1', { configuration: {} }));
    const d1 = (h.step() as { deploymentId: string }).deploymentId;
    h.deployments[d1] = { state: 'RUNNING', restarts: 0 }; // no checkpointing: never a checkpoint
    h.step();
    expect(h.status.lifecycle).toBe('STABLE');
    h.apply(spec('v2', { upgradeMode: 'last-state' }));
    expect(h.step()).toMatchObject({ kind: 'stop', deploymentId: d1, savepointId: 'sp-1' });
    expect(h.events()).toContain('CheckpointTooOld');
  });

  it('savepoint mode on a job that is not running falls back to its latest checkpoint, not to empty state', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    const chk = h.deployments[d1]!.lastCheckpoint!.path;
    h.deployments[d1] = { ...h.deployments[d1]!, state: 'RESTARTING' };
    h.apply(spec('v2'));
    expect(h.step()).toEqual({ kind: 'stop', key: `stop:${d1}:cancel`, deploymentId: d1, timeoutMs: 600_000 });
    expect(h.events()).toContain('UpgradeFallback');
    h.deployments[d1] = { ...h.deployments[d1]!, state: 'CANCELED' };
    expect(h.step()).toMatchObject({ kind: 'start', from: chk });
  });

  it('savepoint mode on a job that is not running and has no checkpoint waits until it runs to take a savepoint, never starting empty', () => {
    const { h, a } = runningWithoutCheckpoints();
    h.apply(spec('v2', { configuration: {} }));
    // Its overview did not answer this pass (the local target then reports STARTING).
    h.deployments[a.deploymentId] = { state: 'STARTING', restarts: 0 };
    expect(h.step()).toBeUndefined(); // before: a cancel, then v2 started with empty state
    expect(h.step()).toBeUndefined();
    expect(h.events().filter((e) => e === 'UpgradePending')).toHaveLength(1);
    h.deployments[a.deploymentId] = { state: 'RUNNING', restarts: 0 };
    expect(h.step()).toMatchObject({ kind: 'stop', deploymentId: a.deploymentId, savepointId: 'sp-1' });
  });

  it('a suspend of a job without checkpoints that keeps restarting cancels it (its restarts start empty too) instead of waiting for good', () => {
    const { h, a } = runningWithoutCheckpoints();
    h.apply(spec('v1', { configuration: {}, state: 'suspended' }));
    h.deployments[a.deploymentId] = { state: 'RESTARTING', restarts: 3 };
    // Before: undefined on every pass (UpgradePending), for as long as the crash loop lasted.
    const stop = h.step() as { key: string };
    expect(stop).toMatchObject({ kind: 'stop', deploymentId: a.deploymentId });
    expect(stop).not.toHaveProperty('savepointId');
    expect(h.events()).toContain('UpgradeFallback');
    h.operations[stop.key] = { state: 'completed' };
    h.deployments[a.deploymentId] = { state: 'CANCELED', restarts: 3 };
    h.step();
    expect(h.status.lifecycle).toBe('SUSPENDED');
  });

  it('a stop retried after a timeout whose first savepoint completes late: the upgrade starts from that savepoint, not from the checkpoint before it', () => {
    const h = new H(spec('v1', { savepoints: { timeout: '30s' } }));
    const d1 = h.stable();
    h.apply(spec('v2', { savepoints: { timeout: '30s' } }));
    const s1 = h.step() as { key: string };
    h.operations[s1.key] = { state: 'in-progress' };
    for (let i = 0; i < 31; i++) h.step(1000); // sp-1 slower than the timeout: given up on
    let s2: { key: string } | undefined;
    for (let i = 0; i < 15 && s2 === undefined; i++) s2 = h.step(1000) as { key: string } | undefined; // the retry after its backoff
    expect(s2).toMatchObject({ kind: 'stop', savepointId: 'sp-2' });
    h.operations[s2!.key] = { state: 'in-progress' };
    h.step(1000);
    // sp-1's stop completes after all: the job ends FINISHED (its checkpoints discarded), sp-2 never comes.
    h.onDisk['sp-1'] = { path: '/sp/sp-1/savepoint-a', completedAt: h.now };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    h.operations[s2!.key] = { state: 'failed', error: `deployment ${d1} ended without a savepoint in /sp/sp-2` };
    expect(h.step(1000)).toMatchObject({ kind: 'start', from: '/sp/sp-1/savepoint-a', spec: { job: { version: 'v2' } } });
    expect(h.status.savepoints.find((r) => r.id === 'sp-1')).toMatchObject({ state: 'COMPLETED', path: '/sp/sp-1/savepoint-a' });
  });

  it('a stop that fails after its savepoint, the job running on past it before it ends: the upgrade starts from its newer checkpoint, not the savepoint (before: state rewound, output repeated)', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.apply(spec('v2'));
    const stop = h.step() as { key: string };
    expect(stop).toMatchObject({ kind: 'stop', savepointId: 'sp-1' });
    h.operations[stop.key] = { state: 'in-progress' };
    // The stop's savepoint completes; the sink's close then throws: the job restarts from it.
    h.onDisk['sp-1'] = { path: '/sp/sp-1/savepoint-a', completedAt: h.now + 500 };
    h.deployments[d1] = { state: 'RESTARTING', restarts: 1 };
    h.step();
    // It runs on and completes (and commits) a checkpoint past the savepoint, then fails for good;
    // the target, finding sp-1 on disk once the process is gone, reports the stop completed.
    h.deployments[d1] = { state: 'RUNNING', restarts: 1, lastCheckpoint: { path: `/chk/${d1}/chk-13`, completedAt: h.now + 2000 } };
    h.step(3000);
    h.deployments[d1] = { state: 'FAILED', restarts: 2, lastCheckpoint: { path: `/chk/${d1}/chk-13`, completedAt: h.now - 1000 }, error: 'boom' };
    h.operations[stop.key] = { state: 'completed', path: '/sp/sp-1/savepoint-a' };
    expect(h.step()).toMatchObject({ kind: 'start', from: `/chk/${d1}/chk-13`, spec: { job: { version: 'v2' } } });
    expect(h.status.savepoints.find((r) => r.id === 'sp-1')).toMatchObject({ state: 'COMPLETED', path: '/sp/sp-1/savepoint-a', error: expect.stringMatching(/^superseded/) });
    expect(h.events()).toContain('SavepointSuperseded');
  });

  it('a stop whose savepoint is the job\'s newest snapshot (its checkpoints all older) starts the upgrade from the savepoint', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.apply(spec('v2'));
    const stop = h.step() as { key: string };
    h.operations[stop.key] = { state: 'in-progress' };
    h.step();
    h.onDisk['sp-1'] = { path: '/sp/sp-1/savepoint-a', completedAt: h.now };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    h.operations[stop.key] = { state: 'completed', path: '/sp/sp-1/savepoint-a' };
    expect(h.step()).toMatchObject({ kind: 'start', from: '/sp/sp-1/savepoint-a' });
    expect(h.events()).not.toContain('SavepointSuperseded');
  });

  it('last-state: cancels and resumes from the latest checkpoint; one older than the maximum age means a savepoint instead', () => {
    const h = new H(spec('v1', { upgradeMode: 'last-state', lastState: { maxCheckpointAge: '10s' } }));
    const d1 = h.stable();
    h.running(d1);
    const chk = h.deployments[d1]!.lastCheckpoint!.path;
    h.apply(spec('v2', { upgradeMode: 'last-state', lastState: { maxCheckpointAge: '10s' } }));
    expect(h.step()).toEqual({ kind: 'stop', key: `stop:${d1}:cancel`, deploymentId: d1, timeoutMs: 600_000 });
    h.deployments[d1] = { ...h.deployments[d1]!, state: 'CANCELED' };
    const start = h.step();
    expect(start).toMatchObject({ kind: 'start', from: chk });
    const d2 = (start as { deploymentId: string }).deploymentId;
    h.running(d2);
    h.step();
    h.apply(spec('v3', { upgradeMode: 'last-state', lastState: { maxCheckpointAge: '10s' } }));
    expect(h.step(20_000)).toMatchObject({ kind: 'stop', savepointId: 'sp-1', timeoutMs: 600_000 });
    expect(h.events()).toContain('CheckpointTooOld');
  });

  it('a job that fails with nothing to restore is FAILED "manual restore required"; suspend and a new spec still take effect', () => {
    const h = new H(spec('v1'));
    const d1 = h.step() as { deploymentId: string };
    h.deployments[d1.deploymentId] = { state: 'RUNNING', restarts: 0 }; // running, no checkpoint yet
    h.step();
    h.deployments[d1.deploymentId] = { state: 'FAILED', restarts: 0, error: 'disk full' };
    expect(h.step()).toBeUndefined();
    expect(h.status.lifecycle).toBe('FAILED');
    expect(h.status.ended?.reason).toMatch(/^manual restore required: deployment app-1 failed/);
    expect(h.step(), 'no restart loop on the same spec').toBeUndefined();
    h.apply(spec('v1', { state: 'suspended' }));
    expect(h.step()).toBeUndefined();
    expect(h.status.lifecycle).toBe('SUSPENDED');
    h.apply(spec('v1', { initialSavepointPath: '/backup/sp-7' }));
    expect(h.step()).toMatchObject({ kind: 'start', from: '/backup/sp-7' });
  });

  it('a job that cannot restore from its snapshot is FAILED; another initialSavepointPath takes effect on it', () => {
    const h = new H(spec('v1', { initialSavepointPath: '/backup/sp-1' }));
    const d1 = h.step() as { deploymentId: string; from?: string };
    expect(d1.from).toBe('/backup/sp-1');
    h.deployments[d1.deploymentId] = { state: 'FAILED', restarts: 0, error: '/backup/sp-1 is not a checkpoint or savepoint (no _metadata file)' };
    expect(h.step()).toBeUndefined();
    expect(h.status.lifecycle).toBe('FAILED');
    expect(h.status.ended?.reason).toMatch(/no _metadata file/);
    h.apply(spec('v1', { initialSavepointPath: '/backup/sp-2' }));
    expect(h.step()).toMatchObject({ kind: 'start', from: '/backup/sp-2' });
  });

  it('a job that fails after a checkpoint is FAILED with its reason and resumes from that checkpoint on the next spec', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    const chk = h.deployments[d1]!.lastCheckpoint!.path;
    h.deployments[d1] = { ...h.deployments[d1]!, state: 'FAILED', error: 'boom' };
    h.step();
    expect(h.status.ended?.reason).toBe(`deployment ${d1} failed: boom`);
    h.apply(spec('v1b'));
    expect(h.step()).toMatchObject({ kind: 'start', from: chk });
  });
});

describe('specs applied around a job\'s end', () => {
  it('a spec applied just before the running job\'s failure is noticed starts, from the latest checkpoint (before: held as if seen)', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    const chk = h.deployments[d1]!.lastCheckpoint!;
    h.apply(spec('v2'));
    h.deployments[d1] = { state: 'FAILED', restarts: 0, lastCheckpoint: chk, error: 'boom' };
    expect(h.step()).toMatchObject({ kind: 'start', from: chk.path, spec: { job: { version: 'v2' } } });
  });

  it('initialSavepointPath is for the first deployment only: a stateless upgrade starts empty (before: from that old backup); an application created suspended still starts from it', () => {
    const extra = { upgradeMode: 'stateless', initialSavepointPath: '/backups/sp-old' };
    const h = new H(spec('v1', extra));
    expect(h.step()).toMatchObject({ kind: 'start', from: '/backups/sp-old' });
    h.running('app-1');
    h.step();
    h.apply(spec('v2', extra));
    expect(h.step()).toMatchObject({ kind: 'stop', deploymentId: 'app-1' });
    h.deployments['app-1'] = { state: 'CANCELED', restarts: 0 };
    const start = h.step();
    expect(start).toMatchObject({ kind: 'start', deploymentId: 'app-2', spec: { job: { version: 'v2' } } });
    expect(start).not.toHaveProperty('from');
    const created = new H(spec('v1', { ...extra, state: 'suspended' }));
    created.step();
    created.apply(spec('v1', extra));
    expect(created.step()).toMatchObject({ kind: 'start', from: '/backups/sp-old' });
  });

  it('a first deployment that cannot restore its initialSavepointPath: applied in stateless mode it starts empty (before: from the unreadable path again, stuck)', () => {
    const h = new H(spec('v1', { initialSavepointPath: '/backups/typo' }));
    const a = h.step() as { key: string };
    expect(a).toMatchObject({ kind: 'start', from: '/backups/typo' });
    h.operations[a.key] = { state: 'completed' };
    h.deployments['app-1'] = { state: 'FAILED', restarts: 0, error: 'cannot restore from /backups/typo' };
    h.step();
    expect(h.status.lifecycle).toBe('FAILED');
    h.apply(spec('v1', { upgradeMode: 'stateless' }));
    const b = h.step();
    expect(b).toMatchObject({ kind: 'start', deploymentId: 'app-2' });
    expect(b).not.toHaveProperty('from');
  });

  it('a cancel that fell back from a stop with savepoint given up on: when that savepoint completes after all, the upgrade starts from it, not from the checkpoint before it', () => {
    const h = new H(spec('v1', { savepoints: { timeout: '5s' } }));
    const d1 = h.stable();
    const chk = h.deployments[d1]!.lastCheckpoint!;
    h.apply(spec('v2', { savepoints: { timeout: '5s' } }));
    const s1 = h.step() as { key: string };
    expect(s1).toMatchObject({ kind: 'stop', savepointId: 'sp-1' });
    h.operations[s1.key] = { state: 'in-progress' };
    h.step(6000); // given up on: a retry after the backoff
    expect(h.status.savepoints[0]).toMatchObject({ id: 'sp-1', state: 'FAILED' });
    h.deployments[d1] = { state: 'STARTING', restarts: 0, lastCheckpoint: chk }; // stopping: its REST API gone
    const cancel = h.step(11_000) as { key: string };
    expect(cancel).toMatchObject({ kind: 'stop', deploymentId: d1 });
    expect(cancel).not.toHaveProperty('savepointId');
    h.onDisk['sp-1'] = { path: '/sp/sp-1/savepoint-x', completedAt: h.now };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0, lastCheckpoint: chk };
    h.operations[cancel.key] = { state: 'completed' };
    expect(h.step()).toMatchObject({ kind: 'start', deploymentId: 'app-2', from: '/sp/sp-1/savepoint-x' }); // before: from chk
    expect(h.status.savepoints.find((r) => r.id === 'sp-1')).toMatchObject({ state: 'COMPLETED', path: '/sp/sp-1/savepoint-x' });
  });

  it('an application created suspended with a savepoint nonce takes no manual savepoint when resumed (a nonce at creation asks for nothing)', () => {
    const h = new H(spec('v1', { state: 'suspended', savepointTriggerNonce: 7 }));
    h.step();
    expect(h.status.lifecycle).toBe('SUSPENDED');
    h.apply(spec('v1', { state: 'running', savepointTriggerNonce: 7 }));
    const a = h.step() as { key: string; deploymentId: string };
    expect(a).toMatchObject({ kind: 'start' });
    h.operations[a.key] = { state: 'completed' };
    h.running(a.deploymentId);
    expect(h.step()).toBeUndefined();
    expect(h.step()).toBeUndefined();
    expect(h.status.savepoints).toEqual([]);
  });
});

describe('suspend and delete', () => {
  it('suspend stops with a savepoint; resume starts from it', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.apply(spec('v1', { state: 'suspended' }));
    expect(h.step()).toMatchObject({ kind: 'stop', savepointId: 'sp-1', timeoutMs: 600_000 });
    h.operations[`stop:${d1}:sp-1`] = { state: 'completed', path: '/sp/1' };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    expect(h.step()).toBeUndefined();
    expect(h.status.lifecycle).toBe('SUSPENDED');
    h.apply(spec('v1'));
    expect(h.step()).toMatchObject({ kind: 'start', from: '/sp/1' });
  });

  it('delete --savepoint stops with a savepoint, then the application is DELETED', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.desired = { ...h.desired, deletion: { savepoint: true } };
    expect(h.step()).toMatchObject({ kind: 'stop', savepointId: 'sp-1', timeoutMs: 600_000 });
    expect(h.status.lifecycle).toBe('DELETING');
    h.operations[`stop:${d1}:sp-1`] = { state: 'completed', path: '/sp/1' };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    h.step();
    expect(h.status.lifecycle).toBe('DELETED');
    expect(h.status.savepoints[0]).toMatchObject({ state: 'COMPLETED', path: '/sp/1' });
  });
});

describe('failures that repeat', () => {
  it('delete --savepoint whose stop fails retries after a backoff, not on every pass', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.desired = { ...h.desired, deletion: { savepoint: true } };
    expect(h.step()).toMatchObject({ kind: 'stop', savepointId: 'sp-1' });
    h.operations[`stop:${d1}:sp-1`] = { state: 'failed', error: 'declined' };
    expect(h.step()).toBeUndefined();
    expect(h.status.savepoints[0]).toMatchObject({ id: 'sp-1', state: 'FAILED' });
    // Before: a new stop (sp-2, sp-3, ...) on every pass.
    for (let i = 0; i < 8; i++) expect(h.step(), `pass ${i}`).toBeUndefined();
    expect(h.step(2000)).toMatchObject({ kind: 'stop', savepointId: 'sp-2' });
    expect(h.status.lifecycle).toBe('DELETING');
  });

  it('suspend whose stop fails retries after a backoff, as an upgrade does (before: a new stop and savepoint record on every pass)', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.apply(spec('v1', { state: 'suspended' }));
    const stops: string[] = [];
    for (let i = 0; i < 20; i++) {
      const a = h.step(500);
      if (a?.kind === 'stop') {
        stops.push(a.savepointId!);
        h.operations[a.key] = { state: 'failed', error: 'declined' };
      }
    }
    expect(stops).toEqual(['sp-1']); // 10 s of passes: the first retry is 10 s after the failure
    expect(h.step(1000)).toMatchObject({ kind: 'stop', deploymentId: d1, savepointId: 'sp-2' });
  });

  it('failed savepoint records are bounded: a periodic savepoint failing all day keeps the newest 20', () => {
    const h = new H(spec('v1', { savepoints: { interval: '1 min' } }));
    const d1 = h.stable();
    for (let n = 0; n < 200; n++) {
      const a = h.step(60_000);
      if (a?.kind !== 'savepoint') continue;
      h.operations[(a as { key: string }).key] = { state: 'failed', error: 'declined' };
      for (let i = 0; i < 3; i++) {
        const retry = h.step(6 * 60_000);
        if (retry?.kind === 'savepoint') h.operations[(retry as { key: string }).key] = { state: 'failed', error: 'declined' };
      }
      h.running(d1);
    }
    const failed = h.status.savepoints.filter((r) => r.state === 'FAILED');
    expect(h.status.nextSavepoint).toBeGreaterThan(40);
    expect(failed.length).toBe(20);
    expect(h.status.savepoints.length).toBeLessThanOrEqual(22);
  });
});

describe('snapshots (point 5)', () => {
  it('a new nonce takes a manual savepoint; retries back off 10 s, 20 s, then it fails for good', () => {
    const h = new H(spec('v1', { savepointTriggerNonce: 1 }));
    const d1 = h.stable();
    expect(h.step(), 'the nonce present at creation asks for nothing').toBeUndefined();
    h.apply(spec('v1', { savepointTriggerNonce: 2 }));
    expect(h.step()).toEqual({ kind: 'savepoint', key: 'savepoint:sp-1:0', deploymentId: d1, savepointId: 'sp-1', timeoutMs: 600_000 });
    expect(h.status.savepoints[0]).toMatchObject({ trigger: 'MANUAL', state: 'IN_PROGRESS', nonce: 2 });
    h.operations['savepoint:sp-1:0'] = { state: 'failed', error: 'declined' };
    h.step();
    expect(h.status.savepoints[0]).toMatchObject({ state: 'PENDING', failures: 1, retryAt: h.now + 10_000 });
    expect(h.step(9000)).toBeUndefined();
    expect(h.step(1000)).toMatchObject({ kind: 'savepoint', key: 'savepoint:sp-1:1', savepointId: 'sp-1', timeoutMs: 600_000 });
    h.operations['savepoint:sp-1:1'] = { state: 'failed', error: 'declined' };
    h.step();
    expect(h.status.savepoints[0]!.retryAt).toBe(h.now + 20_000);
    expect(h.step(20_000)).toMatchObject({ key: 'savepoint:sp-1:2' });
    h.operations['savepoint:sp-1:2'] = { state: 'failed', error: 'declined' };
    h.step();
    expect(h.status.savepoints[0]).toMatchObject({ state: 'FAILED', failures: 3, error: 'declined' });
    expect(h.step(600_000)).toBeUndefined();
  });

  it('a savepoint whose job ends first is ABANDONED', () => {
    const h = new H(spec('v1', { savepointTriggerNonce: 1 }));
    const d1 = h.stable();
    h.apply(spec('v1', { savepointTriggerNonce: 2 }));
    h.step();
    h.deployments[d1] = { ...h.deployments[d1]!, state: 'FAILED' };
    h.step();
    expect(h.status.savepoints[0]!.state).toBe('ABANDONED');
  });

  it('periodic savepoints; cleanup by count keeps the newest and every manual one', () => {
    const h = new H(spec('v1', { savepoints: { interval: '10s', maxCount: 2 } }));
    const d1 = h.stable();
    const done: string[] = [];
    let manual = false;
    for (let i = 0; i < 60; i++) {
      if (i === 15 && !manual) {
        manual = true;
        h.apply(spec('v1', { savepoints: { interval: '10s', maxCount: 2 }, savepointTriggerNonce: 'now' }));
      }
      const a = h.step(2000);
      if (a?.kind === 'savepoint') h.operations[a.key] = { state: 'completed', path: `/sp/${a.savepointId}` };
      if (a?.kind === 'dispose') {
        done.push(a.savepointId);
        h.operations[a.key] = { state: 'completed' };
      }
    }
    const kept = h.status.savepoints.filter((r) => r.state === 'COMPLETED');
    const manualId = h.status.savepoints.find((r) => r.trigger === 'MANUAL')!.id;
    expect(done).not.toContain(manualId);
    expect(kept.map((r) => r.trigger).sort()).toEqual(['MANUAL', 'PERIODIC']);
    const num = (id: string) => Number(id.slice(3));
    const newest = num(kept.find((r) => r.trigger === 'PERIODIC')!.id);
    expect(done.every((id) => num(id) < newest), 'only older ones are disposed').toBe(true);
    expect(done.length).toBeGreaterThan(5);
    expect(h.events()).toContain('Cleanup');
    void d1;
  });

  it('cleanup by age never disposes the last completed savepoint', () => {
    const h = new H(spec('v1', { savepoints: { maxAge: '1 min', maxCount: 10 } }));
    const d1 = h.stable();
    h.apply(spec('v1', { savepoints: { maxAge: '1 min', maxCount: 10 }, savepointTriggerNonce: 1 }));
    // A manual one is never disposed; make the history of automatic ones by hand: two old upgrade savepoints.
    h.status.savepoints.push(
      { id: 'sp-a', trigger: 'UPGRADE', state: 'COMPLETED', deploymentId: d1, createdAt: 0, failures: 0, path: '/sp/a', completedAt: h.now - 300_000 },
      { id: 'sp-b', trigger: 'UPGRADE', state: 'COMPLETED', deploymentId: d1, createdAt: 0, failures: 0, path: '/sp/b', completedAt: h.now - 200_000 },
    );
    h.status.lastNonce = 1;
    expect(h.step()).toMatchObject({ kind: 'dispose', savepointId: 'sp-a' });
    h.operations['dispose:sp-a'] = { state: 'completed' };
    expect(h.step(), 'sp-b is too old but the last completed one').toBeUndefined();
    expect(h.status.savepoints.map((r) => r.id)).toEqual(['sp-b']);
  });
});

describe('rollback (point 6)', () => {
  it('an upgrade not stable within the readiness timeout rolls back to the last stable spec and its state; the user\'s spec stays', () => {
    const rb = { rollback: { enabled: true, readinessTimeout: '30s' } };
    const h = new H(spec('v1', rb));
    const d1 = h.stable();
    h.apply(spec('v2', rb));
    h.step();
    h.operations[`stop:${d1}:sp-1`] = { state: 'completed', path: '/sp/1' };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    const start = h.step() as { deploymentId: string };
    h.deployments[start.deploymentId] = { state: 'RESTARTING', restarts: 3 };
    expect(h.step(10_000)).toBeUndefined();
    const stop = h.step(25_000);
    expect(stop).toEqual({ kind: 'stop', key: `stop:${start.deploymentId}:cancel`, deploymentId: start.deploymentId, timeoutMs: 600_000 });
    expect(h.status.lifecycle).toBe('ROLLING_BACK');
    expect(h.events()).toContain('Rollback');
    h.deployments[start.deploymentId] = { state: 'CANCELED', restarts: 3 };
    const back = h.step();
    expect(back).toMatchObject({ kind: 'start', from: '/sp/1', spec: { job: { version: 'v1' } } });
    const d3 = (back as { deploymentId: string }).deploymentId;
    h.running(d3);
    h.step();
    expect(h.status.lifecycle).toBe('ROLLED_BACK');
    expect(h.desired.spec.job.version).toBe('v2');
    expect(h.step(), 'no further upgrade attempt of the same spec').toBeUndefined();
    // A new spec interrupts it and is deployed.
    h.apply(spec('v3', rb));
    expect(h.step()).toMatchObject({ kind: 'stop', deploymentId: d3, savepointId: 'sp-2' });
    expect(h.events()).toContain('RollbackInterrupted');
  });

  it('weir apps rollback brings a failed upgrade back to the last stable version and its state', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.apply(spec('v2'));
    h.step();
    h.operations[`stop:${d1}:sp-1`] = { state: 'completed', path: '/sp/1' };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    const start = h.step() as { deploymentId: string };
    h.deployments[start.deploymentId] = { state: 'FAILED', restarts: 0, error: 'throws at start' };
    expect(h.step()).toBeUndefined();
    expect(h.status.lifecycle).toBe('FAILED');
    h.desired = { ...h.desired, rollbackGeneration: h.desired.generation };
    expect(h.step()).toMatchObject({ kind: 'start', from: '/sp/1', spec: { job: { version: 'v1' } } });
    expect(h.status.lifecycle).toBe('ROLLING_BACK');
  });

  it('without rollback enabled, a broken upgrade stays as it is', () => {
    const h = new H(spec('v1'));
    const d1 = h.stable();
    h.apply(spec('v2'));
    h.step();
    h.operations[`stop:${d1}:sp-1`] = { state: 'completed', path: '/sp/1' };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    const start = h.step() as { deploymentId: string };
    h.deployments[start.deploymentId] = { state: 'RESTARTING', restarts: 3 };
    expect(h.step(400_000)).toBeUndefined();
    expect(h.status.lifecycle).toBe('DEPLOYED');
  });
});

describe('health (point 7)', () => {
  it('too many restarts within the window restart the job from its latest checkpoint, with an event', () => {
    const h = new H(spec('v1', { health: { restartsThreshold: 3, restartsWindow: '1 min' } }));
    const d1 = h.stable();
    const chk = h.deployments[d1]!.lastCheckpoint!;
    h.deployments[d1] = { state: 'RUNNING', restarts: 2, lastCheckpoint: chk };
    expect(h.step()).toBeUndefined();
    h.deployments[d1] = { state: 'RESTARTING', restarts: 3, lastCheckpoint: chk };
    expect(h.step(70_000), 'the first two are out of the window').toBeUndefined();
    h.deployments[d1] = { state: 'RUNNING', restarts: 6, lastCheckpoint: chk };
    expect(h.step()).toEqual({ kind: 'stop', key: `stop:${d1}:cancel`, deploymentId: d1, timeoutMs: 600_000 });
    expect(h.events()).toContain('RestartUnhealthyJob');
    h.deployments[d1] = { state: 'CANCELED', restarts: 6, lastCheckpoint: chk };
    expect(h.step()).toMatchObject({ kind: 'start', from: chk.path, spec: { job: { version: 'v1' } } });
  });

  it('an upgrade unhealthy before it was stable rolls back instead of restarting (before: each health restart began its readiness clock again, never rolled back)', () => {
    const extra = { rollback: { enabled: true }, health: { checkpointProgressWindow: '2min' } };
    const h = new H(spec('v1', extra));
    const d1 = h.stable();
    h.apply(spec('v2', extra));
    const stop = h.step() as { key: string; savepointId: string };
    h.operations[stop.key] = { state: 'completed', path: '/sp/up' };
    h.deployments[d1] = { state: 'FINISHED', restarts: 0 };
    const start = h.step() as { key: string; deploymentId: string };
    expect(start).toMatchObject({ kind: 'start', spec: { job: { version: 'v2' } } });
    h.operations[start.key] = { state: 'completed' };
    h.deployments[start.deploymentId] = { state: 'RUNNING', restarts: 0 }; // never a checkpoint
    let a: Action | undefined;
    for (let i = 0; i < 40 && a === undefined; i++) a = h.step(5000);
    expect(h.events()).toContain('Rollback');
    expect(h.events()).not.toContain('RestartUnhealthyJob');
    expect(a).toMatchObject({ kind: 'stop', deploymentId: start.deploymentId });
    h.deployments[start.deploymentId] = { state: 'CANCELED', restarts: 0 };
    expect(h.step()).toMatchObject({ kind: 'start', spec: { job: { version: 'v1' } }, from: '/sp/up' });
  });

  it('no completed checkpoint within the progress window restarts the job', () => {
    const h = new H(spec('v1', { health: { checkpointProgressWindow: '1 min' } }));
    const d1 = h.stable();
    expect(h.step(50_000)).toBeUndefined();
    expect(h.step(20_000)).toMatchObject({ kind: 'stop', deploymentId: d1, timeoutMs: 600_000 });
    expect(h.status.events.at(-1)!.message).toMatch(/no completed checkpoint for 7\d{4} ms \(progress window 60000 ms\)/);
  });
});
