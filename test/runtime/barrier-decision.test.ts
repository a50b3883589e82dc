/**
 * The pure decision of how a subtask treats a barrier (aligned, unaligned, aligned until the
 * aligned-checkpoint timeout, or not at all), as a function of the settings, the barrier and the time.
 */
import { describe, expect, it } from 'vitest';
import { barrierHandling, watchesArrivals } from '../../src/runtime/checkpointing/barrier-decision.ts';

const T0 = 1_000_000;
const cp = (timestamp = T0) => ({ type: 'checkpoint' as const, timestamp });

describe('barrier handling', () => {
  it('unaligned off: aligned in exactly-once, nothing held in at-least-once', () => {
    const off = { enabled: false, alignedTimeoutMs: 0 };
    expect(barrierHandling(off, 'exactly-once', cp(), T0)).toEqual({ kind: 'aligned' });
    expect(barrierHandling(off, 'at-least-once', cp(), T0)).toEqual({ kind: 'none' });
    expect(watchesArrivals(off, 'exactly-once')).toBe(false);
  });

  it('unaligned with timeout 0: unaligned from the start', () => {
    const on = { enabled: true, alignedTimeoutMs: 0 };
    expect(barrierHandling(on, 'exactly-once', cp(), T0)).toEqual({ kind: 'unaligned' });
    expect(watchesArrivals(on, 'exactly-once')).toBe(true);
  });

  it('with a timeout: aligned until trigger time + timeout, unaligned from then on (on a fake clock)', () => {
    const s = { enabled: true, alignedTimeoutMs: 200 };
    expect(barrierHandling(s, 'exactly-once', cp(T0), T0)).toEqual({ kind: 'aligned-until', switchAtMs: T0 + 200 });
    // The same barrier reaching a later subtask 150 ms after the trigger: still aligned, same deadline.
    expect(barrierHandling(s, 'exactly-once', cp(T0), T0 + 150)).toEqual({ kind: 'aligned-until', switchAtMs: T0 + 200 });
    // At the deadline and after it (a barrier that spent the timeout queued upstream arrives unaligned).
    expect(barrierHandling(s, 'exactly-once', cp(T0), T0 + 200)).toEqual({ kind: 'unaligned' });
    expect(barrierHandling(s, 'exactly-once', cp(T0), T0 + 5000)).toEqual({ kind: 'unaligned' });
  });

  it('savepoints are always aligned; at-least-once never holds, whatever the unaligned setting', () => {
    const on = { enabled: true, alignedTimeoutMs: 0 };
    expect(barrierHandling(on, 'exactly-once', { type: 'savepoint', timestamp: T0 }, T0 + 10_000)).toEqual({ kind: 'aligned' });
    expect(barrierHandling(on, 'at-least-once', { type: 'savepoint', timestamp: T0 }, T0)).toEqual({ kind: 'aligned' });
    expect(barrierHandling(on, 'at-least-once', cp(), T0)).toEqual({ kind: 'none' });
    expect(watchesArrivals(on, 'at-least-once')).toBe(false);
  });
});
