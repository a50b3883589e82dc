/**
 * Sliding windows are kept as panes when their aggregate allows it (window-panes.ts) and as
 * whole windows otherwise. A savepoint taken with whole windows restores into a job that could
 * keep panes (it goes on with whole windows, every window counted once across stop and resume);
 * a savepoint with panes restored into a job that cannot merge them is refused, naming why,
 * instead of losing their counts.
 *
 * Fixture: test/fixtures/jobs/savepoint-sliding.ts (1 s windows every 0.5 s, counted per key).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { summarize } from '../../src/checkpoint/inspect.ts';
import { runJob } from '../../src/index.ts';
import type { WindowCount } from '../fixtures/jobs/savepoint-sliding.ts';
import { fixture, sleep, start, stopWithSavepoint, tempDir, waitRunning } from './helpers.ts';

const JOB = fixture('savepoint-sliding.ts');
const N = 4000;
const RATE = 1500;
const tmp = tempDir('sp-window-layouts');
afterAll(() => tmp.cleanup());

const line = (w: WindowCount) => `${w.key}@${w.start}=${w.count}`;

/** Every sliding window's count per key (record i: key k(i mod 3), event time i * 10 ms). */
function allWindows(): string[] {
  const m = new Map<string, number>();
  for (let i = 0; i < N; i++) {
    const ts = i * 10;
    for (let s = Math.floor(ts / 500) * 500; s > ts - 1000; s -= 500) {
      const id = `k${i % 3}@${s}`;
      m.set(id, (m.get(id) ?? 0) + 1);
    }
  }
  return [...m].map(([id, n]) => `${id}=${n}`).sort();
}

async function stoppedRun(layout: 'panes' | 'whole'): Promise<{ sp: string; fired: string[] }> {
  const h = await start(JOB, { workers: 1, parallelism: 2, args: [layout, String(N), String(RATE)] });
  await waitRunning(h);
  await sleep(400);
  const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
  const first = await h.result;
  expect(first.status, first.error?.message).toBe('FINISHED');
  return { sp, fired: first.collected<WindowCount>('windows').map(line) };
}

/** Names of the window operator's keyed states of windows (__w<start>) and panes (__p<start>) in a snapshot. */
const stateNames = async (sp: string): Promise<string[]> =>
  (await summarize(sp)).operators.find((o) => o.uid === 'windows')!.states.map((s) => s.name).filter((n) => /^__[wp]-?\d+$/.test(n));

describe('sliding windows: panes and whole windows across a savepoint', () => {
  it('whole windows restore into a job that could keep panes: every window fires once across stop and resume', async () => {
    const { sp, fired } = await stoppedRun('whole');
    const names = await stateNames(sp);
    expect(names.some((n) => n.startsWith('__w')), 'the savepoint holds whole windows').toBe(true);
    expect(fired.length).toBeLessThan(allWindows().length);
    const second = await runJob(JOB, { workers: 1, parallelism: 3, args: ['panes', String(N), '0'], from: sp, stdout: () => {}, log: () => {} });
    expect(second.status, second.error?.message).toBe('FINISHED');
    const both = [...fired, ...second.collected<WindowCount>('windows').map(line)].sort();
    expect(both).toEqual(allWindows());
  });

  it('panes restore into a job that keeps panes, and are refused by one that cannot merge them', async () => {
    const { sp, fired } = await stoppedRun('panes');
    const names = await stateNames(sp);
    expect(names.some((n) => n.startsWith('__p')), 'the savepoint holds panes').toBe(true);
    expect(names.some((n) => n.startsWith('__w'))).toBe(false);
    const refused = await runJob(JOB, { workers: 1, parallelism: 2, args: ['whole', String(N), '0'], from: sp, stdout: () => {}, log: () => {} });
    expect(refused.status).toBe('FAILED');
    expect(refused.error?.message).toMatch(/keeps this sliding window's contents as panes \(__p\d+\), which need an AggregateFunction with merge\(\), commutative: true/);
    expect(refused.collected<WindowCount>('windows')).toEqual([]);
    const second = await runJob(JOB, { workers: 1, parallelism: 1, args: ['panes', String(N), '0'], from: sp, stdout: () => {}, log: () => {} });
    expect(second.status, second.error?.message).toBe('FINISHED');
    const both = [...fired, ...second.collected<WindowCount>('windows').map(line)].sort();
    expect(both).toEqual(allWindows());
  });
});

describe('windows whose state cannot carry over to the restored job', () => {
  const WINDOWS = fixture('savepoint-windows.ts');

  async function savepointOf(windowMs: number): Promise<string> {
    const out = tmp.fresh('out');
    const h = await start(WINDOWS, { workers: 1, parallelism: 2, args: [out, '100000', '2000', String(windowMs)] });
    await waitRunning(h);
    await sleep(500);
    const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
    expect((await h.result).status).toBe('FINISHED');
    return sp;
  }

  it('another window size is refused before the operator opens, naming both layouts (before: open windows rebuilt with the new size, dropped as fired without firing)', async () => {
    const sp = await savepointOf(1000);
    const r = await runJob(WINDOWS, { workers: 1, parallelism: 2, args: [tmp.fresh('out'), '3000', '0', '300'], from: sp, stdout: () => {}, log: () => {} });
    expect(r.status).toBe('FAILED');
    expect(r.error?.code).toBe('RESTORE');
    expect(r.error?.message).toContain('operator "windows": the snapshot keeps its state as event-time tumbling windows of 1000 ms (offset 0 ms) holding aggregate contents, this job as event-time tumbling windows of 300 ms (offset 0 ms) holding aggregate contents; it cannot carry over');
    // The same windows restore, and the log says from what.
    const logs: string[] = [];
    const same = await runJob(WINDOWS, { workers: 1, parallelism: 2, args: [tmp.fresh('out'), '3000', '0', '1000'], from: sp, stdout: () => {}, log: (l) => logs.push(l) });
    expect(same.status, same.error?.message).toBe('FINISHED');
    expect(logs).toContainEqual(expect.stringMatching(/^weir: restoring from savepoint \d+ \(.*savepoint-/));
  });
});
