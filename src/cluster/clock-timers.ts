/**
 * Waiting on the injected clock (the job manager never reads wall time or sets a timer by
 * itself): a cancellable sleep, a repeating timer and a one-shot deadline.
 */
import type { Cancellable, Clock } from '../core/clock.ts';

/** Resolves after `ms` on `clock`, or at once when `cancel` is called. */
export function sleep(clock: Clock, ms: number): { readonly done: Promise<void>; cancel(): void } {
  let wake: () => void = () => {};
  const done = new Promise<void>((resolve) => (wake = resolve));
  const timer = clock.schedule(clock.now() + Math.max(0, ms), () => wake());
  return {
    done,
    cancel: () => {
      timer.cancel();
      wake();
    },
  };
}

/** Calls `fn` every `intervalMs` on `clock` until cancelled. */
export function every(clock: Clock, intervalMs: number, fn: () => void): Cancellable {
  if (!(intervalMs > 0)) throw new RangeError(`interval must be > 0 ms, got ${intervalMs}`);
  let cancelled = false;
  let timer: Cancellable | undefined;
  const arm = (at: number) => {
    timer = clock.schedule(at, () => {
      if (cancelled) return;
      fn();
      // One interval after this one was due (no drift); after a stall of the process, once, not a burst.
      arm(Math.max(at + intervalMs, clock.now()));
    });
  };
  arm(clock.now() + intervalMs);
  return {
    cancel: () => {
      cancelled = true;
      timer?.cancel();
    },
  };
}

/** Calls `fn` once, `ms` from now on `clock`, unless cancelled first. */
export function after(clock: Clock, ms: number, fn: () => void): Cancellable {
  return clock.schedule(clock.now() + ms, fn);
}
