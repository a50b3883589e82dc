/**
 * The layouts a window operator records beside its state (runtime/operators/state-layout.ts):
 * every change that makes restored windows unreadable changes the layout, and a change that
 * does not (a session gap, processing-time window sizes: their windows carry their own bounds)
 * keeps it. The end-to-end refusal is in test/savepoint/window-layouts.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { EventTimeSessionWindows, ProcessingTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows } from '../../src/index.ts';
import { checkStateLayout } from '../../src/runtime/operators/state-layout.ts';
import { windowStateLayout } from '../../src/runtime/operators/window.ts';

describe('window state layouts', () => {
  it('differ when the restored windows or contents could not be read, and agree when they could', () => {
    const layouts = [
      windowStateLayout(TumblingEventTimeWindows.of(1000), 'aggregate'),
      windowStateLayout(TumblingEventTimeWindows.of(2000), 'aggregate'),
      windowStateLayout(TumblingEventTimeWindows.of(1000, 500), 'aggregate'),
      windowStateLayout(SlidingEventTimeWindows.of(1000, 500), 'aggregate'),
      windowStateLayout(SlidingEventTimeWindows.of(1000, 250), 'aggregate'),
      windowStateLayout(EventTimeSessionWindows.withGap(500), 'aggregate'),
      windowStateLayout(TumblingEventTimeWindows.of(1000), 'reduce'),
      windowStateLayout(TumblingEventTimeWindows.of(1000), 'list'),
      windowStateLayout(TumblingProcessingTimeWindows.of(1000), 'aggregate'),
    ];
    expect(new Set(layouts).size).toBe(layouts.length);
    expect(windowStateLayout(EventTimeSessionWindows.withGap(500), 'list')).toBe(windowStateLayout(EventTimeSessionWindows.withGap(900), 'list'));
    expect(windowStateLayout(TumblingProcessingTimeWindows.of(1000), 'reduce')).toBe(windowStateLayout(ProcessingTimeSessionWindows.withGap(10), 'reduce'));
  });

  it('a snapshot without a layout (taken before they were recorded) restores as before; another layout is refused with both named', () => {
    const now = windowStateLayout(TumblingEventTimeWindows.of(1000), 'aggregate');
    expect(() => checkStateLayout('counts', undefined, now)).not.toThrow();
    expect(() => checkStateLayout('counts', now, now)).not.toThrow();
    const was = windowStateLayout(EventTimeSessionWindows.withGap(500), 'aggregate');
    expect(() => checkStateLayout('counts', was, now)).toThrow(`operator "counts": the snapshot keeps its state as ${was}, this job as ${now}; it cannot carry over`);
  });
});
