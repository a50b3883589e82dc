/**
 * The scheduler runs tasks round robin, one step each: a task that wakes itself during its own
 * step (a source resuming a split, a mail it sends itself) still has one place in the queue.
 * Before, it got a second place on each such wake, for good, and starved the others (found by a
 * read-only audit: after 0.5 s, 4.9 M steps against 142).
 */
import { describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/runtime/scheduler.ts';

describe('Scheduler', () => {
  it('a task that wakes itself inside its step keeps one place in the round robin', async () => {
    const s = new Scheduler();
    let total = 0;
    const steps = { self: 0, peer: 0 };
    const LIMIT = 2000;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const self = {
      queued: false,
      step(): boolean {
        steps.self++;
        if (steps.self % 10 === 0) s.wake(self);
        return ++total < LIMIT;
      },
    };
    const peer = {
      queued: false,
      step(): boolean {
        steps.peer++;
        if (++total >= LIMIT) done();
        return total < LIMIT;
      },
    };
    s.wake(self);
    s.wake(peer);
    await finished;
    expect(Math.abs(steps.self - steps.peer), JSON.stringify(steps)).toBeLessThanOrEqual(2);
  });
});
