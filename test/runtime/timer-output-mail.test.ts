/**
 * Processing-time timers fire through output mail: at most PROC_TIMERS_PER_MAIL (1024) per
 * mail, the rest when the task's outputs have room again. Before, every due timer fired in one
 * mail, ahead of the task's back-pressure checks: timers of 50 k keys firing each second went on
 * emitting with the source stopped, their records queued without bound at the output channel.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { HeapKeyedStateBackend } from '../../src/state/heap/backend.ts';
import { InternalTimerService, type Timer } from '../../src/runtime/timers.ts';

describe('processing-time timers and output mail', () => {
  it('fire 1024 per mail, the rest through the continuation, every one once and in time order', () => {
    const clock = new ManualClock(0);
    const backend = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, clock, 'test');
    const fired: number[] = [];
    const later: (() => void)[] = [];
    const timers = new InternalTimerService(
      backend,
      { onEventTime() {}, onProcessingTime: (t: Timer) => void fired.push(t.timestamp) },
      () => clock.now(),
      (at, fn) => clock.schedule(at, fn),
      (fn) => void later.push(fn),
    );
    for (let k = 0; k < 3000; k++) {
      backend.setCurrentKey(`key-${k}`);
      timers.registerProcessingTimeTimer('window', 10);
    }
    clock.advanceTo(20);
    const perMail = [fired.length];
    while (later.length > 0) {
      later.shift()!();
      perMail.push(fired.length - perMail.reduce((a, b) => a + b, 0));
    }
    expect(perMail).toEqual([1024, 1024, 952]);
    expect(fired).toEqual([...fired].sort((a, b) => a - b));
    expect(fired).toHaveLength(3000);
    // A timer registered afterwards still gets its own clock wake-up.
    backend.setCurrentKey('late');
    timers.registerProcessingTimeTimer('window', 30);
    clock.advanceTo(30);
    expect(fired.at(-1)).toBe(30);
  });
});
