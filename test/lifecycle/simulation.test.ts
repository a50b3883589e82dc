/**
 * Deterministic simulation of the lifecycle manager (issue 13 point 3): the pure reconciler and
 * its shell drive a simulated world (sim-world.ts) on a fake clock with seeded savepoint
 * failures, and the manager is killed at random between any two steps, including after the
 * status (the write-ahead log) is written and before its action is carried out; a restarted
 * manager carries on with the operation in flight first, or (half the time) just reconciles. After every
 * restart it must never start a second copy of the job, never lose a savepoint (every savepoint
 * written is in the status or was disposed by cleanup, never a manual one), and never forget an
 * upgrade in progress (it converges on the desired version, its state carried over).
 * Every run prints its base seed; LIFECYCLE_SEED=<n> replays one seed.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import { AppShell } from '../../src/lifecycle/shell.ts';
import { validateSpec, type AppSpec } from '../../src/lifecycle/spec.ts';
import type { AppStatus, Desired } from '../../src/lifecycle/status.ts';
import type { AppStore } from '../../src/lifecycle/store.ts';
import { SimTarget, SimWorld } from './sim-world.ts';

class Killed extends Error {}

/** Keeps JSON text, as the file store does: nothing survives a restart but what was written. */
class MemoryStore implements AppStore {
  readonly files = new Map<string, string>();
  apps(): string[] {
    return [...this.files.keys()].filter((k) => k.endsWith('/desired')).map((k) => k.split('/')[0]!);
  }
  loadDesired(app: string): Desired | undefined {
    const t = this.files.get(`${app}/desired`);
    return t === undefined ? undefined : JSON.parse(t);
  }
  saveDesired(app: string, d: Desired): void {
    this.files.set(`${app}/desired`, JSON.stringify(d));
  }
  loadStatus(app: string): AppStatus | undefined {
    const t = this.files.get(`${app}/status`);
    return t === undefined ? undefined : JSON.parse(t);
  }
  saveStatus(app: string, s: AppStatus): void {
    this.files.set(`${app}/status`, JSON.stringify(s));
  }
  forget(app: string): void {
    this.files.delete(`${app}/desired`);
  }
}

const spec = (version: string, extra: Record<string, unknown> = {}): AppSpec =>
  validateSpec({
    name: 'orders', job: { module: '/jobs/orders.ts', version, args: [version] },
    configuration: { 'execution.checkpointing.interval': '1s' }, upgradeMode: 'savepoint',
    savepoints: { interval: '7s', maxCount: 3 }, rollback: { enabled: true, readinessTimeout: '30s' }, ...extra,
  }, 'sim', '/');

type Scenario = 'upgrade' | 'broken-upgrade' | 'suspend-resume';

interface Run {
  world: SimWorld;
  store: MemoryStore;
  kills: number;
  manual: Set<string>;
  finalDesired: Desired;
}

async function simulate(seed: number, scenario: Scenario): Promise<Run> {
  const rng = new Rng(seed);
  const world = new SimWorld(new Rng(seed, 1), { stopFailure: 0.25, savepointFailure: 0.2 });
  if (scenario === 'broken-upgrade') world.broken.add('v2');
  const store = new MemoryStore();
  let generation = 1;
  store.saveDesired('orders', { spec: spec('v1'), generation });
  let killsLeft = true;
  let kills = 0;
  const manual = new Set<string>();
  const newShell = () => new AppShell('orders', store, new SimTarget(world), () => world.nowMs, {
    beforeAction: () => {
      if (killsLeft && rng.next() < 0.15) throw new Killed();
    },
  });
  let shell = newShell();
  const upgradeAt = 12 + rng.int(10);
  const nonceAt = upgradeAt - 5 + rng.int(10);
  const apply = (s: AppSpec) => store.saveDesired('orders', { spec: s, generation: ++generation });
  for (let step = 0; step < 300; step++) {
    world.tick();
    if (step === upgradeAt) {
      if (scenario === 'suspend-resume') apply(spec('v1', { state: 'suspended' }));
      else apply(spec('v2'));
    }
    if (scenario === 'suspend-resume' && step === upgradeAt + 15) apply(spec('v2'));
    if (step === nonceAt && scenario === 'upgrade') apply({ ...store.loadDesired('orders')!.spec, savepointTriggerNonce: 1 });
    if (step === 150) {
      // Then let it converge: no more kills or savepoint faults.
      killsLeft = false;
      world.faults = { stopFailure: 0, savepointFailure: 0 };
    }
    if (step === 230) {
      // Periodic savepoints off (a policy change: no redeploy), so cleanup catches up with the last ones.
      // A new generation interrupts a rollback: the broken upgrade is tried again and rolled back again.
      const d = store.loadDesired('orders')!.spec;
      apply({ ...d, savepoints: { ...d.savepoints, intervalMs: undefined } });
    }
    // A restarted manager carries on with the operation in flight (recover) or, half the time, just
    // reconciles: the reconciler must then issue again what the new target knows nothing of.
    const restart = async () => {
      kills++;
      shell = newShell();
      if (rng.next() < 0.5) await shell.recover();
    };
    if (killsLeft && rng.next() < 0.05) {
      await restart();
      continue;
    }
    try {
      await shell.step();
    } catch (e) {
      if (!(e instanceof Killed)) throw e;
      await restart();
    }
    for (const r of store.loadStatus('orders')?.savepoints ?? []) if (r.trigger === 'MANUAL') manual.add(r.id);
  }
  return { world, store, kills, manual, finalDesired: store.loadDesired('orders')! };
}

function check(run: Run, scenario: Scenario): void {
  const { world, store } = run;
  const status = store.loadStatus('orders')!;
  expect(world.violations, 'never two copies of the job').toEqual([]);
  // Never a lost savepoint: each one written is recorded, or was disposed by cleanup (never a manual one).
  const recorded = new Set(status.savepoints.filter((r) => r.state === 'COMPLETED').map((r) => r.path));
  for (const p of world.written) expect(recorded.has(p) || world.disposed.includes(p), `savepoint ${p} is neither recorded nor disposed`).toBe(true);
  for (const id of run.manual) expect(world.disposed, 'a manual savepoint is never disposed').not.toContain(`sp:${id}`);
  expect(status.savepoints.filter((r) => r.state === 'COMPLETED').length, 'history pruned to maxCount').toBeLessThanOrEqual(3 + run.manual.size);
  // Converged: one job runs, the one the status names.
  const live = world.live('orders');
  expect(live.map((j) => j.id)).toEqual([status.deployment?.id]);
  const want = scenario === 'broken-upgrade' ? 'v1' : 'v2';
  expect(live[0]!.version).toBe(want);
  expect(status.lifecycle).toBe(scenario === 'broken-upgrade' ? 'ROLLED_BACK' : 'STABLE');
  expect(run.finalDesired.spec.job.version, 'the user\'s spec is never rewritten').toBe('v2');
  expect(['start', 'stop'], 'no upgrade left in flight').not.toContain(status.operation?.kind);
  // State carried over: no job after the first starts empty, nor behind its predecessor's latest checkpoint or stop savepoint.
  const jobs = world.started.map((id) => world.jobs.get(id)!);
  for (let i = 1; i < jobs.length; i++) {
    const prev = jobs[i - 1]!;
    const next = jobs[i]!;
    expect(next.from, `${next.id} starts from a snapshot`).toBeDefined();
    const latest = Math.max(prev.startPosition, ...world.snapshots.filter((s) => s.jobId === prev.id && (s.stop || s.path.startsWith('chk:'))).map((s) => s.position));
    expect(next.startPosition, `${next.id} resumes where ${prev.id} left off`).toBeGreaterThanOrEqual(latest);
  }
}

const replay = process.env.LIFECYCLE_SEED;
const base = replay !== undefined ? Number(replay) : Math.floor(Math.random() * 1_000_000);
const count = replay !== undefined ? 1 : 40;

describe('lifecycle simulation: the manager killed between any two steps', () => {
  for (const scenario of ['upgrade', 'broken-upgrade', 'suspend-resume'] as const) {
    it(`${scenario}: ${count} seeds from ${base}`, async () => {
      console.log(`[lifecycle sim ${scenario}] seeds ${base}..${base + count - 1} (replay one with LIFECYCLE_SEED=<seed>)`);
      let kills = 0;
      for (let seed = base; seed < base + count; seed++) {
        const run = await simulate(seed, scenario);
        kills += run.kills;
        try {
          check(run, scenario);
        } catch (e) {
          const s = run.store.loadStatus('orders');
          console.log(`[lifecycle sim ${scenario}] FAILED at seed ${seed}; events:\n${s?.events.map((x) => `  ${x.at} ${x.reason}: ${x.message}`).join("\n")}\nsavepoints: ${JSON.stringify(s?.savepoints)}\noperation: ${JSON.stringify(s?.operation)}`);
          throw e;
        }
      }
      console.log(`[lifecycle sim ${scenario}] ${count} seeds, ${kills} manager kills, all invariants held`);
      expect(kills, 'the runs did kill the manager').toBeGreaterThan(count);
    });
  }
});

/**
 * The e2e kill test's case, replayed deterministically: the manager dies with the upgrade's stop
 * with savepoint in flight, and the job ends while no manager runs. The restarted manager must
 * adopt the savepoint the interrupted stop wrote (whether it first carries on with the in-flight
 * operation, recover(), or just reconciles: the reconciler issues again a stop the target has no
 * outcome for); a job that ended without one (it was cancelled) is a FAILED record with an error
 * event and a resume from the latest checkpoint, never a silent one.
 */
describe('lifecycle simulation: the stop with savepoint ends while the manager is dead', () => {
  async function interruptedStop(seed: number, recover: boolean, whileDead: (world: SimWorld, jobId: string) => void) {
    const world = new SimWorld(new Rng(seed), { stopFailure: 0, savepointFailure: 0 });
    const store = new MemoryStore();
    store.saveDesired('orders', { spec: spec('v1'), generation: 1 });
    let shell = new AppShell('orders', store, new SimTarget(world), () => world.nowMs);
    for (let i = 0; i < 10; i++) {
      world.tick();
      await shell.step();
    }
    expect(store.loadStatus('orders')!.lifecycle).toBe('STABLE');
    store.saveDesired('orders', { spec: spec('v2'), generation: 2 });
    let stop = await shell.step();
    for (let i = 0; i < 10 && stop?.kind !== 'stop'; i++) {
      world.tick(); // a periodic savepoint in flight finishes first
      stop = await shell.step();
    }
    expect(stop).toMatchObject({ kind: 'stop', savepointId: expect.stringMatching(/^sp-/) });
    const { deploymentId: v1, savepointId: sp } = stop as { deploymentId: string; savepointId: string };
    // Killed right after the stop reached the job; the job ends while no manager runs.
    whileDead(world, v1);
    for (let i = 0; i < 5; i++) world.tick();
    expect(world.jobs.get(v1)!.state).not.toBe('RUNNING');
    shell = new AppShell('orders', store, new SimTarget(world), () => world.nowMs);
    if (recover) await shell.recover();
    for (let i = 0; i < 10; i++) {
      world.tick();
      await shell.step();
    }
    const status = store.loadStatus('orders')!;
    expect(status.lifecycle).toBe('STABLE');
    expect(world.violations).toEqual([]);
    return { world, status, v1, sp, upgrade: status.savepoints.filter((r) => r.trigger === 'UPGRADE') };
  }

  for (const recover of [true, false]) {
    it(`adopts the savepoint the interrupted stop wrote (${recover ? 'carrying on with the operation first' : 'reconciling at once'})`, async () => {
      const { world, status, sp, upgrade } = await interruptedStop(7, recover, () => {});
      expect(world.written).toContain(`sp:${sp}`);
      expect(upgrade).toMatchObject([{ id: sp, state: 'COMPLETED', path: `sp:${sp}` }]);
      expect(status.deployment).toMatchObject({ spec: { job: { version: 'v2' } }, from: `sp:${sp}` });
      expect(status.events.map((e) => e.reason)).not.toContain('SavepointError');
    });
  }

  it('a job cancelled before its savepoint: the record FAILED with an error event, the upgrade resumes from the latest checkpoint', async () => {
    let latest: string | undefined;
    const { status, sp, upgrade } = await interruptedStop(7, true, (world, id) => {
      const j = world.jobs.get(id)!;
      j.stopping = undefined;
      j.state = 'CANCELED';
      latest = j.lastCheckpoint?.path;
    });
    expect(latest).toBeDefined();
    expect(upgrade).toMatchObject([{ id: sp, state: 'FAILED' }]);
    expect(status.events.find((e) => e.reason === 'SavepointError')?.message).toMatch(new RegExp(`stop with savepoint ${sp} .* failed`));
    expect(status.deployment).toMatchObject({ spec: { job: { version: 'v2' } }, from: latest });
  });
});
