/**
 * A source's records-per-second limit (Flink's RateLimiterStrategy), driven by a manual clock
 * from outside the job: the test moves time, waits until every rate-limited subtask has gone
 * to sleep (it schedules its wake-up on the clock), and checks exactly how many records each
 * subtask emitted by then. The limiter is a token bucket from the first poll: after T ms at
 * R records/s a subtask may have emitted floor(T * R / 1000) + 1 records, at most one batch
 * (1024) per poll. The rate is the source's whatever its parallelism: subtasks share it in
 * proportion to the splits they read (one split each at p=2: R / 2 each; a single split at
 * p=2: all of R for the subtask reading it).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, runJob, defineJob, type JobResult, type Source, type SourceSplit } from '../../src/index.ts';
import type { Cancellable } from '../../src/core/clock.ts';

const T0 = 1_000_000;
const BATCH = 1024;

/**
 * The job manager's own timers run on the same injected clock: timeouts (deploying, restoring)
 * minutes ahead, metric sampling a second ahead. The sources in these tests read at 50 records/s
 * or more, so they sleep 20 ms at most. Timers further ahead than this are the job manager's and
 * are left out of what the test watches.
 */
const SOURCE_HORIZON_MS = 500;

/** A manual clock that tells the test when the source's timers are scheduled (a rate-limited source going to sleep). */
class SteppingClock extends ManualClock {
  /** Every time a source timer was scheduled for, in order. */
  readonly scheduled: number[] = [];
  private readonly live: { at: number; done: boolean }[] = [];
  private waiters: { cond: () => boolean; resolve: () => void }[] = [];

  override schedule(atMs: number, fn: () => void): Cancellable {
    // A task's timers come through its mailbox (StreamTask.scheduleMail); the job manager's
    // (timeouts, the metrics sample every second) do not, and are left out of what the test watches.
    if (atMs - this.now() > SOURCE_HORIZON_MS || !/\bscheduleMail\b/.test(new Error().stack ?? '')) return super.schedule(atMs, fn);
    const entry = { at: atMs, done: false };
    const c = super.schedule(atMs, () => {
      entry.done = true;
      fn();
    });
    this.live.push(entry);
    this.scheduled.push(atMs);
    for (const w of this.waiters.splice(0)) {
      if (w.cond()) w.resolve();
      else this.waiters.push(w);
    }
    return { cancel: () => { entry.done = true; c.cancel(); } };
  }

  /** Source timers neither fired nor cancelled. */
  sourceTimers(): number {
    return this.live.filter((t) => !t.done).length;
  }

  /**
   * Resolves once `cond` holds, checked now and whenever a timer is scheduled; rejects if the
   * job ends first (so a limiter that never sleeps fails the test instead of hanging it).
   */
  when(cond: () => boolean, job: Promise<JobResult>, what: string): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ cond, resolve });
      void job.then((r) => reject(new Error(`the job ended (${r.status}) before ${what}`)), reject);
    });
  }
}

/**
 * A bounded source of `perSubtask` numbers per subtask (subtask s emits s*1e6, s*1e6+1, ...); counts what each subtask emitted and each poll's allowance.
 * `reports`: its reader reports each poll's count (reportsCollected), so the runtime counts per poll, not per record.
 */
function counting(perSubtask: number, subtasks: number, reports = false) {
  const emitted = new Array<number>(subtasks).fill(0);
  const polls: number[][] = Array.from({ length: subtasks }, () => []);
  const source: Source<number, SourceSplit> = {
    name: 'numbers',
    bounded: true,
    planSplits: (p) => Array.from({ length: p }, (_, i) => ({ id: `part-${i}` })),
    createReader: (ctx) => {
      const s = ctx.subtaskIndex;
      return {
        reportsCollected: reports,
        addSplits() {},
        poll(out, max) {
          polls[s]!.push(max);
          const before = emitted[s]!;
          for (let i = 0; i < max && emitted[s]! < perSubtask; i++) out.collect(s * 1_000_000 + emitted[s]!++);
          if (reports) out.collected?.(emitted[s]! - before);
          return emitted[s]! < perSubtask ? 'more' : 'end';
        },
        snapshotSplits: () => [],
      };
    },
  };
  return { source, emitted, polls };
}

/** Records a subtask at `rate` records/s may have emitted `elapsed` ms after its first poll. */
const allowed = (rate: number, elapsed: number): number => Math.floor((elapsed * rate) / 1000) + 1;

describe('source rate limit', () => {
  it('at 100 records/s emits exactly floor(T * 100 / 1000) + 1 records by time T, one batch per poll at most, and sleeps until the next is due', async () => {
    const clock = new SteppingClock(T0);
    const { source, emitted, polls } = counting(3000, 1);
    const job = runJob(
      defineJob((env) => void env.fromSource(source, { ratePerSecond: 100 }).collect()),
      { workers: 1, parallelism: 1, clock, stdout: () => {} },
    );
    const asleep = (what: string) => clock.when(() => clock.sourceTimers() === 1, job, what);

    // At the start one record is due; the next is due 10 ms later.
    await asleep('the first sleep');
    expect(emitted).toEqual([1]);
    expect(polls[0]).toEqual([1]);
    expect(clock.scheduled).toEqual([T0 + 10]);

    // One millisecond short of the wake-up: the timer does not fire, nothing is emitted.
    clock.advanceTo(T0 + 9);
    await asleep('the source slept on');
    expect(clock.sourceTimers()).toBe(1);
    expect(emitted).toEqual([1]);

    // 250 ms in: 26 records due, the 25 new ones in one poll; the 27th is due at 260 ms.
    clock.advanceTo(T0 + 250);
    await asleep('the sleep after 250 ms');
    expect(emitted).toEqual([allowed(100, 250)]);
    expect(emitted).toEqual([26]);
    expect(polls[0]).toEqual([1, 25]);
    expect(clock.scheduled).toEqual([T0 + 10, T0 + 260]);

    // One millisecond short of it, nothing; exactly at the due time, exactly one more.
    clock.advanceTo(T0 + 259);
    await asleep('the source slept on');
    expect(emitted).toEqual([26]);
    clock.advanceTo(T0 + 260);
    await asleep('the sleep after 260 ms');
    expect(emitted).toEqual([27]);
    expect(polls[0]).toEqual([1, 25, 1]);
    expect(clock.scheduled).toEqual([T0 + 10, T0 + 260, T0 + 270]);

    // 20 s later: 2001 more are due, more than a batch: two polls (1024 + 977), no more.
    clock.advanceTo(T0 + 20_270);
    await asleep('the sleep after 20.27 s');
    expect(emitted).toEqual([allowed(100, 20_270)]);
    expect(emitted).toEqual([2028]);
    expect(polls[0]).toEqual([1, 25, 1, BATCH, 2001 - BATCH]);
    expect(clock.scheduled.at(-1)).toBe(T0 + 20_280);

    // Enough time for the rest: the source ends and every record arrives, in order.
    clock.advanceTo(T0 + 100_000);
    const r = await job;
    expect(r.status).toBe('FINISHED');
    expect(emitted).toEqual([3000]);
    expect(polls[0]!.slice(5)).toEqual([BATCH]); // a full batch allowed: the remaining 972 records, and the end
    expect(r.collected<number>()).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(clock.sourceTimers()).toBe(0);
  });

  it('a reader that reports each poll\'s count is paced the same, with record counters on or off (the limiter reads the reported count)', async () => {
    for (const recordCounters of [true, false]) {
      const clock = new SteppingClock(T0);
      const { source, emitted, polls } = counting(3000, 1, true);
      const job = runJob(
        defineJob((env) => void env.fromSource(source, { ratePerSecond: 100 }).map((x) => x).collect()),
        { workers: 1, parallelism: 1, clock, stdout: () => {}, recordCounters },
      );
      const asleep = (what: string) => clock.when(() => clock.sourceTimers() === 1, job, what);
      await asleep('the first sleep');
      expect(emitted).toEqual([1]);
      clock.advanceTo(T0 + 250);
      await asleep('the sleep after 250 ms');
      expect(emitted).toEqual([allowed(100, 250)]);
      expect(polls[0]).toEqual([1, 25]);
      clock.advanceTo(T0 + 20_270);
      await asleep('the sleep after 20.27 s');
      expect(emitted).toEqual([allowed(100, 20_270)]);
      expect(polls[0]).toEqual([1, 25, BATCH, 2028 - 26 - BATCH]);
      clock.advanceTo(T0 + 100_000);
      const r = await job;
      expect(r.status).toBe('FINISHED');
      expect(r.collected<number>()).toEqual(Array.from({ length: 3000 }, (_, i) => i));
      // Counted per poll from the reports, exactly; nothing when records are not counted.
      expect(r.progress.recordsIn).toBe(recordCounters ? 3000 : 0);
    }
  });

  it('at parallelism 2 with a split per subtask each subtask gets half the rate: 100 records/s is 50 per subtask', async () => {
    const clock = new SteppingClock(T0);
    const { source, emitted } = counting(200, 2);
    const job = runJob(
      defineJob((env) => void env.fromSource(source, { ratePerSecond: 100 }).collect()),
      { workers: 1, parallelism: 2, clock, stdout: () => {} },
    );
    const bothAsleep = (what: string) => clock.when(() => clock.sourceTimers() === 2, job, what);

    await bothAsleep('the first sleep');
    expect(emitted).toEqual([1, 1]);
    // 50 records/s: the second record of each subtask is due 20 ms in (at 100/s it would be 10).
    expect(clock.scheduled).toEqual([T0 + 20, T0 + 20]);

    clock.advanceTo(T0 + 1000);
    await bothAsleep('the sleep after 1 s');
    expect(emitted).toEqual([allowed(50, 1000), allowed(50, 1000)]);
    expect(emitted).toEqual([51, 51]);
    // Over the whole source: at most the job-wide rate times the time, plus one record per subtask.
    expect(emitted[0]! + emitted[1]!).toBeLessThanOrEqual(100 + 2);
    expect(clock.scheduled.slice(2)).toEqual([T0 + 1020, T0 + 1020]);

    clock.advanceTo(T0 + 2490);
    await bothAsleep('the sleep after 2.49 s');
    expect(emitted).toEqual([125, 125]);

    clock.advanceTo(T0 + 10_000);
    const r = await job;
    expect(r.status).toBe('FINISHED');
    expect(emitted).toEqual([200, 200]);
    const got = r.collected<number>().slice().sort((a, b) => a - b);
    expect(got).toEqual([...Array.from({ length: 200 }, (_, i) => i), ...Array.from({ length: 200 }, (_, i) => 1_000_000 + i)]);
  });

  it('a single split at parallelism 2 is read at the whole source rate, not half of it', async () => {
    const clock = new SteppingClock(T0);
    const polled: number[] = [0, 0];
    let emitted = 0;
    const source: Source<number, SourceSplit> = {
      name: 'one split',
      bounded: true,
      planSplits: () => [{ id: 'only' }],
      createReader: (ctx) => {
        let mine = 0;
        return {
          addSplits(splits) { mine += splits.length; },
          poll(out, max) {
            polled[ctx.subtaskIndex]!++;
            if (mine === 0) return 'end';
            for (let i = 0; i < max && emitted < 300; i++) out.collect(emitted++);
            return emitted < 300 ? 'more' : 'end';
          },
          snapshotSplits: () => [],
        };
      },
    };
    const job = runJob(
      defineJob((env) => void env.fromSource(source, { ratePerSecond: 100 }).collect()),
      { workers: 1, parallelism: 2, clock, stdout: () => {} },
    );
    const asleep = (what: string) => clock.when(() => clock.sourceTimers() === 1, job, what);
    await asleep('the first sleep');
    // The whole 100 records/s: the next record is due 10 ms in (at 50/s it would be 20).
    expect(clock.scheduled).toEqual([T0 + 10]);
    clock.advanceTo(T0 + 1000);
    await asleep('the sleep after 1 s');
    expect(emitted).toBe(allowed(100, 1000));
    expect(clock.scheduled.at(-1)).toBe(T0 + 1010);
    clock.advanceTo(T0 + 10_000);
    const r = await job;
    expect(r.status).toBe('FINISHED');
    expect(r.collected<number>()).toEqual(Array.from({ length: 300 }, (_, i) => i));
    // The subtask without a split ended at its first poll.
    expect(polled[1]).toBe(1);
  });

  it('rejects a rate that is not a positive number', () => {
    return expect(
      runJob(defineJob((env) => void env.fromElements(1, 2).collect().env.fromFile('x.jsonl', { ratePerSecond: 0 })), { workers: 1 }),
    ).rejects.toThrow(/invalid job definition: source option "ratePerSecond" must be a positive number, got 0/);
  });
});
