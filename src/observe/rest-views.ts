/**
 * The read-only routes of the REST API, with Flink's paths and JSON field names:
 *   GET /overview, /config, /jobs/overview
 *   GET /jobs/:id/plan, /jobs/:id/exceptions?maxExceptions=N, /jobs/:id/metrics?get=
 *   GET /jobs/:id/checkpoints[?limit=N], …/checkpoints/config, …/checkpoints/details/:cid,
 *       …/checkpoints/trend (weir's own: every completed checkpoint's duration and size),
 *       …/checkpoints/details/:cid/subtasks/:vid
 *   GET /jobs/:id/vertices/:vid, …/backpressure, …/watermarks, …/metrics?get=,
 *       …/subtasks/metrics?get=&agg=&subtasks=, …/subtasks/:i/metrics?get=
 * A vertex is named by its id (as in /jobs/:id) or by its index. Pure: job control in, JSON out.
 */
import type { JobControl, VertexInfo } from '../cluster/job-control.ts';
import { WeirError } from '../core/errors.ts';
import { checkpointConfigJson, checkpointDetails, checkpointingStatistics, checkpointTrend, subtaskDetails } from './flink-checkpoints.ts';
import { aggregatedJson, backpressureJson, flatSubtaskMetrics, metricsJson, vertexSubtasks, watermarksJson } from './flink-metrics.ts';

export interface View {
  readonly status: number;
  readonly body: unknown;
}

/** Default and largest number of checkpoints in one /checkpoints answer (the rest by ?limit). */
const DEFAULT_HISTORY_LIMIT = 1000;
/** A bound on one answer's size: a limit of a million built a 313 MB reply. */
const MAX_HISTORY_LIMIT = 10_000;

const ok = (body: unknown): View => ({ status: 200, body });
const notFound = (what: string): View => ({ status: 404, body: { errors: [what] } });

function intParam(q: URLSearchParams, name: string, dflt: number, max: number): number {
  const v = q.get(name);
  if (v === null) return dflt;
  if (!/^\d{1,9}$/.test(v) || Number(v) < 1 || Number(v) > max) throw new WeirError('USAGE', `${name} must be an integer from 1 to ${max}, got "${v}"`);
  return Number(v);
}

export function jobSummary(job: JobControl): Record<string, unknown> {
  const o = job.overview();
  const state = String(o['state']);
  const vertices = job.vertices();
  const counts: Record<string, number> = { running: 0, finished: 0, canceled: 0, failed: 0, created: 0, total: 0 };
  const subtasks = job.metrics().subtasks;
  for (const s of subtasks) {
    const k = s.state === 'running' || s.state === 'finishing' || s.state === 'waiting-final' ? 'running' : s.state === 'finished' ? 'finished' : s.state === 'failed' ? 'failed' : s.state === 'canceled' ? 'canceled' : 'created';
    counts[k]!++;
  }
  counts['total'] = vertices.reduce((a, v) => a + v.parallelism, 0);
  return { jid: job.jobId, name: job.jobName, state, 'start-time': job.startedAt, 'end-time': o['end-time'] ?? -1, duration: o['duration'], 'last-modification': Date.now(), tasks: counts };
}

export function vertexJson(job: JobControl, v: VertexInfo): Record<string, unknown> {
  const subs = vertexSubtasks(job.metrics(), v.index);
  const sum = (k: string) => subs.reduce((a, s) => a + (s.metrics[k] ?? 0), 0);
  const max = (k: string) => subs.reduce((a, s) => Math.max(a, s.metrics[k] ?? 0), 0);
  const states = new Set(subs.map((s) => s.state));
  // Flink's "-complete": false when the value does not cover everything, here when records are not counted.
  const counted = job.metrics().recordCounters;
  return {
    id: v.id, index: v.index, name: v.name, parallelism: v.parallelism, maxParallelism: v.maxParallelism,
    status: states.size === 1 ? executionState([...states][0]!) : subs.length === 0 ? 'CREATED' : 'RUNNING',
    operators: v.operators, inputs: v.inputs.map((i) => ({ id: i.id, ship_strategy: i.shipStrategy })),
    metrics: {
      'read-bytes': 0, 'read-bytes-complete': true, 'write-bytes': sum('numBytesOut'), 'write-bytes-complete': true,
      'read-records': sum('numRecordsIn'), 'read-records-complete': counted, 'write-records': sum('numRecordsOut'), 'write-records-complete': counted,
      'accumulated-busy-time': sum('accumulatedBusyTime'), 'accumulated-idle-time': sum('accumulatedIdleTime'), 'accumulated-backpressured-time': sum('accumulatedBackPressuredTime'),
    },
    // Flink's UI colours a vertex by the maximum over its subtasks.
    busyTimeMsPerSecondMax: max('busyTimeMsPerSecond'),
    backPressuredTimeMsPerSecondMax: max('backPressuredTimeMsPerSecond'),
    numRecordsInPerSecond: sum('numRecordsInPerSecond'),
    numRecordsOutPerSecond: sum('numRecordsOutPerSecond'),
  };
}

/**
 * A task's state as Flink's ExecutionState names it: restoring state is INITIALIZING, and a task
 * finishing (its final checkpoint) is still RUNNING until FINISHED. Upper-cased as they were, a
 * client of Flink's REST API met states it does not know (RESTORING, WAITING-FINAL).
 */
function executionState(s: string): string {
  return EXECUTION_STATES[s] ?? 'RUNNING';
}

const EXECUTION_STATES: Readonly<Record<string, string>> = {
  created: 'CREATED', restoring: 'INITIALIZING', restored: 'INITIALIZING', running: 'RUNNING', finishing: 'RUNNING',
  'waiting-final': 'RUNNING', finished: 'FINISHED', failed: 'FAILED', canceled: 'CANCELED',
};

function findVertex(job: JobControl, vid: string): VertexInfo | undefined {
  const vs = job.vertices();
  return vs.find((v) => v.id === vid) ?? (/^\d+$/.test(vid) ? vs[Number(vid)] : undefined);
}

/** The answer to GET `path` (already split in parts), or undefined when no view has that path. */
export function getView(job: JobControl, parts: readonly string[], query: URLSearchParams): View | undefined {
  const p = parts.join('/');
  if (p === 'overview') {
    const state = String(job.overview()['state']);
    const is = (s: string) => (state === s ? 1 : 0);
    return ok({ taskmanagers: 1, 'slots-total': job.vertices().reduce((a, v) => Math.max(a, v.parallelism), 0), 'slots-available': 0, 'jobs-running': 1 - is('FINISHED') - is('CANCELED') - is('FAILED'), 'jobs-finished': is('FINISHED'), 'jobs-cancelled': is('CANCELED'), 'jobs-failed': is('FAILED'), 'flink-version': 'weir', 'flink-commit': '' });
  }
  if (p === 'config') return ok({ 'refresh-interval': 2000, 'timezone-name': Intl.DateTimeFormat().resolvedOptions().timeZone, 'timezone-offset': -new Date().getTimezoneOffset() * 60_000, 'flink-version': 'weir', features: { 'web-submit': false, 'web-cancel': true } });
  if (p === 'jobs/overview') return ok({ jobs: [jobSummary(job)] });
  if (parts[0] !== 'jobs' || parts.length < 3 || parts[1] !== job.jobId) return undefined;
  const rest = parts.slice(2);
  const r = rest.join('/');
  if (r === 'plan') {
    return ok({ plan: { jid: job.jobId, name: job.jobName, type: 'STREAMING', nodes: job.vertices().map((v) => ({ id: v.id, parallelism: v.parallelism, operator: '', operator_strategy: '', description: v.name, inputs: v.inputs.map((i, n) => ({ num: n, id: i.id, ship_strategy: i.shipStrategy, exchange: 'pipelined_bounded' })) })) } });
  }
  if (r === 'exceptions') {
    const max = intParam(query, 'maxExceptions', 20, 1000);
    const all = job.exceptions();
    const entries = [...all].reverse().slice(0, max).map((e) => ({
      exceptionName: e.exceptionName, stacktrace: e.stacktrace, timestamp: e.timestamp, taskName: e.taskName ?? null,
      location: e.taskName !== undefined ? 'localhost' : null, endpoint: null, taskManagerId: e.taskName !== undefined ? 'local' : null,
      failureLabels: {}, concurrentExceptions: [], message: e.message, attempt: e.attempt,
    }));
    return ok({ exceptionHistory: { entries, truncated: all.length > max } });
  }
  if (r === 'metrics') return ok(metricsJson(job.metrics().job, query.get('get')));
  if (rest[0] === 'checkpoints') return checkpointView(job, rest.slice(1), query);
  if (rest[0] === 'vertices' && rest.length >= 2) {
    const v = findVertex(job, rest[1]!);
    if (v === undefined) return notFound(`job ${job.jobId} has no vertex ${rest[1]}`);
    const sub = rest.slice(2).join('/');
    const subs = () => vertexSubtasks(job.metrics(), v.index);
    if (sub === '') return ok({ ...vertexJson(job, v), now: Date.now(), subtasks: subs().map((s) => ({ subtask: s.subtask, status: executionState(s.state), metrics: s.metrics, operators: s.operators })) });
    if (sub === 'backpressure') return ok(backpressureJson(subs(), Date.now()));
    if (sub === 'watermarks') return ok(watermarksJson(subs()));
    if (sub === 'metrics') {
      const flat: Record<string, number> = {};
      for (const s of subs()) for (const [k, val] of Object.entries(flatSubtaskMetrics(s))) flat[`${s.subtask}.${k}`] = val;
      return ok(metricsJson(flat, query.get('get')));
    }
    if (sub === 'subtasks/metrics') return ok(aggregatedJson(subs(), query));
    const m = /^subtasks\/(\d{1,6})\/metrics$/.exec(sub);
    if (m) {
      const s = subs().find((x) => x.subtask === Number(m[1]));
      if (s === undefined) return notFound(`vertex ${v.id} has no subtask ${m[1]} reporting metrics`);
      return ok(metricsJson(flatSubtaskMetrics(s), query.get('get')));
    }
  }
  return undefined;
}

function checkpointView(job: JobControl, rest: readonly string[], query: URLSearchParams): View | undefined {
  // checkpoints/<request-id> (a trigger's status) is the control API's, not a view.
  if (rest.length === 1 && rest[0] !== 'config' && rest[0] !== 'trend') return undefined;
  const vertices = job.vertices();
  const stats = job.checkpointStats();
  if (rest.length === 0) return ok(checkpointingStatistics(stats, vertices, intParam(query, 'limit', DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT)));
  if (rest.length === 1 && rest[0] === 'config') return ok(checkpointConfigJson(stats));
  if (rest.length === 1 && rest[0] === 'trend') return ok(checkpointTrend(stats));
  if (rest[0] !== 'details' || rest.length < 2) return undefined;
  if (!/^\d{1,15}$/.test(rest[1]!)) return { status: 400, body: { errors: [`checkpoint id must be a number, got "${rest[1]}"`] } };
  const id = Number(rest[1]);
  if (rest.length === 2) return checkpointDetails(stats, vertices, id) !== undefined ? ok(checkpointDetails(stats, vertices, id)) : notFound(`no checkpoint ${id} in the job's history`);
  if (rest.length === 4 && rest[2] === 'subtasks') {
    const v = findVertex(job, rest[3]!);
    if (v === undefined) return notFound(`job ${job.jobId} has no vertex ${rest[3]}`);
    const d = subtaskDetails(stats, v, id);
    return d !== undefined ? ok(d) : notFound(`no checkpoint ${id} in the job's history`);
  }
  return undefined;
}
