/**
 * GET /metrics: the job's metrics in Prometheus' text exposition format (version 0.0.4),
 * named as Flink's PrometheusReporter names them, with `weir_` for `flink_`: the scope joined
 * by `_` plus the metric name (weir_jobmanager_job_numRestarts,
 * weir_taskmanager_job_task_numRecordsIn, weir_taskmanager_job_task_operator_numRecordsIn),
 * characters outside [a-zA-Z0-9:_] replaced by `_`, scope variables as labels. Counters and
 * meters are gauges, as in Flink's reporter. Pure: a metrics view in, text out.
 */
import type { JobMetricsView } from '../cluster/job-control.ts';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface PrometheusJob {
  readonly jobId: string;
  readonly jobName: string;
  readonly metrics: JobMetricsView;
}

type Labels = Record<string, string>;

/** Flink's reporter replaces every character outside [a-zA-Z0-9:_] with `_`. */
export function metricName(parts: readonly string[]): string {
  return parts.join('_').replace(/[^a-zA-Z0-9:_]/g, '_');
}

/** A label value escaped as the exposition format requires (backslash, quote, newline). */
export function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(v);
}

function labelText(l: Labels): string {
  return Object.entries(l).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',');
}

/**
 * Text for every job given (one process runs one job, but the format allows more). All lines
 * of one metric are written together under one TYPE line, as the format requires.
 */
export function prometheusText(jobs: readonly PrometheusJob[]): string {
  const families = new Map<string, string[]>();
  const add = (name: string, labels: Labels, value: number) => {
    let lines = families.get(name);
    if (lines === undefined) families.set(name, (lines = []));
    lines.push(`${name}{${labelText(labels)}} ${formatValue(value)}`);
  };
  for (const j of jobs) {
    const jobLabels = { job_id: j.jobId, job_name: j.jobName };
    for (const [k, v] of Object.entries(j.metrics.job)) add(metricName(['weir', 'jobmanager', 'job', k]), jobLabels, v);
    for (const s of j.metrics.subtasks) {
      const taskLabels = { ...jobLabels, task_id: s.vertexId, task_name: s.taskName, subtask_index: String(s.subtask), tm_id: 'local' };
      for (const [k, v] of Object.entries(s.metrics)) add(metricName(['weir', 'taskmanager', 'job', 'task', k]), taskLabels, v);
      for (const o of s.operators) {
        const opLabels = { ...taskLabels, operator_id: o.id, operator_name: o.name };
        for (const [k, v] of Object.entries(o.metrics)) add(metricName(['weir', 'taskmanager', 'job', 'task', 'operator', k]), opLabels, v);
      }
    }
  }
  // A comment (not HELP or TYPE) says why a job has no record counts, instead of series stuck at 0.
  let out = '';
  for (const j of jobs) {
    if (!j.metrics.recordCounters) out += `# weir: job ${j.jobId} does not count records (metrics.record-counters.enabled: false, --record-counters off): numRecordsIn, numRecordsOut and their rates are absent\n`;
  }
  for (const [name, lines] of families) {
    out += `# HELP ${name} ${name.replace(/^weir_/, '').replace(/_/g, ' ')} (Flink metric, weir)\n# TYPE ${name} gauge\n`;
    out += lines.join('\n') + '\n';
  }
  return out;
}
