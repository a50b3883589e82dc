import { describe, expect, it } from 'vitest';
import { TaskTimeAccount } from '../../src/runtime/task-metrics.ts';

describe('TaskTimeAccount: idle, back-pressured and busy time per blocked interval', () => {
  it('splits wall time into idle and back-pressured intervals; busy is what the steps measured', () => {
    const t = new TaskTimeAccount();
    t.open(1000);
    t.block('idle', 1100); // busy 1000..1100
    t.resume(1400); // idle 300
    t.block('backpressure', 1500); // busy 100
    t.resume(1700); // back-pressured 200
    t.addBusy(350); // the steps' measured time (the rest of the 500 ms waited for the thread)
    const x = t.totals(2000);
    expect(x).toEqual({ elapsedMs: 1000, idleMs: 300, backPressuredMs: 200, busyMs: 350, isBackPressured: false });
  });

  it('counts the open interval up to the sample and says the task is back-pressured now', () => {
    const t = new TaskTimeAccount();
    t.open(0);
    t.block('backpressure', 10);
    expect(t.totals(50)).toEqual({ elapsedMs: 50, idleMs: 0, backPressuredMs: 40, busyMs: 0, isBackPressured: true });
    // Sampling does not end the interval: it goes on counting.
    expect(t.totals(90).backPressuredMs).toBe(80);
  });

  it('a second block for the same reason keeps the first start; a different reason closes it', () => {
    const t = new TaskTimeAccount();
    t.open(0);
    t.block('idle', 10);
    t.block('idle', 30);
    t.block('backpressure', 50); // idle 40
    t.resume(80); // back-pressured 30
    expect(t.totals(100)).toMatchObject({ idleMs: 40, backPressuredMs: 30 });
  });

  it('before the task opens everything is zero, and resume without block costs nothing', () => {
    const t = new TaskTimeAccount();
    expect(t.totals(100)).toEqual({ elapsedMs: 0, idleMs: 0, backPressuredMs: 0, busyMs: 0, isBackPressured: false });
    t.open(100);
    t.resume(150);
    expect(t.totals(200)).toMatchObject({ elapsedMs: 100, idleMs: 0, backPressuredMs: 0 });
  });
});
