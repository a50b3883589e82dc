/** weir: a stateful stream processor for TypeScript with Flink's fault-tolerance model. */
export * from './api/index.ts';
export { runJob, JobResult, type RunOptions, type Progress, type JobStatus } from './cluster/job-manager.ts';
export { controlApi, type ControlApiOptions } from './observe/control-api.ts';
