/**
 * The local-process deployment target: each deployment is a real `weir run` process on this
 * machine, started detached (it outlives a manager that is killed) with the application's
 * checkpoint directory and its own WEIR_HOME, and controlled through the job's control API
 * (src/observe/rest-server.ts) like `weir savepoint`, `stop` and `cancel`.
 *
 * Idempotence, which the write-ahead status relies on: a deployment id is spawned at most once
 * (its pid file, or a live process whose command line names its config file, means it was);
 * a stop or savepoint already under way is not asked for twice, and one re-issued by a restarted
 * manager finds its result on disk (a verified savepoint in the record's folder) when the job
 * already ended. What ended how is read from the job's own log.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { LocalCheckpointStorage, verifyCheckpoint } from '../../checkpoint/local/index.ts';
import type { Action } from '../actions.ts';
import type { DeploymentTarget } from '../target.ts';
import type { CheckpointRef, JobState, Observation, ObservedDeployment, OperationOutcome } from '../status.ts';
import { cancel, overview, savepointInto, type JobEndpoint } from './job-api.ts';
import { Layout } from './layout.ts';
import { redactUserinfo } from '../../core/options/text.ts';
import { aliveAs, endOf, processesWith, spawnDetached } from './processes.ts';
import { newToken } from '../../observe/request-guard.ts';

export interface LocalTargetOptions {
  /** The manager's directory (see layout.ts). */
  readonly root: string;
  /** bin/weir.js of this installation. */
  readonly weirBin: string;
  readonly node?: string;
  readonly cwd?: string;
  readonly log?: (line: string) => void;
  /** How long a cancelled deployment may take to exit before it is signalled harder (tests shorten it). */
  readonly cancelGraceMs?: number;
}

/** How long a stopped job may take to exit after its savepoint completed. */
const EXIT_WAIT_MS = 60_000;
/** After a second SIGTERM, and after SIGKILL: how long the process may take to be gone. */
const KILL_WAIT_MS = 5000;
/** Outcomes remembered (the newest); older ones were read long ago. */
const MAX_OUTCOMES = 1000;

export class LocalProcessTarget implements DeploymentTarget {
  readonly layout: Layout;
  private readonly outcomes = new Map<string, OperationOutcome>();
  private readonly inFlight = new Set<string>();
  private readonly node: string;
  private readonly log: (line: string) => void;

  constructor(private readonly options: LocalTargetOptions) {
    this.layout = new Layout(resolve(options.root));
    this.node = options.node ?? process.execPath;
    this.log = options.log ?? (() => {});
  }

  async observe(app: string, ids: readonly string[], keys: readonly string[], stopSavepointIds: readonly string[] = []): Promise<Observation> {
    const deployments: Record<string, ObservedDeployment> = {};
    for (const id of ids) {
      const o = await this.observeDeployment(app, id);
      if (o !== undefined) deployments[id] = o;
    }
    const operations: Record<string, OperationOutcome> = {};
    for (const k of keys) {
      const o = this.outcomes.get(`${app}/${k}`);
      if (o !== undefined) operations[k] = o;
    }
    const savepoints: Record<string, CheckpointRef> = {};
    for (const id of stopSavepointIds) {
      const found = await newestSavepointIn(this.layout.savepoint(app, id));
      if (found !== undefined) savepoints[id] = found;
    }
    return { deployments, operations, savepoints };
  }

  async act(app: string, a: Action): Promise<void> {
    switch (a.kind) {
      case 'start':
        this.start(app, a);
        this.outcomes.set(`${app}/${a.key}`, { state: 'completed' }); // spawned, or found spawned already
        return;
      case 'stop':
        return this.background(app, a.key, () => (a.savepointId !== undefined ? this.stopWithSavepoint(app, a.deploymentId, a.savepointId, a.timeoutMs) : this.cancel(app, a.deploymentId)));
      case 'savepoint':
        return this.background(app, a.key, async () => {
          const ep = this.endpoint(app, a.deploymentId);
          if (ep === undefined) return { state: 'failed', error: `deployment ${a.deploymentId} has no control API yet` };
          const dir = this.layout.savepoint(app, a.savepointId);
          mkdirSync(dir, { recursive: true });
          return { state: 'completed', path: await savepointInto(ep, dir, false, a.timeoutMs) };
        });
      case 'dispose':
        return this.background(app, a.key, async () => {
          const folder = this.layout.savepoint(app, a.savepointId);
          const rel = relative(folder, resolve(a.path));
          // Only what this manager made: a path inside the savepoint record's own folder.
          if (rel.startsWith('..')) return { state: 'failed', error: `${a.path} is not in ${folder}` };
          rmSync(folder, { recursive: true, force: true });
          return { state: 'completed' };
        });
    }
  }

  // ---- deployments

  private start(app: string, a: Extract<Action, { kind: 'start' }>): void {
    const l = this.layout;
    const dir = l.deployment(app, a.deploymentId);
    mkdirSync(l.home(app, a.deploymentId), { recursive: true });
    if (existsSync(l.pidFile(app, a.deploymentId))) return; // spawned once already: never twice
    const config = l.config(app, a.deploymentId);
    const orphan = processesWith(config)[0];
    if (orphan !== undefined) {
      writeFileSync(l.pidFile(app, a.deploymentId), String(orphan));
      return;
    }
    mkdirSync(l.checkpoints(app), { recursive: true });
    mkdirSync(join(l.savepoints(app), 'default'), { recursive: true });
    writeFileSync(config, JSON.stringify({
      ...a.spec.configuration,
      'execution.checkpointing.dir': l.checkpoints(app),
      'execution.checkpointing.savepoint-dir': join(l.savepoints(app), 'default'),
      // A cancelled deployment (last-state upgrade, health restart) resumes from its checkpoints.
      'execution.checkpointing.externalized-checkpoint-retention': 'RETAIN_ON_CANCELLATION',
    }, null, 1), { mode: 0o600 }); // the spec's configuration may hold credentials
    // The job's control API takes changes only with this token (the manager's user reads it).
    const tokenFile = l.restToken(app, a.deploymentId);
    if (!existsSync(tokenFile)) writeFileSync(tokenFile, newToken(), { mode: 0o600, flag: 'wx' });
    // Job arguments often are connection URLs with passwords: in a file for the manager's user
    // only, since the process list shows a command line to every user of the machine.
    const argsFile = l.args(app, a.deploymentId);
    writeFileSync(argsFile, JSON.stringify(a.spec.job.args), { mode: 0o600 });
    const args = [
      this.options.weirBin, 'run', a.spec.job.module, '--config', config, '--rest-port', '0', '--rest-token-file', tokenFile, '--args-file', argsFile,
      ...(a.spec.job.parallelism !== undefined ? ['--parallelism', String(a.spec.job.parallelism)] : []),
      ...(a.from !== undefined ? ['--from', a.from] : []),
      ...(a.spec.allowNonRestoredState ? ['--allow-non-restored-state'] : []),
    ];
    const pid = spawnDetached({
      node: this.node, args, cwd: this.options.cwd ?? dir, env: jobEnvironment(process.env, l.home(app, a.deploymentId)),
      stdout: l.stdout(app, a.deploymentId), stderr: l.stderr(app, a.deploymentId), pidFile: l.pidFile(app, a.deploymentId), exitFile: l.exitFile(app, a.deploymentId),
    });
    this.log(`weir manager: ${app}: started deployment ${a.deploymentId} (pid ${pid})${a.from !== undefined ? ` from ${redactUserinfo(a.from)}` : ''}`);
  }

  private pidOf(app: string, id: string): number | undefined {
    const file = this.layout.pidFile(app, id);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return processesWith(this.layout.config(app, id))[0];
    }
    // Anything but a pid (an empty file, say) would read as 0, which alive() cannot judge.
    if (/^[0-9]{1,10}$/.test(text.trim()) && Number(text) > 0) return Number(text);
    this.log(`weir manager: ${app}: pid file ${file} holds ${JSON.stringify(text.slice(0, 40))}, not a pid; finding deployment ${id}'s process by its command line`);
    return processesWith(this.layout.config(app, id))[0];
  }

  private stderrOf(app: string, id: string): string {
    try {
      return readFileSync(this.layout.stderr(app, id), 'utf8');
    } catch {
      return '';
    }
  }

  /** The job's id and control API, from the line `weir run` prints once it serves it. */
  endpoint(app: string, id: string): JobEndpoint | undefined {
    // The line as weir run writes it, a whole line and the first: a log line quoting input (a
    // malformed record's raw text) could hold the same words, and the token goes to this address.
    const m = /^weir: job ([0-9a-f]+) running; control API on (http:\/\/\S+)$/m.exec(this.stderrOf(app, id));
    if (m === null) return undefined;
    let token: string | undefined;
    try {
      token = readFileSync(this.layout.restToken(app, id), 'utf8').trim();
    } catch {
      token = undefined; // a deployment started before tokens: its API takes none
    }
    return { jobId: m[1]!, base: m[2]!, ...(token !== undefined ? { token } : {}) };
  }

  private async observeDeployment(app: string, id: string): Promise<ObservedDeployment | undefined> {
    if (!existsSync(this.layout.deployment(app, id))) return undefined;
    const pid = this.pidOf(app, id);
    if (pid === undefined) return undefined; // never spawned (the start is issued again)
    const ep = this.endpoint(app, id);
    const lastCheckpoint = ep !== undefined ? await this.latestCheckpoint(app, ep.jobId) : undefined;
    const withCheckpoint = lastCheckpoint !== undefined ? { lastCheckpoint } : {};
    if (aliveAs(pid, this.layout.config(app, id))) {
      if (ep === undefined) return { state: 'STARTING', restarts: 0 };
      try {
        const o = await overview(ep);
        return { state: jobState(o.state), restarts: o.attempt, ...withCheckpoint };
      } catch {
        return { state: 'STARTING', restarts: 0, ...withCheckpoint }; // serving stopped, exiting
      }
    }
    let exitCode: number | undefined;
    try {
      exitCode = (JSON.parse(readFileSync(this.layout.exitFile(app, id), 'utf8')) as { code: number | null }).code ?? undefined;
    } catch {
      exitCode = undefined;
    }
    const end = endOf(this.stderrOf(app, id), exitCode);
    return { state: end.state, restarts: 0, ...withCheckpoint, ...(end.error !== undefined ? { error: end.error } : {}) };
  }

  private async latestCheckpoint(app: string, jobId: string): Promise<CheckpointRef | undefined> {
    const done = await new LocalCheckpointStorage(this.layout.checkpoints(app)).completed(jobId).catch(() => []);
    const c = done.at(-1);
    return c === undefined ? undefined : { path: c.path, completedAt: c.metadata.completedAt };
  }

  // ---- operations

  /** Runs `task` once per key; its outcome is what observe reports under the key. */
  private background(app: string, key: string, task: () => Promise<OperationOutcome>): void {
    const k = `${app}/${key}`;
    if (this.inFlight.has(k) || this.outcomes.get(k)?.state === 'completed') return;
    this.inFlight.add(k);
    this.outcomes.set(k, { state: 'in-progress' });
    void task()
      .catch((e: unknown): OperationOutcome => ({ state: 'failed', error: e instanceof Error ? e.message : String(e) }))
      .then((o) => {
        this.inFlight.delete(k);
        this.outcomes.set(k, o);
        if (this.outcomes.size > MAX_OUTCOMES) this.outcomes.delete(this.outcomes.keys().next().value!);
      });
  }

  private async stopWithSavepoint(app: string, id: string, savepointId: string, timeoutMs: number): Promise<OperationOutcome> {
    const dir = this.layout.savepoint(app, savepointId);
    mkdirSync(dir, { recursive: true });
    const pid = this.pidOf(app, id);
    const running = pid !== undefined && aliveAs(pid, this.layout.config(app, id));
    const ep = this.endpoint(app, id);
    if (running && ep !== undefined) {
      try {
        const path = await savepointInto(ep, dir, true, timeoutMs);
        await waitForExit(pid, this.layout.config(app, id), EXIT_WAIT_MS);
        return { state: 'completed', path };
      } catch (e) {
        // Asked again by a restarted manager while the first stop is finishing: its savepoint shows
        // up on disk once the job has exited (which may take a while on a loaded machine).
        if (!(await waitForExit(pid, this.layout.config(app, id), EXIT_WAIT_MS))) return { state: 'failed', error: (e as Error).message };
      }
    } else if (running) {
      return { state: 'failed', error: `deployment ${id} does not serve its control API yet` };
    }
    const found = await newestSavepointIn(dir);
    return found !== undefined ? { state: 'completed', path: found.path } : { state: 'failed', error: `deployment ${id} ended without a savepoint in ${dir}` };
  }

  /**
   * Cancels the deployment and waits, bounded, until its process is gone: completed only then.
   * One that does not exit within the grace period (a sink's close that never returns) gets a
   * second SIGTERM (`weir run` then exits at once) and at last SIGKILL. Before, the cancel was
   * completed once asked, every re-issue of the stop did nothing, and the application stayed
   * UPGRADING (or DELETING) for good.
   */
  private async cancel(app: string, id: string): Promise<OperationOutcome> {
    const pid = this.pidOf(app, id);
    const marker = this.layout.config(app, id);
    if (pid === undefined || !aliveAs(pid, marker)) return { state: 'completed' };
    const ep = this.endpoint(app, id);
    try {
      if (ep === undefined) throw new Error('no control API yet');
      await cancel(ep);
    } catch {
      // Not serving (starting, or stuck): SIGTERM makes `weir run` cancel the job.
      signal(pid, 'SIGTERM');
    }
    const graceMs = this.options.cancelGraceMs ?? EXIT_WAIT_MS;
    if (await waitForExit(pid, marker, graceMs)) return { state: 'completed' };
    this.log(`weir manager: deployment ${id} (pid ${pid}) did not exit within ${graceMs} ms of its cancel; signalling it again`);
    signal(pid, 'SIGTERM');
    if (await waitForExit(pid, marker, KILL_WAIT_MS)) return { state: 'completed' };
    signal(pid, 'SIGKILL');
    if (await waitForExit(pid, marker, KILL_WAIT_MS)) return { state: 'completed' };
    return { state: 'failed', error: `deployment ${id} (pid ${pid}) did not exit, even after SIGKILL` };
  }
}

/**
 * The environment of a deployment's `weir run`: the manager's, with the deployment's WEIR_HOME and
 * without npm's variables. The job's parent is the manager, not npm; a `weir run` that sees
 * npm_command thinks npm started it and cancels itself once its parent is gone
 * (src/cli/parent-watch.ts), so a manager started with `npx weir manager` (or by a test runner
 * under npx) and then killed took its jobs down with it: a stop-with-savepoint in flight ended
 * as a cancel and its savepoint was lost. Jobs must outlive the manager.
 */
export function jobEnvironment(env: NodeJS.ProcessEnv, home: string): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!k.toLowerCase().startsWith('npm_')) out[k] = v;
  out['WEIR_HOME'] = home;
  return out;
}

function jobState(s: string): JobState {
  switch (s) {
    case 'RUNNING':
    case 'RESTARTING':
    case 'FINISHED':
    case 'FAILED':
    case 'CANCELED':
      return s;
    default:
      return 'STARTING'; // INITIALIZING
  }
}

/** Whether the process (started with `marker` on its command line) exited within `timeoutMs`. */
/** Sends `sig` to `pid`; one gone meanwhile needs nothing. */
function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone meanwhile
  }
}

async function waitForExit(pid: number, marker: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (aliveAs(pid, marker)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** The newest savepoint in a record's folder that verifies (its metadata is written last). */
async function newestSavepointIn(dir: string): Promise<CheckpointRef | undefined> {
  let best: CheckpointRef | undefined;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  for (const n of names) {
    const p = join(dir, n);
    const v = await verifyCheckpoint(p);
    if (v.ok && (best === undefined || v.metadata.completedAt > best.completedAt)) best = { path: p, completedAt: v.metadata.completedAt };
  }
  return best;
}
