/**
 * Deterministic stepping for task-level tests (not a test file itself):
 * - ManualScheduler runs subtasks and snapshot jobs only when the test says so, one step at a
 *   time or until nothing is runnable, instead of on setImmediate slices;
 * - TrackedIo opens state files on the local disk and counts the file operations in flight, so
 *   a test can wait for exactly "all I/O done and nothing runnable" instead of sleeping.
 * With a ManualClock for processing time, nothing in such a test happens on its own: absence
 * ("no ack yet") is a fact at the step where it is checked, not a guess after a sleep.
 */
import { open } from 'node:fs/promises';
import type { OpenWritableFile, WritableFile } from '../../src/checkpoint/state-file.ts';
import { Scheduler, type Schedulable } from '../../src/runtime/scheduler.ts';

export class ManualScheduler extends Scheduler {
  private readonly runnable: Schedulable[] = [];
  private readonly hooks: (() => void)[] = [];
  /** Steps run so far. */
  steps = 0;

  override wake(t: Schedulable): void {
    if (t.queued) return;
    t.queued = true;
    this.runnable.push(t);
  }

  override onEndOfSlice(fn: () => void): void {
    this.hooks.push(fn);
  }

  /** Nothing is runnable: only new input, I/O completing or a timer can change that. */
  get idle(): boolean {
    return this.runnable.length === 0;
  }

  /** Runs one step of the longest-waiting runnable task; false if none was runnable. */
  runOne(): boolean {
    const t = this.runnable.shift();
    if (t === undefined) return false;
    t.queued = false;
    this.steps++;
    if (t.step()) this.wake(t);
    for (const h of this.hooks) h();
    return true;
  }

  /** Runs steps until nothing is runnable; returns how many ran. */
  runUntilIdle(maxSteps = 1_000_000): number {
    let n = 0;
    while (this.runOne()) {
      if (++n > maxSteps) throw new Error(`still runnable after ${maxSteps} steps`);
    }
    return n;
  }
}

const nextTurn = (): Promise<void> => new Promise((res) => setImmediate(res));

/** Opens files for writing on the local disk and keeps count of the operations in flight. */
export class TrackedIo {
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Files opened, in order. */
  readonly opened: string[] = [];

  get pending(): number {
    return this.inFlight.size;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    const done = () => void this.inFlight.delete(p);
    p.then(done, done);
    return p;
  }

  readonly openFile: OpenWritableFile = async (path) => {
    this.opened.push(path);
    const fh = await this.track(open(path, 'wx'));
    const f: WritableFile = {
      write: (b, o, l, p) => this.track(fh.write(b, o, l, p)),
      writev: (bs, p) => this.track(fh.writev(bs, p)),
      sync: () => this.track(fh.sync()),
      close: () => this.track(fh.close()),
    };
    return f;
  };

  /** Waits (without stepping the scheduler) until `cond` holds, e.g. a snapshot job became runnable once its file was open. */
  async waitFor(cond: () => boolean): Promise<void> {
    for (let rounds = 0; rounds < 100_000; rounds++) {
      if (cond()) return;
      await nextTurn();
      if (!cond() && this.pending === 0) {
        await nextTurn();
        if (!cond() && this.pending === 0) throw new Error('no I/O in flight and the awaited condition does not hold');
      }
      if (this.pending > 0) await Promise.allSettled([...this.inFlight]);
    }
    throw new Error('condition never held');
  }

  /**
   * Steps the scheduler and waits for tracked I/O until nothing is runnable and no I/O is in
   * flight (or until `until` holds, checked whenever the scheduler is idle). Continuations of
   * finished I/O run in microtasks, which a turn of the event loop drains.
   */
  async quiesce(scheduler: ManualScheduler, until?: () => boolean): Promise<void> {
    for (let rounds = 0; rounds < 100_000; rounds++) {
      scheduler.runUntilIdle();
      if (until?.()) return;
      await nextTurn();
      if (scheduler.idle && this.pending === 0) {
        if (until === undefined || until()) return;
        throw new Error('quiet (nothing runnable, no I/O in flight) but the awaited condition does not hold');
      }
      if (this.pending > 0) await Promise.allSettled([...this.inFlight]);
    }
    throw new Error('did not quiesce');
  }
}
