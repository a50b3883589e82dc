/**
 * Metric views in the shapes of Flink's REST API: back pressure and watermarks of a vertex,
 * and the metric routes (`/jobs/:id/metrics`, `…/vertices/:vid/subtasks/:i/metrics`, the
 * aggregated `…/vertices/:vid/subtasks/metrics?get=&agg=&subtasks=`). Pure functions of the
 * job's metrics view; bad query parameters are WeirErrors naming the parameter.
 */
import type { JobMetricsView } from '../cluster/job-control.ts';
import type { MetricValues, SubtaskMetricsView } from '../cluster/metric-store.ts';
import { WeirError } from '../core/errors.ts';

export type BackpressureLevel = 'ok' | 'low' | 'high';

/** Flink's thresholds on the back-pressured share of time: ok ≤ 0.10 < low ≤ 0.5 < high. */
export function backpressureLevel(ratio: number): BackpressureLevel {
  return ratio <= 0.1 ? 'ok' : ratio <= 0.5 ? 'low' : 'high';
}

const LEVEL_RANK: Record<BackpressureLevel, number> = { ok: 0, low: 1, high: 2 };

/** The metrics of one vertex's subtasks (in subtask order). */
export function vertexSubtasks(m: JobMetricsView, vertex: number): SubtaskMetricsView[] {
  return m.subtasks.filter((s) => s.vertex === vertex);
}

/**
 * GET /jobs/:id/vertices/:vid/backpressure; the vertex level is the worst over its subtasks. The
 * ratios are shares of the time accounted to the subtask (back-pressured + idle + busy), which is
 * Flink's ratio (back-pressured ms per second / 1000) where, as in Flink, a subtask has a thread
 * of its own and the three add up to 1000. Subtasks here share a worker thread, and the time one
 * waits for its turn is none of the three: a source throttled by its consumer in the same thread
 * showed 80 to 470 ms/s accounted, read as ratio 0.08 to 0.46 ("low", even "ok") where Flink
 * would say "high".
 */
export function backpressureJson(subtasks: readonly SubtaskMetricsView[], now: number): Record<string, unknown> {
  let level: BackpressureLevel = 'ok';
  const rows = subtasks.map((s) => {
    const bp = s.metrics['backPressuredTimeMsPerSecond'] ?? 0;
    const idle = s.metrics['idleTimeMsPerSecond'] ?? 0;
    const busy = s.metrics['busyTimeMsPerSecond'] ?? 0;
    const accounted = bp + idle + busy;
    const of = (ms: number) => (accounted > 0 ? ms / accounted : 0);
    const ratio = of(bp);
    const l = backpressureLevel(ratio);
    if (LEVEL_RANK[l] > LEVEL_RANK[level]) level = l;
    return { subtask: s.subtask, attemptNumber: 0, 'backpressure-level': l, ratio, idleRatio: of(idle), busyRatio: of(busy) };
  });
  return { status: rows.length > 0 ? 'ok' : 'deprecated', 'backpressure-level': level, 'end-timestamp': now, subtasks: rows };
}

/** GET /jobs/:id/vertices/:vid/watermarks: `<subtask>.currentInputWatermark` per subtask, values as strings. */
export function watermarksJson(subtasks: readonly SubtaskMetricsView[]): { id: string; value: string }[] {
  return subtasks.map((s) => ({ id: `${s.subtask}.currentInputWatermark`, value: String(s.metrics['currentInputWatermark'] ?? Number.MIN_SAFE_INTEGER) }));
}

/** The subtask's metrics as Flink's subtask metric store lists them: task scope, then `<op>.<name>`. */
export function flatSubtaskMetrics(s: SubtaskMetricsView): MetricValues {
  const out: MetricValues = { ...s.metrics };
  for (const o of s.operators) for (const [k, v] of Object.entries(o.metrics)) out[`${o.name}.${k}`] = v;
  return out;
}

/** The answer of a metric route: names only, or the asked names with values. */
export function metricsJson(values: MetricValues, get: string | null): { id: string; value?: string }[] {
  if (get === null) return Object.keys(values).map((id) => ({ id }));
  return parseList(get, 'get').filter((id) => id in values).map((id) => ({ id, value: String(values[id]) }));
}

const AGGS = ['min', 'max', 'sum', 'avg', 'skew'] as const;
type Agg = (typeof AGGS)[number];

/** GET …/vertices/:vid/subtasks/metrics?get=a,b&agg=min,max&subtasks=0,2-3. */
export function aggregatedJson(subtasks: readonly SubtaskMetricsView[], query: URLSearchParams): Record<string, unknown>[] {
  let chosen = subtasks;
  const sel = query.get('subtasks');
  if (sel !== null) {
    const wanted = parseRanges(sel);
    chosen = subtasks.filter((s) => wanted.has(s.subtask));
  }
  const flat = chosen.map(flatSubtaskMetrics);
  const get = query.get('get');
  if (get === null) return [...new Set(flat.flatMap((f) => Object.keys(f)))].map((id) => ({ id }));
  const aggParam = query.get('agg');
  const aggs: Agg[] = aggParam === null ? [...AGGS] : parseList(aggParam, 'agg').map((a) => {
    if (!(AGGS as readonly string[]).includes(a)) throw new WeirError('USAGE', `agg: unknown aggregation "${a}" (one of ${AGGS.join(', ')})`);
    return a as Agg;
  });
  const out: Record<string, unknown>[] = [];
  for (const id of parseList(get, 'get')) {
    const xs = flat.map((f) => f[id]).filter((x): x is number => x !== undefined);
    if (xs.length === 0) continue;
    const row: Record<string, unknown> = { id };
    const sum = xs.reduce((a, b) => a + b, 0);
    const avg = sum / xs.length;
    for (const a of aggs) {
      if (a === 'min') row['min'] = Math.min(...xs);
      if (a === 'max') row['max'] = Math.max(...xs);
      if (a === 'sum') row['sum'] = sum;
      if (a === 'avg') row['avg'] = avg;
      // Flink's skew: how far the largest value is above the average, in percent of it.
      if (a === 'skew') row['skew'] = avg === 0 ? 0 : ((Math.max(...xs) - avg) / avg) * 100;
    }
    out.push(row);
  }
  return out;
}

function parseList(v: string, what: string): string[] {
  const xs = v.split(',').map((x) => x.trim()).filter((x) => x !== '');
  if (xs.length === 0) throw new WeirError('USAGE', `${what}: give a comma-separated list, got "${v}"`);
  return xs;
}

/** "0,2-4" -> {0,2,3,4}; bounded so a huge range cannot allocate without end. */
export function parseRanges(v: string): Set<number> {
  const out = new Set<number>();
  // Bounded over all ranges, not per range: one unauthenticated GET repeating a wide range
  // 1,700 times held the job's main thread for 5 s (checkpoints took 10 s).
  let expanded = 0;
  for (const part of parseList(v, 'subtasks')) {
    const m = /^(\d{1,6})(?:-(\d{1,6}))?$/.exec(part);
    if (m === null) throw new WeirError('USAGE', `subtasks: "${part}" is not an index or a range like 1-3`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a) throw new WeirError('USAGE', `subtasks: bad range "${part}"`);
    expanded += b - a + 1;
    if (expanded > MAX_SUBTASK_INDICES) throw new WeirError('USAGE', `subtasks: more than ${MAX_SUBTASK_INDICES} indices in all`);
    for (let i = a; i <= b; i++) out.add(i);
  }
  return out;
}

/** Subtask indices one metrics query may name, over all its ranges (parallelism is far below). */
const MAX_SUBTASK_INDICES = 100_001;
