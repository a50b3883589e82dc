/** A baseline implements every job; the child process times one call. */
import type { JobId, Result, Size } from '../workloads.ts';

export type Baseline = Record<JobId, (size: Size) => Result | Promise<Result>>;
