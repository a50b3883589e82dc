/**
 * Stop with savepoint (issue point 2): a synchronous savepoint after which the two-phase-commit
 * sink has committed everything it received and the job ends FINISHED. Without --drain the
 * windows still open stay in the savepoint and fire once, after the resume, and nothing (not
 * even a periodic watermark) reaches a sink after the savepoint; with --drain event time first
 * goes to the end, so every window with records fires before the savepoint. A stop that fails
 * leaves the job running and says why.
 *
 * Fixture: test/fixtures/jobs/savepoint-windows.ts (1 s event-time windows counted per key,
 * written to an exactly-once file sink and to collect("windows")).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { committedLines } from '../helpers/output.ts';
import { summarize } from '../../src/checkpoint/inspect.ts';
import { runJob } from '../../src/index.ts';
import type { WindowCount } from '../fixtures/jobs/savepoint-windows.ts';
import { api, fixture, outcome, producedIn, sleep, start, stopWithSavepoint, tempDir, waitRunning } from './helpers.ts';
import { SINK_LOG } from '../fixtures/jobs/stop-timer-log.ts';

const JOB = fixture('savepoint-windows.ts');
const N = 6000;
const RATE = 1000;
const tmp = tempDir('sp-stop');
afterAll(() => tmp.cleanup());

const line = (w: WindowCount) => JSON.stringify({ key: w.key, start: w.start, count: w.count });

/** Window counts of a set of record indices (record i: key k(i mod 3), event time i * 10 ms). */
function windowsOf(indices: Iterable<number>): string[] {
  const m = new Map<string, WindowCount>();
  for (const i of indices) {
    const key = `k${i % 3}`;
    const start = Math.floor((i * 10) / 1000) * 1000;
    const id = `${key}@${start}`;
    const w = m.get(id) ?? { key, start, count: 0 };
    w.count++;
    m.set(id, w);
  }
  return [...m.values()].map(line).sort();
}
const ALL = windowsOf(Array.from({ length: N }, (_, i) => i));


describe('stop with savepoint', () => {
  it('without --drain: FINISHED, the sink committed all it received, and open windows fire exactly once after the resume (workers: 2)', async () => {
    const out = tmp.fresh('out');
    const h = await start(JOB, { workers: 2, parallelism: 2, args: [out, String(N), String(RATE)] });
    await waitRunning(h);
    await sleep(300);
    const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
    const first = await h.result;
    expect(first.status, first.error?.message).toBe('FINISHED');
    const produced = await producedIn(sp, 'src', N);
    expect(produced.size).toBeLessThan(N);
    const committedBefore = committedLines(out);
    const fired = first.collected<WindowCount>('windows').map(line).sort();
    // Only complete windows fired (event time did not jump to the end).
    for (const w of fired) expect(ALL, `window ${w} is complete`).toContain(w);

    const second = await runJob(JOB, { workers: 2, parallelism: 2, args: [out, String(N), '0'], from: sp, stdout: () => {}, log: () => {} });
    expect(second.status, second.error?.message).toBe('FINISHED');
    // The two-phase-commit sink: every window committed exactly once across stop and resume.
    expect(committedLines(out)).toEqual(ALL);
    // Nothing was emitted after the savepoint: what the first run emitted is what it committed,
    // and the windows still open at the stop fired once, after the resume.
    expect(committedBefore, 'what the stopped run committed is what it emitted').toEqual(fired);
    const both = [...fired, ...second.collected<WindowCount>('windows').map(line)].sort();
    expect(both, 'every window emitted exactly once across stop and resume').toEqual(ALL);
  });

  it('without --drain no event-time timer fires at the stop: the open windows stay in the savepoint', async () => {
    const out = tmp.fresh('out');
    const h = await start(JOB, { workers: 1, parallelism: 1, args: [out, String(N), String(RATE)] });
    await waitRunning(h);
    await sleep(300);
    const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
    const first = await h.result;
    expect(first.status).toBe('FINISHED');
    const produced = await producedIn(sp, 'src', N);
    // Windows whose end the last record read has not passed are open: none of them may have fired.
    const last = Math.max(...produced);
    const openStart = Math.floor((last * 10) / 1000) * 1000;
    const fired = first.collected<WindowCount>('windows');
    expect(fired.filter((w) => w.start >= openStart), 'windows still open at the stop must not fire').toEqual([]);
    // The open windows are in the savepoint (as keyed state entries and/or timers, however the
    // window operator keeps them).
    const windows = (await summarize(sp)).operators.find((o) => o.uid === 'windows')!;
    expect(windows.ranges.reduce((a, r) => a + r.keys + r.timers, 0)).toBeGreaterThan(0);
  });

  it('without --drain nothing reaches a sink after the savepoint: the sinks received exactly what was committed (1 ms watermarks, 10 ms windows, 4 rounds)', async () => {
    // A source suspended at the stop's barrier must emit nothing more, periodic watermarks
    // included: a watermark after the barrier fires windows whose output the savepoint does not
    // cover (it is not committed, and it is emitted again after the resume). Watermarks every
    // 1 ms and one record per window make such a late watermark fire a window almost surely.
    for (let round = 0; round < 4; round++) {
      const out = tmp.fresh('out');
      const h = await start(JOB, { workers: 1, parallelism: 2, args: [out, '100000', '5000', '10', '1'] });
      await waitRunning(h);
      await sleep(150);
      await stopWithSavepoint(h, tmp.fresh('sp'));
      const r = await h.result;
      expect(r.status).toBe('FINISHED');
      const received = r.collected<WindowCount>('windows').map(line).sort();
      expect(received.length).toBeGreaterThan(0);
      expect(committedLines(out), `round ${round}: output after the savepoint`).toEqual(received);
    }
  });

  it('without --drain no processing-time timer of a task after the source fires past the savepoint: the sink writes nothing after its prepareCommit (6 rounds; before: most rounds wrote timer output there, which fired again after a resume)', async () => {
    for (let round = 0; round < 6; round++) {
      SINK_LOG.length = 0;
      const h = await start(fixture('stop-timer-log.ts'), { workers: 1 });
      await waitRunning(h);
      await sleep(200);
      await stopWithSavepoint(h, tmp.fresh('sp'));
      expect((await h.result).status).toBe('FINISHED');
      const last = SINK_LOG.map((l) => l.startsWith('prepareCommit')).lastIndexOf(true);
      expect(last, `round ${round}: the savepoint's prepareCommit`).toBeGreaterThan(0);
      expect(SINK_LOG.slice(last + 1), `round ${round}: sink writes after the savepoint`).toEqual([]);
    }
  });

  it('with --drain: event time goes to the end first, so every window with records fires, is committed, and the savepoint holds no window state', async () => {
    const out = tmp.fresh('out');
    const h = await start(JOB, { workers: 1, parallelism: 2, args: [out, String(N), String(RATE)] });
    await waitRunning(h);
    await sleep(300);
    const sp = await stopWithSavepoint(h, tmp.fresh('sp'), true);
    const first = await h.result;
    expect(first.status, first.error?.message).toBe('FINISHED');
    const produced = await producedIn(sp, 'src', N);
    expect(produced.size).toBeGreaterThan(0);
    expect(produced.size).toBeLessThan(N);
    // Every record read is in exactly one fired window, including the last, partial ones.
    const want = windowsOf(produced);
    expect(first.collected<WindowCount>('windows').map(line).sort()).toEqual(want);
    expect(committedLines(out)).toEqual(want);
    expect(readdirSync(out).filter((f) => f.startsWith('.') && !f.startsWith('.weir-')), 'nothing left pending or in progress').toEqual([]);
    // Every window fired and was purged: no window state and no timer is left in the savepoint.
    const windows = (await summarize(sp)).operators.find((o) => o.uid === 'windows')!;
    expect(windows.ranges.map((r) => [r.keys, r.timers])).toEqual([[0, 0], [0, 0]]);
  });

  it('a job that fails after its stop savepoint was taken fails the stop, naming the savepoint, and runs on from it (before: the stop answered with the path, `weir stop` exited 0, and the job restarted and ran on); a later stop succeeds', async () => {
    for (const checkpointing of [true, false]) {
      const marker = tmp.fresh('marker');
      writeFileSync(marker, '');
      const h = await start(fixture('stop-close-fails.ts'), {
        workers: 1, parallelism: 1, args: [marker],
        ...(checkpointing ? { checkpoint: { interval: 100, dir: tmp.fresh('chk') } } : {}),
        restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 50 },
      });
      await waitRunning(h);
      await sleep(300);
      const r = await api(`${h.base}/stop`, 'POST', { targetDirectory: tmp.fresh('sp'), drain: false });
      expect(r.status).toBe(202);
      const o = await outcome(h, r.body['request-id']);
      expect(o.ok, `checkpointing ${checkpointing}`).toBe(false);
      expect(o.ok ? '' : o.cause).toMatch(/^savepoint \d+ was taken at .*savepoint-[0-9a-f-]+, but the job failed before it stopped \(its restart strategy decides whether it runs on, from that savepoint\)/);
      // It restarted from the savepoint (with or without checkpointing: before, without, from the beginning).
      const restarted = (l: string) => /restarting in \d+ ms .* from savepoint \d+$/.test(l);
      for (let i = 0; i < 500 && !h.logs.some(restarted); i++) await sleep(10);
      expect(h.logs.some(restarted), h.logs.join('\n')).toBe(true);
      await waitRunning(h);
      const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
      const end = await h.result;
      expect(end.status, end.error?.message).toBe('FINISHED');
      expect(sp).toMatch(/savepoint-[0-9a-f-]+$/);
    }
  });

  it('a stop that fails leaves the job running and says why; a later stop succeeds and nothing is lost or repeated', async () => {
    const out = tmp.fresh('out');
    const h = await start(JOB, { workers: 1, parallelism: 1, args: [out, String(N), String(RATE)] });
    await waitRunning(h);

    // No target directory and none configured: the stop fails, saying so.
    const none = await api(`${h.base}/stop`, 'POST', { drain: false });
    expect(none.status).toBe(202);
    expect(await outcome(h, none.body['request-id'])).toEqual({ ok: false, cause: 'no savepoint directory: give one (--dir) or configure --savepoint-dir' });
    expect((await api(h.base)).body['state']).toBe('RUNNING');

    // A target that cannot be created (a path below a regular file): the savepoint fails.
    const file = tmp.fresh('a-file');
    writeFileSync(file, 'not a directory\n');
    const bad = join(file, 'savepoints');
    const r = await api(`${h.base}/stop`, 'POST', { targetDirectory: bad, drain: false });
    expect(r.status).toBe(202);
    const o = await outcome(h, r.body['request-id']);
    expect(o.ok).toBe(false);
    expect(o.ok ? '' : o.cause).toMatch(new RegExp(`^savepoint failed: .*cannot create ${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/savepoint-[0-9a-f-]+: ENOTDIR`));
    expect(readFileSync(file, 'utf8')).toBe('not a directory\n');

    // Still running, still reading.
    expect((await api(h.base)).body['state']).toBe('RUNNING');
    await sleep(200);
    const sp = await stopWithSavepoint(h, tmp.fresh('sp'));
    const first = await h.result;
    expect(first.status).toBe('FINISHED');
    const fired = first.collected<WindowCount>('windows').map(line);
    const second = await runJob(JOB, { workers: 1, parallelism: 1, args: [out, String(N), '0'], from: sp, stdout: () => {}, log: () => {} });
    expect(second.status).toBe('FINISHED');
    expect([...fired, ...second.collected<WindowCount>('windows').map(line)].sort()).toEqual(ALL);
    expect(committedLines(out)).toEqual(ALL);
  });

  it('a stop that arrives while the input is ending: the tasks wait for its savepoint, which ends the job with every record committed (before: the job finished at once, with neither the savepoint nor a final checkpoint: FINISHED, nothing committed, the stop failed)', async () => {
    const out = tmp.fresh('out');
    // The source ends at once and waits; the window task then fires its 10 keys for about 3 s,
    // and the stop comes meanwhile: every task waits (its input ended) before the savepoint can
    // complete, as the window task joins it only when it is done.
    const h = await start(fixture('slow-after-source.ts'), { workers: 2, parallelism: 1, args: [out, '300', '300'], checkpoint: { interval: 600_000, dir: tmp.fresh('chk') } });
    await waitRunning(h);
    await sleep(500);
    const r = await api(`${h.base}/stop`, 'POST', { targetDirectory: tmp.fresh('sp'), drain: false });
    expect(r.status).toBe(202);
    const o = await outcome(h, r.body['request-id']);
    const end = await h.result;
    expect(end.status, end.error?.message).toBe('FINISHED');
    expect(committedLines(out)).toEqual(Array.from({ length: 10 }, (_, k) => `${k}:30`).sort());
    expect(o.ok, o.ok ? '' : o.cause).toBe(true);
  });
});
