/**
 * The public run API: runJob builds the job graph once, settles its configuration (the job's
 * own settings, then the run options), picks checkpoint storage, and hands everything to a
 * JobMaster, which runs the attempts (job-master.ts; one attempt: attempt.ts; its threads:
 * deployment.ts; its decisions: decisions/).
 */
import { resolveStartPoint } from './start-point.ts';
import type { CheckpointMetadata } from '../checkpoint/metadata.ts';
import { existsSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import type { JobDefinition } from '../api/job.ts';
import { applyCheckpointSettings, DEFAULT_CHECKPOINT_CONFIG, type CheckpointConfig, type CheckpointSettings } from '../checkpoint/config.ts';
import { LocalCheckpointStorage, type CheckpointStorage } from '../checkpoint/storage.ts';
import { storageResolver } from '../checkpoint/storage-resolver.ts';
import { S3CheckpointStorage } from '../checkpoint/s3/s3-storage.ts';
import { isS3Reference, resolveS3Config, setJobS3Config, type S3Config, type S3Settings } from '../checkpoint/s3/settings.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import { WeirError } from '../core/errors.ts';
import { logger } from '../core/log.ts';
import { OPTIONS } from '../core/options/registry.ts';
import { codeProblem } from '../core/options/values.ts';
import { StartError } from './errors.ts';
import type { JobService } from './job-control.ts';
import { bundleJob } from './job-bundle.ts';
import { buildJob, loadJobModule } from './job-loader.ts';
import { resolveJobManagerConfig, type JobManagerConfig, type JobManagerSettings } from './job-manager-config.ts';
import { JobMaster } from './job-master.ts';
import { WorkerPool } from './worker-pool.ts';
import type { JobResult, Progress } from './job-result.ts';
import type { RestartStrategySettings } from './restart-strategy.ts';
import { keyedStateBackendFactory, type StateBackendOptions } from '../state/backends.ts';
import type { Transformation } from '../graph/transformation.ts';
import { checkDirectoryPath } from '../core/directory.ts';
import { redactUserinfo } from '../core/redact.ts';

export { JobResult, type JobStatus, type Progress } from './job-result.ts';
export { ControlError, StartError } from './errors.ts';

export interface RunOptions {
  /** Default parallelism of operators (the job's own settings win). Default: number of workers. */
  readonly parallelism?: number;
  /** Worker threads; 1 runs everything in the calling thread. Default: number of cores. */
  readonly workers?: number;
  /** The keyed state backend by name (state.backend.type); `heap` by default. */
  readonly stateBackend?: string;
  /** Settings of the state backends (state.backend.disk.dir, state.backend.disk.cache-entries). */
  readonly stateBackendOptions?: StateBackendOptions;
  readonly args?: readonly string[];
  /** Processing-time clock, and the job manager's only source of time; only for runs in one thread (workers: 1). */
  readonly clock?: Clock;
  /** Receives print() output; default process.stdout. */
  readonly stdout?: (text: string) => void;
  /** Receives log lines (restarts, skipped checkpoints); default process.stderr. */
  readonly log?: (line: string) => void;
  /** Called about once a second (JobManagerConfig.progressIntervalMs) with progress. */
  readonly onProgress?: (p: Progress) => void;
  /**
   * Where sources with malformed: 'dead-letter' write their malformed records. Default: beside
   * the job's first file sink, in <its dir>.dead-letters; a job without one logs the first few.
   */
  readonly deadLetterDir?: string;
  /** Most channels between subtasks the job may have (default 65536); more is refused at start. */
  readonly maxChannels?: number;
  /**
   * Count records per task and operator (numRecordsIn/Out and their rates; metrics.record-counters.enabled).
   * Default true. false takes the counting off the per-record path: those metrics are absent, and
   * the job's progress says so (Progress.recordCounters) instead of counting records.
   */
  readonly recordCounters?: boolean;
  /** Buffer credits of every channel (backpressure bound); default 4 between threads, 1 within one (runtime/channels/channel.ts). */
  readonly credits?: number;
  /** Checkpoint settings; they override the job's own (enableCheckpointing). */
  readonly checkpoint?: CheckpointSettings;
  /**
   * Where checkpoints go, instead of a local directory (checkpoint.dir): e.g. in-memory storage
   * with injected faults for deterministic tests. Storage that lives in one thread needs workers: 1.
   */
  readonly checkpointStorage?: CheckpointStorage;
  /**
   * S3 settings (s3.* keys) for s3:// checkpoint and savepoint directories; anything not set
   * is found as every AWS SDK client finds it (AWS_ENDPOINT_URL_S3, AWS_REGION, credentials).
   */
  readonly s3?: S3Settings;
  readonly restartStrategy?: RestartStrategySettings;
  /** The job manager's own timeouts and retry limits (defaults: DEFAULT_JOB_MANAGER_CONFIG). */
  readonly jobManager?: JobManagerSettings;
  /**
   * Start from a snapshot: 'latest' (newest completed checkpoint in the checkpoint dir; an
   * error if there is none), 'latest-or-empty' (start fresh if there is none), or a path to a
   * checkpoint or savepoint directory.
   */
  readonly from?: string;
  readonly allowNonRestoredState?: boolean;
  /**
   * Start although a sink already committed output past the restored checkpoint (or any output,
   * on a fresh start): that output is written again. Off by default: such a start is refused.
   */
  readonly allowDuplicateOutput?: boolean;
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

function positiveInt(v: number, name: string, given: unknown): number {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer, got ${String(given)}`);
  return v;
}

export async function runJob(job: string | JobDefinition, options: RunOptions = {}): Promise<JobResult> {
  // Every job log line, whoever receives it (the CLI's logger or a caller's own log function), has
  // URLs' passwords blanked: a line may quote a failed record or a user function's error.
  const userLog = options.log ?? ((l: string) => logger().line(l));
  options = { ...options, log: (line: string) => userLog(redactUserinfo(line)) };
  const workers = positiveInt(options.workers ?? availableParallelism(), 'workers', options.workers);
  const parallelism = positiveInt(options.parallelism ?? workers, 'parallelism', options.parallelism);
  if (options.maxChannels !== undefined) positiveInt(options.maxChannels, 'maxChannels', options.maxChannels);
  // 0, a negative number or NaN left every batch in the backlog: the job hung without a word.
  if (options.credits !== undefined) positiveInt(options.credits, 'credits', options.credits);
  const countersProblem = options.recordCounters === undefined ? undefined : codeProblem(OPTIONS.recordCounters, options.recordCounters, 'run options (recordCounters)');
  if (countersProblem !== undefined) throw new WeirError('CONFIG', countersProblem);
  if (options.clock !== undefined && workers > 1) throw new RangeError('a custom clock needs workers: 1 (it cannot cross threads)');
  if (options.checkpointStorage?.threadLocal && workers > 1) throw new RangeError('in-memory checkpoint storage needs workers: 1 (it cannot cross threads)');
  const config = resolveJobManagerConfig(options.jobManager, 'run options (jobManager)');
  const stateBackendOptions = options.stateBackendOptions ?? {};
  const stateBackend = keyedStateBackendFactory(options.stateBackend, stateBackendOptions).name; // checks the name and the settings
  const args = options.args ?? [];
  const modulePath = typeof job === 'string' ? resolve(job) : undefined;
  const found = modulePath !== undefined && existsSync(modulePath);
  // An installed weir imports the job bundled as JavaScript, in this thread and in every worker
  // (job-bundle.ts: no tsx at all); from a checkout there is no bundle, and tsx loads the file.
  const bundle = found ? bundleJob(modulePath) : Promise.resolve(undefined);
  const moduleUrl = bundle.then((b) => b?.url);
  // Worker threads boot (weir, the job module) while this thread loads and builds the job.
  const pool = found && workers > 1 ? new WorkerPool(modulePath, workers, moduleUrl) : undefined;
  pool?.prewarm();
  try {
    return await runWithPool(job, options, { workers, parallelism, config, stateBackend, stateBackendOptions, args, modulePath, moduleUrl, pool });
  } finally {
    await pool?.close();
    (await bundle)?.dispose();
  }
}

async function runWithPool(
  job: string | JobDefinition, options: RunOptions,
  r: {
    workers: number; parallelism: number; config: JobManagerConfig; stateBackend: string; stateBackendOptions: StateBackendOptions;
    args: readonly string[]; modulePath: string | undefined; moduleUrl: Promise<string | undefined>; pool: WorkerPool | undefined;
  },
): Promise<JobResult> {
  const { workers, parallelism, config, stateBackend, stateBackendOptions, args, modulePath, pool } = r;
  const definition = typeof job === 'string' ? await loadJobModule(job, await r.moduleUrl) : job;
  if (modulePath === undefined && workers > 1) throw new RangeError('a job given as a definition runs with workers: 1; pass the module path to use worker threads');
  let { env, graph } = await buildJob(definition, args, parallelism, modulePath);
  for (const t of env.transformations) if (t.kind === 'one-input') t.preflight?.();
  const deadLetterDir = deadLetterDirOf(options.deadLetterDir, env.transformations);
  let checkpointConfig: CheckpointConfig = applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, env.checkpointSettings, 'job code (enableCheckpointing)');
  if (options.checkpoint) checkpointConfig = applyCheckpointSettings(checkpointConfig, options.checkpoint, 'run options');
  const s3 = resolveS3Config(options.s3, 'run options (s3)');
  setJobS3Config(s3); // the file sink given an s3:// path uses the job's settings (set in workers from the deploy message)
  const storage = options.checkpointStorage ?? (checkpointConfig.dir !== undefined ? checkpointStorageAt(checkpointConfig.dir, s3) : undefined);
  if (checkpointConfig.intervalMs !== undefined && storage === undefined) throw new StartError('checkpointing is enabled but no checkpoint directory is set (--checkpoint-dir DIR)');
  if (checkpointConfig.intervalMs === undefined && checkpointConfig.dir !== undefined) {
    // A directory alone reads as "checkpoint there", but without an interval nothing is taken.
    (options.log ?? ((l: string) => logger().line(l)))(
      `weir: warning: a checkpoint directory is set (${checkpointConfig.dir}) but no checkpoint interval: no checkpoints will be taken; set --checkpoint-interval (or enableCheckpointing in the job)`,
    );
  }
  const snapshots = storageResolver(storage, s3);
  const log = options.log ?? ((l: string) => logger().line(l));
  // As in Flink, the job's setParallelism wins over the default given from outside; said, since the flag looked taken.
  if (options.parallelism !== undefined && env.parallelism !== undefined && env.parallelism !== options.parallelism) {
    log(`weir: parallelism ${options.parallelism} (--parallelism, parallelism.default) is overridden by the job's env.setParallelism(${env.parallelism})`);
  }
  // Where the first attempt starts, decided before the graph is final: keyed operators whose max
  // parallelism the job leaves to the default take the snapshot's (EnvironmentSettings).
  const start = await resolveStartPoint({ from: options.from, claimMode: options.claimMode, jobName: graph.jobName }, storage, snapshots, log);
  const restoredMaxParallelism = keyedMaxParallelismOf(start.snapshot?.metadata);
  if (restoredMaxParallelism !== undefined) ({ env, graph } = await buildJob(definition, args, parallelism, modulePath, restoredMaxParallelism));
  const master = new JobMaster({
    start, restoredMaxParallelism,
    pool, graph, definition, modulePath, moduleUrl: await r.moduleUrl, args, parallelism, workers, checkpointConfig, config, storage, stateBackend, stateBackendOptions, deadLetterDir,
    restartSettings: options.restartStrategy ?? env.restartSettings,
    snapshots,
    s3,
    clock: options.clock ?? systemClock,
    options,
  });
  return master.run();
}

/** Max parallelism of the snapshot's keyed operators, by id; undefined when it has none. */
function keyedMaxParallelismOf(m: CheckpointMetadata | undefined): Record<string, number> | undefined {
  const keyed = m?.operators.filter((o) => o.keyed) ?? [];
  return keyed.length === 0 ? undefined : Object.fromEntries(keyed.map((o) => [o.id, o.maxParallelism]));
}

/** The dead-letter directory: the one given, else beside the first sink that writes files, else none (the log). */
function deadLetterDirOf(given: string | undefined, transformations: readonly Transformation[]): string | undefined {
  if (given !== undefined) {
    if (typeof given !== 'string' || given === '') throw new RangeError(`deadLetterDir must be a non-empty path, got ${JSON.stringify(given)}`);
    const dir = resolve(given);
    // Before the job starts, not at the first malformed record: a file there would fail the source then.
    if (existsSync(dir) && !statSync(dir).isDirectory()) throw new WeirError('CONFIG', `the dead-letter directory ${given} (--dead-letter-dir) is a file, not a directory`);
    return dir;
  }
  for (const t of transformations) {
    if (t.kind === 'one-input' && t.outputDir !== undefined) return resolve(t.outputDir).replace(/[\\/]+$/, '') + '.dead-letters';
  }
  return undefined;
}

/** The storage of a checkpoint directory: S3 for s3://bucket/prefix, else a local directory. */
function checkpointStorageAt(dir: string, s3: S3Config): CheckpointStorage {
  if (isS3Reference(dir)) return S3CheckpointStorage.create(dir, s3);
  checkDirectoryPath(dir, 'the checkpoint directory (--checkpoint-dir, execution.checkpointing.dir)');
  return new LocalCheckpointStorage(dir);
}
