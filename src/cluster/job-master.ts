/**
 * The job master of a local run: decides where the job starts, runs attempts one after
 * another, and after each asks the recovery decisions whether to finish, fall back from a
 * corrupt checkpoint, restart (after a backoff on the injected clock) or give up. It is also
 * the job's control surface (JobControl: REST, weir savepoint/stop/cancel), and it owns what
 * outlives an attempt: the job id, collected output, checkpoint statistics and storage.
 */
import { WeirError } from '../core/errors.ts';
import type { WorkerPool } from './worker-pool.ts';
import type { S3Config } from '../checkpoint/s3/settings.ts';
import { randomBytes } from 'node:crypto';
import { isAbsolute } from 'node:path';
import type { JobDefinition } from '../api/job.ts';
import { discardOnJobEnd, type CheckpointConfig } from '../checkpoint/config.ts';
import type { SourceSplit } from '../core/source.ts';
import type { CompletedCheckpointInfo } from '../checkpoint/coordinator.ts';
import { planRestore, RestoreError, type RestorePlan } from '../checkpoint/restore-plan.ts';
import { CheckpointStatsTracker, type CheckpointStatsEntry } from '../checkpoint/stats.ts';
import { CheckpointHistory, parseEntry, type CheckpointHistoryEntry } from '../checkpoint/history.ts';
import type { CheckpointStorage, CompletedCheckpointRef, StorageResolver } from '../checkpoint/storage.ts';
import type { Clock } from '../core/clock.ts';
import { errorCode } from '../core/errors.ts';
import { planExecution, type ExecutionPlan } from '../graph/execution-plan.ts';
import { defaultOf } from '../core/options/option.ts';
import { OPTIONS } from '../core/options/registry.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import { Attempt, type AttemptContext } from './attempt.ts';
import { historyLine } from './checkpoint-metadata.ts';
import { sharedFilesOf } from '../checkpoint/metadata.ts';
import { sleep } from './clock-timers.ts';
import { RecoveryLogic, type AttemptOutcome } from './decisions/recovery.ts';
import { ControlError, StartError } from './errors.ts';
import type { CheckpointStatsView, ExceptionEntry, JobControl, JobMetricsView, JobService, VertexInfo } from './job-control.ts';
import type { MetricValues } from './metric-store.ts';
import { buildJob, loadJobModule } from './job-loader.ts';
import { pathToFileURL } from 'node:url';
import { checkCommittedOutput, CommittedOutputRefusal, commitSinksOf } from './committed-output.ts';
import { acquireDirLease } from '../core/dir-lease.ts';
import type { RunOptions } from './job-manager.ts';
import type { JobManagerConfig } from './job-manager-config.ts';
import { JobResult, NO_PROGRESS, type JobStatus } from './job-result.ts';
import { defaultRestartStrategy, ignoredRestartSettings, resolveRestartStrategy, RestartBackoff, untypedStrategy, type RestartStrategySettings } from './restart-strategy.ts';
import type { StartPoint } from './start-point.ts';
import { serializeError, type SerializedError } from './messages.ts';
import { logger } from '../core/log.ts';
import type { StateBackendOptions } from '../state/backends.ts';

export interface JobMasterSpec {
  /** Where the first attempt starts (resolved by the caller: the graph depends on it). */
  readonly start: StartPoint;
  /** Keyed operators' max parallelism adopted from that snapshot (the graph was built with it). */
  readonly restoredMaxParallelism: Readonly<Record<string, number>> | undefined;
  /** Worker threads booted ahead of each attempt (workers > 1 with a module path). */
  readonly pool?: WorkerPool;
  readonly graph: JobGraph;
  readonly definition: JobDefinition;
  readonly modulePath: string | undefined;
  /** What the job module was imported from (its bundle), when not the file itself. */
  readonly moduleUrl: string | undefined;
  readonly args: readonly string[];
  readonly parallelism: number;
  readonly workers: number;
  /** The keyed state backend's name (already checked to exist). */
  readonly stateBackend: string;
  /** Its settings (state.backend.<name>.*), already checked. */
  readonly stateBackendOptions: StateBackendOptions;
  /** Where sources write dead letters (undefined: the first few go to the log). */
  readonly deadLetterDir: string | undefined;
  readonly checkpointConfig: CheckpointConfig;
  readonly restartSettings: RestartStrategySettings | undefined;
  readonly config: JobManagerConfig;
  readonly storage: CheckpointStorage | undefined;
  readonly snapshots: StorageResolver;
  /** S3 settings, resolved: worker threads build their own S3 client from them. */
  readonly s3: S3Config;
  readonly clock: Clock;
  readonly options: RunOptions;
}

/** Flink's names for how records cross an edge. */
const SHIP_STRATEGY: Record<string, string> = { forward: 'FORWARD', hash: 'HASH', rebalance: 'REBALANCE', rescale: 'RESCALE', broadcast: 'BROADCAST' };

/** Failures kept for the exceptions view. */
const MAX_EXCEPTIONS = 100;

function toHistoryEntry(e: CheckpointStatsEntry): CheckpointHistoryEntry {
  return {
    id: e.id, status: e.status, type: e.type, triggerTimestamp: e.triggerTimestamp, latestAckTimestamp: e.latestAckTimestamp,
    endToEndDurationMs: e.endToEndDurationMs, stateSize: e.stateSize, checkpointedSize: e.checkpointedSize,
    numAcknowledged: e.numAcknowledged, numSubtasks: e.numSubtasks, subtasks: { ...e.subtasks },
    failureReason: e.failureReason, failureMessage: e.failureMessage, externalPath: e.externalPath, attempt: e.attempt,
  };
}

type JobState = 'INITIALIZING' | 'RUNNING' | 'RESTARTING' | JobStatus;

/**
 * Records one collect() sink may hold (JobResult.collected). Without a bound, a collect() on an
 * endless source under weir run (which never reads them) grew the main thread by ~200 bytes a
 * record until the heap ran out (~7 minutes at 50 k records/s), unseen in the progress line.
 */
const MAX_COLLECTED_RECORDS = 1_000_000;

export class JobMaster implements JobControl {
  private readonly log: (line: string) => void;
  private readonly stdout: (text: string) => void;
  private readonly plan: ExecutionPlan;
  private readonly stats: CheckpointStatsTracker;
  /** Splits the sources planned at the job's first start (AttemptContext.plannedSplits). */
  private readonly plannedSplits = new Map<number, readonly SourceSplit[]>();
  /** Splits of names added since the restored checkpoint, planned once (AttemptContext.addedSplits). */
  private readonly addedSplits = new Map<string, SourceSplit>();
  private readonly collected = new Map<string, unknown[]>();
  private readonly started: number;
  private jobIdValue = randomBytes(16).toString('hex');
  private state: JobState = 'INITIALIZING';
  /** When the job reached its end state (FINISHED, FAILED, CANCELED): its duration stops there. */
  private endedAt: number | undefined;
  private attempts = 0;
  private current: Attempt | undefined;
  private restoredFrom: CompletedCheckpointRef | undefined;
  /** The recovery decisions of this run (set when the attempts begin). */
  private recovery: RecoveryLogic | undefined;
  /** A savepoint whose output the sinks were told to commit, not yet handed to the recovery decisions. */
  private committedSavepoint: string | undefined;
  /** A claimed snapshot outside the job's own checkpoints: deleted after the first new checkpoint. */
  private claimedExternal: string | undefined;
  private explicitSnapshot: string | undefined;
  private cancelled = false;
  private restartWait: { cancel(): void } | undefined;
  /** Every ended checkpoint of the job's life, read back from storage when the job resumes. */
  private readonly history = new CheckpointHistory();
  private readonly exceptionHistory: ExceptionEntry[] = [];
  private runningSince: number | undefined;
  /** The newest checkpoint completed since this job master started (a restart never goes back before it to nothing). */
  private newestCheckpointThisRun: number | undefined;

  constructor(private readonly spec: JobMasterSpec) {
    const o = spec.options;
    this.log = o.log ?? ((l) => logger().line(l));
    this.stdout = o.stdout ?? ((t) => void process.stdout.write(t));
    this.started = spec.clock.now();
    this.plan = planExecution(spec.graph, spec.workers, o.maxChannels ?? defaultOf(OPTIONS.maxChannels));
    this.stats = new CheckpointStatsTracker(10, (e) => {
      const line = historyLine(e);
      const entry = parseEntry(line);
      if (entry !== undefined) this.history.add(entry);
      if (e.status === 'COMPLETED' && e.type === 'checkpoint') this.newestCheckpointThisRun = Math.max(this.newestCheckpointThisRun ?? 0, e.id);
      if (spec.storage) void spec.storage.appendHistory(this.jobId, line).catch(() => {});
    });
  }

  get checkpointing(): boolean {
    return this.spec.checkpointConfig.intervalMs !== undefined;
  }
  /** Records are counted per task and operator (metrics.record-counters.enabled). */
  get recordCounters(): boolean {
    return this.spec.options.recordCounters ?? defaultOf(OPTIONS.recordCounters);
  }

  get jobId(): string {
    return this.jobIdValue;
  }
  get jobName(): string {
    return this.spec.graph.jobName;
  }
  get startedAt(): number {
    return this.started;
  }

  async run(): Promise<JobResult> {
    this.resolveStart();
    const leases = this.takeLeases();
    try {
      const storage = this.spec.storage;
      if (storage) {
        try {
          await storage.initJob(this.jobId);
        } catch (e) {
          throw new StartError((e as Error).message);
        }
        await this.loadHistory(storage);
      }
      const stopServices = await this.startServices();
      try {
        return await this.runAttempts();
      } finally {
        await stopServices();
      }
    } finally {
      for (const l of leases.reverse()) l.release();
    }
  }

  /**
   * Exclusive leases on the job's checkpoint directory and on every sink's output, taken once
   * the job id is known (a resume continues the id) and before anything is created or deleted:
   * a second run next to one still running (an orphan of a killed npx) refuses to start instead
   * of collecting the other's files as garbage.
   */
  private takeLeases(): { release(): void }[] {
    const leases: { release(): void }[] = [];
    const owner = `job ${this.jobId}`;
    try {
      const jobDir = this.spec.storage?.jobDir(this.jobId);
      if (jobDir !== undefined && localPath(jobDir)) leases.push(acquireDirLease(jobDir, 'checkpoint directory', owner, this.log));
      for (const sink of new Set(commitSinksOf(this.spec.graph).map((s) => s.sink))) if (sink.lease !== undefined) leases.push(sink.lease(owner));
    } catch (e) {
      for (const l of leases.reverse()) l.release();
      throw e;
    }
    return leases;
  }

  // ---- control (REST, weir savepoint/stop/cancel)

  overview(): Record<string, unknown> {
    const c = this.spec.checkpointConfig;
    return {
      jid: this.jobId, name: this.jobName, state: this.state, 'start-time': this.started, 'end-time': this.endedAt ?? -1, duration: (this.endedAt ?? this.spec.clock.now()) - this.started,
      attempt: this.attempts - 1,
      // Records counted per task and operator (metrics.record-counters.enabled); false: numRecordsIn/Out absent.
      recordCounters: this.recordCounters,
      vertices: this.spec.graph.vertices.map((v) => ({ id: v.id, name: v.name, parallelism: v.parallelism, maxParallelism: v.maxParallelism })),
      checkpointing: { interval: c.intervalMs ?? null, mode: c.mode, dir: this.spec.storage?.root ?? c.dir ?? null, savepointDir: c.savepointDir ?? null },
      // Malformed records sent to the dead letters (this attempt; per source subtask: numRecordsInErrors), and where they are written.
      deadLetters: { count: (this.current?.progress() ?? NO_PROGRESS).deadLetters, dir: this.spec.deadLetterDir ?? null },
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

  vertices(): readonly VertexInfo[] {
    return this.spec.graph.vertices.map((v) => ({
      index: v.index, id: v.id, name: v.name, parallelism: v.parallelism, maxParallelism: v.maxParallelism,
      operators: v.operators.map((o) => ({ id: o.node.id, name: o.node.name })),
      inputs: v.inputs.map((e) => ({ id: e.source.id, shipStrategy: SHIP_STRATEGY[e.partition.kind] ?? e.partition.kind.toUpperCase() })),
    }));
  }

  checkpointStats(): CheckpointStatsView {
    const inProgress = this.stats.entries().filter((e) => e.status === 'IN_PROGRESS').map(toHistoryEntry);
    return { history: this.history.all(), inProgress, ended: { completed: this.history.completedCount, failed: this.history.failedCount }, restored: this.stats.lastRestore, config: this.spec.checkpointConfig, stateBackend: this.spec.stateBackend };
  }

  metrics(): JobMetricsView {
    const now = this.spec.clock.now();
    const completed = this.history.completedCount;
    const failed = this.history.failedCount;
    const last = this.history.lastCompleted;
    const inProgress = this.stats.counts.inProgress;
    const job: MetricValues = {
      uptime: this.state === 'RUNNING' && this.runningSince !== undefined ? now - this.runningSince : 0,
      runningTime: this.state === 'RUNNING' && this.runningSince !== undefined ? now - this.runningSince : 0,
      numRestarts: Math.max(0, this.attempts - 1),
      numberOfCompletedCheckpoints: completed,
      numberOfFailedCheckpoints: failed,
      numberOfInProgressCheckpoints: inProgress,
      totalNumberOfCheckpoints: completed + failed + inProgress,
      lastCheckpointDuration: last?.endToEndDurationMs ?? -1,
      lastCheckpointSize: last?.checkpointedSize ?? -1,
      lastCheckpointFullSize: last?.stateSize ?? -1,
      lastCompletedCheckpointId: last?.id ?? -1,
      lastCheckpointRestoreTimestamp: this.stats.lastRestore?.at ?? -1,
    };
    return { recordCounters: this.recordCounters, job, subtasks: this.current?.metricStore.subtasks() ?? [] };
  }

  exceptions(): readonly ExceptionEntry[] {
    return this.exceptionHistory;
  }

  triggerCheckpoint(): Promise<number> {
    if (!this.spec.storage) return Promise.reject(new ControlError('this job has no checkpoint directory (--checkpoint-dir)', 400));
    return this.withRunningAttempt((a) => a.checkpointNow());
  }

  savepoint(dir: string | undefined): Promise<string> {
    return this.withRunningAttempt((a) => a.savepoint(this.savepointTarget(dir), undefined));
  }

  stop(dir: string | undefined, drain: boolean): Promise<string> {
    try {
      const target = this.savepointTarget(dir);
      return this.withRunningAttempt((a) => a.savepoint(target, drain ? 'drain' : 'stop'));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  cancel(): void {
    this.cancelled = true;
    this.restartWait?.cancel();
    this.current?.cancel();
  }

  logLine(line: string): void {
    this.log(line);
  }

  private withRunningAttempt<T>(fn: (a: Attempt) => Promise<T>): Promise<T> {
    try {
      if (this.current === undefined || this.state !== 'RUNNING') throw new ControlError(`job ${this.jobId} is ${this.state.toLowerCase()}, not running`);
      return fn(this.current);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  private savepointTarget(dir: string | undefined): string {
    const target = dir ?? this.spec.checkpointConfig.savepointDir;
    if (target === undefined) throw new ControlError('no savepoint directory: give one (--dir) or configure --savepoint-dir', 400);
    return target;
  }

  // ---- start, attempts, end

  /** Takes the start point the caller resolved; a restore that cannot work is refused before anything is created or announced. */
  private resolveStart(): void {
    const o = this.spec.options;
    const start = this.spec.start;
    this.explicitSnapshot = start.explicit;
    this.claimedExternal = start.claimedExternal;
    const ref = start.snapshot;
    if (ref === undefined) return;
    this.restoredFrom = ref;
    // Resuming our own checkpoints continues the same job: same id, numbering goes on.
    if (start.own) this.jobIdValue = ref.metadata.jobId;
    const plan = planRestore(ref.metadata, ref.path, this.spec.graph, this.plan, o.allowNonRestoredState ?? false, o.allowDuplicateOutput ?? false);
    if (plan.unmatched.length > 0) {
      const names = ref.metadata.operators.filter((op) => plan.unmatched.includes(op.id)).map((op) => `"${op.name}"${op.uid ? ` (uid ${op.uid})` : ''}`);
      this.log(`weir: dropping the state of operators the job no longer has (--allow-non-restored-state): ${names.join(', ')}`);
    }
  }

  /** Starts the job's services; returns what stops them (in reverse order). */
  private async startServices(): Promise<() => Promise<void>> {
    const started: JobService[] = [];
    const stopAll = async () => {
      for (const svc of started.reverse()) await svc.stop();
    };
    try {
      for (const svc of this.spec.options.services ?? []) {
        await svc.start(this);
        started.push(svc);
      }
    } catch (e) {
      await stopAll();
      throw e;
    }
    return stopAll;
  }

  /**
   * Attempts until one finishes, is cancelled, or the recovery decisions give up. Bounded:
   * corrupt-checkpoint fallbacks by maxCorruptFallbacks, restarts by the restart strategy.
   */
  private async runAttempts(): Promise<JobResult> {
    const untyped = untypedStrategy(this.checkpointing);
    const restart = new RestartBackoff(this.spec.restartSettings ? resolveRestartStrategy(this.spec.restartSettings, 'restart strategy', untyped) : defaultRestartStrategy(this.checkpointing));
    const ignored = this.spec.restartSettings ? ignoredRestartSettings(this.spec.restartSettings, untyped) : undefined;
    if (ignored !== undefined) this.log(ignored);
    const recovery = new RecoveryLogic(this.spec.config, restart, this.explicitSnapshot);
    this.recovery = recovery;
    const signal = this.spec.options.signal;
    const onAbort = () => this.cancel();
    signal?.addEventListener('abort', onAbort);
    if (signal?.aborted) this.cancelled = true;
    let outcome: AttemptOutcome;
    try {
      outcome = await this.attemptsUntilEnd(recovery);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    this.state = outcome.status;
    this.endedAt = this.spec.clock.now();
    await this.cleanupOnEnd(outcome.status);
    const error = outcome.status === 'FAILED' ? outcome.error : undefined;
    const progress = this.current?.progress() ?? NO_PROGRESS;
    return new JobResult(this.jobId, outcome.status, error, this.collected, this.spec.clock.now() - this.started, progress, this.spec.graph, this.attempts, this.stats, this.spec.deadLetterDir);
  }

  private async attemptsUntilEnd(recovery: RecoveryLogic): Promise<AttemptOutcome> {
    // Set when the storage failed while a restart was being prepared: decided on like a failed
    // attempt (the restart strategy counts it and waits its backoff), without running one.
    let failedPreparing: AttemptOutcome | undefined;
    for (;;) {
      let outcome = failedPreparing;
      failedPreparing = undefined;
      if (outcome === undefined) {
        this.state = this.attempts === 0 ? 'INITIALIZING' : 'RESTARTING';
        outcome = this.cancelled ? { status: 'CANCELED' } : await this.runAttempt();
        this.runningSince = undefined;
      }
      if (outcome.status === 'FAILED') this.recordException(outcome.error);
      const step = recovery.afterAttempt(outcome, this.cancelled, this.spec.clock.now());
      if (step.type === 'end') {
        if (step.log !== undefined) this.log(step.log);
        return step.outcome;
      }
      const storage = this.spec.storage;
      await this.noteCommittedSavepoint(recovery);
      if (step.type === 'fall-back') {
        const listed = await this.listForRestart(storage);
        if ('failed' in listed) {
          failedPreparing = listed.failed;
          continue;
        }
        const choice = recovery.chooseFallback(step, listed.candidates ?? [], this.restoredFrom);
        if (choice.type === 'end') return choice.outcome;
        this.log(choice.log);
        this.restoredFrom = choice.from;
        continue;
      }
      // The next attempt's workers boot now, while the restart waits for its delay and the listing.
      this.spec.pool?.prewarm();
      const listed = await this.listForRestart(this.checkpointing ? storage : undefined);
      if ('failed' in listed) failedPreparing = listed.failed;
      else {
        const next = recovery.restartFrom(step, listed.candidates, this.restoredFrom, this.newestCheckpointThisRun);
        this.log(next.log);
        if (next.type === 'end') return next.outcome;
        this.restoredFrom = next.from;
      }
      this.state = 'RESTARTING';
      const wait = sleep(this.spec.clock, step.delayMs);
      this.restartWait = wait;
      if (this.cancelled) wait.cancel(); // cancelled while the restart was being prepared
      await wait.done; // cancel() ends the wait early
      this.restartWait = undefined;
    }
  }

  /**
   * The job's completed checkpoints for a restart to choose from. Storage that cannot list them
   * (an object store still failing after its own retries) fails this restart, never the job
   * outright and never by restarting from an older checkpoint or none: the restart strategy
   * decides whether and when to try again.
   */
  private async listForRestart(storage: CheckpointStorage | undefined): Promise<{ candidates: readonly CompletedCheckpointRef[] | undefined } | { failed: AttemptOutcome }> {
    if (storage === undefined) return { candidates: undefined };
    try {
      return { candidates: await storage.completed(this.jobId, this.log) };
    } catch (e) {
      if (errorCode(e) !== 'STORAGE') throw e;
      this.log(`weir: cannot list the checkpoints of job ${this.jobId} to restart from (${(e as Error).message}); this restart failed`);
      return { failed: { status: 'FAILED', error: serializeError(e) } };
    }
  }

  /**
   * Hands the savepoint a stop committed to the recovery decisions, read from its storage (the
   * shell's I/O). One that cannot be read is said so and left out: the restart then goes to an
   * older checkpoint, which the committed-output check refuses if the sinks committed past it.
   */
  private async noteCommittedSavepoint(recovery: RecoveryLogic): Promise<void> {
    const reference = this.committedSavepoint;
    if (reference === undefined) return;
    this.committedSavepoint = undefined;
    try {
      const v = await this.spec.snapshots.forReference(reference).verify(reference);
      if (v.ok) recovery.savepointCommitted({ path: reference, metadata: v.metadata });
      else this.log(`weir: the savepoint ${reference} whose output was committed cannot be read (${v.reason}); a restart cannot start from it`);
    } catch (e) {
      this.log(`weir: the savepoint ${reference} whose output was committed cannot be read (${(e as Error).message}); a restart cannot start from it`);
    }
  }

  private async cleanupOnEnd(status: JobStatus): Promise<void> {
    const storage = this.spec.storage;
    if (!storage || !this.checkpointing) return;
    if (!discardOnJobEnd(this.spec.checkpointConfig.retention, status)) return;
    // Storage that cannot be listed now (an object store unreachable at the end) leaves the
    // checkpoints behind, said so; the job's result stands.
    const completed = await storage.completed(this.jobId).catch((e: unknown) => {
      this.log(`weir: cannot list the checkpoints of job ${this.jobId} to discard them (they stay): ${(e as Error).message}`);
      return [];
    });
    for (const c of completed) {
      if (c.metadata.type !== 'checkpoint') continue;
      // A checkpoint that cannot be deleted is left behind, said so; the job's result stands.
      await storage.discard(c.path).catch((e) => this.log(`weir: cannot discard checkpoint ${c.path}: ${(e as Error).message}`));
    }
    // The chains' files go once no checkpoint names them.
    await storage.collectSharedGarbage(this.jobId).catch((e) => this.log(`weir: cannot collect shared checkpoint files of job ${this.jobId}: ${(e as Error).message}`));
  }

  private async runAttempt(): Promise<AttemptOutcome> {
    const restore = this.restoredFrom;
    let execGraph: JobGraph;
    let restorePlan: RestorePlan | undefined;
    let committedUpTo: number | undefined;
    try {
      // The plan is checked against the graph this attempt runs (in one thread, a fresh build with fresh sinks).
      execGraph = await this.execGraph();
      restorePlan = restore ? planRestore(restore.metadata, restore.path, execGraph, this.plan, this.spec.options.allowNonRestoredState ?? false, this.spec.options.allowDuplicateOutput ?? false) : undefined;
      // Before anything is written: a sink that committed past the restored checkpoint would get that output twice.
      const restoredOps = restore?.metadata.operators;
      committedUpTo = await checkCommittedOutput(execGraph, restore?.metadata.checkpointId, this.spec.options.allowDuplicateOutput ?? false, this.log, (id) => restoredOps?.find((o) => o.id === id)?.parallelism);
    } catch (e) {
      // At the start the caller is told. At a restart the job has run: this attempt failed, and
      // the recovery decisions take it from there (a refusal, RESTORE, does not restart: it
      // would repeat; a sink that cannot tell what it committed, its system unreachable, may
      // answer at the next restart).
      if (this.attempts === 0) throw e;
      const refused = e instanceof RestoreError || e instanceof CommittedOutputRefusal;
      return { status: 'FAILED', error: { ...serializeError(e), ...(refused ? { code: 'RESTORE' } : {}) } };
    }
    if (restore) {
      this.stats.restored(restore.metadata.checkpointId, restore.path, this.spec.clock.now(), restore.metadata.type !== 'checkpoint');
      // At the start (restarts say where they go themselves): a restore told apart from a fresh start.
      if (this.attempts === 0) this.log(`weir: restoring from ${restore.metadata.type} ${restore.metadata.checkpointId} (${restore.path})`);
    }
    let firstCheckpointId: number;
    let restoredCompleted: CompletedCheckpointInfo[];
    try {
      ({ firstCheckpointId, restoredCompleted } = await this.storageFactsForAttempt(restore, committedUpTo));
    } catch (e) {
      // At a restart, storage failing (after its own retries) fails this attempt: the restart strategy decides; at the start the caller is told.
      if (this.attempts > 0 && errorCode(e) === 'STORAGE') return { status: 'FAILED', error: serializeError(e) };
      throw e;
    }
    // A cancel while this attempt was prepared (no attempt was current to hear it).
    if (this.cancelled) return { status: 'CANCELED' };
    const attempt = new Attempt(this.attemptContext(), { number: this.attempts++, restore: restorePlan, restoredRef: restore, firstCheckpointId, restoredCompleted, execGraph });
    this.current = attempt;
    return attempt.run();
  }

  /** What an attempt needs from the storage before it starts: where checkpoint ids continue, and the checkpoints already completed. */
  private async storageFactsForAttempt(restore: CompletedCheckpointRef | undefined, committedUpTo: number | undefined): Promise<{ firstCheckpointId: number; restoredCompleted: CompletedCheckpointInfo[] }> {
    const storage = this.spec.storage;
    // Ids continue after the restored snapshot's, whichever job took it (as Flink's id counter),
    // and after what the sinks committed (a sink skips an id it committed: new output lost).
    // And after every id the restored snapshot's job triggered, when its checkpoints are in this
    // storage (`--from` a checkpoint or savepoint of another run, no-claim: this run has an id of
    // its own): ids above the restored one there may name that job's savepoints, which commit
    // nothing. Reused, a sink took this run's commit of such an id for the savepoint's, and a
    // later restore from that savepoint passed the committed-output check and skipped its output
    // as committed (Redis: 1,456 of 20,000 records lost without a word).
    const restoredJob = restore !== undefined && restore.metadata.jobId !== this.jobId ? restore.metadata.jobId : undefined;
    const restoredJobsIds = storage && restoredJob !== undefined ? await storage.highestId(restoredJob) : 0;
    const firstCheckpointId = Math.max(storage ? await storage.highestId(this.jobId) : 0, restoredJobsIds, restore?.metadata.checkpointId ?? 0, committedUpTo ?? 0) + 1;
    const restoredCompleted: CompletedCheckpointInfo[] = [];
    if (storage && this.checkpointing) {
      // Garbage that cannot be removed now is tried again at the next attempt.
      await storage.collectGarbage(this.jobId).catch((e) => this.log(`weir: cannot collect checkpoint garbage of job ${this.jobId}: ${(e as Error).message}`));
      // Shared files (incremental chains) no checkpoint names: left by aborted or subsumed checkpoints of an earlier run.
      await storage.collectSharedGarbage(this.jobId).catch((e) => this.log(`weir: cannot collect shared checkpoint files of job ${this.jobId}: ${(e as Error).message}`));
      for (const c of await storage.completed(this.jobId)) {
        const m = c.metadata;
        if (m.type !== 'checkpoint') continue;
        // Newer than the checkpoint restored from: it failed to restore (corrupt), or the user went back past it.
        const abandoned = restore !== undefined && restore.metadata.jobId === this.jobId && m.checkpointId > restore.metadata.checkpointId;
        if (abandoned) this.recovery?.abandon([c.path]);
        restoredCompleted.push({ id: m.checkpointId, timestamp: m.timestamp, completedAt: m.completedAt, sharedFiles: sharedFilesOf(m), ...(abandoned ? { abandoned } : {}) });
      }
    }
    return { firstCheckpointId, restoredCompleted };
  }

  /**
   * In one thread, a new attempt gets new operator and function objects, as worker threads
   * get by loading the module again: nothing the failed attempt left in them carries over.
   */
  private async execGraph(): Promise<JobGraph> {
    const s = this.spec;
    if (s.workers !== 1 || this.attempts === 0) return s.graph;
    // The job module imported again, under a URL of this attempt's: function objects declared at
    // its top level are new too, as worker threads get them (before, a process function's fields
    // from the failed attempt carried over on one worker and not on two). A bundle is the whole
    // job's code; from a checkout, modules the job imports keep theirs. A job given as a
    // definition (no file) is built from it again.
    const definition = s.modulePath !== undefined ? await loadJobModule(s.modulePath, `${s.moduleUrl ?? pathToFileURL(s.modulePath).href}?attempt=${this.attempts}`) : s.definition;
    const g = (await buildJob(definition, s.args, s.parallelism, s.modulePath, s.restoredMaxParallelism)).graph;
    if (g.fingerprint !== s.graph.fingerprint) throw new StartError('the job graph changed between attempts: building the job must be deterministic');
    return g;
  }

  private attemptContext(): AttemptContext {
    const s = this.spec;
    const customStdout = s.options.stdout !== undefined;
    return {
      jobId: this.jobId, graph: s.graph, plan: this.plan, workers: s.workers, stateBackend: s.stateBackend, stateBackendOptions: s.stateBackendOptions, deadLetterDir: s.deadLetterDir,
      recordCounters: this.recordCounters,
      job: { modulePath: s.modulePath, args: s.args, defaultParallelism: s.parallelism, ...(s.restoredMaxParallelism !== undefined ? { restoredMaxParallelism: s.restoredMaxParallelism } : {}) },
      pool: s.pool,
      checkpointConfig: s.checkpointConfig, checkpointing: this.checkpointing, config: s.config, clock: s.clock,
      credits: s.options.credits, storage: s.storage, snapshots: s.snapshots, s3: s.s3, stats: this.stats,
      plannedSplits: this.plannedSplits,
      addedSplits: this.addedSplits,
      onProgress: s.options.onProgress,
      log: (line) => this.log(line),
      // `done` runs once the text has been handed to the OS (stdout's backpressure).
      writeStdout: (text, done) => {
        if (customStdout || done === undefined) {
          this.stdout(text);
          done?.();
          return;
        }
        process.stdout.write(text, () => done());
      },
      collect: (sink, values) => {
        let list = this.collected.get(sink);
        if (list === undefined) this.collected.set(sink, (list = []));
        if (list.length + values.length > MAX_COLLECTED_RECORDS) {
          throw new WeirError('USER_CODE', `collect('${sink}') would hold more than ${MAX_COLLECTED_RECORDS.toLocaleString('en-US')} records in memory; it gathers a small result for the job's client (tests, embedding): write a large or endless stream with a sink (writeAsJsonLines, the exactly-once file sink) or print()`);
        }
        for (const v of values) list.push(v);
      },
      markRunning: () => {
        this.state = 'RUNNING';
        this.runningSince ??= s.clock.now();
      },
      onCheckpointCompleted: () => this.discardClaimedExternal(),
      onSavepointCommitted: (reference) => {
        this.committedSavepoint = reference;
      },
    };
  }

  /** The history of a resumed job (its own id): trends go on from where they were. */
  private async loadHistory(storage: CheckpointStorage): Promise<void> {
    try {
      const read = await storage.readHistory(this.jobId);
      const skipped = this.history.load(read.entries) + read.unreadable.length;
      if (skipped > 0) this.log(`weir: skipped ${skipped} unreadable line(s) of ${read.reference}`);
    } catch (e) {
      this.log(`weir: cannot read the checkpoint history of job ${this.jobId}: ${(e as Error).message}`);
    }
  }

  /** Bounded: the first failures and the latest ones tell the story; the middle is dropped. */
  private recordException(error: SerializedError): void {
    const list = this.exceptionHistory;
    list.push({
      exceptionName: error.code !== undefined ? `${error.name} [${error.code}]` : error.name,
      // Read only through the REST API, whose replies blank URLs' passwords (json-reply.ts).
      message: error.message,
      stacktrace: error.stack ?? `${error.name}: ${error.message}`,
      timestamp: this.spec.clock.now(),
      taskName: this.current?.failedTask,
      attempt: this.current?.number ?? 0,
    });
    if (list.length > MAX_EXCEPTIONS) list.splice(1, 1);
  }

  /** Claim mode: the restored snapshot from elsewhere is owned by this job and now subsumed. */
  private discardClaimedExternal(): void {
    const claimed = this.claimedExternal;
    if (claimed === undefined) return;
    this.claimedExternal = undefined;
    void this.spec.snapshots.forReference(claimed).discard(claimed).catch((e) => this.log(`weir: cannot delete the claimed snapshot ${claimed}: ${(e as Error).message}`));
  }
}

/** A directory on this machine (object stores and in-memory storage have no lease here). */
function localPath(reference: string): boolean {
  return isAbsolute(reference) && !reference.includes('://');
}
