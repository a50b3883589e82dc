/**
 * Per-split event time of a source reader, as pure decisions with a fake clock: minimum over
 * splits, splits not yet read hold time back, idleness by the clock (never for paused splits),
 * alignment pauses splits ahead by more than maxDrift and resumes them when the rest catch up.
 */
import { describe, expect, it } from 'vitest';
import { WatermarkStrategy } from '../../src/core/watermark-strategy.ts';
import { SplitWatermarks } from '../../src/runtime/operators/split-watermarks.ts';
import { MIN_WATERMARK } from '../../src/runtime/events.ts';

const bounded = WatermarkStrategy.forBoundedOutOfOrderness<unknown>(0) as WatermarkStrategy<unknown>;

function feed(st: SplitWatermarks, id: string, ts: number, now: number): void {
  const h = st.handle(id);
  h.generator.onEvent(null, ts, h);
  st.touched(id, now);
  st.emitFor(id);
}

describe('SplitWatermarks', () => {
  it('the reader watermark is the minimum over its splits; a split not yet read holds it at the minimum', () => {
    const st = new SplitWatermarks(bounded, { idleTimeoutMs: undefined, maxDriftMs: undefined });
    st.add('a', 0);
    st.add('b', 0);
    st.start('a', 0);
    feed(st, 'a', 5000, 0);
    expect(st.current()).toEqual({ idle: false, watermark: MIN_WATERMARK });
    st.start('b', 0);
    feed(st, 'b', 3000, 0);
    expect(st.current()).toEqual({ idle: false, watermark: 2999 });
    st.finish('b');
    expect(st.current()).toEqual({ idle: false, watermark: 4999 });
    st.finish('a');
    expect(st.current()).toEqual({ idle: true });
  });

  it('a bounded reader whose splits all finished is ending, not idle; unbounded, or never holding a split, it is idle', () => {
    // Idle before the end-of-input watermark let a downstream operator go idle, and the stage after
    // it pass the windows it then fired at the end (Nexmark q5 on 2 workers dropped records).
    const ending = new SplitWatermarks(bounded, { idleTimeoutMs: undefined, maxDriftMs: undefined, bounded: true });
    expect(ending.current()).toEqual({ idle: true }); // never held a split
    ending.add('a', 0);
    ending.start('a', 0);
    feed(ending, 'a', 5000, 0);
    ending.finish('a');
    expect(ending.current()).toEqual({ idle: false, watermark: MIN_WATERMARK });
    const unbounded = new SplitWatermarks(bounded, { idleTimeoutMs: undefined, maxDriftMs: undefined, bounded: false });
    unbounded.add('a', 0);
    unbounded.start('a', 0);
    feed(unbounded, 'a', 5000, 0);
    unbounded.finish('a');
    expect(unbounded.current()).toEqual({ idle: true });
  });

  it('a split being read that is silent for the idle timeout stops holding time back, and holds it again on its next record', () => {
    const st = new SplitWatermarks(bounded.withIdleness(1000), { idleTimeoutMs: 1000, maxDriftMs: undefined });
    for (const id of ['a', 'b']) { st.add(id, 0); st.start(id, 0); }
    feed(st, 'a', 10_000, 0);
    feed(st, 'b', 2_000, 0);
    st.periodic(500);
    expect(st.current()).toEqual({ idle: false, watermark: 1999 });
    feed(st, 'a', 10_500, 900);
    st.periodic(1000); // b silent for 1000 ms
    expect(st.current()).toEqual({ idle: false, watermark: 10_499 });
    feed(st, 'b', 2_100, 1100);
    expect(st.current()).toEqual({ idle: false, watermark: 2099 });
    st.periodic(5000);
    // Both idle: the reader stays at the slower split's (before: it jumped to a's 10,499, and b's
    // next records, on time for b, were dropped as late downstream).
    expect(st.current()).toEqual({ idle: true, last: 2099 });
  });

  it('splits going idle in one pass: the reader goes to the split watermark there is before it is idle (splits with none left out)', () => {
    // An empty stream beside one read to its end at once: both idle at the same tick. Before,
    // the reader went idle at the lowest (MIN), and downstream windows never fired.
    const st = new SplitWatermarks(bounded.withIdleness(200), { idleTimeoutMs: 200, maxDriftMs: undefined });
    for (const id of ['a', 'b']) { st.add(id, 0); st.start(id, 0); }
    feed(st, 'a', 489, 0);
    st.periodic(20);
    expect(st.current()).toEqual({ idle: false, watermark: MIN_WATERMARK }); // b holds time back
    st.periodic(240);
    expect(st.current()).toEqual({ idle: true, last: 488 });
  });

  it('a split not yet started never turns idle (its records are still to come)', () => {
    const st = new SplitWatermarks(bounded.withIdleness(10), { idleTimeoutMs: 10, maxDriftMs: undefined });
    st.add('a', 0);
    st.add('b', 0);
    st.start('a', 0);
    feed(st, 'a', 100, 0);
    st.periodic(1_000_000);
    expect(st.current()).toEqual({ idle: false, watermark: MIN_WATERMARK });
  });

  it('alignment pauses a split ahead by more than maxDrift, never the slowest, resumes it when the others catch up; a paused split never idles', () => {
    const st = new SplitWatermarks(bounded.withIdleness(100), { idleTimeoutMs: 100, maxDriftMs: 1000 });
    for (const id of ['a', 'b']) { st.add(id, 0); st.start(id, 0); }
    feed(st, 'a', 1000, 0);
    feed(st, 'b', 1000, 0);
    expect(st.align()).toEqual({ pause: [], resume: [] });
    feed(st, 'a', 2500, 0);
    expect(st.align()).toEqual({ pause: ['a'], resume: [] });
    expect(st.isPaused('a')).toBe(true);
    expect(st.isPaused('b')).toBe(false);
    // a is silent because it is paused: it must not turn idle and let b's time be overtaken.
    feed(st, 'b', 1200, 500);
    st.periodic(550);
    expect(st.current()).toEqual({ idle: false, watermark: 1199 });
    feed(st, 'b', 1600, 560);
    expect(st.align()).toEqual({ pause: [], resume: ['a'] });
    st.resumed(['a'], 560);
    st.periodic(600);
    expect(st.current()).toEqual({ idle: false, watermark: 1599 });
  });

  it('while a split is not started, every split ahead of the minimum by maxDrift is paused', () => {
    const st = new SplitWatermarks(bounded, { idleTimeoutMs: undefined, maxDriftMs: 5000 });
    st.add('a', 0);
    st.add('b', 0);
    st.start('a', 0);
    feed(st, 'a', 1_700_000_000_000, 0);
    expect(st.align()).toEqual({ pause: ['a'], resume: [] });
    st.start('b', 0);
    feed(st, 'b', 1_700_000_000_000 - 3000, 0);
    expect(st.align()).toEqual({ pause: [], resume: ['a'] });
  });
});
