/**
 * What a running job offers to the outside (Flink's dispatcher gateway): its status, its
 * checkpoint statistics, and savepoint / stop / cancel requests. Services such as the REST
 * control API are built on it by the entry point and handed to runJob, so the job manager
 * knows nothing of HTTP or of the local job registry.
 */
export interface JobControl {
  readonly jobId: string;
  readonly jobName: string;
  /** Epoch ms when the job started. */
  readonly startedAt: number;
  overview(): Record<string, unknown>;
  checkpoints(): Record<string, unknown>;
  triggerCheckpoint(): Promise<number>;
  savepoint(targetDirectory: string | undefined): Promise<string>;
  stop(targetDirectory: string | undefined, drain: boolean): Promise<string>;
  cancel(): void;
  /** Writes to the job's log (RunOptions.log). */
  logLine(line: string): void;
}

/** Served alongside a running job: started before its first attempt, stopped after it ends. */
export interface JobService {
  start(control: JobControl): Promise<void>;
  stop(): Promise<void>;
}
