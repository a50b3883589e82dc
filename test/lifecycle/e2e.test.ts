/**
 * The lifecycle manager end to end (issue 13 point 8), with real processes: a `weir manager`
 * process runs real `weir run` jobs of the savepoint-app fixture (v1 -> v2 changes the code and
 * drops an operator; "v3" throws at start), with an exactly-once file sink. Checked on the
 * committed output: every record once across all versions, and every key's count continuing
 * across upgrades, suspend/resume, a rollback and a manager killed with SIGKILL mid-upgrade;
 * periodic savepoints pruned by count. Every `weir apps` verb runs once through the CLI; the rest
 * goes through the REST API (a CLI call is a node start: seconds on a busy machine). Two
 * managers and seven job starts in all, to keep the file short.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { AppStatus } from '../../src/lifecycle/status.ts';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { verifyCheckpoint } from '../../src/checkpoint/local/index.ts';
import { fixture, tempDir, weir } from '../savepoint/helpers.ts';
import { checkedOutput, describeApp, eventsText, livePids, rest, startManager, waitFor, type ManagerProcess } from './helpers.ts';

const tmp = tempDir('lifecycle-e2e');
afterAll(() => tmp.cleanup());

const started: { dir: string; managers: ManagerProcess[] }[] = [];
afterEach(() => {
  // End what these tests started, by pid: the managers, and jobs a failed test left running.
  for (const s of started.splice(0)) {
    for (const m of s.managers) if (m.child.exitCode === null) m.child.kill('SIGKILL');
    for (const pid of livePids(s.dir)) process.kill(pid, 'SIGKILL');
  }
});

function specYaml(version: string, outDir: string, extra = ''): string {
  return [
    'name: counts',
    'job:',
    `  module: ${fixture('savepoint-app.ts')}`,
    `  version: ${version}`,
    `  args: [${version}, 100000000, 150, ${outDir}]`,
    '  parallelism: 2',
    'configuration:',
    '  execution.checkpointing.interval: 300ms',
    'upgradeMode: savepoint',
    'allowNonRestoredState: true',
    'rollback: { enabled: true, readinessTimeout: 60s }',
    extra,
  ].join('\n') + '\n';
}

async function setup(name: string): Promise<{ dir: string; home: string; out: string; m: ManagerProcess; apply: (yaml: string, cli?: 'cli') => Promise<void>; state: () => ReturnType<typeof describeApp> }> {
  const root = tmp.fresh(name);
  const dir = join(root, 'manager');
  const home = join(root, 'home');
  const out = join(root, 'out');
  const m = await startManager(dir, home);
  const entry = { dir, managers: [m] };
  started.push(entry);
  const ctx = {
    dir, home, out, m,
    state: () => describeApp(ctx.m, 'counts'),
    /** Applies a spec through the REST API, or `weir apps apply` (each CLI call starts a node process: seconds on a busy machine). */
    async apply(yaml: string, cli?: 'cli') {
      if (cli === undefined) {
        const r = await rest(`${ctx.m.url}/apps`, 'POST', { spec: parseYaml(yaml) });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        return;
      }
      const file = join(root, 'counts.yaml');
      writeFileSync(file, yaml);
      const r = await weir(home, 'apps', 'apply', file, '--dir', dir);
      expect(r.code, r.stderr).toBe(0);
    },
  };
  return ctx;
}

const explain = (ctx: { state: () => ReturnType<typeof describeApp> }) => async () => eventsText((await ctx.state()).status);

async function waitLifecycle(ctx: { state: () => ReturnType<typeof describeApp> }, lifecycle: string, version: string): Promise<void> {
  await waitFor(`${lifecycle} running ${version}`, async () => {
    const { status } = await ctx.state();
    return status.lifecycle === lifecycle && status.deployment?.spec.job.version === version && status.deployment.stable ? true : undefined;
  }, 120_000, explain(ctx));
}

/** Waits until the running job has committed output past what is there now (it makes progress). */
async function progresses(out: string): Promise<void> {
  const before = (() => {
    try {
      return checkedOutput(out).records.length;
    } catch {
      return 0;
    }
  })();
  await waitFor('more committed output', async () => (checkedOutput(out).records.length > before + 20 ? true : undefined), 60_000);
}

describe('lifecycle manager with real processes', () => {
  it('apply -> running; a manual savepoint; savepoint upgrade carries state key by key; a broken upgrade rolls back by itself; suspend/resume keep state; delete with a savepoint', async () => {
    const ctx = await setup('full');
    await ctx.apply(specYaml('v1', ctx.out), 'cli');
    await waitLifecycle(ctx, 'STABLE', 'v1');
    // The job's arguments reach it from a file, not its command line, which every user can read in the process list.
    const cmdlines = livePids(ctx.dir).map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'));
    expect(cmdlines.length).toBeGreaterThan(0);
    for (const c of cmdlines) {
      expect(c).toContain('--args-file');
      expect(c.join(' ')).not.toContain(ctx.out);
      expect(statSync(c[c.indexOf('--args-file') + 1]!).mode & 0o077).toBe(0);
    }

    // A manual savepoint through the CLI, seen with describe and events.
    const sp = await weir(ctx.home, 'apps', 'savepoint', 'counts', '--dir', ctx.dir);
    expect(sp.code, sp.stderr).toBe(0);
    await waitFor('the manual savepoint', async () => ((await ctx.state()).status.savepoints.some((r) => r.trigger === 'MANUAL' && r.state === 'COMPLETED') ? true : undefined), 60_000, explain(ctx));
    const [described, events] = await Promise.all([
      weir(ctx.home, 'apps', 'describe', 'counts', '--dir', ctx.dir),
      weir(ctx.home, 'apps', 'events', 'counts', '--dir', ctx.dir),
      ctx.apply(specYaml('v2', ctx.out)),
    ]);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/sp-1 +MANUAL +COMPLETED +\/\S+savepoints\/sp-1\/savepoint-/);
    expect(events.stdout).toMatch(/Normal +SavepointCompleted +manual savepoint sp-1 at /);

    await waitLifecycle(ctx, 'STABLE', 'v2');
    await progresses(ctx.out);
    let s = (await ctx.state()).status;
    const upgrade = s.savepoints.filter((r) => r.trigger === 'UPGRADE' && r.state === 'COMPLETED');
    expect(upgrade).toHaveLength(1);
    expect(s.deployment!.from).toBe(upgrade[0]!.path);
    expect(checkedOutput(ctx.out).versions).toEqual(new Set(['v1', 'v2']));

    await ctx.apply(specYaml('v3', ctx.out));
    await waitLifecycle(ctx, 'ROLLED_BACK', 'v2');
    s = (await ctx.state()).status;
    const reasons = s.events.map((e) => e.reason);
    expect(reasons).toContain('Rollback');
    expect(s.events.find((e) => e.reason === 'Rollback')!.message).toMatch(/unknown version v3/);
    expect((await ctx.state()).desired.spec.job.version, 'the user\'s spec is not rewritten').toBe('v3');
    const [rb] = await Promise.all([weir(ctx.home, 'apps', 'rollback', 'counts', '--dir', ctx.dir), progresses(ctx.out)]);
    expect(rb.code).not.toBe(0);
    expect(rb.stderr).toMatch(/application counts already runs its last stable version \(v2\)/);

    // Back to v2 in the spec; then suspend and resume through the CLI.
    await ctx.apply(specYaml('v2', ctx.out));
    await waitFor('STABLE again', async () => ((await ctx.state()).status.lifecycle === 'STABLE' ? true : undefined), 120_000, explain(ctx));
    expect((await weir(ctx.home, 'apps', 'suspend', 'counts', '--dir', ctx.dir)).code).toBe(0);
    await waitFor('SUSPENDED', async () => ((await ctx.state()).status.lifecycle === 'SUSPENDED' ? true : undefined), 120_000, explain(ctx));
    expect(livePids(ctx.dir), 'nothing runs while suspended').toEqual([]);
    const atSuspend = checkedOutput(ctx.out).records.length;
    expect((await weir(ctx.home, 'apps', 'resume', 'counts', '--dir', ctx.dir)).code).toBe(0);
    await waitLifecycle(ctx, 'STABLE', 'v2');
    await waitFor('output after resume', async () => (checkedOutput(ctx.out).records.length > atSuspend + 20 ? true : undefined), 60_000);

    const del = await weir(ctx.home, 'apps', 'delete', 'counts', '--savepoint', '--dir', ctx.dir);
    expect(del.code, del.stderr).toBe(0);
    await waitFor('deleted', async () => ((await rest(`${ctx.m.url}/apps`)).body['apps'].length === 0 ? true : undefined), 120_000);
    expect(livePids(ctx.dir)).toEqual([]);
    // The delete stopped the job with a savepoint, which stays on disk (the status file is kept too).
    const last = (JSON.parse(readFileSync(join(ctx.dir, 'apps', 'counts', 'status.json'), 'utf8')) as AppStatus);
    expect(last.lifecycle).toBe('DELETED');
    const final = last.savepoints.at(-1)!;
    expect(final).toMatchObject({ trigger: 'UPGRADE', state: 'COMPLETED' });
    expect(last.events.some((e) => e.reason === 'Stopped' && e.message.includes(`(delete) with savepoint ${final.path}`)), eventsText(last)).toBe(true);
    expect((await verifyCheckpoint(final.path!)).ok).toBe(true);
    expect(last.savepoints.find((r) => r.trigger === 'MANUAL'), 'a manual savepoint is kept').toMatchObject({ state: 'COMPLETED' });
    // Every record once, every count continued: across v1, v2, the rollback, suspend/resume and the final stop.
    const { records, versions } = checkedOutput(ctx.out);
    expect(versions).toEqual(new Set(['v1', 'v2']));
    expect(records.length).toBeGreaterThan(200);
    const list = await weir(ctx.home, 'apps', 'list', '--dir', ctx.dir);
    expect(list.stdout).toBe('no applications\n');
  }, 600_000);

  it('a manager killed with SIGKILL mid-upgrade and restarted finishes the upgrade, one job at a time, exactly once; periodic savepoints are pruned by count', async () => {
    const ctx = await setup('kill');
    await ctx.apply(specYaml('v1', ctx.out));
    await waitLifecycle(ctx, 'STABLE', 'v1');
    await progresses(ctx.out);
    const v1pid = Number(readFileSync(join(ctx.dir, 'apps', 'counts', 'deployments', 'counts-1', 'pid'), 'utf8'));
    expect(readFileSync(`/proc/${v1pid}/environ`, 'utf8').split('\0').filter((v) => v.startsWith('npm_')), 'a job does not inherit npm\'s variables from the manager').toEqual([]);
    // Apply v2 straight through the REST API and watch the status file closely: SIGKILL the manager
    // as soon as it holds the upgrade's intent (the stop with savepoint, or the start of v2).
    await ctx.apply(specYaml('v2', ctx.out));
    const statusFile = join(ctx.dir, 'apps', 'counts', 'status.json');
    const killedAt = await waitFor('the upgrade in flight', async () => {
      const op = (JSON.parse(readFileSync(statusFile, 'utf8')) as AppStatus).operation;
      return op?.kind === 'stop' || op?.kind === 'start' ? op.kind : undefined;
    }, 60_000, explain(ctx), 10);
    ctx.m.child.kill('SIGKILL');
    console.log(`[lifecycle e2e] manager killed with the ${killedAt} of the upgrade in flight`);
    await new Promise((r) => ctx.m.child.once('exit', r));
    const m2 = await startManager(ctx.dir, ctx.home);
    started[started.length - 1]!.managers.push(m2);
    ctx.m = m2;
    await waitLifecycle(ctx, 'STABLE', 'v2');
    await progresses(ctx.out);
    const s = (await ctx.state()).status;
    expect(s.deployment!.id, 'one deployment per version: no second copy was started').toBe('counts-2');
    // The upgrade savepoint the interrupted stop (or the restarted manager's) wrote is adopted, and v2 starts from it.
    expect(s.savepoints.filter((r) => r.state === 'COMPLETED').map((r) => r.trigger), eventsText(s)).toEqual(['UPGRADE']);
    expect(s.deployment!.from).toBe(s.savepoints.find((r) => r.trigger === 'UPGRADE')!.path);
    // The job outlived the manager: it did not take the killed manager (started as by npx) for npm and cancel itself.
    expect(readFileSync(join(ctx.dir, 'apps', 'counts', 'deployments', 'counts-1', 'stderr.log'), 'utf8')).not.toMatch(/cancelling the job/);

    // Periodic savepoints switched on (a policy change: v2 runs on, no redeploy) are pruned by count,
    // keeping the newest, and their folders deleted. With the upgrade savepoint: 5 completed, 3 disposed.
    await ctx.apply(specYaml('v2', ctx.out, 'savepoints: { interval: 1s, maxCount: 2 }'));
    const p = await waitFor('four periodic savepoints and cleanup', async () => {
      const st = (await ctx.state()).status;
      return st.nextSavepoint > 5 && st.events.filter((e) => e.reason === 'Cleanup').length >= 3 && st.operation === undefined ? st : undefined;
    }, 180_000, explain(ctx));
    expect(p.deployment!.id, 'a savepoint policy change does not redeploy').toBe('counts-2');
    expect(p.savepoints.filter((r) => r.trigger === 'PERIODIC').length).toBeGreaterThanOrEqual(2);
    const completed = p.savepoints.filter((r) => r.state === 'COMPLETED');
    expect(completed.length).toBeLessThanOrEqual(2);
    const folders = readdirSync(join(ctx.dir, 'apps', 'counts', 'savepoints')).filter((f) => f.startsWith('sp-'));
    const disposed = p.events.filter((e) => e.reason === 'Cleanup').map((e) => /disposed savepoint (sp-\d+)/.exec(e.message)![1]!);
    expect(disposed.length).toBeGreaterThanOrEqual(3);
    for (const id of disposed) expect(folders, `${id} was disposed`).not.toContain(id);
    for (const r of completed) expect(folders).toContain(r.id);
    const newest = Math.max(...completed.map((r) => Number(r.id.slice(3))));
    expect(disposed.every((id) => Number(id.slice(3)) < newest), 'the newest is kept').toBe(true);

    expect((await rest(`${ctx.m.url}/apps/counts?savepoint=true`, 'DELETE')).status).toBe(202);
    await waitFor('deleted', async () => ((await rest(`${ctx.m.url}/apps`)).body['apps'].length === 0 ? true : undefined), 120_000);
    const { versions, records } = checkedOutput(ctx.out);
    expect(versions).toEqual(new Set(['v1', 'v2']));
    expect(records.length).toBeGreaterThan(40);
  }, 600_000);
});
