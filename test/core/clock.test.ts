/**
 * The system clock's timers: a wait longer than setTimeout takes (2^31 - 1 ms) is not cut to
 * 1 ms (Node's overflow behaviour, which made a processing-time timer 30 days ahead wake its
 * task every millisecond), and cancelling it works at any step.
 */
import { describe, expect, it } from 'vitest';
import { MAX_TIMEOUT_MS, systemClock } from '../../src/core/clock.ts';

describe('system clock', () => {
  it('a timer further ahead than setTimeout takes does not fire early', async () => {
    let fired = 0;
    const h = systemClock.schedule(Date.now() + 30 * 86_400_000, () => fired++);
    await new Promise((r) => setTimeout(r, 100));
    h.cancel();
    expect(fired).toBe(0);
    expect(MAX_TIMEOUT_MS).toBe(2_147_483_647);
  });

  it('a near timer fires, and a cancelled one does not', async () => {
    const fired: string[] = [];
    systemClock.schedule(Date.now() + 10, () => fired.push('near'));
    systemClock.schedule(Date.now() + 20, () => fired.push('cancelled')).cancel();
    await new Promise((r) => setTimeout(r, 80));
    expect(fired).toEqual(['near']);
  });
});
