/**
 * Sliding windows kept as panes (window-panes.ts) across a restore: panes of a checkpoint come
 * back with the restored watermark, so a window that fired before the checkpoint does not fire
 * again after it, a late record within the allowed lateness fires the windows holding its pane
 * again with every pane's contents, and windows still to come fire once. A lost pane, a pane
 * restored without its windows, or windows that fire again after the restore would each change
 * the committed output.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SlidingEventTimeWindows } from '../../src/index.ts';
import { committedLines } from '../helpers/output.ts';
import { keyedStep, runWindowsWithRestart, Signal, type KeyedRec, type ReplayStep } from './support.ts';

/** A script step: record {k, ts, v} at event time ts (punctuation wm when given). */
const s = keyedStep;

const work = mkdtempSync(join(tmpdir(), 'weir-pane-restore-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.each([
  [1, 'heap'],
  [2, 'heap'],
  [2, 'disk'],
] as const)('sliding windows kept as panes across a restore, windows at parallelism %i, %s state backend', (parallelism, backend) => {
  it('fired windows stay fired, a late record fires its windows again with every pane, the rest fire once', async () => {
    const checkpointed = new Signal();
    let failures = 0;
    // Windows of 10 sliding by 5 (panes of 5), allowed lateness 10.
    const script: ReplayStep<KeyedRec>[] = [
      s('a', 1, 1), // pane [0,5): windows [-5,5) and [0,10)
      s('a', 7, 2), // pane [5,10): windows [0,10) and [5,15)
      s('b', 12, 100, 9), // pane [10,15); watermark 9 fires a's [-5,5) = 1 and [0,10) = 3
      // A checkpoint completes now: three panes, the watermark at 9.
      { waitFor: checkpointed },
      s('a', 3, 4), // late, within the lateness: [-5,5) = 5 and [0,10) = 7 fire again at once
      { run: () => { if (failures++ === 0) throw new Error('injected failure with panes in the window operator'); } },
      s('c', 50, 1000, 40), // watermark 40: a's and b's [5,15), b's [10,20)
    ];
    const { result, out } = await runWindowsWithRestart({
      script, checkpointed, parallelism, stateBackend: backend, dir: work, name: `${parallelism}-${backend}`,
      window: (keyed) => keyed.window(SlidingEventTimeWindows.of(10, 5)).allowedLateness(10), uid: 'panes',
    });
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(failures).toBe(2);
    expect(result.attempts).toBe(2);
    expect(committedLines(out).sort()).toEqual([
      '"a -5 5 1"', '"a -5 5 5"', '"a 0 10 3"', '"a 0 10 7"', '"a 5 15 2"',
      '"b 10 20 100"', '"b 5 15 100"', '"c 45 55 1000"', '"c 50 60 1000"',
    ]);
  }, 60_000);
});
