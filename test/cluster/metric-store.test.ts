import { describe, expect, it } from 'vitest';
import { MetricStore } from '../../src/cluster/metric-store.ts';
import { defineJob } from '../../src/index.ts';
import { buildJob } from '../../src/cluster/job-loader.ts';
import type { TaskMetricsSample } from '../../src/runtime/task-metrics.ts';

async function graph() {
  const def = defineJob((env) => void env.fromGenerator((i) => i, { count: 3 }).name('numbers').map((x: number) => x + 1).name('plus one').keyBy((x) => x).map((x) => x).name('after').print());
  return (await buildJob(def, [], 2)).graph;
}

function sample(over: Partial<TaskMetricsSample>): TaskMetricsSample {
  return {
    vertex: 0, subtask: 0, state: 'running', sampledAt: 0, recordsIn: [0, 0], recordsOut: [0, 0], taskRecordsOut: 0, bytesOut: 0,
    idleMs: 0, backPressuredMs: 0, elapsedMs: 0, busyMs: 0, isBackPressured: false, inputWatermark: [0, 0], outputWatermark: [0, 0],
    lateRecordsDropped: [0, 0], mailboxSize: 0, ...over,
  };
}

describe('MetricStore: Flink-named metrics and rates from cumulative samples', () => {
  it('computes per-second rates over the sampled window and time shares adding up to 1000', async () => {
    const store = new MetricStore(await graph());
    store.add(sample({ sampledAt: 10_000, elapsedMs: 5000, recordsIn: [1000, 1000], recordsOut: [1000, 1000], taskRecordsOut: 1000, bytesOut: 8000, idleMs: 1000, backPressuredMs: 500, busyMs: 3500 }));
    store.add(sample({ sampledAt: 12_000, elapsedMs: 7000, recordsIn: [5000, 5000], recordsOut: [5000, 4000], taskRecordsOut: 4000, bytesOut: 24_000, idleMs: 1600, backPressuredMs: 1300, busyMs: 4100, isBackPressured: true, mailboxSize: 3 }));
    const [s] = store.subtasks();
    expect(s!.taskName).toBe('numbers -> plus one');
    expect(s!.metrics).toMatchObject({
      numRecordsIn: 5000, numRecordsOut: 4000, numRecordsInPerSecond: 2000, numRecordsOutPerSecond: 1500,
      numBytesOut: 24_000, numBytesOutPerSecond: 8000, idleTimeMsPerSecond: 300, backPressuredTimeMsPerSecond: 400, busyTimeMsPerSecond: 300,
      isBackPressured: 1, mailboxQueueSize: 3, accumulatedBusyTime: 4100, accumulatedIdleTime: 1600, accumulatedBackPressuredTime: 1300,
    });
    expect(s!.operators.map((o) => [o.name, o.metrics['numRecordsOut'], o.metrics['numRecordsOutPerSecond']])).toEqual([['numbers', 5000, 2000], ['plus one', 4000, 1500]]);
  });

  it('gives a source its watermark lag behind the wall clock once it emitted a watermark', async () => {
    const store = new MetricStore(await graph());
    store.add(sample({ sampledAt: 1_000_000, elapsedMs: 1, outputWatermark: [Number.MIN_SAFE_INTEGER, Number.MIN_SAFE_INTEGER] }));
    expect(store.subtasks()[0]!.metrics['watermarkLag']).toBeUndefined();
    store.add(sample({ sampledAt: 1_000_500, elapsedMs: 2, outputWatermark: [Number.MIN_SAFE_INTEGER, 990_000] }));
    expect(store.subtasks()[0]!.metrics['watermarkLag']).toBe(10_500);
    store.add(sample({ sampledAt: 1_001_500, elapsedMs: 3, outputWatermark: [Number.MIN_SAFE_INTEGER, 990_000], source: { bytesRead: 4000, pendingRecords: 12, millisBehindLatest: 1500 } }));
    expect(store.subtasks()[0]!.metrics).toMatchObject({ pendingRecords: 12, millisBehindLatest: 1500, numBytesIn: 4000 });
    store.add(sample({ vertex: 1, sampledAt: 1_000_500, elapsedMs: 2, outputWatermark: [990_000] }));
    expect(store.subtasks()[1]!.metrics['watermarkLag']).toBeUndefined(); // not a source
  });

  it('busy time is the time measured in the task\'s steps: a subtask waiting for its turn on a shared thread is not busy (before: every subtask of a saturated thread showed 1000 ms/s)', async () => {
    const store = new MetricStore(await graph());
    // 2 s: no idle, no back pressure, 500 ms in steps; the other 1.5 s another subtask had the thread.
    store.add(sample({ sampledAt: 10_000, elapsedMs: 5000, busyMs: 1000 }));
    store.add(sample({ sampledAt: 12_000, elapsedMs: 7000, busyMs: 1500 }));
    const m = store.subtasks()[0]!.metrics;
    expect([m['idleTimeMsPerSecond'], m['backPressuredTimeMsPerSecond'], m['busyTimeMsPerSecond']]).toEqual([0, 0, 250]);
  });

  it('samples taken often (the job\'s progress read by every REST GET) do not shrink the rate window: at a true 2,000/s, a sample every 70 ms beside the one-second beat still reads 2,000/s (before: up to 3,191/s)', async () => {
    const store = new MetricStore(await graph());
    const at = (ms: number) => sample({ sampledAt: ms, elapsedMs: ms, recordsIn: [2 * ms, 2 * ms], recordsOut: [2 * ms, 2 * ms], taskRecordsOut: 2 * ms });
    const rates: number[] = [];
    for (let ms = 1000; ms <= 20_000; ms += 10) {
      const beat = ms % 1000 === 0;
      // The counters move in steps: a task's count is read between batches, 400 records at a time.
      if (beat || ms % 70 === 0) store.add({ ...at(ms), recordsIn: [Math.floor((2 * ms) / 400) * 400, 0] });
      if (ms > 6000 && ms % 70 === 0) rates.push(store.subtasks()[0]!.metrics['numRecordsInPerSecond']!);
    }
    expect(Math.min(...rates)).toBeGreaterThan(1700);
    expect(Math.max(...rates)).toBeLessThan(2300);
  });

  it('with one sample, uses the shares since the task opened', async () => {
    const store = new MetricStore(await graph());
    store.add(sample({ sampledAt: 1, elapsedMs: 4000, idleMs: 1000, backPressuredMs: 2000, busyMs: 1000 }));
    const m = store.subtasks()[0]!.metrics;
    expect([m['idleTimeMsPerSecond'], m['backPressuredTimeMsPerSecond'], m['busyTimeMsPerSecond']]).toEqual([250, 500, 250]);
    expect(m['numRecordsInPerSecond']).toBe(0);
  });

  it('starts over when counters go back (a new attempt) and ignores a sample older than the last', async () => {
    const store = new MetricStore(await graph());
    store.add(sample({ sampledAt: 1000, elapsedMs: 9000, recordsIn: [9000, 9000] }));
    store.add(sample({ sampledAt: 2000, elapsedMs: 1000, recordsIn: [100, 100] }));
    store.add(sample({ sampledAt: 3000, elapsedMs: 2000, recordsIn: [600, 600] }));
    store.add(sample({ sampledAt: 2500, elapsedMs: 1500, recordsIn: [99_999, 0] }));
    const m = store.subtasks()[0]!.metrics;
    expect(m['numRecordsIn']).toBe(600);
    expect(m['numRecordsInPerSecond']).toBe(500);
  });

  it('keeps a bounded window: the rate follows the last samples, not the whole life', async () => {
    const store = new MetricStore(await graph());
    // 10/s for a long time, then 1000/s for the last 4 s.
    let n = 0;
    for (let t = 1; t <= 20; t++) store.add(sample({ sampledAt: t * 1000, elapsedMs: t * 1000, recordsIn: [(n += 10), 0] }));
    for (let t = 21; t <= 25; t++) store.add(sample({ sampledAt: t * 1000, elapsedMs: t * 1000, recordsIn: [(n += 1000), 0] }));
    expect(store.subtasks()[0]!.metrics['numRecordsInPerSecond']).toBe(1000);
  });
});
