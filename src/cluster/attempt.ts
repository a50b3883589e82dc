/**
 * One attempt of a job, from deployment to its end (finished, or failed or cancelled): the
 * shell that maps messages from the tasks to events, and decisions to I/O. The checkpoint
 * coordinator's decisions run through CheckpointShell; savepoint, stop and final-checkpoint
 * decisions come from SnapshotRequestLogic; deployment is Deployment's. Time comes only from
 * the injected clock, and every wait has a bound (deploy, restore, drain: JobManagerConfig;
 * checkpoints: their timeout).
 */
import type { WorkerPool } from './worker-pool.ts';
import { isS3Reference } from '../checkpoint/s3/settings.ts';
import { incrementalSettingsOf, memoryThresholdFor } from '../checkpoint/config.ts';
import type { S3Config } from '../checkpoint/s3/settings.ts';
import { randomBytes } from 'node:crypto';
import type { StateBackendOptions } from '../state/backends.ts';
import type { CheckpointConfig } from '../checkpoint/config.ts';
import type { CompletedCheckpointInfo } from '../checkpoint/coordinator.ts';
import type { CheckpointFailureReason } from '../checkpoint/failure-reason.ts';
import type { RestorePlan } from '../checkpoint/restore-plan.ts';
import type { CheckpointStatsTracker } from '../checkpoint/stats.ts';
import type { CheckpointStorage, CompletedCheckpointRef, StorageResolver } from '../checkpoint/storage.ts';
import type { Cancellable, Clock } from '../core/clock.ts';
import { assignSplits, type SourceSplit, type SplitEnumerator } from '../core/source.ts';
import { taskId, type TaskId } from '../core/task-id.ts';
import type { TaskRestore } from '../core/checkpoint-format.ts';
import type { ExecutionPlan } from '../graph/execution-plan.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import { CheckpointShell } from './checkpoint-shell.ts';
import { after, every } from './clock-timers.ts';
import type { AttemptOutcome } from './decisions/recovery.ts';
import { SnapshotRequestLogic, type RequestDecision, type RequestEvent, type StopMode } from './decisions/snapshot-requests.ts';
import { Deployment } from './deployment.ts';
import { ControlError } from './errors.ts';
import type { Progress } from './job-result.ts';
import type { JobManagerConfig } from './job-manager-config.ts';
import { serializeError, type FromExecutor, type JobSpec, type SerializedError, type ToExecutor } from './messages.ts';
import { MetricStore } from './metric-store.ts';

/** How often the tasks of a one-thread run are sampled (workers send theirs as often). */
export const METRICS_INTERVAL_MS = 1000;
/**
 * Source events (sendSourceEvent) kept for split enumerators not started yet: a reader runs
 * as soon as its task opens, enumerators once every task runs. Past this the attempt fails
 * (a reader sending events in a loop), rather than keeping them without bound.
 */
export const MAX_EARLY_SOURCE_EVENTS = 10_000;

/** What the job master gives each attempt. */
export interface AttemptContext {
  readonly jobId: string;
  readonly graph: JobGraph;
  readonly plan: ExecutionPlan;
  readonly workers: number;
  readonly stateBackend: string;
  readonly stateBackendOptions: StateBackendOptions;
  /** Where sources write dead letters (undefined: the log). */
  readonly deadLetterDir: string | undefined;
  /** Records are counted per task and operator (metrics.record-counters.enabled). */
  readonly recordCounters: boolean;
  readonly job: JobSpec;
  /** Worker threads booted ahead of this attempt's deploy (workers > 1). */
  readonly pool: WorkerPool | undefined;
  readonly checkpointConfig: CheckpointConfig;
  /** Periodic checkpoints are on. */
  readonly checkpointing: boolean;
  readonly config: JobManagerConfig;
  readonly clock: Clock;
  /** Buffer credits of every channel, when the job sets them; undefined: each channel's default (channelCredits). */
  readonly credits: number | undefined;
  readonly storage: CheckpointStorage | undefined;
  readonly snapshots: StorageResolver;
  readonly s3: S3Config;
  readonly stats: CheckpointStatsTracker;
  /**
   * The splits sources planned, per source vertex, kept by the job master for the job's later
   * attempts: one with no checkpoint to restore reads these again instead of planning anew. A
   * source that starts at its stream's newest record would plan a later start, and what
   * arrived in between (after the first attempt started, before the restart) was never read.
   */
  readonly plannedSplits: Map<number, readonly SourceSplit[]>;
  /**
   * Splits a restore planned for names the restored checkpoint does not hold (a stream added to
   * the job), by source vertex and split id: planned once per job. Each attempt restoring the
   * same checkpoint planned them anew, from "latest" then a later "latest": what the failed
   * attempt had read of them (rolled back) was never read again.
   */
  readonly addedSplits: Map<string, SourceSplit>;
  readonly onProgress: ((p: Progress) => void) | undefined;
  log(line: string): void;
  writeStdout(text: string, done?: () => void): void;
  collect(sink: string, values: unknown[]): void;
  /** Every task of the attempt runs. */
  markRunning(): void;
  /** A checkpoint completed: a claimed snapshot from elsewhere is now subsumed. */
  onCheckpointCompleted(): void;
  /** A savepoint whose output the sinks commit (a stop's): restarts never go back past it. */
  onSavepointCommitted(reference: string): void;
}

export interface AttemptStart {
  readonly number: number;
  readonly restore: RestorePlan | undefined;
  /** The snapshot restored from: its failing to load (CORRUPT_STATE) is reported as a corrupt checkpoint. */
  readonly restoredRef: CompletedCheckpointRef | undefined;
  readonly firstCheckpointId: number;
  readonly restoredCompleted: readonly CompletedCheckpointInfo[];
  /** The graph the tasks in this thread run (rebuilt per attempt with workers: 1). */
  readonly execGraph: JobGraph;
}

interface PendingRequest {
  /** Savepoints: the directory the savepoint goes below. */
  readonly target: string | undefined;
  suspendSourcesAfter: boolean;
  /** A stop-with-savepoint (its savepoint is logged when taken, its request resolved when the job stopped). */
  readonly stop: boolean;
  readonly resolve: (v: string | number) => void;
  readonly reject: (e: Error) => void;
}

export class Attempt {
  private readonly checkpoints: CheckpointShell;
  private readonly requests: SnapshotRequestLogic;
  private readonly pending = new Map<string, PendingRequest>();
  private deployment: Deployment | undefined;
  /** The tasks' metrics of this attempt (counters start again with every attempt, as Flink's). */
  readonly metricStore: MetricStore;
  private readonly heap = new Map<number, number>();
  private readonly sourceVertices: Set<number>;
  private readonly sinkOps: (readonly [number, number])[];
  private readonly taskIds: TaskId[];
  private readonly startedAt: number;
  private deployed = 0;
  /** Tasks of a restoring attempt that have their state in memory (they open when all have). */
  private restoredTasks = 0;
  private runningTasks = 0;
  private readonly waitingTasks = new Set<string>();
  private finishedTasks = 0;
  private running = false;
  private readonly timers: { plan?: Cancellable; deploy?: Cancellable; restore?: Cancellable; progress?: Cancellable; requests?: Cancellable; metrics?: Cancellable } = {};
  private ending = false;
  /** The subtask whose failure ended the attempt, e.g. "Map (2/4)" (the exceptions view). */
  failedTask: string | undefined;
  private settle: (o: AttemptOutcome) => void = () => {};
  /** Split enumerators of the sources that have one, by source operator id (started once every task runs). */
  private readonly enumerators = new Map<string, SplitEnumerator>();
  private enumeratorsStarted = false;
  /**
   * Source events that arrived before the enumerators started, in arrival order; each goes to
   * its enumerator right after that one starts. Dropped, a reader's one-time report (Kinesis:
   * "this shard is finished") was lost for the whole attempt, and the shard's children with it.
   */
  private earlyEvents: { operator: string; subtask: number; event: unknown }[] = [];
  private splits: Record<TaskId, SourceSplit[]> = {};

  constructor(private readonly ctx: AttemptContext, private readonly start: AttemptStart) {
    const graph = ctx.graph;
    this.sourceVertices = new Set(graph.vertices.filter((v) => v.isSource).map((v) => v.index));
    this.sinkOps = graph.vertices.flatMap((v) =>
      v.operators.filter((o) => o.node.transformation.kind === 'one-input' && o.node.transformation.isSink).map((o) => [v.index, o.index] as const),
    );
    this.taskIds = ctx.plan.subtasks.map((s) => taskId(s.vertex, s.index));
    this.metricStore = new MetricStore(ctx.graph, ctx.recordCounters);
    this.startedAt = ctx.clock.now();
    // Always there: savepoints can be taken without periodic checkpoints.
    const tasks = ctx.plan.subtasks.map((s) => ({ id: taskId(s.vertex, s.index), isSource: graph.vertices[s.vertex]!.isSource }));
    this.checkpoints = new CheckpointShell(this.shellHost(), ctx.checkpointConfig, tasks, start.firstCheckpointId, start.restoredCompleted);
    this.requests = new SnapshotRequestLogic(ctx.config, ctx.checkpointing);
  }

  get number(): number {
    return this.start.number;
  }

  async run(): Promise<AttemptOutcome> {
    const done = new Promise<AttemptOutcome>((r) => (this.settle = r));
    const { ctx } = this;
    // A source's planSplits may ask an external system (shards, files, streams): bounded like
    // the deployment that follows, and a cancel during it ends the attempt at once.
    this.timers.plan = after(ctx.clock, ctx.config.deployTimeoutMs, () => {
      this.fail(timeoutError('PlanSplitsTimeout', `the sources did not plan their splits within ${ctx.config.deployTimeoutMs / 1000} s (jobmanager.deploy.timeout)`));
    });
    const planning = this.planSplits();
    planning.catch(() => {}); // abandoned when the attempt ends first; a failure of its own rejects the race below
    let splits: Record<TaskId, SourceSplit[]> | undefined;
    try {
      splits = await Promise.race([planning, done.then(() => undefined)]);
    } finally {
      this.timers.plan.cancel();
    }
    if (splits === undefined || this.ending) return done;
    this.splits = splits;
    const onProgress = ctx.onProgress;
    if (onProgress !== undefined) this.timers.progress = every(ctx.clock, ctx.config.progressIntervalMs, () => onProgress(this.progress()));
    // Worker threads send their samples; tasks in this thread are read on the same beat.
    this.timers.metrics = every(ctx.clock, METRICS_INTERVAL_MS, () => this.sampleLocal());
    // Every wait has a bound: workers that cannot load the job in time fail the attempt.
    this.timers.deploy = after(ctx.clock, ctx.config.deployTimeoutMs, () => {
      this.fail(timeoutError('DeployTimeout', `only ${this.deployed} of ${ctx.workers} worker(s) loaded the job within ${ctx.config.deployTimeoutMs / 1000} s`));
    });
    this.deployment = Deployment.start({
      workers: ctx.workers,
      job: { ...ctx.job, fingerprint: ctx.graph.fingerprint },
      graph: this.start.execGraph, plan: ctx.plan, splits, attempt: this.number, credits: ctx.credits, clock: ctx.clock,
      checkpointing: {
        mode: ctx.checkpointConfig.mode, periodic: ctx.checkpointing, inlineThresholdBytes: memoryThresholdFor(ctx.checkpointConfig, ctx.storage?.root),
        ...(ctx.checkpointing && incrementalSettingsOf(ctx.checkpointConfig) !== undefined ? { incremental: incrementalSettingsOf(ctx.checkpointConfig) } : {}),
        unaligned: { enabled: ctx.checkpointConfig.unaligned, alignedTimeoutMs: ctx.checkpointConfig.alignedCheckpointTimeoutMs },
      },
      stateBackend: ctx.stateBackend,
      stateBackendOptions: ctx.stateBackendOptions,
      deadLetterDir: ctx.deadLetterDir,
      recordCounters: ctx.recordCounters,
      firstCheckpointId: this.start.firstCheckpointId,
      restore: (this.start.restore?.tasks ?? {}) as Record<TaskId, TaskRestore>,
      storage: ctx.snapshots.workerView,
      s3: ctx.s3,
      preloadS3: ctx.storage !== undefined && isS3Reference(ctx.storage.root),
      pool: ctx.pool,
      onMessage: (m) => this.onMessage(m),
      onWorkerFailure: (e) => this.fail(e),
      isEnded: () => this.ending,
      writeStdout: (t, d) => ctx.writeStdout(t, d),
    });
    return done;
  }

  private sampleLocal(): void {
    const local = this.deployment?.local;
    if (local) for (const m of local.metrics()) this.metricStore.add(m);
  }

  progress(): Progress {
    const local = this.deployment?.local;
    this.sampleLocal();
    let recordsIn = 0;
    let recordsOut = 0;
    let late = 0;
    let deadLetters = 0;
    let bytesIn = 0;
    let pending: number | undefined;
    let behind: number | undefined;
    for (const m of this.metricStore.latest()) {
      for (const n of m.lateRecordsDropped) late += n;
      deadLetters += m.deadLetters ?? 0;
      if (m.source !== undefined) {
        bytesIn += m.source.bytesRead;
        if (m.source.pendingRecords !== undefined) pending = (pending ?? 0) + m.source.pendingRecords;
        if (m.source.millisBehindLatest !== undefined) behind = Math.max(behind ?? 0, m.source.millisBehindLatest);
      }
      if (this.sourceVertices.has(m.vertex)) recordsIn += m.recordsIn[0] ?? 0;
      for (const [v, o] of this.sinkOps) if (m.vertex === v) recordsOut += m.recordsIn[o] ?? 0;
    }
    // Worker threads report their heaps; the main thread's is counted too (what collect() gathers lives there).
    const heapUsed = process.memoryUsage().heapUsed + (local ? 0 : [...this.heap.values()].reduce((a, b) => a + b, 0));
    let backPressure: Progress['backPressure'];
    for (const s of this.metricStore.subtasks()) {
      const bp = s.metrics['backPressuredTimeMsPerSecond'] ?? 0;
      if (backPressure === undefined || bp > backPressure.msPerSecond) backPressure = { task: `${s.taskName} (${s.subtask + 1})`, msPerSecond: bp };
    }
    return {
      elapsedMs: this.ctx.clock.now() - this.startedAt, recordsIn, recordsOut, recordCounters: this.ctx.recordCounters, deadLetters, heapUsed, attempt: this.number, lastCheckpoint: this.ctx.stats.lastCompleted,
      lateRecordsDropped: late, bytesIn, pendingRecords: pending, millisBehindLatest: behind, backPressure,
    };
  }

  // ---- control (REST, weir savepoint/stop/cancel)

  /** Triggers a checkpoint now (Flink's POST /jobs/:id/checkpoints); resolves with its id. */
  checkpointNow(): Promise<number> {
    return this.request('checkpoint', undefined, undefined) as Promise<number>;
  }

  /** Takes a savepoint into a new directory below `target`; with `stop`, the job ends after it. */
  savepoint(target: string, stop: StopMode | undefined): Promise<string> {
    return this.request('savepoint', target, stop) as Promise<string>;
  }

  /** Cancels the attempt (the user asked to cancel the job). */
  cancel(): void {
    this.end({ status: 'CANCELED' });
  }

  private request(kind: 'checkpoint' | 'savepoint', target: string | undefined, stop: StopMode | undefined): Promise<string | number> {
    if (this.ending) return Promise.reject(new ControlError('the job is not running'));
    const requestId = `${kind}-${randomBytes(6).toString('hex')}`;
    return new Promise((resolve, reject) => {
      this.pending.set(requestId, { target, suspendSourcesAfter: false, stop: stop !== undefined, resolve, reject });
      this.decide({ type: 'request', now: this.ctx.clock.now(), requestId, kind, ...(stop !== undefined ? { stop } : {}), running: this.running });
    });
  }

  // ---- messages from the task executors

  private onMessage(m: FromExecutor): void {
    if (this.ending) return;
    const now = this.ctx.clock.now();
    switch (m.type) {
      case 'deployed':
        return this.onDeployed();
      case 'preloaded':
        return; // a booted worker's answer to its pool, arriving after the handover
      case 'executor-failed':
        return this.fail(m.error);
      case 'task-restored':
        if (++this.restoredTasks === this.taskIds.length) {
          this.timers.restore?.cancel();
          this.broadcast({ type: 'proceed' });
        }
        return;
      case 'task-running':
        this.checkpoints.handle({ type: 'task-status', now, task: m.task, status: 'running' });
        this.running = ++this.runningTasks === this.taskIds.length;
        if (this.running) {
          this.ctx.markRunning();
          this.startEnumerators();
        }
        this.checkpoints.scheduleTick();
        return;
      case 'task-waiting':
        this.waitingTasks.add(m.task);
        this.checkpoints.handle({ type: 'task-status', now, task: m.task, status: 'waiting-final' });
        if (this.waitingTasks.size === this.taskIds.length) this.decide({ type: 'all-tasks-waiting', now });
        return;
      case 'task-finished':
        this.metricStore.add(m.metrics);
        if (++this.finishedTasks === this.taskIds.length) this.end({ status: 'FINISHED' });
        return;
      case 'task-failed': {
        const v = this.ctx.graph.vertices[m.vertex];
        this.failedTask = v === undefined ? undefined : `${v.name} (${m.subtask + 1}/${v.parallelism})`;
        this.checkpoints.handle({ type: 'task-failed', now, task: taskId(m.vertex, m.subtask) });
        // Classified by code: a state file that fails its checks is the snapshot's fault, not the job's.
        const corrupt = m.error.code === 'CORRUPT_STATE' ? this.start.restoredRef?.path : undefined;
        return this.fail(m.error, corrupt);
      }
      case 'collect':
        try {
          return this.ctx.collect(m.sink, m.values);
        } catch (e) {
          return this.fail(serializeError(e)); // a collect() holding too many records
        }
      case 'log':
        return this.ctx.log(m.line);
      case 'metrics':
        for (const t of m.tasks) this.metricStore.add(t);
        this.heap.set(m.workerIndex, m.heapUsed);
        return;
      case 'stdout':
        return this.deployment?.writeStdout(m);
      case 'ack':
        this.ctx.stats.acknowledged(m.id, m.ack, now);
        return this.checkpoints.handle({ type: 'ack', now, id: m.id, ack: m.ack });
      case 'decline':
        return this.checkpoints.handle({ type: 'decline', now, id: m.id, task: m.task, reason: m.reason, message: m.message });
      case 'source-event':
        if (!this.enumeratorsStarted) {
          if (this.earlyEvents.length >= MAX_EARLY_SOURCE_EVENTS) {
            return this.fail(serializeError(new Error(`source readers sent more than ${MAX_EARLY_SOURCE_EVENTS} events before every task was running`)));
          }
          this.earlyEvents.push({ operator: m.operator, subtask: m.subtask, event: m.event });
          return;
        }
        try {
          this.enumerators.get(m.operator)?.handleSourceEvent(m.subtask, m.event);
        } catch (e) {
          this.fail(serializeError(e));
        }
        return;
    }
  }

  /** One split enumerator per source that has one, given the splits its readers start with. */
  private startEnumerators(): void {
    if (this.enumeratorsStarted || this.ending) return;
    this.enumeratorsStarted = true;
    const early = this.earlyEvents;
    this.earlyEvents = [];
    for (const v of this.ctx.graph.vertices) {
      const node = v.operators[0]!.node;
      const t = node.transformation;
      if (t.kind !== 'source' || t.source.createEnumerator === undefined) continue;
      const timers = new Set<Cancellable>();
      const assigned: SourceSplit[][] = [];
      for (let i = 0; i < v.parallelism; i++) assigned.push([...(this.splits[taskId(v.index, i)] ?? [])]);
      try {
        const en = t.source.createEnumerator({
          parallelism: v.parallelism,
          restoredFrom: this.start.restoredRef?.path,
          assignSplits: (subtask, splits) => {
            if (this.ending || !(subtask >= 0 && subtask < v.parallelism)) return;
            this.broadcast({ type: 'add-splits', task: taskId(v.index, subtask), splits });
          },
          sendEventToReader: (subtask, event) => {
            if (this.ending || !(subtask >= 0 && subtask < v.parallelism)) return;
            this.broadcast({ type: 'reader-event', task: taskId(v.index, subtask), event });
          },
          now: () => this.ctx.clock.now(),
          schedule: (delayMs, fn) => {
            const c = after(this.ctx.clock, delayMs, () => {
              timers.delete(c);
              if (this.ending) return;
              // A throw here ran outside every handler: it crashed the process (no restart, no line naming the source).
              try {
                fn();
              } catch (e) {
                this.fail(serializeError(e));
              }
            });
            timers.add(c);
            return { cancel: () => { timers.delete(c); c.cancel(); } };
          },
          log: (line) => this.ctx.log(`source "${t.source.name}": ${line}`),
          fail: (e) => this.fail(serializeError(e)),
        }, assigned);
        this.enumerators.set(node.id, { start: () => en.start(), handleSourceEvent: (s, e) => en.handleSourceEvent(s, e), close: () => { for (const c of timers) c.cancel(); en.close(); } });
        en.start();
        for (const e of early) if (e.operator === node.id) en.handleSourceEvent(e.subtask, e.event);
      } catch (e) {
        this.fail(serializeError(e));
        return;
      }
    }
  }

  private onDeployed(): void {
    const { ctx } = this;
    if (++this.deployed !== ctx.workers) return;
    this.timers.deploy?.cancel();
    this.broadcast({ type: 'start' });
    if (Object.keys(this.start.restore?.tasks ?? {}).length === 0) return;
    // Bounded like deployment: a stalled file system cannot hold the job in INITIALIZING forever.
    this.timers.restore = after(ctx.clock, ctx.config.restoreTimeoutMs, () => {
      this.fail(timeoutError('RestoreTimeout', `only ${this.restoredTasks} of ${this.taskIds.length} task(s) loaded their state within ${ctx.config.restoreTimeoutMs / 1000} s`));
    });
  }

  // ---- snapshot requests: events in, decisions out

  private decide(e: RequestEvent): void {
    for (const d of this.requests.handle(e)) this.carryOut(d);
    this.timers.requests?.cancel();
    const at = this.requests.nextWakeup();
    if (at !== undefined && !this.ending) this.timers.requests = this.ctx.clock.schedule(at, () => this.decide({ type: 'tick', now: this.ctx.clock.now() }));
  }

  private carryOut(d: RequestDecision): void {
    const now = this.ctx.clock.now();
    switch (d.type) {
      case 'trigger': {
        const p = this.pending.get(d.requestId);
        if (p !== undefined) p.suspendSourcesAfter = d.suspendSourcesAfter;
        return this.checkpoints.handle({ type: 'request', now, checkpointType: d.checkpointType, requestId: d.requestId, final: d.final, stop: d.stop });
      }
      case 'suspend-periodic':
        return this.checkpoints.handle({ type: 'suspend-periodic' });
      case 'resume-periodic':
        return this.checkpoints.handle({ type: 'resume-periodic', now });
      case 'end-sources':
        return this.broadcast({ type: 'end-sources', drain: d.drain });
      case 'resume-sources':
        return this.broadcast({ type: 'resume-sources' });
      case 'finish-tasks':
        return this.broadcast({ type: 'finish-tasks' });
      case 'resolve': {
        const p = this.take(d.requestId);
        if (d.kind === 'savepoint' && p?.stop !== true) this.ctx.log(`weir: savepoint ${d.checkpointId} completed at ${d.reference}`);
        return p?.resolve(d.kind === 'savepoint' ? d.reference : d.checkpointId);
      }
      case 'stop-savepoint-taken':
        return this.ctx.log(`weir: savepoint ${d.checkpointId} completed at ${d.reference}`);
      case 'reject':
        return this.take(d.requestId)?.reject(new ControlError(d.message));
      case 'fail-job':
        return this.fail(plainError('CheckpointFailure', d.message));
    }
  }

  private take(requestId: string): PendingRequest | undefined {
    const p = this.pending.get(requestId);
    this.pending.delete(requestId);
    return p;
  }

  private shellHost(): ConstructorParameters<typeof CheckpointShell>[0] {
    const ctx = this.ctx;
    return {
      get jobId() {
        return ctx.jobId;
      },
      graph: ctx.graph, clock: ctx.clock, storage: ctx.storage, snapshots: ctx.snapshots, stats: ctx.stats, attempt: this.number,
      log: (line) => ctx.log(line),
      broadcast: (m) => this.broadcast(m),
      requestPlacement: (id) => {
        const p = this.pending.get(id);
        return { savepointTarget: p?.target, suspendSourcesAfter: p?.suspendSourcesAfter ?? false };
      },
      onRequestCompleted: (requestId, checkpointId, reference, final) =>
        this.decide({ type: 'completed', now: ctx.clock.now(), requestId, checkpointId, reference, final }),
      onRequestFailed: (requestId, reason: CheckpointFailureReason, message, how) =>
        this.decide({ type: how, now: ctx.clock.now(), requestId, reason, message }),
      onCheckpointCompleted: () => ctx.onCheckpointCompleted(),
      onSavepointCommitted: (reference) => ctx.onSavepointCommitted(reference),
      failJob: (message) => this.fail(plainError('CheckpointFailure', message)),
    };
  }

  // ---- the end

  private fail(error: SerializedError, corruptCheckpoint?: string): void {
    this.end({ status: 'FAILED', error, ...(corruptCheckpoint !== undefined ? { corruptCheckpoint } : {}) });
  }

  private end(o: AttemptOutcome): void {
    if (this.ending) return;
    this.ending = true;
    for (const t of Object.values(this.timers)) t?.cancel();
    for (const en of this.enumerators.values()) {
      try {
        en.close();
      } catch (e) {
        this.ctx.log(`split enumerator close failed: ${(e as Error).message}`);
      }
    }
    this.broadcast({ type: 'cancel' });
    void this.windDown(o);
  }

  /** Checkpoints whose metadata is being written complete first; then requests and the rest end. */
  private async windDown(o: AttemptOutcome): Promise<void> {
    await this.checkpoints.finishFinalizing();
    this.decide({ type: 'ended', status: o.status });
    this.checkpoints.shutdown();
    await Promise.all([this.deployment?.terminate(), this.checkpoints.quiesce()]);
    this.settle(o);
  }

  private broadcast(m: ToExecutor): void {
    this.deployment?.broadcast(m);
  }

  /** A split added since the restored checkpoint, as the job's first attempt to restore it planned it (AttemptContext.addedSplits). */
  private plannedOnce(vertex: number, split: SourceSplit): SourceSplit {
    const key = `${vertex}\u0000${split.id}`;
    const first = this.ctx.addedSplits.get(key);
    if (first !== undefined) return structuredClone(first) as SourceSplit; // a copy: this attempt's readers move it
    this.ctx.addedSplits.set(key, structuredClone(split) as SourceSplit);
    return split;
  }

  private async planSplits(): Promise<Record<TaskId, SourceSplit[]>> {
    const splits: Record<TaskId, SourceSplit[]> = {};
    for (const v of this.ctx.graph.vertices) {
      const t = v.operators[0]!.node.transformation;
      if (t.kind !== 'source') continue;
      const restored = this.start.restore?.splits;
      if (restored && restored[taskId(v.index, 0)] !== undefined) {
        const perTask = Array.from({ length: v.parallelism }, (_, i) => (restored[taskId(v.index, i)] ?? []) as SourceSplit[]);
        if (t.source.reconcileRestoredSplits === undefined) {
          perTask.forEach((s, i) => (splits[taskId(v.index, i)] = s));
          continue;
        }
        // Kept splits stay with the reader the restore dealt them to; new ones are dealt out after.
        const all = perTask.flat();
        const now = await t.source.reconcileRestoredSplits(all, (line) => this.ctx.log(line));
        const keep = new Set(now);
        const kept = perTask.map((s) => s.filter((x) => keep.has(x)));
        const known = new Set(all);
        const fresh = assignSplits(now.filter((x) => !known.has(x)).map((x) => this.plannedOnce(v.index, x)), v.parallelism);
        kept.forEach((s, i) => (splits[taskId(v.index, i)] = [...s, ...fresh[i]!]));
        continue;
      }
      let all = this.ctx.plannedSplits.get(v.index);
      if (all === undefined) {
        all = await t.source.planSplits(v.parallelism);
        this.ctx.plannedSplits.set(v.index, all);
      }
      // A copy: readers of this attempt must not change what a later attempt starts from.
      assignSplits(structuredClone(all) as SourceSplit[], v.parallelism).forEach((s, i) => (splits[taskId(v.index, i)] = s));
    }
    return splits;
  }
}

function plainError(name: string, message: string): SerializedError {
  return { name, code: undefined, message, stack: undefined, user: false };
}

function timeoutError(name: string, message: string): SerializedError {
  return { name, code: 'TIMEOUT', message, stack: undefined, user: false };
}
