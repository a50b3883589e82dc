/**
 * metrics.record-counters.enabled (--record-counters on|off): with it off the tasks count no
 * records (the per-record paths are built without the increment), so a job's progress and its
 * numRecordsIn/Out stay at 0 and the metric views leave those metrics out and say so, while
 * the records themselves flow exactly as before. On (the default), they count.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/cli/config-file.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { mergeSettings, runOptionsOf, settingsOf } from '../../src/cli/run-settings.ts';
import { statusText } from '../../src/cli/run.ts';
import { NO_PROGRESS } from '../../src/cluster/job-result.ts';
import { OutputTag, WatermarkStrategy, type StreamExecutionEnvironment } from '../../src/index.ts';
import { runInlineResult } from '../api/util.ts';
import type { JobControl, JobService } from '../../src/cluster/job-control.ts';
import { fixture, sleep, start, tempDir, type Handle } from '../savepoint/helpers.ts';

const tmp = tempDir('record-counters');
afterAll(() => tmp.cleanup());

const N = 20_000;
const odd = new OutputTag<number>('odd');

/**
 * Every record path whose counting the switch changes: a source into a chained map (one
 * record-at-a-time target), a stream read by two chained consumers (several targets), a side
 * output, and a keyBy edge (record writer, then the head of the next task).
 */
function pipeline(env: StreamExecutionEnvironment): void {
  const mapped = env.fromGenerator((i) => i, { count: N }).map((x) => x * 2);
  mapped.filter((x) => x % 3 === 0).collect('thirds');
  const split = mapped.process<number>({ processElement: (v, ctx, out) => ((v / 2) % 2 === 1 ? ctx.output(odd, v / 2) : out.collect(v)) });
  split.getSideOutput(odd).collect('odd');
  split.keyBy((v) => v % 10).reduce((a, b) => a + b).collect('sums');
}

async function runPipeline(recordCounters: boolean | undefined) {
  const r = await runInlineResult(pipeline, recordCounters === undefined ? {} : { recordCounters });
  expect(r.status, r.error?.message).toBe('FINISHED');
  return r;
}

/** One bounded GET: a stalled server fails the test with the URL. */
async function get(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(20_000) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.text();
}

async function until<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await fn();
    if (v !== undefined) return v;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function cancel(h: Handle): Promise<void> {
  const res = await fetch(`${h.base}?mode=cancel`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(20_000) });
  expect(res.status).toBe(202);
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`job ${h.jobId} did not end within 60 s of cancel`)), 60_000)));
  try {
    await Promise.race([h.result, bound]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs a job to its end and reads every operator's [name, numRecordsIn, numRecordsOut] per
 * subtask when it has ended, through the control API (the REST views serve the same objects).
 */
async function operatorCounts(build: (env: StreamExecutionEnvironment) => void) {
  let control: JobControl | undefined;
  let operators: [string, unknown, unknown][][] = [];
  const probe: JobService = {
    start: async (c) => void (control = c),
    stop: async () => {
      operators = control!.metrics().subtasks.map((t) => t.operators.map((o) => [o.name, o.metrics['numRecordsIn'], o.metrics['numRecordsOut']]));
    },
  };
  const r = await runInlineResult(build, { services: [probe] });
  expect(r.status, r.error?.message).toBe('FINISHED');
  return { r, operators };
}

describe('record counters on and off', () => {
  it('off: the job computes the same output, and its record counts stay at 0; on (default): they count', async () => {
    const on = await runPipeline(undefined);
    const off = await runPipeline(false);
    for (const sink of ['thirds', 'odd', 'sums']) expect(off.collected(sink), sink).toEqual(on.collected(sink));
    expect(on.collected('thirds')).toHaveLength(Math.ceil(N / 3));
    expect(on.collected('odd')).toHaveLength(N / 2);

    // Sources emitted N; the sinks took thirds + odd + one running sum per even record.
    expect(on.progress.recordsIn).toBe(N);
    expect(on.progress.recordsOut).toBe(Math.ceil(N / 3) + N / 2 + N / 2);
    expect(on.progress.recordCounters).toBe(true);
    expect(off.progress.recordsIn).toBe(0);
    expect(off.progress.recordsOut).toBe(0);
    expect(off.progress.recordCounters).toBe(false);
  });

  it('each operator of a chain counts what it took and handed on, whether it counts itself or takes its sole feeder\'s output count', async () => {
    const { operators } = await operatorCounts(pipeline);
    const thirds = Math.ceil(N / 3);
    expect(operators).toEqual([
      [
        ['generator', N, N],
        ['Map', N, N], // fed by the source alone: its count is the source's output count
        ['Filter', N, thirds], // the map's output has two chained targets: counted by the filter itself
        ['Collect thirds', thirds, 0], // fed by the filter alone
        ['Process', N, N], // half to its main output, half to its side output: numRecordsOut counts both, as Flink's CountingOutput
        ['Collect odd', N / 2, 0], // fed by a side output: counted itself
      ],
      [
        ['Reduce', N / 2, N / 2],
        ['Collect sums', N / 2, 0],
      ],
    ]);
  });

  it('a one-to-one operator (map, the timestamp assigner) counts nothing per record: its counts are its input\'s, along a chain of them', async () => {
    const { r, operators } = await operatorCounts((env) => {
      env.fromGenerator((i) => i, { count: N })
        .map((x) => x + 1).name('first map')
        .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((x) => x)).name('stamps')
        .map((x) => x * 2).name('second map')
        .filter((x) => x % 3 === 0)
        .collect('thirds');
    });
    const thirds = r.collected('thirds').length;
    expect(thirds).toBe(Math.floor(N / 3)); // (i + 1) * 2 is a multiple of 3 for every third i
    expect(operators).toEqual([[
      ['generator', N, N],
      ['first map', N, N],
      ['stamps', N, N],
      ['second map', N, N],
      ['Filter', N, thirds],
      ['Collect thirds', thirds, 0],
    ]]);
  });

  it('sources whose readers report each poll\'s count (generator, collection) count exactly, into a chain and into a keyBy, over many polls', async () => {
    // More records than a poll's batch, so the per-poll counts add up over several polls; the
    // collection's one reader and the generator's two lanes each report their own.
    const values = Array.from({ length: 5_000 }, (_, i) => i);
    const { operators } = await operatorCounts((env) => {
      env.fromCollection(values).name('collection').filter((x) => x % 2 === 0).collect('evens');
      env.fromGenerator((i) => i, { count: 7_001, lanes: 2 }).name('lanes').keyBy((x) => x % 7).reduce((a, b) => a + b).collect('sums');
      // Event time per split: records go through each lane's split output, the count through the reader's.
      const stamped = WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((x) => x);
      env.fromGenerator((i) => i, { count: 3_001, lanes: 3, watermarks: stamped }).name('stamped lanes').map((x) => x + 1).collect('stamped');
    });
    const flat = operators.flat();
    const find = (name: string) => flat.find((o) => o[0] === name);
    expect(find('collection')).toEqual(['collection', 5_000, 5_000]);
    expect(find('Filter')).toEqual(['Filter', 5_000, 2_500]);
    expect(find('lanes')).toEqual(['lanes', 7_001, 7_001]);
    expect(find('Reduce')).toEqual(['Reduce', 7_001, 7_001]);
    expect(find('stamped lanes')).toEqual(['stamped lanes', 3_001, 3_001]);
  });

  it('off: the status line says records are not counted instead of showing 0 records/s', () => {
    const p = { ...NO_PROGRESS, elapsedMs: 10_000, recordCounters: false };
    expect(statusText(p, undefined)).toContain('records not counted (--record-counters off)');
    expect(statusText({ ...p, recordCounters: true, recordsIn: 5000 }, undefined)).toContain('500 records/s in');
  });

  it('set by --record-counters on|off or the config key metrics.record-counters.enabled; other values are refused', () => {
    const flags = (...argv: string[]) => settingsOf(parseCommandLine(argv, 'run').values);
    expect(runOptionsOf(mergeSettings(undefined, flags('--record-counters', 'off'))).run.recordCounters).toBe(false);
    expect(runOptionsOf(mergeSettings(undefined, flags('--record-counters=on'))).run.recordCounters).toBe(true);
    expect(runOptionsOf(mergeSettings(undefined, flags())).run.recordCounters).toBeUndefined();
    const file = parseConfig({ 'metrics.record-counters.enabled': false }, 'w.json');
    expect(runOptionsOf(mergeSettings(file, {})).run.recordCounters).toBe(false);
    // Flags win over the file.
    expect(runOptionsOf(mergeSettings(file, flags('--record-counters', 'on'))).run.recordCounters).toBe(true);
    expect(() => flags('--record-counters', 'maybe')).toThrow('--record-counters expects on or off, got "maybe"');
    expect(() => parseConfig({ 'metrics.record-counters.enabled': 'sometimes' }, 'w.json')).toThrow('w.json: "metrics.record-counters.enabled": record counters must be true or false, got "sometimes"');
  });

  it('runJob refuses a recordCounters that is not a boolean, naming it', async () => {
    await expect(runInlineResult(pipeline, { recordCounters: 'no' as never })).rejects.toThrow('run options (recordCounters): record counters must be true or false, got "no"');
  });

  it('a running job: off, /metrics says so and has no record counts (other metrics stay); on, it counts', async () => {
    // Records demonstrably flow: bytes cross from the source's worker and event time reached the window.
    const flowing = (t: string) => /weir_taskmanager_job_task_numBytesOut\{[^}]*task_name="events -> [^}]*\} [1-9]/.test(t) && /_currentInputWatermark\{[^}]*operator_name="window sums"[^}]*\} 1/.test(t);
    const windowCounted = (t: string) => /weir_taskmanager_job_task_operator_numRecordsIn\{[^}]*operator_name="window sums"[^}]*\} [1-9]/.test(t);
    const scrape = async (recordCounters: boolean, ready: (t: string) => boolean) => {
      const h = await start(fixture('observed-pipeline.ts'), { workers: 2, parallelism: 2, args: ['2000'], recordCounters });
      const port = Number(new URL(h.base).port);
      try {
        const text = await until('the job to report its metrics', async () => {
          const t = await get(`http://127.0.0.1:${port}/metrics`);
          return ready(t) ? t : undefined;
        });
        const vertex = JSON.parse(await get(`${h.base}/vertices/1`)) as Record<string, any>;
        const aggregated = JSON.parse(await get(`${h.base}/vertices/1/subtasks/metrics?get=numRecordsIn,busyTimeMsPerSecond&agg=sum`)) as { id: string }[];
        // /metrics may be ready from subtask 1 alone; subtask 0 answers 404 until it has reported.
        const subtask = await until('subtask 0 to report its metrics', async () => {
          const res = await fetch(`${h.base}/vertices/1/subtasks/0/metrics?get=numRecordsIn,window%20sums.numRecordsOut,busyTimeMsPerSecond`, { signal: AbortSignal.timeout(20_000) });
          if (res.status === 404) return undefined;
          if (!res.ok) throw new Error(`subtask metrics: HTTP ${res.status}`);
          return (await res.json()) as { id: string }[];
        });
        return { text, vertex, aggregated, subtask };
      } finally {
        await cancel(h);
      }
    };

    const off = await scrape(false, flowing);
    expect(off.text).toMatch(/^# weir: job \S+ does not count records \(metrics\.record-counters\.enabled: false, --record-counters off\)/m);
    // The comment keeps the text valid exposition format (promtool, installed by .ci/run with Prometheus).
    const check = spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: off.text, encoding: 'utf8', timeout: 30_000 });
    expect(`${check.stdout}${check.stderr}`.split('\n').filter((l) => l.trim() !== '' && !/should be written in 'snake_case' not 'camelCase'/.test(l))).toEqual([]);
    expect([0, 3]).toContain(check.status);
    expect(off.text).not.toMatch(/_numRecords(In|Out)(PerSecond)?\{/); // numRecordsInErrors (dead letters) is not a record count and stays
    expect(off.text).toMatch(/weir_taskmanager_job_task_busyTimeMsPerSecond\{/);
    expect(off.text).toMatch(/weir_taskmanager_job_task_operator_currentOutputWatermark\{/);
    expect(off.vertex['metrics']).toMatchObject({ 'read-records': 0, 'read-records-complete': false, 'write-records-complete': false });
    expect(off.aggregated.map((m) => m.id)).toEqual(['busyTimeMsPerSecond']);
    expect(off.subtask.map((m) => m.id)).toEqual(['busyTimeMsPerSecond']);

    const on = await scrape(true, (t) => flowing(t) && windowCounted(t));
    expect(on.text).not.toMatch(/does not count records/);
    expect(on.text).toMatch(/weir_taskmanager_job_task_numRecordsOut\{/);
    expect(on.vertex['metrics']['read-records-complete']).toBe(true);
    expect(on.aggregated.map((m) => m.id)).toEqual(['numRecordsIn', 'busyTimeMsPerSecond']);
    expect(on.subtask.map((m) => m.id)).toEqual(['numRecordsIn', 'window sums.numRecordsOut', 'busyTimeMsPerSecond']);
  });
});
