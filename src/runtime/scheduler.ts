/**
 * Runs the subtasks of one thread cooperatively. A runnable subtask gets one step (its mail,
 * then one batch); steps of different subtasks interleave round-robin. After a time slice
 * the scheduler yields to the event loop (setImmediate) so that messages from other threads,
 * file reads and timers get their turn; this is Flink's mailbox model on Node's loop.
 */

export interface Schedulable {
  /** Runs one step; returns true to be scheduled again right away. */
  step(): boolean;
  queued: boolean;
}

export class Scheduler {
  private queue: Schedulable[] = [];
  private head = 0;
  private pending = false;
  private readonly endOfSliceHooks: (() => void)[] = [];
  private readonly afterStepHooks: (() => void)[] = [];

  constructor(private readonly sliceMs = 8) {}

  /** Makes a task runnable; safe to call from any callback, any number of times. */
  wake(t: Schedulable): void {
    if (t.queued) return;
    t.queued = true;
    this.queue.push(t);
    this.arm();
  }

  /** Runs after every slice, e.g. to send accumulated credits. */
  onEndOfSlice(fn: () => void): void {
    this.endOfSliceHooks.push(fn);
  }

  /**
   * Runs after every step inside a slice; must be cheap (a step is a batch). The data plane
   * takes the messages other threads sent meanwhile (batches, credits): waiting for the end of
   * the slice would add up to a slice to every hop of the credit loop between two threads.
   */
  onAfterStep(fn: () => void): void {
    this.afterStepHooks.push(fn);
  }

  private arm(): void {
    if (this.pending) return;
    this.pending = true;
    setImmediate(this.runSlice);
  }

  private readonly runSlice = (): void => {
    this.pending = false;
    const deadline = performance.now() + this.sliceMs;
    while (this.head < this.queue.length) {
      const t = this.queue[this.head]!;
      this.queue[this.head++] = undefined as unknown as Schedulable;
      t.queued = false;
      // A step that woke its own task (wake() during step) has queued it already: once is enough.
      if (t.step() && !t.queued) {
        t.queued = true;
        this.queue.push(t);
      }
      const hooks = this.afterStepHooks;
      for (let i = 0; i < hooks.length; i++) hooks[i]!();
      // A step is a whole batch, so reading the clock after each one costs little and keeps
      // slices short even when batches are slow (I/O and control messages wait no longer).
      if (performance.now() >= deadline) break;
    }
    if (this.head > 256 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    for (const h of this.endOfSliceHooks) h();
    if (this.head < this.queue.length) this.arm();
  };
}
