/** What runJob reports: the job's end state, its output and progress, its checkpoint statistics. */
import type { CheckpointStatsEntry, CheckpointStatsTracker } from '../checkpoint/stats.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { SerializedError } from './messages.ts';

export interface Progress {
  readonly elapsedMs: number;
  /** Records emitted by sources so far (this attempt); 0 when records are not counted (recordCounters false). */
  readonly recordsIn: number;
  /** Records taken by sinks so far (this attempt); 0 when records are not counted. */
  readonly recordsOut: number;
  /** False when the job does not count records (metrics.record-counters.enabled: false); absent or true otherwise. */
  readonly recordCounters?: boolean;
  /** Malformed records sources sent to the dead letters so far (this attempt; Flink's numRecordsInErrors). */
  readonly deadLetters: number;
  readonly heapUsed: number;
  readonly attempt: number;
  /** Records window operators dropped as late (no late-data output), this attempt. */
  readonly lateRecordsDropped?: number;
  /** Bytes the sources read, this attempt. */
  readonly bytesIn?: number;
  /** Records in the sources' inputs not read yet (sources that know it), or undefined. */
  readonly pendingRecords?: number | undefined;
  /** The most any source split is behind its newest record, in ms, or undefined. */
  readonly millisBehindLatest?: number | undefined;
  readonly lastCheckpoint: CheckpointStatsEntry | undefined;
  /** The most back-pressured subtask now (backPressuredTimeMsPerSecond), if any reported. */
  readonly backPressure?: { readonly task: string; readonly msPerSecond: number } | undefined;
}

export const NO_PROGRESS: Progress = Object.freeze({ elapsedMs: 0, recordsIn: 0, recordsOut: 0, deadLetters: 0, heapUsed: 0, attempt: 0, lastCheckpoint: undefined });

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
    /** Where the sources' dead letters were written, if anywhere (else the first ones went to the log). */
    readonly deadLetterDir: string | undefined = undefined,
  ) {}
  /** Records a collect(name) sink received, in arrival order (all attempts). */
  collected<T = unknown>(sink = 'collect'): T[] {
    return (this.collectedBySink.get(sink) ?? []) as T[];
  }
  sinks(): string[] {
    return [...this.collectedBySink.keys()];
  }
}
