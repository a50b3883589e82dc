import { describe, expect, it } from 'vitest';
import type { CheckpointHistoryEntry } from '../../src/checkpoint/history.ts';
import { CheckpointHistory, MAX_HISTORY_ENTRIES, parseEntry } from '../../src/checkpoint/history.ts';
import { DEFAULT_CHECKPOINT_CONFIG } from '../../src/checkpoint/config.ts';
import { CheckpointStatsTracker } from '../../src/checkpoint/stats.ts';
import type { CheckpointStatsView } from '../../src/cluster/job-control.ts';
import type { SubtaskMetricsView } from '../../src/cluster/metric-store.ts';
import { checkpointConfigJson, checkpointingStatistics, checkpointTrend, MAX_TREND_POINTS, statsSummary, subtaskDetails } from '../../src/observe/flink-checkpoints.ts';
import { getView, jobSummary, vertexJson } from '../../src/observe/rest-views.ts';
import { aggregatedJson, backpressureJson, backpressureLevel, parseRanges } from '../../src/observe/flink-metrics.ts';
import { escapeLabel, metricName, prometheusText } from '../../src/observe/prometheus.ts';

const VERTICES = [{ index: 0, id: 'src', name: 'source', parallelism: 1 }, { index: 1, id: 'agg', name: 'agg', parallelism: 2 }];

function entry(id: number, over: Partial<CheckpointHistoryEntry> = {}): CheckpointHistoryEntry {
  return {
    id, status: 'COMPLETED', type: 'checkpoint', triggerTimestamp: 1000 * id, endToEndDurationMs: 10 * id, stateSize: 100 * id, checkpointedSize: 100 * id,
    numAcknowledged: 3, numSubtasks: 3, failureReason: undefined, failureMessage: undefined, externalPath: `/chk/chk-${id}`, attempt: 0,
    subtasks: {
      '0:0': { syncMs: 1, asyncMs: 2, alignmentMs: 0, startDelayMs: 0, stateSize: 10 },
      '1:0': { syncMs: 3, asyncMs: 4, alignmentMs: 5, startDelayMs: 6, stateSize: 20 },
      '1:1': { syncMs: 7, asyncMs: 8, alignmentMs: 9, startDelayMs: 10, stateSize: 30 },
    },
    ...over,
  };
}

function view(history: CheckpointHistoryEntry[], ended = { completed: history.filter((e) => e.status === 'COMPLETED').length, failed: history.filter((e) => e.status === 'FAILED').length }): CheckpointStatsView {
  return { history, inProgress: [], ended, restored: undefined, config: DEFAULT_CHECKPOINT_CONFIG, stateBackend: 'heap' };
}

function subtask(s: number, bp: number, busy: number): SubtaskMetricsView {
  return { vertex: 1, vertexId: 'agg', taskName: 'agg', subtask: s, state: 'running', metrics: { backPressuredTimeMsPerSecond: bp, busyTimeMsPerSecond: busy, idleTimeMsPerSecond: 1000 - bp - busy, numRecordsIn: 10 * (s + 1) }, operators: [{ index: 0, id: 'op', name: 'reduce "x"', metrics: { numRecordsOut: s } }] };
}

describe('checkpoint views in Flink shape', () => {
  it('summary quantiles by nearest rank; zeros for nothing', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(statsSummary(xs)).toEqual({ min: 1, max: 100, avg: 50.5, p50: 50, p90: 90, p95: 95, p99: 99, p999: 100 });
    expect(statsSummary([])).toMatchObject({ min: 0, max: 0, avg: 0, p99: 0 });
  });

  it('keeps the whole history (not the last 10), newest first, with failures and their reasons', () => {
    const h = Array.from({ length: 25 }, (_, i) => entry(i + 1));
    h[19] = entry(20, { status: 'FAILED', failureReason: 'CHECKPOINT_EXPIRED', failureMessage: 'expired after 10 s', externalPath: undefined });
    const s = checkpointingStatistics(view(h), VERTICES, 1000) as any;
    expect(s.history).toHaveLength(25);
    expect(s.history[0].id).toBe(25);
    expect(s.counts).toEqual({ restored: 0, total: 25, in_progress: 0, completed: 24, failed: 1 });
    expect(s.latest.failed).toMatchObject({ id: 20, status: 'FAILED', failure_message: 'CHECKPOINT_EXPIRED: expired after 10 s', failure_timestamp: 20_200 });
    expect(s.latest.completed).toMatchObject({ id: 25, external_path: '/chk/chk-25', discarded: false, tasks: { agg: { num_acknowledged_subtasks: 2, state_size: 50 } } });
    expect(s.summary.end_to_end_duration.max).toBe(250);
    expect((checkpointingStatistics(view(h), VERTICES, 5) as any).history.map((x: any) => x.id)).toEqual([25, 24, 23, 22, 21]);
  });

  it('restores: counted (every one, not at most 1), the last one says whether it was a savepoint; the storage is named by its URI', () => {
    const v = { ...view([entry(1)]), restored: { id: 7, path: '/sp/savepoint-1', at: 500, isSavepoint: true, count: 3 } };
    const s = checkpointingStatistics(v, VERTICES, 10) as any;
    expect(s.counts.restored).toBe(3);
    expect(s.latest.restored).toEqual({ id: 7, restore_timestamp: 500, is_savepoint: true, external_path: '/sp/savepoint-1' });
    expect((checkpointConfigJson({ ...view([]), config: { ...DEFAULT_CHECKPOINT_CONFIG, dir: 's3://bucket/chk' } }) as any).checkpoint_storage).toBe('s3://bucket/chk');
    expect((checkpointConfigJson({ ...view([]), config: { ...DEFAULT_CHECKPOINT_CONFIG, dir: '/var/chk' } }) as any).checkpoint_storage).toBe('file: /var/chk');
  });

  it('per-subtask phases of one checkpoint, with a summary over the vertex', () => {
    const d = subtaskDetails(view([entry(3)]), VERTICES[1]!, 3) as any;
    expect(d.subtasks.map((s: any) => [s.index, s.start_delay, s.alignment.duration, s.checkpoint.sync, s.checkpoint.async, s.end_to_end_duration])).toEqual([[0, 6, 5, 3, 4, 18], [1, 10, 9, 7, 8, 34]]);
    expect(d.summary.start_delay).toMatchObject({ min: 6, max: 10, avg: 8 });
    expect(subtaskDetails(view([entry(3)]), VERTICES[1]!, 4)).toBeUndefined();
  });

  it('unaligned checkpoints: persisted in-flight data per checkpoint and subtask, the unaligned flag, the config', () => {
    const e = entry(4, { subtasks: {
      '0:0': { syncMs: 1, asyncMs: 2, alignmentMs: 0, startDelayMs: 0, stateSize: 10, unaligned: true, persistedInFlightBytes: 100 },
      '1:0': { syncMs: 3, asyncMs: 4, alignmentMs: 5, startDelayMs: 6, stateSize: 20, unaligned: true, persistedInFlightBytes: 2000 },
      '1:1': { syncMs: 7, asyncMs: 8, alignmentMs: 9, startDelayMs: 10, stateSize: 30 },
    } });
    const s = checkpointingStatistics(view([e]), VERTICES, 10) as any;
    expect(s.history[0].persisted_data).toBe(2100);
    expect(s.summary.persisted_data.max).toBe(2100);
    const d = subtaskDetails(view([e]), VERTICES[1]!, 4) as any;
    expect(d.subtasks.map((x: any) => [x.unaligned_checkpoint, x.alignment.persisted])).toEqual([[true, 2000], [false, 0]]);
    expect(checkpointConfigJson({ ...view([]), config: { ...DEFAULT_CHECKPOINT_CONFIG, unaligned: true, alignedCheckpointTimeoutMs: 3000 } })).toMatchObject({ unaligned_checkpoints: true, aligned_checkpoint_timeout: 3000 });
  });

  it('history lines read back: damaged or foreign lines are skipped and counted, ids are not doubled', () => {
    const hist = new CheckpointHistory();
    const skipped = hist.load([{ ...entry(2) }, 'junk', { id: 'x' }, { ...entry(1) }, { ...entry(2) }]);
    expect(skipped).toBe(2);
    expect(hist.all().map((e) => e.id)).toEqual([1, 2]);
    hist.add(entry(3));
    hist.add(entry(2));
    expect(hist.all().map((e) => e.id)).toEqual([1, 2, 3]);
    expect(parseEntry({ id: 1, status: 'IN_PROGRESS', triggerTimestamp: 1 })).toBeUndefined();
  });

  it('counts never go down when old entries leave memory (as Flink\'s counters); memory and the trend answer are bounded, the trend still starts at the first checkpoint', () => {
    const hist = new CheckpointHistory();
    const n = 600_010;
    for (let id = 1; id <= n; id++) hist.add(id % 100_000 === 0 ? { ...entry(id, { status: 'FAILED', subtasks: undefined }) } : { ...entry(id, { subtasks: undefined }) });
    const ids = hist.all().map((e) => e.id);
    expect(ids.length).toBeLessThanOrEqual(MAX_HISTORY_ENTRIES); // before: 600,000 kept
    expect(ids.length).toBeGreaterThan(MAX_HISTORY_ENTRIES / 2);
    expect(ids[0]).toBe(1); // thinned, not cut: the whole life is still there
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true);
    const recent = ids.slice(-MAX_HISTORY_ENTRIES / 2);
    expect(recent.at(-1)! - recent[0]! + 1).toBe(recent.length); // the newest half is every checkpoint
    expect(hist.failedCount).toBe(6); // before: counted from the entries in memory, 5
    expect(hist.completedCount).toBe(n - 6);
    expect(hist.lastCompleted?.id).toBe(n);
    // The REST counts too (before: from the entries in memory, 600,004 completed shown as 37,501).
    const counts = (checkpointingStatistics(view([...hist.all()], { completed: hist.completedCount, failed: hist.failedCount }), VERTICES, 10) as { counts: Record<string, number> }).counts;
    expect(counts).toMatchObject({ completed: n - 6, failed: 6, total: n, in_progress: 0 });
    const trend = checkpointTrend(view([...hist.all()]));
    expect(trend.id!.length).toBeLessThanOrEqual(MAX_TREND_POINTS + 1);
    expect(trend.id!.at(-1)).toBe(n);
    expect(trend.id![0]).toBe(hist.all()[0]!.id);
  });
});

describe('metric views in Flink shape', () => {
  it('back-pressure levels use Flink thresholds; the vertex takes the worst subtask', () => {
    expect([0, 0.1, 0.11, 0.5, 0.51, 1].map(backpressureLevel)).toEqual(['ok', 'ok', 'low', 'low', 'high', 'high']);
    const j = backpressureJson([subtask(0, 50, 100), subtask(1, 700, 300)], 5) as any;
    expect(j['backpressure-level']).toBe('high');
    expect(j.subtasks.map((s: any) => [s.subtask, s['backpressure-level'], s.ratio, s.busyRatio])).toEqual([[0, 'ok', 0.05, 0.1], [1, 'high', 0.7, 0.3]]);
  });

  it('ratios are shares of the time accounted to a subtask: one waiting for its turn on a shared thread (the three adding up to 300 ms/s) is as back-pressured as its accounted time says, not 0.24 "low"', () => {
    const waiting = { ...subtask(0, 0, 0), metrics: { backPressuredTimeMsPerSecond: 240, idleTimeMsPerSecond: 0, busyTimeMsPerSecond: 60 } };
    const j = backpressureJson([waiting], 5) as any;
    expect(j.subtasks[0]).toMatchObject({ 'backpressure-level': 'high', ratio: 0.8, idleRatio: 0, busyRatio: 0.2 });
    const nothing = { ...subtask(0, 0, 0), metrics: {} };
    expect((backpressureJson([nothing], 5) as any).subtasks[0]).toMatchObject({ 'backpressure-level': 'ok', ratio: 0, idleRatio: 0, busyRatio: 0 });
  });

  it('aggregates over chosen subtasks, and rejects bad parameters with a message naming them', () => {
    const subs = [subtask(0, 0, 0), subtask(1, 0, 0), subtask(2, 0, 0)];
    const q = new URLSearchParams({ get: 'numRecordsIn,reduce "x".numRecordsOut,missing', agg: 'min,max,sum,avg', subtasks: '1-2' });
    expect(aggregatedJson(subs, q)).toEqual([{ id: 'numRecordsIn', min: 20, max: 30, sum: 50, avg: 25 }, { id: 'reduce "x".numRecordsOut', min: 1, max: 2, sum: 3, avg: 1.5 }]);
    expect(() => aggregatedJson(subs, new URLSearchParams({ get: 'a', agg: 'median' }))).toThrow(/agg: unknown aggregation "median"/);
    expect(() => parseRanges('1,x')).toThrow(/subtasks: "x"/);
    expect(() => parseRanges('3-1')).toThrow(/bad range/);
    expect([...parseRanges('0,2-4')]).toEqual([0, 2, 3, 4]);
    // Bounded over all ranges (before: per range only; 1,700 copies of 0-100000 held the main thread 5 s).
    expect(parseRanges('0-100000').size).toBe(100_001);
    expect(() => parseRanges(Array(1700).fill('0-100000').join(','))).toThrow('subtasks: more than 100001 indices in all');
    expect(() => parseRanges('0-100000,5')).toThrow(/more than 100001 indices/);
  });

  it('Prometheus text: Flink reporter names, escaped labels, one TYPE line per family with its samples together', () => {
    expect(metricName(['weir', 'taskmanager', 'job', 'task', 'operator', 'a.b-c'])).toBe('weir_taskmanager_job_task_operator_a_b_c');
    expect(escapeLabel('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    const text = prometheusText([{ jobId: 'j1', jobName: 'my "job"', metrics: { recordCounters: true, job: { numRestarts: 2, lastCheckpointRestoreTimestamp: -1 }, subtasks: [subtask(0, 0, 0), subtask(1, 0, 0)] } }]);
    const lines = text.trimEnd().split('\n');
    expect(lines).toContain('weir_jobmanager_job_numRestarts{job_id="j1",job_name="my \\"job\\""} 2');
    expect(lines).toContain('weir_taskmanager_job_task_operator_numRecordsOut{job_id="j1",job_name="my \\"job\\"",task_id="agg",task_name="agg",subtask_index="1",tm_id="local",operator_id="op",operator_name="reduce \\"x\\""} 1');
    // Every sample line follows its family's TYPE line, and no family appears twice.
    const seen = new Set<string>();
    let current = '';
    for (const l of lines) {
      const t = /^# TYPE (\S+) gauge$/.exec(l);
      if (t) {
        expect(seen.has(t[1]!)).toBe(false);
        seen.add((current = t[1]!));
      } else if (!l.startsWith('# HELP ')) {
        expect(l.slice(0, l.indexOf('{'))).toBe(current);
      }
    }
    expect(seen.has('weir_taskmanager_job_task_numRecordsIn')).toBe(true);
  });
});

describe('vertex views', () => {
  it('task states are Flink\'s ExecutionState names: restoring is INITIALIZING, finishing and waiting for the final checkpoint RUNNING (they were RESTORING, WAITING-FINAL)', () => {
    const v = { index: 0, id: 'v0', name: 'src', parallelism: 3, maxParallelism: 128, operators: [], inputs: [] };
    const states = ['restoring', 'waiting-final', 'finished'];
    const job = {
      jobId: 'j1',
      vertices: () => [v],
      metrics: () => ({ recordCounters: true, job: {}, subtasks: states.map((state, i) => ({ vertex: 0, vertexId: 'v0', taskName: 'src', subtask: i, state, metrics: {}, operators: [] })) }),
    };
    const view = getView(job as never, ['jobs', 'j1', 'vertices', 'v0'], new URLSearchParams())!;
    expect((view.body as { subtasks: { status: string }[] }).subtasks.map((s) => s.status)).toEqual(['INITIALIZING', 'RUNNING', 'FINISHED']);
    expect(vertexJson({ ...job, metrics: () => ({ recordCounters: true, job: {}, subtasks: [{ vertex: 0, subtask: 0, state: 'restored', metrics: {}, operators: [] }] }) } as never, v).status).toBe('INITIALIZING');
  });

  it('accumulated busy, idle and back-pressured times are the subtasks\' cumulative times summed (they were 0)', () => {
    const v = { index: 0, id: 'v0', name: 'src', parallelism: 2, maxParallelism: 128, operators: [], inputs: [] };
    const sub = (i: number) => ({ vertex: 0, subtask: i, state: 'running', metrics: { accumulatedBusyTime: 100 + i, accumulatedIdleTime: 200 + i, accumulatedBackPressuredTime: 300 + i }, operators: [] });
    const job = { jobId: 'j1', vertices: () => [v], metrics: () => ({ recordCounters: true, job: {}, subtasks: [sub(0), sub(1)] }) };
    expect((vertexJson(job as never, v).metrics as Record<string, unknown>)).toMatchObject({ 'accumulated-busy-time': 201, 'accumulated-idle-time': 401, 'accumulated-backpressured-time': 601 });
  });
});

describe('a job that has ended', () => {
  it('/overview counts it by how it ended and its summary has its end time (before: always one finished job, end-time -1)', () => {
    const v = { index: 0, id: 'v0', name: 'src', parallelism: 1, maxParallelism: 128, operators: [], inputs: [] };
    const job = (state: string, endTime?: number) => ({
      jobId: 'j1', jobName: 'n', startedAt: 1000, vertices: () => [v],
      overview: () => ({ state, duration: 500, ...(endTime !== undefined ? { 'end-time': endTime } : {}) }),
      metrics: () => ({ recordCounters: true, job: {}, subtasks: [] }),
    });
    const counts = (state: string) => {
      const b = getView(job(state) as never, ['overview'], new URLSearchParams())!.body as Record<string, number>;
      return [b['jobs-running'], b['jobs-finished'], b['jobs-cancelled'], b['jobs-failed']];
    };
    expect(counts('RUNNING')).toEqual([1, 0, 0, 0]);
    expect(counts('RESTARTING')).toEqual([1, 0, 0, 0]);
    expect(counts('FINISHED')).toEqual([0, 1, 0, 0]);
    expect(counts('CANCELED')).toEqual([0, 0, 1, 0]);
    expect(counts('FAILED')).toEqual([0, 0, 0, 1]);
    expect(jobSummary(job('CANCELED', 1500) as never)).toMatchObject({ state: 'CANCELED', 'start-time': 1000, 'end-time': 1500, duration: 500 });
    expect(jobSummary(job('RUNNING') as never)['end-time']).toBe(-1);
  });
});

describe('incremental checkpoints per vertex and subtask', () => {
  it('state_size is the whole state (reused chain files included), checkpointed_size what the checkpoint wrote (before: both the delta)', () => {
    const tracker = new CheckpointStatsTracker();
    tracker.triggered(4, 'checkpoint', 1000, 2, 0);
    const stats = (written: number) => ({ syncMs: 1, asyncMs: 2, alignmentMs: 0, startDelayMs: 0, stateSize: written });
    // Subtask 0 writes a 100-byte delta over its 900-byte base of checkpoint 3; subtask 1 a full 500.
    tracker.acknowledged(4, { task: '1:0', stats: stats(100), operators: [{ operatorId: 'op', chain: [{ name: 'a', size: 900, checkpointId: 3 }, { name: 'b', size: 100, checkpointId: 4 }] }] } as never, 1100);
    tracker.acknowledged(4, { task: '1:1', stats: stats(500), operators: [{ operatorId: 'op' }] } as never, 1100);
    tracker.completed(4, 1200, '/chk/chk-4');
    const e = { ...tracker.entries().find((x) => x.id === 4)! } as unknown as CheckpointHistoryEntry;
    const vertex = { index: 1, id: 'agg', parallelism: 2 };
    const whole = checkpointingStatistics(view([e]), [vertex] as never, 10) as any;
    expect(whole.latest.completed).toMatchObject({ state_size: 1500, checkpointed_size: 600 });
    expect(whole.latest.completed.tasks.agg).toMatchObject({ state_size: 1500, checkpointed_size: 600 });
    const sub = subtaskDetails(view([e]), vertex as never, 4) as any;
    expect(sub).toMatchObject({ state_size: 1500, checkpointed_size: 600 });
    expect(sub.subtasks.map((x: any) => [x.state_size, x.checkpointed_size])).toEqual([[1000, 100], [500, 500]]);
  });
});
