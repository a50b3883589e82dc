/**
 * The job manager's view of its tasks' metrics (Flink's MetricStore): the latest cumulative
 * sample of every subtask plus a few earlier ones, from which rates are computed the way
 * Flink's meters and time gauges do (per second, averaged over the last few samples). Pure:
 * samples in, named metrics out; it never reads a clock (the samples carry their own time).
 */
import type { JobGraph } from '../graph/job-graph.ts';
import type { TaskMetricsSample } from '../runtime/task-metrics.ts';

/** Samples kept per subtask: rates average over the span of these (about 4 s at one a second). */
const WINDOW_SAMPLES = 5;
/**
 * Samples closer than this to the one before them take its place instead of a place of their
 * own: tasks in the main thread are also sampled when the job's progress is read (a REST GET,
 * the dashboard's poll), and at a GET every 70 ms the five samples spanned a few hundred ms, so
 * a rate read 3,191/s for 2,000/s. Half the workers' one-second beat (METRICS_INTERVAL_MS).
 */
const MIN_SAMPLE_GAP_MS = 500;

export type MetricValues = Record<string, number>;

export interface OperatorMetricsView {
  readonly index: number;
  readonly id: string;
  readonly name: string;
  readonly metrics: MetricValues;
}

export interface SubtaskMetricsView {
  readonly vertex: number;
  /** The vertex id (its head operator's id), as in /jobs/:id vertices. */
  readonly vertexId: string;
  readonly taskName: string;
  readonly subtask: number;
  readonly state: string;
  readonly metrics: MetricValues;
  readonly operators: readonly OperatorMetricsView[];
}

export class MetricStore {
  private readonly samples = new Map<string, TaskMetricsSample[]>();

  /**
   * `recordCounters` false (metrics.record-counters.enabled: false): the tasks do not count
   * records, so numRecordsIn/Out and their rates are left out rather than shown as 0.
   */
  constructor(private readonly graph: JobGraph, readonly recordCounters = true) {}

  /** A sample from a worker; a sample older than the last one (reordered) is ignored. */
  add(s: TaskMetricsSample): void {
    const key = `${s.vertex}:${s.subtask}`;
    let ring = this.samples.get(key);
    if (ring === undefined) this.samples.set(key, (ring = []));
    const last = ring[ring.length - 1];
    if (last !== undefined && s.sampledAt <= last.sampledAt) return;
    // Counters start again with a new task (a restart): earlier samples no longer compare.
    if (last !== undefined && (s.elapsedMs < last.elapsedMs || (s.recordsIn[0] ?? 0) < (last.recordsIn[0] ?? 0))) ring.length = 0;
    // The last sample came soon after the one before it: the new one replaces it, so that
    // samples in the ring stay about MIN_SAMPLE_GAP_MS or more apart however often they come.
    const n = ring.length;
    if (n >= 2 && ring[n - 1]!.sampledAt - ring[n - 2]!.sampledAt < MIN_SAMPLE_GAP_MS) {
      ring[n - 1] = s;
      return;
    }
    ring.push(s);
    if (ring.length > WINDOW_SAMPLES) ring.shift();
  }

  clear(): void {
    this.samples.clear();
  }

  /** Latest cumulative samples, in vertex then subtask order. */
  latest(): TaskMetricsSample[] {
    return [...this.samples.values()].map((r) => r[r.length - 1]!).sort((a, b) => a.vertex - b.vertex || a.subtask - b.subtask);
  }

  /** Every subtask that reported, with Flink's task- and operator-scope metric names. */
  subtasks(): SubtaskMetricsView[] {
    const out: SubtaskMetricsView[] = [];
    for (const ring of this.samples.values()) {
      const last = ring[ring.length - 1]!;
      const first = ring[0]!;
      const v = this.graph.vertices[last.vertex];
      if (v === undefined) continue;
      const span = last.sampledAt - first.sampledAt;
      const perSecond = (a: number, b: number) => (span > 0 ? ((a - b) * 1000) / span : 0);
      // One sample only: the fractions since the task opened stand in for the window's.
      const timeSpan = span > 0 ? span : last.elapsedMs;
      const share = (a: number, b: number) => (timeSpan > 0 ? Math.min(1000, Math.max(0, ((a - b) * 1000) / timeSpan)) : 0);
      const base = span > 0 ? first : undefined;
      const idle = share(last.idleMs, base?.idleMs ?? 0);
      const bp = share(last.backPressuredMs, base?.backPressuredMs ?? 0);
      const recordsIn = last.recordsIn[0] ?? 0;
      const counted = this.recordCounters;
      const metrics: MetricValues = {
        ...(counted ? {
          numRecordsIn: recordsIn,
          numRecordsOut: last.taskRecordsOut,
          numRecordsInPerSecond: perSecond(recordsIn, first.recordsIn[0] ?? 0),
          numRecordsOutPerSecond: perSecond(last.taskRecordsOut, first.taskRecordsOut),
        } : {}),
        numBytesOut: last.bytesOut,
        numBytesOutPerSecond: perSecond(last.bytesOut, first.bytesOut),
        idleTimeMsPerSecond: idle,
        backPressuredTimeMsPerSecond: bp,
        // Measured, not the rest of each second: subtasks share a thread, and the time one waits
        // for its turn is not busy (see TaskTimeAccount); the three add up to at most 1000.
        busyTimeMsPerSecond: Math.min(1000 - idle - bp, share(last.busyMs, base?.busyMs ?? 0)),
        // Flink's cumulative times (ms since the task started), for the vertex view's accumulated-*-time.
        accumulatedBusyTime: Math.round(last.busyMs),
        accumulatedIdleTime: Math.round(last.idleMs),
        accumulatedBackPressuredTime: Math.round(last.backPressuredMs),
        isBackPressured: last.isBackPressured ? 1 : 0,
        mailboxQueueSize: last.mailboxSize,
        currentInputWatermark: last.inputWatermark[0] ?? Number.MIN_SAFE_INTEGER,
        // Source tasks: malformed records sent to the dead letters (FLIP-33's name).
        ...(last.source !== undefined ? { numRecordsInErrors: last.deadLetters ?? 0 } : {}),
      };
      // Source lag (FLIP-33's watermarkLag): how far event time at the source trails the wall
      // clock, from the chain's newest output watermark; absent before the first watermark.
      if (v.isSource) {
        const wm = Math.max(...last.outputWatermark);
        if (wm > Number.MIN_SAFE_INTEGER) metrics['watermarkLag'] = Math.max(0, last.sampledAt - wm);
      }
      // The reader's own lag, where its connector knows it (FLIP-33 pendingRecords; Kinesis' millisBehindLatest).
      const src = last.source;
      if (src !== undefined) {
        metrics['numBytesIn'] = src.bytesRead;
        metrics['numBytesInPerSecond'] = perSecond(src.bytesRead, first.source?.bytesRead ?? 0);
        if (src.pendingRecords !== undefined) metrics['pendingRecords'] = src.pendingRecords;
        if (src.millisBehindLatest !== undefined) metrics['millisBehindLatest'] = src.millisBehindLatest;
      }
      const operators = v.operators.map((o, i): OperatorMetricsView => ({
        index: i, id: o.node.id, name: o.node.name,
        metrics: {
          ...(counted ? {
            numRecordsIn: last.recordsIn[i] ?? 0,
            numRecordsOut: last.recordsOut[i] ?? 0,
            numRecordsInPerSecond: perSecond(last.recordsIn[i] ?? 0, first.recordsIn[i] ?? 0),
            numRecordsOutPerSecond: perSecond(last.recordsOut[i] ?? 0, first.recordsOut[i] ?? 0),
          } : {}),
          currentInputWatermark: last.inputWatermark[i] ?? Number.MIN_SAFE_INTEGER,
          currentOutputWatermark: last.outputWatermark[i] ?? Number.MIN_SAFE_INTEGER,
          numLateRecordsDropped: last.lateRecordsDropped[i] ?? 0,
        },
      }));
      out.push({ vertex: last.vertex, vertexId: v.id, taskName: v.name, subtask: last.subtask, state: last.state, metrics, operators });
    }
    return out.sort((a, b) => a.vertex - b.vertex || a.subtask - b.subtask);
  }
}
