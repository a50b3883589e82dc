/**
 * The REST API's Flink routes against running jobs on worker threads: vertices with records,
 * back pressure and watermarks per subtask, job metrics, exceptions after a task failure and
 * a restart, and a checkpoint history that lives as long as the job: across a restart of the
 * attempt and across a new process resuming the job (--from latest).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { fixture, sleep, start, tempDir, type Handle } from '../savepoint/helpers.ts';

const tmp = tempDir('rest-api');
afterAll(() => tmp.cleanup());

/** One request, bounded: a stalled server fails the test with the URL instead of hanging it. */
async function api(url: string, method = 'GET'): Promise<{ status: number; body: Record<string, any> }> {
  // State-changing requests carry JSON: the control API refuses others (CSRF guard).
  const json = method === 'GET' ? {} : { headers: { 'content-type': 'application/json' }, body: '{}' };
  const res = await fetch(url, { method, signal: AbortSignal.timeout(20_000), ...json });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, any>) };
}

/** Polls `fn` until it returns a value (bounded: a slow machine gets a minute). */
async function until<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await fn();
    if (v !== undefined) return v;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function cancel(h: Handle): Promise<void> {
  const r = await api(`${h.base}?mode=cancel`, 'PATCH');
  if (r.status !== 202) throw new Error(`cancel of job ${h.jobId} refused: ${r.status} ${JSON.stringify(r.body)}`);
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`job ${h.jobId} did not end within 60 s of cancel`)), 60_000)));
  try {
    await Promise.race([h.result, bound]);
  } finally {
    clearTimeout(timer);
  }
}

describe('REST API with Flink routes', () => {
  it('shows vertices, metrics, back pressure, watermarks and the exceptions of a failed attempt', async () => {
    const dir = tmp.fresh('chk');
    const h = await start(fixture('observed-pipeline.ts'), {
      workers: 2, parallelism: 2, args: ['3000', 'fail-at=1500'],
      checkpoint: { interval: '300ms', dir, tolerableFailures: 100 },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: '100ms' },
    });
    try {
      // The sink fails once (first attempt), then the job runs again.
      const ex = await until('an exception', async () => {
        const r = await api(`${h.base}/exceptions`);
        return r.body['exceptionHistory'].entries.length > 0 ? r.body : undefined;
      });
      const e = ex['exceptionHistory'].entries[0];
      expect(e.stacktrace).toContain('sink failed on purpose at record 1500');
      expect(e.taskName).toMatch(/^window sums -> sums sink \([12]\/2\)$/);
      expect(ex['exceptionHistory'].truncated).toBe(false);
      const m = await until('restarted and running', async () => {
        const j = await api(`${h.base}/metrics?get=numRestarts,uptime`);
        const byId = Object.fromEntries((j.body as unknown as { id: string; value: string }[]).map((x) => [x.id, Number(x.value)]));
        return byId['numRestarts'] === 1 && byId['uptime']! > 0 ? byId : undefined;
      });
      expect(m['numRestarts']).toBe(1);

      const job = await until('records through both vertices', async () => {
        const j = await api(h.base);
        return j.body['vertices']?.[1]?.metrics['read-records'] > 0 ? j.body : undefined;
      });
      expect(job['jid']).toBe(h.jobId);
      expect(job['vertices'].map((v: any) => [v.name, v.parallelism, v.inputs.map((i: any) => i.ship_strategy)])).toEqual([
        ['events -> Timestamps/Watermarks', 2, []], ['window sums -> sums sink', 2, ['HASH']],
      ]);
      const [src, win] = job['vertices'];
      expect(src.metrics['write-bytes']).toBeGreaterThan(0); // batches cross threads as bytes

      // Each worker reports once a second: wait for both subtasks' samples of running tasks
      // (a task that has not opened yet has no time to share out).
      const bp = await until('both source subtasks reporting', async () => {
        const r = (await api(`${h.base}/vertices/${src.id}/backpressure`)).body;
        return r['subtasks'].length === 2 && r['subtasks'].every((s: any) => s.ratio + s.idleRatio + s.busyRatio > 0) ? r : undefined;
      });
      expect(['ok', 'low', 'high']).toContain(bp['backpressure-level']);
      expect(bp['subtasks'].map((s: any) => s.subtask)).toEqual([0, 1]);
      // Busy is measured (subtasks share a thread; waiting for it is none of the three): at most 1.
      for (const s of bp['subtasks']) expect(s.ratio + s.idleRatio + s.busyRatio).toBeLessThanOrEqual(1 + 1e-9);

      const wm = await until('a watermark at the window', async () => {
        const r = (await api(`${h.base}/vertices/${win.id}/watermarks`)).body as unknown as { id: string; value: string }[];
        return r.length === 2 && r.every((x) => Number(x.value) > 1_700_000_000_000) ? r : undefined;
      });
      expect(wm.map((x) => x.id)).toEqual(['0.currentInputWatermark', '1.currentInputWatermark']);

      const late = await until('late records dropped', async () => {
        const r = (await api(`${h.base}/vertices/${win.id}/subtasks/metrics?get=window%20sums.numLateRecordsDropped,numRecordsIn&agg=sum`)).body as unknown as { id: string; sum: number }[];
        return r.length === 2 && r[0]!.sum > 0 ? r : undefined;
      });
      expect(late[1]!.id).toBe('numRecordsIn');

      const bad = await api(`${h.base}/vertices/${win.id}/subtasks/metrics?get=numRecordsIn&subtasks=a-b`);
      expect(bad.status).toBe(400);
      expect(bad.body['errors'][0]).toMatch(/subtasks: "a-b"/);
      expect((await api(`${h.base}/vertices/nope/backpressure`)).status).toBe(404);
      expect((await api(`${h.base}/checkpoints?limit=0`)).status).toBe(400);

      const cfg = (await api(`${h.base}/checkpoints/config`)).body;
      expect(cfg).toMatchObject({ mode: 'exactly_once', interval: 300, tolerable_failed_checkpoints: 100, state_backend: 'heap' });
    } finally {
      await cancel(h);
    }
  }, 180_000);

  it('checkpoint history, counts and details outlive attempts and processes', async () => {
    const dir = tmp.fresh('chk');
    const checkpoint = { interval: '200ms', dir, retention: 'retain-on-cancel' as const };
    const first = await start(fixture('observed-pipeline.ts'), { workers: 2, parallelism: 2, args: ['2000'], checkpoint });
    const before = await until('three completed checkpoints', async () => {
      const r = (await api(`${first.base}/checkpoints`)).body;
      return r['counts'].completed >= 3 ? r : undefined;
    });
    await cancel(first);
    const firstIds = before['history'].filter((x: any) => x.status === 'COMPLETED').map((x: any) => x.id);

    // A new run resumes the same job (same id): its history goes on from the file beside the checkpoints.
    const second = await start(fixture('observed-pipeline.ts'), { workers: 2, parallelism: 2, args: ['2000'], checkpoint, from: 'latest' });
    try {
      expect(second.jobId).toBe(first.jobId);
      const after = await until('a new completed checkpoint', async () => {
        const r = (await api(`${second.base}/checkpoints`)).body;
        return r['history'].some((x: any) => x.status === 'COMPLETED' && x.id > Math.max(...firstIds)) ? r : undefined;
      });
      const ids = after['history'].map((x: any) => x.id);
      for (const id of firstIds) expect(ids).toContain(id);
      expect(after['counts'].completed).toBeGreaterThan(firstIds.length);
      expect(after['counts'].restored).toBe(1);
      expect(after['latest'].restored.id).toBe(Math.max(...firstIds));
      // Details of a checkpoint of the first process, per subtask, with phase timings.
      const old = firstIds[0];
      const details = (await api(`${second.base}/checkpoints/details/${old}`)).body;
      expect(details).toMatchObject({ id: old, status: 'COMPLETED', num_subtasks: 4, num_acknowledged_subtasks: 4 });
      const vid = Object.keys(details['tasks'])[1]!;
      const subs = (await api(`${second.base}/checkpoints/details/${old}/subtasks/${vid}`)).body;
      expect(subs['subtasks'].map((s: any) => s.index)).toEqual([0, 1]);
      for (const s of subs['subtasks']) {
        expect(s.status).toBe('completed');
        expect(s.checkpoint.sync).toBeGreaterThanOrEqual(0);
        expect(s.end_to_end_duration).toBeCloseTo(s.start_delay + s.alignment.duration + s.checkpoint.sync + s.checkpoint.async, 6);
      }
      expect((await api(`${second.base}/checkpoints/details/999999`)).status).toBe(404);
      // The trend covers every completed checkpoint of both processes, oldest first.
      const trend = (await api(`${second.base}/checkpoints/trend`)).body;
      for (const id of firstIds) expect(trend['id']).toContain(id);
      expect(trend['id']).toEqual([...trend['id']].sort((a: number, b: number) => a - b));
      expect(trend['end_to_end_duration']).toHaveLength(trend['id'].length);
      const names = ['lastCheckpointRestoreTimestamp', 'numberOfCompletedCheckpoints', 'numberOfFailedCheckpoints', 'numberOfInProgressCheckpoints', 'totalNumberOfCheckpoints',
        'lastCompletedCheckpointId', 'lastCheckpointDuration', 'lastCheckpointSize', 'lastCheckpointFullSize'];
      const jm = (await api(`${second.base}/metrics?get=${names.join(',')}`)).body as unknown as { id: string; value: string }[];
      const job = Object.fromEntries(jm.map((x) => [x.id, Number(x.value)]));
      expect(Object.keys(job).sort()).toEqual([...names].sort());
      expect(job['lastCheckpointRestoreTimestamp']).toBeGreaterThan(0);
      expect(job['numberOfCompletedCheckpoints']! + job['numberOfFailedCheckpoints']! + job['numberOfInProgressCheckpoints']!).toBe(job['totalNumberOfCheckpoints']);
      // The last checkpoint's figures are those of its entry in the history (asked for after: the history only grows).
      const later = (await api(`${second.base}/checkpoints`)).body;
      const lastEntry = later['history'].find((x: any) => x.id === job['lastCompletedCheckpointId']);
      expect(lastEntry).toMatchObject({ status: 'COMPLETED', end_to_end_duration: job['lastCheckpointDuration'], checkpointed_size: job['lastCheckpointSize'], state_size: job['lastCheckpointFullSize'] });
      expect(job['lastCheckpointFullSize']).toBeGreaterThan(0);
      expect(job['numberOfCompletedCheckpoints']).toBeLessThanOrEqual(later['counts'].completed);
      expect(job['numberOfFailedCheckpoints']).toBeLessThanOrEqual(later['counts'].failed);
    } finally {
      await cancel(second);
    }
  }, 180_000);
});
