/**
 * Processing time, injected so that timers and protocols can be tested with a manual clock.
 */
export interface Cancellable {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls fn once at or after `atMs`. */
  schedule(atMs: number, fn: () => void): Cancellable;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(atMs, fn) {
    // Not unref'd: in a one-thread run (weir run -w 1) these timers (a rate-limited source's
    // wake-up, processing-time timers, checkpoint ticks) can be all that keeps the process
    // alive, and an unref'd one let it exit mid-job with code 13 (unsettled top-level await).
    // Tasks and the coordinator cancel their timers when they end, so none outlives a job.
    // A delay past setTimeout's limit (2^31 - 1 ms, ~24.8 days) would fire after 1 ms (Node's
    // TimeoutOverflowWarning), and a timer 30 days ahead woke its task every millisecond: such
    // waits go in steps of the limit.
    let t: ReturnType<typeof setTimeout>;
    const arm = (): void => {
      const delayMs = atMs - Date.now();
      t = delayMs > MAX_TIMEOUT_MS ? setTimeout(arm, MAX_TIMEOUT_MS) : setTimeout(fn, Math.max(0, delayMs));
    };
    arm();
    return { cancel: () => clearTimeout(t) };
  },
};

/** The longest delay setTimeout takes as given. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** A clock that moves only when told to; timers fire in time order during advance(). */
export class ManualClock implements Clock {
  private timers: { at: number; seq: number; fn: () => void; cancelled: boolean }[] = [];
  private seq = 0;
  constructor(private current = 0) {}
  now(): number {
    return this.current;
  }
  schedule(atMs: number, fn: () => void): Cancellable {
    const t = { at: atMs, seq: this.seq++, fn, cancelled: false };
    this.timers.push(t);
    return { cancel: () => { t.cancelled = true; } };
  }
  /** Moves time forward to `to`, firing every timer due on the way, earliest first. */
  advanceTo(to: number): void {
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (next === undefined || next.at > to) break;
      this.timers.shift();
      if (next.at > this.current) this.current = next.at;
      next.fn();
    }
    if (to > this.current) this.current = to;
  }
  advance(ms: number): void {
    this.advanceTo(this.current + ms);
  }
  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }
}
