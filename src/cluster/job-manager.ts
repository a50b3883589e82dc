/**
 * The job manager of a local run: builds the job graph once, then runs attempts. Each attempt
 * plans subtasks over workers, deploys task executors (worker threads, or the main thread with
 * one worker), restores state if there is any, and drives checkpoints through the pure
 * coordinator logic (this file is its shell: timers, messages, storage). A failure cancels
 * the attempt; the restart strategy decides whether a new attempt starts from the latest
 * completed checkpoint.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { JobDefinition } from '../api/job.ts';
import { assignSplits, type SourceSplit } from '../core/source.ts';
import { applyCheckpointSettings, DEFAULT_CHECKPOINT_CONFIG, discardOnJobEnd, type CheckpointConfig, type CheckpointSettings } from '../checkpoint/config.ts';
import { CheckpointCoordinatorLogic, type CompletedCheckpointInfo, type Decision } from '../checkpoint/coordinator.ts';
import { CheckpointFailureReason as R, describeReason } from '../checkpoint/failure-reason.ts';
import { METADATA_VERSION, type CheckpointMetadata, type OperatorStateMeta } from '../checkpoint/metadata.ts';
import { planRestore } from '../checkpoint/restore-plan.ts';
import { CheckpointStatsTracker, type CheckpointStatsEntry } from '../checkpoint/stats.ts';
import { LocalCheckpointStorage, type CheckpointStorage, type CheckpointStorageLocation, type CompletedCheckpointRef, type StorageResolver } from '../checkpoint/storage.ts';
import { storageResolver } from '../checkpoint/storage-resolver.ts';
import type { TaskAck, TaskRestore } from '../core/checkpoint-format.ts';
import { planExecution, type ExecutionPlan } from '../graph/execution-plan.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import { DEFAULT_CHANNEL_CREDITS } from '../runtime/channels/channel.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import { buildJob, loadJobModule } from './job-loader.ts';
import { serializeError, type FromExecutor, type SerializedError, type TaskMetrics, type ToExecutor } from './messages.ts';
import { defaultRestartStrategy, resolveRestartStrategy, RestartBackoff, type RestartStrategySettings } from './restart-strategy.ts';
import { TaskExecutor } from './task-executor.ts';
import type { JobControl, JobService } from './job-control.ts';
import { taskId, subtaskOf, type TaskId } from '../core/task-id.ts';
import { WeirError } from '../core/errors.ts';

export interface RunOptions {
  /** Default parallelism of operators (the job's own settings win). Default: number of workers. */
  readonly parallelism?: number;
  /** Worker threads; 1 runs everything in the calling thread. Default: number of cores. */
  readonly workers?: number;
  readonly args?: readonly string[];
  /** Processing-time clock; only for runs in one thread (workers: 1). */
  readonly clock?: Clock;
  /** Receives print() output; default process.stdout. */
  readonly stdout?: (text: string) => void;
  /** Receives log lines (restarts, skipped checkpoints); default process.stderr. */
  readonly log?: (line: string) => void;
  /** Called about once a second with progress. */
  readonly onProgress?: (p: Progress) => void;
  /** Buffer credits per channel (backpressure bound). */
  readonly credits?: number;
  /** Checkpoint settings; they override the job's own (enableCheckpointing). */
  readonly checkpoint?: CheckpointSettings;
  readonly restartStrategy?: RestartStrategySettings;
  /**
   * Start from a snapshot: 'latest' (newest completed checkpoint in the checkpoint dir; an
   * error if there is none), 'latest-or-empty' (start fresh if there is none), or a path to a
   * checkpoint or savepoint directory.
   */
  readonly from?: string;
  readonly allowNonRestoredState?: boolean;
  /**
   * Ownership of a snapshot given as a path (Flink's claim modes): 'no-claim' (default) never
   * deletes it, and every checkpoint after it stands alone (weir's snapshots are full);
   * 'claim' lets weir own it: a checkpoint of a job in the checkpoint directory is continued
   * under that job's id and subsumed as usual; any other snapshot is deleted once the first
   * checkpoint after the restore completes. `--from latest` always resumes (claims) the job.
   */
  readonly claimMode?: 'claim' | 'no-claim';
  /** Aborting cancels the job (CANCELED; checkpoints kept or deleted per retention). */
  readonly signal?: AbortSignal;
  /**
   * Services to run beside the job (the REST control API: see observe/control-api.ts), started
   * before the first attempt and stopped when the job ends.
   */
  readonly services?: readonly JobService[];
}

export interface Progress {
  readonly elapsedMs: number;
  /** Records emitted by sources so far (this attempt). */
  readonly recordsIn: number;
  /** Records taken by sinks so far (this attempt). */
  readonly recordsOut: number;
  readonly heapUsed: number;
  readonly attempt: number;
  readonly lastCheckpoint: CheckpointStatsEntry | undefined;
}

export type JobStatus = 'FINISHED' | 'FAILED' | 'CANCELED';

export class JobResult {
  constructor(
    readonly jobId: string,
    readonly status: JobStatus,
    readonly error: SerializedError | undefined,
    private readonly collectedBySink: ReadonlyMap<string, unknown[]>,
    readonly durationMs: number,
    readonly progress: Progress,
    readonly graph: JobGraph,
    readonly attempts: number,
    readonly checkpoints: CheckpointStatsTracker,
  ) {}
  /** Records a collect(name) sink received, in arrival order (all attempts). */
  collected<T = unknown>(sink = 'collect'): T[] {
    return (this.collectedBySink.get(sink) ?? []) as T[];
  }
  sinks(): string[] {
    return [...this.collectedBySink.keys()];
  }
}

export class StartError extends WeirError {
  constructor(message: string) {
    super('START', message);
  }
}

interface ExecutorHandle {
  send(m: ToExecutor, transfer?: MessagePort[]): void;
  terminate(): Promise<void>;
}

/** Longest a worker thread may take to load the job module and build its graph. */
const DEPLOY_TIMEOUT_MS = 120_000;
/**
 * How long a restoring attempt waits for every task to have loaded its state before it fails
 * (and the restart strategy decides). Generous: 10 M keys load in a few seconds here; the
 * bound exists so that a stalled file system cannot hold a job in INITIALIZING forever.
 */
const RESTORE_TIMEOUT_MS = 600_000;

interface SavepointRequest {
  readonly id: string;
  /** The directory a savepoint goes below (its own directory is made at trigger time); '' for a checkpoint. */
  readonly target: string;
  /** Where it went, once triggered. */
  location?: string;
  readonly type: 'checkpoint' | 'savepoint';
  checkpointId?: number;
  /** Stop-with-savepoint: 'drain' ends the sources first; 'stop' suspends them at the barrier. */
  readonly stop: 'drain' | 'stop' | undefined;
  readonly resolve: (path: string) => void;
  readonly reject: (e: Error) => void;
  completed: boolean;
}

export class ControlError extends WeirError {
  constructor(message: string, readonly status = 409) {
    super('CONTROL', message);
  }
}

type AttemptOutcome = { status: 'FINISHED' } | { status: 'CANCELED' } | { status: 'FAILED'; error: SerializedError; corruptCheckpoint?: string };

export async function runJob(job: string | JobDefinition, options: RunOptions = {}): Promise<JobResult> {
  const workers = options.workers ?? availableParallelism();
  if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`workers must be a positive integer, got ${String(options.workers)}`);
  const parallelism = options.parallelism ?? workers;
  if (!Number.isInteger(parallelism) || parallelism < 1) throw new RangeError(`parallelism must be a positive integer, got ${String(options.parallelism)}`);
  if (options.clock !== undefined && workers > 1) throw new RangeError('a custom clock needs workers: 1 (it cannot cross threads)');
  const args = options.args ?? [];
  const modulePath = typeof job === 'string' ? resolve(job) : undefined;
  const def = typeof job === 'string' ? await loadJobModule(job) : job;
  if (modulePath === undefined && workers > 1) throw new RangeError('a job given as a definition runs with workers: 1; pass the module path to use worker threads');
  const { env, graph } = await buildJob(def, args, parallelism);
  let config: CheckpointConfig = applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, env.checkpointSettings, 'job code (enableCheckpointing)');
  if (options.checkpoint) config = applyCheckpointSettings(config, options.checkpoint, 'run options');
  const restartConfig = options.restartStrategy ?? env.restartSettings;
  const master = new JobMaster(graph, modulePath, args, parallelism, workers, config, restartConfig, options, def);
  return master.run();
}

class JobMaster implements JobControl {
  private readonly log: (line: string) => void;
  private readonly stdout: (text: string) => void;
  private readonly customStdout: boolean;
  private readonly clock: Clock;
  private readonly plan: ExecutionPlan;
  private readonly storage: CheckpointStorage | undefined;
  readonly snapshots: StorageResolver;
  private jobIdValue = randomBytes(16).toString('hex');
  private readonly collected = new Map<string, unknown[]>();
  private readonly stats: CheckpointStatsTracker;
  private readonly badCheckpoints = new Set<string>();
  private readonly started = Date.now();
  private attempt = 0;
  private current: Attempt | undefined;
  private restoredFrom: CompletedCheckpointRef | undefined;
  /** The restored snapshot may be deleted by us only if it is one of this job's own checkpoints (claim). */
  private restoredIsOwn = false;

  constructor(
    readonly graph: JobGraph,
    readonly modulePath: string | undefined,
    readonly args: readonly string[],
    readonly parallelism: number,
    readonly workers: number,
    readonly config: CheckpointConfig,
    readonly restartSettings: RestartStrategySettings | undefined,
    readonly options: RunOptions,
    private readonly definition: JobDefinition,
  ) {
    this.log = options.log ?? ((l) => void process.stderr.write(l + '\n'));
    this.stdout = options.stdout ?? ((t) => void process.stdout.write(t));
    this.customStdout = options.stdout !== undefined;
    this.clock = options.clock ?? systemClock;
    this.plan = planExecution(graph, workers);
    const checkpointing = config.intervalMs !== undefined;
    if (checkpointing && config.dir === undefined) throw new StartError('checkpointing is enabled but no checkpoint directory is set (--checkpoint-dir DIR)');
    this.storage = config.dir !== undefined ? new LocalCheckpointStorage(config.dir) : undefined;
    this.snapshots = storageResolver(this.storage);
    this.stats = new CheckpointStatsTracker(10, (e) => {
      if (this.storage) void this.storage.appendHistory(this.jobId, historyLine(e)).catch(() => {});
    });
  }

  get checkpointing(): boolean {
    return this.config.intervalMs !== undefined;
  }

  get jobId(): string {
    return this.jobIdValue;
  }
  get startedAt(): number {
    return this.started;
  }

  get jobName(): string {
    return this.graph.jobName;
  }

  async run(): Promise<JobResult> {
    await this.resolveStart();
    if (this.restoredFrom) {
      // A restore that cannot work is refused before anything is created or announced.
      const plan = planRestore(this.restoredFrom.metadata, this.restoredFrom.path, this.graph, this.plan, this.options.allowNonRestoredState ?? false);
      if (plan.unmatched.length > 0) {
        const names = this.restoredFrom.metadata.operators.filter((o) => plan.unmatched.includes(o.id)).map((o) => `"${o.name}"${o.uid ? ` (uid ${o.uid})` : ''}`);
        this.log(`weir: dropping the state of operators the job no longer has (--allow-non-restored-state): ${names.join(', ')}`);
      }
    }
    if (this.storage) await this.storage.initJob(this.jobId);
    const stopServices = await this.startServices();
    try {
      return await this.runAttempts();
    } finally {
      await stopServices();
    }
  }

  /** Starts the job's services; returns what stops them (in reverse order). */
  private async startServices(): Promise<() => Promise<void>> {
    const started: JobService[] = [];
    const stopAll = async () => {
      for (const svc of started.reverse()) await svc.stop();
    };
    try {
      for (const svc of this.options.services ?? []) {
        await svc.start(this);
        started.push(svc);
      }
    } catch (e) {
      await stopAll();
      throw e;
    }
    return stopAll;
  }

  // ---- control (REST, weir savepoint/stop/cancel)

  private state: 'INITIALIZING' | 'RUNNING' | 'RESTARTING' | 'FINISHED' | 'FAILED' | 'CANCELED' = 'INITIALIZING';

  overview(): Record<string, unknown> {
    return {
      jid: this.jobId, name: this.graph.jobName, state: this.state, 'start-time': this.started, duration: Date.now() - this.started,
      attempt: this.attempt - 1,
      vertices: this.graph.vertices.map((v) => ({ id: v.id, name: v.name, parallelism: v.parallelism, maxParallelism: v.maxParallelism })),
      checkpointing: { interval: this.config.intervalMs ?? null, mode: this.config.mode, dir: this.config.dir ?? null, savepointDir: this.config.savepointDir ?? null },
    };
  }

  checkpoints(): Record<string, unknown> {
    const s = this.stats;
    return {
      counts: s.counts,
      latest: { completed: s.lastCompleted ?? null, failed: s.lastFailed ?? null, restored: s.lastRestore ?? null },
      history: s.entries(),
    };
  }

  private runningAttempt(): Attempt {
    if (this.current === undefined || this.state !== 'RUNNING') throw new ControlError(`job ${this.jobId} is ${this.state.toLowerCase()}, not running`);
    return this.current;
  }

  triggerCheckpoint(): Promise<number> {
    if (!this.storage) return Promise.reject(new ControlError('this job has no checkpoint directory (--checkpoint-dir)', 400));
    try {
      return this.runningAttempt().checkpointNow();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  private savepointTarget(dir: string | undefined): string {
    const base = dir ?? this.config.savepointDir;
    if (base === undefined) throw new ControlError('no savepoint directory: give one (--dir) or configure --savepoint-dir', 400);
    return base;
  }

  savepoint(dir: string | undefined): Promise<string> {
    try {
      return this.runningAttempt().savepoint(this.savepointTarget(dir), undefined);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  stop(dir: string | undefined, drain: boolean): Promise<string> {
    try {
      const target = this.savepointTarget(dir);
      const p = this.runningAttempt().savepoint(target, drain ? 'drain' : 'stop');
      this.stopping = p;
      p.catch(() => (this.stopping = undefined));
      return p;
    } catch (e) {
      return Promise.reject(e);
    }
  }
  private stopping: Promise<string> | undefined;

  cancel(): void {
    this.cancelled = true;
    this.current?.cancel();
  }
  private cancelled = false;

  private async runAttempts(): Promise<JobResult> {
    const restart = new RestartBackoff(
      this.restartSettings ? resolveRestartStrategy(this.restartSettings, 'restart strategy') : defaultRestartStrategy(this.checkpointing),
    );
    let outcome: AttemptOutcome;
    const signal = this.options.signal;
    const onAbort = () => this.cancel();
    signal?.addEventListener('abort', onAbort);
    if (signal?.aborted) this.cancelled = true;
    for (;;) {
      this.state = this.attempt === 0 ? 'INITIALIZING' : 'RESTARTING';
      outcome = this.cancelled ? { status: 'CANCELED' } : await this.runAttempt();
      if (outcome.status === 'FINISHED' || outcome.status === 'CANCELED') break;
      if (this.cancelled) {
        outcome = { status: 'CANCELED' };
        break;
      }
      if (outcome.corruptCheckpoint !== undefined) {
        // Not the job's fault: the snapshot is bad. Try the previous one without spending a
        // restart; but never fall back to empty state, and never away from a snapshot the
        // user named explicitly (--from <path>).
        this.badCheckpoints.add(outcome.corruptCheckpoint);
        const explicit = this.options.from !== undefined && this.options.from !== 'latest' && this.options.from !== 'latest-or-empty' && resolve(this.options.from) === outcome.corruptCheckpoint;
        const prev = explicit ? undefined : await this.latestGood();
        if (prev === undefined) {
          outcome = { status: 'FAILED', error: { ...outcome.error, message: `cannot restore from ${outcome.corruptCheckpoint}: ${outcome.error.message}` } };
          break;
        }
        this.log(`weir: checkpoint ${outcome.corruptCheckpoint} cannot be restored (${outcome.error.message}); falling back to the previous checkpoint ${prev.path}`);
        this.restoredFrom = prev;
        continue;
      }
      const d = restart.onFailure(Date.now());
      if (!d.restart) {
        // With restarts configured, say why they stopped; without, the caller reports the error.
        if (restart.config.type !== 'none') this.log(`weir: job failed and will not restart again (${d.reason})`);
        break;
      }
      const latest = this.storage && this.checkpointing ? await this.latestGood() : undefined;
      this.restoredFrom = latest ?? this.restoredFrom;
      this.log(
        `weir: job failed (${outcome.error.message}); restarting in ${d.delayMs} ms (${d.reason}) from ` +
          (this.restoredFrom ? `checkpoint ${this.restoredFrom.metadata.checkpointId}` : 'the beginning'),
      );
      await new Promise((r) => setTimeout(r, d.delayMs));
    }
    signal?.removeEventListener('abort', onAbort);
    const status = outcome.status;
    this.state = status;
    await this.cleanupOnEnd(status);
    const error = outcome.status === 'FAILED' ? outcome.error : undefined;
    const progress = this.current?.progress() ?? { elapsedMs: 0, recordsIn: 0, recordsOut: 0, heapUsed: 0, attempt: 0, lastCheckpoint: undefined };
    return new JobResult(this.jobId, status, error, this.collected, Date.now() - this.started, progress, this.graph, this.attempt, this.stats);
  }

  /** Decides where the first attempt starts: fresh, or from --from. */
  private async resolveStart(): Promise<void> {
    const from = this.options.from;
    if (from === undefined) return;
    if (from === 'latest' || from === 'latest-or-empty') {
      if (!this.storage) throw new StartError(`--from ${from} needs a checkpoint directory (--checkpoint-dir DIR)`);
      const latest = await this.storage.latest(this.log);
      if (latest === undefined) {
        if (from === 'latest') throw new StartError(`no completed checkpoint in ${this.storage.root}; use --from latest-or-empty to start fresh when there is none`);
        this.log(`weir: no completed checkpoint in ${this.storage.root}; starting fresh`);
        return;
      }
      this.useSnapshot(latest, true);
      return;
    }
    const snapshots = this.snapshots.forReference(from);
    const dir = snapshots.normalize(from);
    const v = await snapshots.verify(dir);
    if (!v.ok) throw new StartError(v.reason === 'no metadata' ? `${from} is not a checkpoint or savepoint (no _metadata file)` : `cannot restore from ${from}: ${v.reason}`);
    const claim = this.options.claimMode === 'claim';
    const inOwnStorage = this.storage !== undefined && v.metadata.type === 'checkpoint' && this.storage.checkpointOf(dir) !== undefined;
    this.useSnapshot({ path: dir, metadata: v.metadata }, claim && inOwnStorage);
    if (claim && !inOwnStorage) this.claimedExternal = dir;
  }

  /** A claimed snapshot outside the job's own checkpoints: deleted after the first new checkpoint. */
  claimedExternal: string | undefined;

  private useSnapshot(ref: CompletedCheckpointRef, own: boolean): void {
    this.restoredFrom = ref;
    this.restoredIsOwn = own;
    // Resuming our own checkpoints continues the same job: same id, numbering goes on.
    if (own) this.jobIdValue = ref.metadata.jobId;
  }

  private async latestGood(): Promise<CompletedCheckpointRef | undefined> {
    if (!this.storage) return undefined;
    const all = await this.storage.completed(this.jobId, this.log);
    for (let i = all.length - 1; i >= 0; i--) if (!this.badCheckpoints.has(all[i]!.path)) return all[i];
    // A restored snapshot from elsewhere (a savepoint, another job's checkpoint) is the fallback.
    if (this.restoredFrom && !this.badCheckpoints.has(this.restoredFrom.path)) return this.restoredFrom;
    return undefined;
  }

  private async cleanupOnEnd(status: 'FINISHED' | 'FAILED' | 'CANCELED'): Promise<void> {
    if (!this.storage || !this.checkpointing) return;
    if (!discardOnJobEnd(this.config.retention, status)) return;
    for (const c of await this.storage.completed(this.jobId)) {
      if (c.metadata.type === 'checkpoint') await this.storage.discard(c.path);
    }
  }

  private async runAttempt(): Promise<AttemptOutcome> {
    const restore = this.restoredFrom;
    let restorePlan: ReturnType<typeof planRestore> | undefined;
    if (restore) {
      restorePlan = planRestore(restore.metadata, restore.path, this.graph, this.plan, this.options.allowNonRestoredState ?? false);
      this.stats.restored(restore.metadata.checkpointId, restore.path, Date.now());
    }
    // Ids continue after the restored snapshot's, whichever job took it (as Flink's id counter).
    const firstId = Math.max(this.storage ? await this.storage.highestId(this.jobId) : 0, restore?.metadata.checkpointId ?? 0) + 1;
    if (this.storage && this.checkpointing) await this.storage.collectGarbage(this.jobId);
    const restoredCompleted: CompletedCheckpointInfo[] = [];
    if (this.storage && this.checkpointing) {
      for (const c of await this.storage.completed(this.jobId)) {
        if (c.metadata.type === 'checkpoint') restoredCompleted.push({ id: c.metadata.checkpointId, timestamp: c.metadata.timestamp, completedAt: c.metadata.completedAt });
      }
    }
    // In one thread, a new attempt gets new operator and function objects, as worker threads
    // get by loading the module again: nothing the failed attempt left in them carries over.
    let execGraph = this.graph;
    if (this.workers === 1 && this.attempt > 0) {
      execGraph = (await buildJob(this.definition, this.args, this.parallelism)).graph;
      if (execGraph.fingerprint !== this.graph.fingerprint) throw new StartError('the job graph changed between attempts: building the job must be deterministic');
    }
    const attempt = new Attempt(this, this.attempt++, restorePlan, firstId, restoredCompleted, restore, execGraph);
    this.current = attempt;
    return attempt.run();
  }

  // ---- used by attempts

  get storageOrUndefined(): CheckpointStorage | undefined {
    return this.storage;
  }
  get id(): string {
    return this.jobId;
  }
  /** An attempt reports that all its tasks are running. */
  markRunning(): void {
    this.state = 'RUNNING';
  }
  get statsTracker(): CheckpointStatsTracker {
    return this.stats;
  }
  get executionPlan(): ExecutionPlan {
    return this.plan;
  }
  collect(sink: string, values: unknown[]): void {
    let list = this.collected.get(sink);
    if (list === undefined) this.collected.set(sink, (list = []));
    for (const v of values) list.push(v);
  }
  /** Writes print() output; `done` runs once it has been handed to the OS (stdout's backpressure). */
  writeStdout(text: string, done?: () => void): void {
    if (this.customStdout || done === undefined) {
      this.stdout(text);
      done?.();
      return;
    }
    process.stdout.write(text, () => done());
  }
  logLine(line: string): void {
    this.log(line);
  }
  clockNow(): number {
    return this.clock.now();
  }
  get runClock(): Clock {
    return this.clock;
  }
  get ownsRestored(): boolean {
    return this.restoredIsOwn;
  }
}

function historyLine(e: CheckpointStatsEntry): unknown {
  return {
    id: e.id, status: e.status, type: e.type, triggerTimestamp: e.triggerTimestamp, endToEndDurationMs: e.endToEndDurationMs,
    stateSize: e.stateSize, checkpointedSize: e.checkpointedSize, numAcknowledged: e.numAcknowledged, numSubtasks: e.numSubtasks,
    subtasks: e.subtasks, failureReason: e.failureReason, failureMessage: e.failureMessage, externalPath: e.externalPath, attempt: e.attempt,
  };
}

/** One deployment of the job, from deploy to its end (finished, or failed and cancelled). */
class Attempt {
  private readonly executors: ExecutorHandle[] = [];
  private local: TaskExecutor | undefined;
  private readonly metrics = new Map<string, TaskMetrics>();
  private readonly heap = new Map<number, number>();
  private readonly sourceVertices: Set<number>;
  private readonly sinkOps: (readonly [number, number])[];
  private readonly coordinator: CheckpointCoordinatorLogic | undefined;
  private readonly taskIds: string[];
  private readonly started = Date.now();
  private finishedTasks = 0;
  private runningTasks = 0;
  private waitingTasks = new Set<string>();
  private deployed = 0;
  private ended = false;
  private settle: (o: AttemptOutcome) => void = () => {};
  private tickTimer: { cancel(): void } | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private finalRequested = false;
  /** Storage locations by checkpoint id: being created, then created (value set). */
  private readonly locations = new Map<number, { created: Promise<CheckpointStorageLocation>; value?: CheckpointStorageLocation }>();
  /** Savepoints asked for (by request id): where they go and who waits for them. */
  private readonly savepoints = new Map<string, SavepointRequest>();
  private stopRequest: SavepointRequest | undefined;
  private finalSavepointRetries = 0;
  private running = false;

  constructor(
    private readonly jm: JobMaster,
    readonly number: number,
    private readonly restore: ReturnType<typeof planRestore> | undefined,
    firstCheckpointId: number,
    restoredCompleted: readonly CompletedCheckpointInfo[],
    private readonly restoredRef: CompletedCheckpointRef | undefined,
    private readonly execGraph: JobGraph,
  ) {
    const graph = jm.graph;
    this.sourceVertices = new Set(graph.vertices.filter((v) => v.isSource).map((v) => v.index));
    this.sinkOps = graph.vertices.flatMap((v) =>
      v.operators.filter((o) => o.node.transformation.kind === 'one-input' && o.node.transformation.isSink).map((o) => [v.index, o.index] as const),
    );
    this.taskIds = jm.executionPlan.subtasks.map((s) => taskId(s.vertex, s.index));
    // Always there: savepoints can be taken without periodic checkpoints.
    const tasks = jm.executionPlan.subtasks.map((s) => ({ id: taskId(s.vertex, s.index), isSource: graph.vertices[s.vertex]!.isSource }));
    this.coordinator = new CheckpointCoordinatorLogic(jm.config, tasks, firstCheckpointId, restoredCompleted);
  }

  progress(): Progress {
    if (this.local) for (const m of this.local.metrics()) this.metrics.set(taskId(m.vertex, m.subtask), m);
    let recordsIn = 0;
    let recordsOut = 0;
    for (const m of this.metrics.values()) {
      if (this.sourceVertices.has(m.vertex)) recordsIn += m.recordsIn[0] ?? 0;
      for (const [v, o] of this.sinkOps) if (m.vertex === v) recordsOut += m.recordsIn[o] ?? 0;
    }
    const heapUsed = this.local ? process.memoryUsage().heapUsed : [...this.heap.values()].reduce((a, b) => a + b, 0);
    return { elapsedMs: Date.now() - this.started, recordsIn, recordsOut, heapUsed, attempt: this.number, lastCheckpoint: this.jm.statsTracker.lastCompleted };
  }

  async run(): Promise<AttemptOutcome> {
    const done = new Promise<AttemptOutcome>((r) => (this.settle = r));
    const splits = await this.planSplits();
    this.ticker = setInterval(() => this.jm.options.onProgress?.(this.progress()), 1000);
    this.ticker.unref();
    this.deploy(splits);
    return done;
  }

  private async planSplits(): Promise<Record<string, SourceSplit[]>> {
    const splits: Record<string, SourceSplit[]> = {};
    const graph = this.jm.graph;
    for (const v of graph.vertices) {
      const t = v.operators[0]!.node.transformation;
      if (t.kind !== 'source') continue;
      const restored = this.restore?.splits;
      if (restored && restored[taskId(v.index, 0)] !== undefined) {
        for (let i = 0; i < v.parallelism; i++) splits[taskId(v.index, i)] = (restored[taskId(v.index, i)] ?? []) as SourceSplit[];
        continue;
      }
      const all = await t.source.planSplits(v.parallelism);
      assignSplits(all, v.parallelism).forEach((s, i) => (splits[taskId(v.index, i)] = s));
    }
    return splits;
  }

  private deployTimer: NodeJS.Timeout | undefined;
  /** Tasks of a restoring attempt that have their state in memory (they open when all have). */
  private restoredTasks = 0;
  private restoreTimer: NodeJS.Timeout | undefined;
  /** Per worker: KiB of print() output sent to this thread and not yet written (a bounded window). */
  private readonly stdoutCredits: Int32Array[] = [];

  private deploy(splits: Record<string, SourceSplit[]>): void {
    const jm = this.jm;
    const plan = jm.executionPlan;
    const workers = jm.workers;
    // Every wait has a bound: workers that cannot load the job in time fail the attempt.
    this.deployTimer = setTimeout(() => {
      this.fail({ name: 'DeployTimeout', code: 'TIMEOUT', message: `only ${this.deployed} of ${workers} worker(s) loaded the job within ${DEPLOY_TIMEOUT_MS / 1000} s`, stack: undefined, user: false });
    }, DEPLOY_TIMEOUT_MS);
    this.deployTimer.unref();
    const restoreTasks: Record<TaskId, TaskRestore> = this.restore?.tasks ?? {};
    const checkpointing = { mode: jm.config.mode, periodic: jm.checkpointing };
    const credits = jm.options.credits ?? DEFAULT_CHANNEL_CREDITS;
    if (workers === 1) {
      // Everything in this thread: batches pass by reference, nothing is serialized.
      const ex = new TaskExecutor({
        workerIndex: 0, graph: this.execGraph, plan, splits, attempt: this.number, credits, clock: jm.runClock,
        send: (m) => queueMicrotask(() => this.onMessage(m)), dataPlane: undefined, writeStdout: (t) => jm.writeStdout(t),
        checkpointing, restore: restoreTasks,
      });
      this.local = ex;
      this.executors.push({ send: (m) => ex.handle(m), terminate: async () => ex.cancel() });
      queueMicrotask(() => this.onMessage({ type: 'deployed', workerIndex: 0 }));
      return;
    }
    const peerPorts: Record<number, MessagePort>[] = Array.from({ length: workers }, () => ({}));
    for (let i = 0; i < workers; i++) {
      for (let j = i + 1; j < workers; j++) {
        const { port1, port2 } = new MessageChannel();
        peerPorts[i]![j] = port1;
        peerPorts[j]![i] = port2;
      }
    }
    for (let w = 0; w < workers; w++) {
      const worker = new Worker(new URL('./worker-entry.js', import.meta.url), { stdout: false, stderr: false });
      let exited = false;
      worker.on('message', (m: FromExecutor) => this.onMessage(m));
      worker.on('error', (e) => this.fail(serializeError(e)));
      worker.on('exit', (code) => {
        exited = true;
        if (!this.ended) this.fail({ name: 'WorkerExit', code: undefined, message: `worker thread ${w} exited unexpectedly (code ${code})`, stack: undefined, user: false });
      });
      this.executors.push({
        send: (m, transfer) => worker.postMessage(m, transfer ?? []),
        terminate: async () => {
          if (!exited) await worker.terminate();
        },
      });
      const peers = peerPorts[w]!;
      const credit = new Int32Array(new SharedArrayBuffer(4));
      this.stdoutCredits[w] = credit;
      const msg: ToExecutor & { peers: Record<number, MessagePort>; stdoutCredit: Int32Array } = {
        type: 'deploy',
        job: { modulePath: jm.modulePath, args: jm.args, defaultParallelism: jm.parallelism },
        workerIndex: w, plan, fingerprint: jm.graph.fingerprint, splits, attempt: this.number, credits, checkpointing, restore: restoreTasks, peers,
        stdoutCredit: credit,
      };
      worker.postMessage(msg, Object.values(peers));
    }
  }

  private broadcast(m: ToExecutor): void {
    for (const e of this.executors) e.send(m);
  }

  private onMessage(m: FromExecutor): void {
    if (this.ending) return;
    const now = this.jm.clockNow();
    switch (m.type) {
      case 'deployed':
        if (++this.deployed === this.jm.workers) {
          clearTimeout(this.deployTimer);
          this.broadcast({ type: 'start' });
          if (Object.keys(this.restore?.tasks ?? {}).length > 0) {
            this.restoreTimer = setTimeout(() => {
              this.fail({ name: 'RestoreTimeout', code: 'TIMEOUT', message: `only ${this.restoredTasks} of ${this.taskIds.length} task(s) loaded their state within ${RESTORE_TIMEOUT_MS / 1000} s`, stack: undefined, user: false });
            }, RESTORE_TIMEOUT_MS);
            this.restoreTimer.unref();
          }
        }
        return;
      case 'executor-failed':
        this.fail(m.error);
        return;
      case 'task-restored':
        if (++this.restoredTasks === this.taskIds.length) {
          clearTimeout(this.restoreTimer);
          this.broadcast({ type: 'proceed' });
        }
        return;
      case 'task-running':
        this.apply(this.coordinator?.handle({ type: 'task-status', now, task: m.task, status: 'running' }));
        this.running = ++this.runningTasks === this.taskIds.length;
        if (this.running) this.jm.markRunning();
        this.scheduleTick();
        return;
      case 'task-waiting':
        this.waitingTasks.add(m.task);
        this.apply(this.coordinator?.handle({ type: 'task-status', now, task: m.task, status: 'waiting-final' }));
        if (this.waitingTasks.size === this.taskIds.length && !this.finalRequested) {
          this.finalRequested = true;
          this.onAllTasksWaiting(now);
        }
        return;
      case 'task-finished':
        this.metrics.set(taskId(m.vertex, m.subtask), m.metrics);
        if (++this.finishedTasks === this.taskIds.length) this.end({ status: 'FINISHED' });
        return;
      case 'task-failed': {
        const task = taskId(m.vertex, m.subtask);
        this.apply(this.coordinator?.handle({ type: 'task-failed', now, task }));
        const corrupt = m.error.code === 'CORRUPT_STATE' && this.restoredRef ? this.restoredRef.path : undefined;
        this.fail(m.error, corrupt);
        return;
      }
      case 'collect':
        this.jm.collect(m.sink, m.values);
        return;
      case 'log':
        this.jm.logLine(m.line);
        return;
      case 'metrics':
        for (const t of m.tasks) this.metrics.set(taskId(t.vertex, t.subtask), t);
        this.heap.set(m.workerIndex, m.heapUsed);
        return;
      case 'stdout': {
        // The worker counted these bytes against its stdout window; release them once written.
        const credit = this.stdoutCredits[m.worker ?? -1];
        this.jm.writeStdout(m.text, credit === undefined ? undefined : () => {
          Atomics.sub(credit, 0, m.kib ?? 0);
          Atomics.notify(credit, 0);
        });
        return;
      }
      case 'ack':
        this.jm.statsTracker.acknowledged(m.id, m.ack, now);
        this.apply(this.coordinator?.handle({ type: 'ack', now, id: m.id, ack: m.ack }));
        return;
      case 'decline':
        this.apply(this.coordinator?.handle({ type: 'decline', now, id: m.id, task: m.task, reason: m.reason, message: m.message }));
        return;
    }
  }

  // ---- the coordinator's shell

  private scheduleTick(): void {
    if (this.coordinator === undefined || this.ended) return;
    this.tickTimer?.cancel();
    const at = this.coordinator.nextWakeup();
    if (at === undefined) return;
    this.tickTimer = this.jm.runClock.schedule(at, () => {
      this.tickTimer = undefined;
      if (this.ending) return;
      this.apply(this.coordinator!.handle({ type: 'tick', now: this.jm.clockNow() }));
    });
  }

  private apply(decisions: Decision[] | undefined): void {
    if (decisions === undefined) return;
    for (const d of decisions) this.execute(d);
    this.scheduleTick();
  }

  private execute(d: Decision): void {
    if (this.ended) return;
    const jm = this.jm;
    const storage = jm.storageOrUndefined;
    const now = jm.clockNow();
    switch (d.type) {
      case 'trigger': {
        // Storage location first; coordinator-side state (split enumerators) is taken with the
        // trigger (splits are all assigned at deployment, so nothing is unassigned), then the
        // trigger goes to the sources and to tasks whose input has ended.
        const sp = d.requestId !== undefined ? this.savepoints.get(d.requestId) : undefined;
        if (sp?.type !== 'savepoint' && storage === undefined) throw new Error('a checkpoint was triggered without checkpoint storage');
        if (sp !== undefined) sp.checkpointId = d.id;
        const created = (async () => (sp?.type === 'savepoint' ? jm.snapshots.forReference(sp.target).initSavepoint(sp.target, jm.id, d.id) : storage!.initCheckpoint(jm.id, d.id)))();
        const entry: { created: Promise<CheckpointStorageLocation>; value?: CheckpointStorageLocation } = { created };
        this.locations.set(d.id, entry);
        created.catch(() => {});
        jm.statsTracker.triggered(d.id, d.checkpointType, now, this.taskIds.length, this.number);
        created.then((l) => {
          entry.value = l;
          if (sp !== undefined) sp.location = l.reference;
          return storage ? storage.recordTriggered(jm.id, d.id) : undefined;
        }).then(
          () => this.broadcast({
            type: 'trigger', tasks: d.tasks,
            req: { checkpointId: d.id, timestamp: d.timestamp, type: d.checkpointType, location: entry.value!.reference, ...(sp?.stop === 'stop' ? { suspendSourceAfter: true } : {}) },
          }),
          (e) => this.apply(this.coordinator!.handle({ type: 'trigger-failed', now: jm.clockNow(), id: d.id, message: (e as Error).message })),
        );
        return;
      }
      case 'trigger-task': {
        void this.locations.get(d.id)!.created.then(
          (l) => this.broadcast({ type: 'trigger', tasks: [d.task], req: { checkpointId: d.id, timestamp: d.timestamp, type: d.checkpointType, location: l.reference } }),
          () => {}, // the trigger fails the checkpoint
        );
        return;
      }
      case 'finalize': {
        const location = this.locations.get(d.id)!.value!;
        const metadata = this.buildMetadata(d.id, d.timestamp, d.checkpointType, d.acks, now);
        const p = location.finalize(metadata).then(
          () => this.apply(this.coordinator!.handle({ type: 'finalized', now: jm.clockNow(), id: d.id })),
          (e) => this.apply(this.coordinator!.handle({ type: 'finalize-failed', now: jm.clockNow(), id: d.id, message: `cannot write metadata: ${(e as Error).message}` })),
        );
        // An attempt that ends lets metadata being written finish: that checkpoint is complete.
        this.finalizing.add(p);
        void p.finally(() => this.finalizing.delete(p));
        return;
      }
      case 'notify-complete': {
        const location = this.locations.get(d.id)!.value!.reference;
        jm.statsTracker.completed(d.id, now, location);
        if (d.checkpointType === 'checkpoint' && jm.claimedExternal !== undefined) {
          // Claim mode: the restored snapshot is owned by this job and now subsumed.
          const claimed = jm.claimedExternal;
          void jm.snapshots.forReference(claimed).discard(claimed).catch(() => {});
          jm.claimedExternal = undefined;
        }
        this.broadcast({ type: 'notify-complete', id: d.id });
        const sp = d.requestId !== undefined ? this.savepoints.get(d.requestId) : undefined;
        if (sp !== undefined) {
          sp.completed = true;
          this.savepoints.delete(sp.id);
          if (sp.type === 'savepoint') jm.logLine(`weir: savepoint ${d.id} completed at ${location}`);
          sp.resolve(location);
          // Stop without drain: the savepoint holds everything; sources end without finishing.
          if (sp.stop === 'stop') this.broadcast({ type: 'end-sources', drain: false });
        }
        if (d.final) this.broadcast({ type: 'finish-tasks' });
        return;
      }
      case 'abort': {
        jm.statsTracker.failed(d.id, now, d.reason, d.message);
        this.broadcast({ type: 'notify-abort', id: d.id });
        this.dispose(d.id);
        const sp = d.requestId !== undefined ? this.savepoints.get(d.requestId) : undefined;
        if (d.requestId === 'final') {
          // The final checkpoint must happen for the output to be committed: ask again.
          this.apply(this.coordinator!.handle({ type: 'request', now, checkpointType: 'checkpoint', requestId: 'final', final: true }));
        } else if (sp?.stop === 'drain' && this.finalSavepointRetries++ < 3) {
          // Drained already (sources ended): the final savepoint is tried again.
          this.apply(this.coordinator!.handle({ type: 'request', now, checkpointType: 'savepoint', requestId: sp.id, final: true }));
        } else if (sp !== undefined) {
          this.savepoints.delete(sp.id);
          if (sp === this.stopRequest) {
            this.stopRequest = undefined;
            // A failed stop leaves the job running: suspended sources read on.
            if (sp.stop === 'stop') {
              this.broadcast({ type: 'resume-sources' });
              this.apply(this.coordinator!.handle({ type: 'resume-periodic', now }));
            } else {
              this.finishWithoutSavepoint(now);
            }
          }
          sp.reject(new ControlError(`savepoint failed: ${d.reason}: ${d.message}`));
        }
        return;
      }
      case 'discard-completed':
        for (const id of d.ids) if (storage) this.track(storage.discard(storage.checkpointDir(jm.id, id)));
        return;
      case 'discard-ack': {
        const location = this.locations.get(d.id);
        if (location) for (const op of d.ack.operators) if (op.file) void location.created.then((l) => l.discardState(op.file!)).catch(() => {});
        return;
      }
      case 'fail-job':
        this.fail({ name: 'CheckpointFailure', code: undefined, message: d.message, stack: undefined, user: false });
        return;
      case 'request-rejected': {
        if (d.requestId === 'final' && d.reason === R.NOT_ALL_REQUIRED_TASKS_RUNNING) this.finalRequested = false;
        const sp = this.savepoints.get(d.requestId);
        if (sp !== undefined) {
          this.savepoints.delete(sp.id);
          if (sp === this.stopRequest) {
            this.stopRequest = undefined;
            this.apply(this.coordinator!.handle({ type: 'resume-periodic', now }));
          }
          sp.reject(new ControlError(`savepoint rejected: ${d.reason}: ${d.message}`));
        }
        return;
      }
    }
  }

  private buildMetadata(id: number, timestamp: number, type: 'checkpoint' | 'savepoint', acks: readonly TaskAck[], now: number): CheckpointMetadata {
    const graph = this.jm.graph;
    const byOp = new Map<string, OperatorStateMeta & { subtasks: OperatorStateMeta['subtasks'][number][] }>();
    for (const v of graph.vertices) {
      for (const o of v.operators) {
        const t = o.node.transformation;
        const keyed = t.kind === 'one-input' ? t.keySelector !== undefined : t.kind === 'two-input' ? t.keySelectors.some((k) => k !== undefined) : false;
        byOp.set(o.node.id, { id: o.node.id, name: o.node.name, uid: t.uid, parallelism: o.node.parallelism, maxParallelism: o.node.maxParallelism, keyed, subtasks: [] });
      }
    }
    let stateSize = 0;
    const subtaskStats: Record<string, TaskAck['stats']> = {};
    for (const a of acks) {
      subtaskStats[a.task] = a.stats;
      const subtask = subtaskOf(a.task);
      for (const h of a.operators) {
        const op = byOp.get(h.operatorId);
        if (!op) continue;
        stateSize += h.stateSize;
        op.subtasks.push({
          subtask,
          ...(h.file !== undefined ? { file: h.file, fileSize: h.fileSize!, keyGroupRange: h.keyGroupRange! } : {}),
          ...(h.inline !== undefined ? { inline: h.inline } : {}),
          stateSize: h.stateSize,
        });
      }
    }
    for (const op of byOp.values()) op.subtasks.sort((a, b) => a.subtask - b.subtask);
    const enumerators: Record<string, unknown[]> = {};
    for (const v of graph.vertices) if (v.isSource) enumerators[v.operators[0]!.node.id] = [];
    return {
      format: 'weir-checkpoint', version: METADATA_VERSION, jobId: this.jm.id, jobName: graph.jobName, checkpointId: id, type,
      timestamp, completedAt: now, operators: [...byOp.values()], enumerators, stats: { stateSize, subtasks: subtaskStats },
    };
  }

  /** Every task has processed all its input (or a drain ended the sources). */
  private onAllTasksWaiting(now: number): void {
    const stop = this.stopRequest;
    if (stop?.stop === 'stop') {
      // The savepoint was the last snapshot; the tasks ended without finishing.
      this.broadcast({ type: 'finish-tasks' });
    } else if (stop?.stop === 'drain') {
      // Drained: the final snapshot is the savepoint, so sinks commit everything into it.
      this.apply(this.coordinator!.handle({ type: 'request', now, checkpointType: 'savepoint', requestId: stop.id, final: true }));
    } else if (this.jm.checkpointing) {
      // One last checkpoint commits all output.
      this.apply(this.coordinator!.handle({ type: 'request', now, checkpointType: 'checkpoint', requestId: 'final', final: true }));
    } else {
      this.broadcast({ type: 'finish-tasks' });
    }
  }

  private finishWithoutSavepoint(now: number): void {
    if (this.jm.checkpointing) this.apply(this.coordinator!.handle({ type: 'request', now, checkpointType: 'checkpoint', requestId: 'final', final: true }));
    else this.broadcast({ type: 'finish-tasks' });
  }

  /** Triggers a checkpoint now (Flink's POST /jobs/:id/checkpoints); resolves with its id. */
  checkpointNow(): Promise<number> {
    if (this.ended || !this.running) return Promise.reject(new ControlError('the job is not running'));
    let req: SavepointRequest | undefined;
    return new Promise<string>((resolve, reject) => {
      const id = `checkpoint-${randomBytes(6).toString('hex')}`;
      req = { id, target: '', type: 'checkpoint', stop: undefined, resolve, reject, completed: false };
      this.savepoints.set(id, req);
      this.apply(this.coordinator!.handle({ type: 'request', now: this.jm.clockNow(), checkpointType: 'checkpoint', requestId: id }));
    }).then(() => req!.checkpointId!);
  }

  /** Takes a savepoint of the running job into a new directory below `target`. */
  savepoint(target: string, stop: 'drain' | 'stop' | undefined): Promise<string> {
    if (this.ended) return Promise.reject(new ControlError('the job is not running'));
    if (!this.running) return Promise.reject(new ControlError('the job is still starting (not all tasks are running)'));
    if (this.stopRequest !== undefined) return Promise.reject(new ControlError('the job is already stopping'));
    if (stop !== undefined && this.finalRequested) return Promise.reject(new ControlError('the job is already finishing'));
    return new Promise<string>((resolve, reject) => {
      const id = `savepoint-${randomBytes(6).toString('hex')}`;
      const req: SavepointRequest = { id, target, type: 'savepoint', stop, resolve, reject, completed: false };
      this.savepoints.set(id, req);
      const now = this.jm.clockNow();
      if (stop !== undefined) {
        this.stopRequest = req;
        // The stop's savepoint is the job's last snapshot: no periodic checkpoint after it.
        this.apply(this.coordinator!.handle({ type: 'suspend-periodic' }));
      }
      if (stop === 'drain') {
        // End the sources as if their input were exhausted; the savepoint follows once all is drained.
        this.broadcast({ type: 'end-sources', drain: true });
        return;
      }
      this.apply(this.coordinator!.handle({ type: 'request', now, checkpointType: 'savepoint', requestId: id }));
    });
  }

  /** Cancels the attempt (the user asked to cancel the job). */
  cancel(): void {
    this.end({ status: 'CANCELED' });
  }

  private fail(error: SerializedError, corruptCheckpoint?: string): void {
    if (this.ended) return;
    this.end({ status: 'FAILED', error, ...(corruptCheckpoint ? { corruptCheckpoint } : {}) });
  }

  private end(o: AttemptOutcome): void {
    if (this.ending) return;
    this.ending = true;
    clearTimeout(this.deployTimer);
    clearTimeout(this.restoreTimer);
    this.tickTimer?.cancel();
    if (this.ticker) clearInterval(this.ticker);
    for (const e of this.executors) e.send({ type: 'cancel' });
    // Checkpoints whose metadata is being written complete first (a checkpoint exists once its
    // metadata does); the rest of the pending ones can never complete now.
    void Promise.allSettled([...this.finalizing]).then(() => {
      for (const sp of this.savepoints.values()) sp.reject(new ControlError(`the job ended (${o.status}) before the savepoint completed`));
      this.savepoints.clear();
      const decisions = this.coordinator?.handle({ type: 'shutdown', now: this.jm.clockNow() }) ?? [];
      for (const d of decisions) {
        if (d.type === 'abort') {
          this.jm.statsTracker.failed(d.id, this.jm.clockNow(), d.reason, describeReason(d.reason));
          this.dispose(d.id);
        }
      }
      this.ended = true;
      void Promise.all([...this.executors.map((e) => e.terminate()), ...this.io]).then(() => this.settle(o));
    });
  }
  private ending = false;
  private readonly finalizing = new Set<Promise<void>>();
  /** Deletions in flight: the attempt ends after them, so runJob's caller sees the final layout. */
  private readonly io = new Set<Promise<unknown>>();

  /** Removes what an aborted checkpoint wrote (once its location exists). */
  private dispose(id: number): void {
    const location = this.locations.get(id);
    if (location) this.track(location.created.then((l) => l.dispose()));
  }

  private track(p: Promise<unknown>): void {
    const q = p.catch(() => {});
    this.io.add(q);
    void q.finally(() => this.io.delete(q));
  }
}
