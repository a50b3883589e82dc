/** Durations: one parser for code, flags and config files; readDuration says why without throwing. */
import { describe, expect, it } from 'vitest';
import { readDuration, toMillis } from '../../src/core/duration.ts';

describe('readDuration', () => {
  it('reads numbers as milliseconds and strings with units', () => {
    expect(readDuration(250)).toEqual({ ms: 250 });
    expect(readDuration('1.5 min')).toEqual({ ms: 90_000 });
    expect(readDuration(' 2h ')).toEqual({ ms: 7_200_000 });
    expect(readDuration('40')).toEqual({ ms: 40 });
  });

  it('says why a value is not a duration, and whether it is the wrong kind of value', () => {
    expect(readDuration(-1)).toEqual({ problem: 'expected a non-negative duration, got -1', type: false });
    expect(readDuration('soon')).toEqual({ problem: 'cannot read "soon" as a duration; use e.g. 500ms, 5s, 1min, 2h', type: false });
    expect(readDuration('3 weeks')).toEqual({ problem: 'unknown time unit "weeks" in "3 weeks"; use ms, s, min, h or d', type: false });
    expect(readDuration(true)).toEqual({ problem: 'expected a duration such as "5s" or a number of ms, got boolean', type: true });
  });

  it('toMillis throws the same reasons, prefixed, as RangeError or TypeError', () => {
    expect(() => toMillis('soon', 'window size')).toThrow(new RangeError('window size: cannot read "soon" as a duration; use e.g. 500ms, 5s, 1min, 2h'));
    expect(() => toMillis(null as never, 'x')).toThrow(TypeError);
  });
});
