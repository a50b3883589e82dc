/** Test helpers: run jobs in one thread (with an optional manual clock) or on worker threads. */
import { defineJob, runJob, type JobResult, type RunOptions, type StreamExecutionEnvironment } from '../../src/index.ts';

/** Runs a pipeline built inline, in this thread. Throws if the job does not finish. */
export async function runInline(build: (env: StreamExecutionEnvironment, args: readonly string[]) => void, options: RunOptions = {}): Promise<JobResult> {
  const result = await runJob(defineJob(build), { workers: 1, parallelism: 1, stdout: () => {}, ...options });
  if (result.status !== 'FINISHED') throw new Error(`job ${result.status}: ${result.error?.message}\n${result.error?.stack ?? ''}`);
  return result;
}

/** Runs a job module (needed for worker threads). Throws if the job does not finish. */
export async function runModule(path: string, options: RunOptions = {}): Promise<JobResult> {
  const result = await runJob(path, { stdout: () => {}, ...options });
  if (result.status !== 'FINISHED') throw new Error(`job ${result.status}: ${result.error?.message}\n${result.error?.stack ?? ''}`);
  return result;
}

/** Order-insensitive comparison form: records sorted by their JSON. */
export function sorted<T>(xs: readonly T[]): T[] {
  return [...xs].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0));
}
