/**
 * Session windows grow in place: a record that falls into one session and keeps its start
 * extends it without moving its timer, which stays at the old end - 1 and moves on when it
 * comes due (window.ts, addToSession and onTimer). A checkpoint taken then holds the grown
 * session with that earlier timer; a job that fails after it and restarts must still fire the
 * session once, at its final end, with every record: a lost or ignored timer would never fire
 * it, a timer that fired it at the old end would fire it early with fewer records.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EventTimeSessionWindows } from '../../src/index.ts';
import { committedLines } from '../helpers/output.ts';
import { keyedStep, runWindowsWithRestart, Signal, type KeyedRec, type ReplayStep } from './support.ts';

/** A script step: record {k, ts, v} at event time ts (punctuation wm when given). */
const s = keyedStep;

const work = mkdtempSync(join(tmpdir(), 'weir-session-restore-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.each([1, 2])('session windows across a restore, windows at parallelism %i', (parallelism) => {
  it('a session grown in place before the checkpoint fires once, at its final end, after the restore', async () => {
    const checkpointed = new Signal();
    let failures = 0;
    // Gap 10: a record at t opens [t, t + 10).
    const script: ReplayStep<KeyedRec>[] = [
      s('a', 1, 1), // [1,11): its timer at 10
      s('a', 5, 2), // [1,15), in place: the timer stays at 10
      s('a', 12, 4), // [1,22), in place
      s('b', 3, 100, 2), // [3,13); watermark 2: nothing is due
      // A checkpoint completes now: a's [1,22) = 7 with its timer at 10, b's [3,13) = 100.
      { waitFor: checkpointed },
      s('a', 14, 8), // [1,24) = 15, in place (replayed after the restore)
      { run: () => { if (failures++ === 0) throw new Error('injected failure with a grown session in the window'); } },
      s('c', 50, 1000, 40), // watermark 40: b's [3,13) at 12, a's [1,24) at 23 (its timer moves from 10)
    ];
    const { result, out } = await runWindowsWithRestart({
      script, checkpointed, parallelism, dir: work, name: `${parallelism}`,
      window: (keyed) => keyed.window(EventTimeSessionWindows.withGap(10)), uid: 'sessions',
    });
    expect(result.status, result.error?.message).toBe('FINISHED');
    expect(failures).toBe(2);
    expect(result.attempts).toBe(2);
    expect(committedLines(out).sort()).toEqual(['"a 1 24 15"', '"b 3 13 100"', '"c 50 60 1000"']);
  }, 60_000);
});
