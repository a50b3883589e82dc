/**
 * StreamExecutionEnvironment: where a job declares its sources and settings. It records
 * transformations; translation into a job graph happens when the job is run.
 */
import { CollectionSource } from '../connectors/collection/collection-source.ts';
import { FileSource, type FileSourceOptions } from '../connectors/file/file-source.ts';
import { GeneratorSource, type GeneratorFn, type GeneratorOptions } from '../connectors/generator/generator-source.ts';
import {
  callerLocation, type ChainingStrategy, type SourceTransformation, type Transformation,
} from '../graph/transformation.ts';
import type { MalformedPolicy } from '../runtime/operators/source.ts';
import { validateMaxParallelism } from '../state/key-groups.ts';
import { DataStream } from './datastream.ts';
import { toMillis, type Duration } from '../core/duration.ts';
import type { Source, SourceSplit } from '../core/source.ts';
import type { WatermarkStrategy } from '../core/watermark-strategy.ts';
import type { CheckpointSettings } from '../checkpoint/config.ts';
import type { RestartStrategySettings } from '../core/restart-settings.ts';

export interface EnvironmentSettings {
  /** Default parallelism from the CLI (--parallelism); the job's own setParallelism wins. */
  readonly defaultParallelism: number;
  /**
   * Keyed operators' max parallelism in the snapshot the job restores, by operator id. An
   * operator whose max parallelism the job does not set takes it from there, as Flink adopts
   * the restored state's: the default depends on the parallelism, so a rescale past 85 (128 ->
   * 256 key groups) was refused although nothing in the job fixed the number.
   */
  readonly restoredMaxParallelism?: Readonly<Record<string, number>>;
}

/** Options of fromSource (and of the connectors' from* shorthands). */
export interface SourceOptions<T> {
  name?: string;
  malformed?: MalformedPolicy;
  ratePerSecond?: number;
  /** Event time per split, inside the source (see fromSource). */
  watermarks?: WatermarkStrategy<T>;
  /** Event-time alignment of a reader's splits (needs `watermarks`). */
  maxDrift?: Duration;
}

export class StreamExecutionEnvironment {
  /** Every transformation, in declaration order (the order is part of operator identity). */
  readonly transformations: Transformation[] = [];
  private nextId = 0;
  parallelism: number | undefined;
  maxParallelism: number | undefined;
  /** How often periodic watermark generators run, in ms of processing time (Flink default 200). */
  autoWatermarkInterval = 200;
  /** Longest a partly filled output buffer waits before it is sent, in ms (Flink default 100). */
  bufferTimeout = 100;
  jobName = 'weir job';
  chainingEnabled = true;
  /**
   * Flink's object reuse: off by default, so results weir's own operators keep (rolling and
   * window accumulators) are copied when emitted and later updates cannot change records
   * already sent. Turn on when no function mutates its inputs or accumulators in place.
   */
  objectReuse = false;
  /** Checkpoint settings from the job code (CLI flags and config files override them). */
  checkpointSettings: CheckpointSettings = {};
  restartSettings: RestartStrategySettings | undefined;

  constructor(readonly settings: EnvironmentSettings) {}

  get restoredMaxParallelism(): Readonly<Record<string, number>> | undefined {
    return this.settings.restoredMaxParallelism;
  }

  setParallelism(p: number): this {
    if (!Number.isInteger(p) || p < 1) throw new RangeError(`setParallelism: expected a positive integer, got ${String(p)}`);
    this.parallelism = p;
    return this;
  }

  getParallelism(): number {
    return this.parallelism ?? this.settings.defaultParallelism;
  }

  /** Number of key groups: the upper bound for rescaling keyed state. Fixed once state exists. */
  setMaxParallelism(p: number): this {
    validateMaxParallelism(p, 'setMaxParallelism');
    this.maxParallelism = p;
    return this;
  }

  setAutoWatermarkInterval(d: Duration): this {
    this.autoWatermarkInterval = toMillis(d, 'setAutoWatermarkInterval');
    return this;
  }

  setBufferTimeout(d: Duration): this {
    this.bufferTimeout = toMillis(d, 'setBufferTimeout');
    return this;
  }

  setJobName(name: string): this {
    if (typeof name !== 'string' || name.trim() === '') throw new TypeError('setJobName: expected a non-empty string');
    this.jobName = name;
    return this;
  }

  /**
   * Turns on checkpointing every `interval` (Flink's execution.checkpointing.interval), with
   * optional settings: mode, timeout, minPause, maxConcurrent, tolerableFailures, retention,
   * numRetained, dir. Validated when the job starts.
   */
  enableCheckpointing(interval: Duration, settings: Omit<CheckpointSettings, 'interval'> = {}): this {
    this.checkpointSettings = { ...this.checkpointSettings, ...settings, interval };
    return this;
  }

  /** Restart strategy for failures (restart-strategy.type and its options). */
  setRestartStrategy(settings: RestartStrategySettings): this {
    this.restartSettings = settings;
    return this;
  }

  enableObjectReuse(): this {
    this.objectReuse = true;
    return this;
  }

  disableOperatorChaining(): this {
    this.chainingEnabled = false;
    return this;
  }

  /** @internal */
  add<T extends Transformation>(t: Omit<T, 'id' | 'declaredAt'>): T {
    const full = { ...t, id: this.nextId++, declaredAt: callerLocation() } as unknown as T;
    this.transformations.push(full);
    return full;
  }

  /**
   * Reads a source. Options: `name`; `malformed` ('fail' or 'dead-letter'); `ratePerSecond`, a
   * limit on records per second over the whole source (Flink's RateLimiterStrategy), whatever its
   * parallelism: subtasks share it in proportion to the splits they read;
   * `watermarks`, a WatermarkStrategy applied per split inside the source (Flink's
   * fromSource(source, watermarkStrategy, name)), so the order in which a reader reads its
   * splits never makes a record late; `maxDrift`, event-time alignment of a reader's splits:
   * a split more than this ahead of the reader's slowest split is paused until it catches up.
   */
  fromSource<T, S extends SourceSplit>(source: Source<T, S>, options: SourceOptions<T> = {}): DataStream<T> {
    const malformed = options.malformed ?? 'fail';
    if (malformed !== 'fail' && malformed !== 'dead-letter') {
      throw new RangeError(`source option "malformed" must be "fail" or "dead-letter", got ${JSON.stringify(malformed)}`);
    }
    const rate = options.ratePerSecond;
    if (rate !== undefined && !(Number.isFinite(rate) && rate > 0)) {
      throw new RangeError(`source option "ratePerSecond" must be a positive number, got ${String(rate)}`);
    }
    const strategy = options.watermarks;
    if (strategy !== undefined && typeof (strategy as { createGenerator?: unknown }).createGenerator !== 'function') {
      throw new TypeError('source option "watermarks" must be a WatermarkStrategy');
    }
    let maxDriftMs: number | undefined;
    if (options.maxDrift !== undefined) {
      if (strategy === undefined) throw new RangeError('source option "maxDrift" needs "watermarks": alignment is by event time');
      maxDriftMs = toMillis(options.maxDrift, 'source option "maxDrift"');
      if (maxDriftMs < 0) throw new RangeError(`source option "maxDrift" must not be negative, got ${maxDriftMs} ms`);
    }
    const t = this.add<SourceTransformation>({
      kind: 'source',
      name: options.name ?? source.name,
      uid: undefined,
      parallelism: source.maxReaders,
      maxParallelism: undefined,
      chaining: 'head' satisfies ChainingStrategy,
      source: source as unknown as Source<unknown, SourceSplit>,
      malformedPolicy: malformed,
      ratePerSecond: rate,
      watermarks: strategy === undefined ? undefined : {
        strategy: strategy as WatermarkStrategy<unknown>, maxDriftMs, intervalMs: () => this.autoWatermarkInterval,
      },
    });
    return new DataStream<T>(this, t);
  }

  /**
   * Records fn(0), fn(1), ...: deterministic from the seed, bounded by count, optionally
   * rate-limited. With `watermarks`, each lane has its own event time (see fromSource), so a
   * subtask reading several lanes (after a rescale, or with `lanes` above the parallelism) makes
   * no record late by the order it interleaves them.
   */
  fromGenerator<T>(fn: GeneratorFn<T>, options: GeneratorOptions & { name?: string; watermarks?: WatermarkStrategy<T> } = {}): DataStream<T> {
    const opts: SourceOptions<T> = { name: options.name ?? 'generator' };
    if (options.watermarks !== undefined) opts.watermarks = options.watermarks;
    return this.fromSource(new GeneratorSource<T>(fn, options), opts);
  }

  /** JSON lines or CSV from a file or every file of a directory (bounded). */
  fromFile<T = Record<string, unknown>>(path: string, options: FileSourceOptions & SourceOptions<T> = {}): DataStream<T> {
    const opts: SourceOptions<T> = { name: options.name ?? `file ${path}` };
    if (options.malformed !== undefined) opts.malformed = options.malformed;
    if (options.ratePerSecond !== undefined) opts.ratePerSecond = options.ratePerSecond;
    if (options.watermarks !== undefined) opts.watermarks = options.watermarks;
    if (options.maxDrift !== undefined) opts.maxDrift = options.maxDrift;
    return this.fromSource(new FileSource<T>(path, options), opts);
  }

  /** A bounded stream of the given values, read by one subtask. */
  fromCollection<T>(values: readonly T[], options: { name?: string; timestamp?: (v: T) => number } = {}): DataStream<T> {
    return this.fromSource(new CollectionSource<T>(values, options.timestamp), { name: options.name ?? 'collection' });
  }

  fromElements<T>(...values: T[]): DataStream<T> {
    return this.fromCollection(values);
  }
}
