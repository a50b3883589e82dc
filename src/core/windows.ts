/**
 * Window assigners. A window is the half-open interval [start, end) of event or processing
 * time; its last timestamp (maxTimestamp) is end - 1, which is when it fires.
 */
import { signedMillis, toMillis, type Duration } from './duration.ts';

export interface TimeWindow {
  readonly start: number;
  readonly end: number;
}

/**
 * The one window of count windows (Flink's GlobalWindow): every record of a key is in it, and
 * a count trigger decides when it fires.
 */
export interface GlobalWindow {
  readonly kind: 'global';
}

export const GLOBAL_WINDOW: GlobalWindow = Object.freeze({ kind: 'global' });

export function maxTimestamp(w: TimeWindow): number {
  return w.end - 1;
}

/** Start of the window of `size` (shifted by `offset`) that contains `ts`; floor arithmetic so negative times work too. */
export function windowStart(ts: number, offset: number, size: number): number {
  const x = ts - offset;
  // Integer times (the usual case, epoch milliseconds) take a division instead of `%`, which V8
  // does in a C call for numbers beyond 32 bits (every epoch timestamp). Exact: x / size is
  // rounded correctly, and for |x| < 2^52 no quotient just below an integer rounds up to it.
  if (x < 4503599627370496 && x > -4503599627370496 && Number.isInteger(x) && Number.isInteger(size)) {
    return ts - (x - Math.floor(x / size) * size);
  }
  const r = x % size;
  return ts - (r < 0 ? r + size : r);
}

export type WindowAssigner = TumblingWindows | SlidingWindows | SessionWindows;

interface AssignerBase {
  readonly eventTime: boolean;
  readonly description: string;
}

export interface TumblingWindows extends AssignerBase {
  readonly kind: 'tumbling';
  readonly size: number;
  readonly offset: number;
}

export interface SlidingWindows extends AssignerBase {
  readonly kind: 'sliding';
  readonly size: number;
  readonly slide: number;
  readonly offset: number;
}

export interface SessionWindows extends AssignerBase {
  readonly kind: 'session';
  readonly gap: number;
}

function positive(d: Duration, what: string): number {
  const ms = toMillis(d, what);
  if (ms <= 0) throw new RangeError(`${what} must be greater than zero, got ${String(d)}`);
  return ms;
}

function tumbling(eventTime: boolean, size: Duration, offset: Duration = 0): TumblingWindows {
  const s = positive(size, 'tumbling window size');
  // Negative offsets too, as in Flink (a day's windows in UTC+8: offset -8 h).
  const o = signedMillis(offset, 'tumbling window offset');
  if (Math.abs(o) >= s) throw new RangeError(`tumbling window offset ${o} ms must be smaller than the size ${s} ms in absolute value`);
  return { kind: 'tumbling', eventTime, size: s, offset: o, description: `Tumbling${eventTime ? 'EventTime' : 'ProcessingTime'}Windows(${s} ms)` };
}

function sliding(eventTime: boolean, size: Duration, slide: Duration, offset: Duration = 0): SlidingWindows {
  const s = positive(size, 'sliding window size');
  const sl = positive(slide, 'sliding window slide');
  const o = signedMillis(offset, 'sliding window offset');
  if (Math.abs(o) >= sl) throw new RangeError(`sliding window offset ${o} ms must be smaller than the slide ${sl} ms in absolute value`);
  return { kind: 'sliding', eventTime, size: s, slide: sl, offset: o, description: `Sliding${eventTime ? 'EventTime' : 'ProcessingTime'}Windows(${s} ms, ${sl} ms)` };
}

function session(eventTime: boolean, gap: Duration): SessionWindows {
  const g = positive(gap, 'session gap');
  return { kind: 'session', eventTime, gap: g, description: `${eventTime ? 'EventTime' : 'ProcessingTime'}SessionWindows(${g} ms)` };
}

export const TumblingEventTimeWindows = { of: (size: Duration, offset?: Duration) => tumbling(true, size, offset) };
export const TumblingProcessingTimeWindows = { of: (size: Duration, offset?: Duration) => tumbling(false, size, offset) };
export const SlidingEventTimeWindows = { of: (size: Duration, slide: Duration, offset?: Duration) => sliding(true, size, slide, offset) };
export const SlidingProcessingTimeWindows = { of: (size: Duration, slide: Duration, offset?: Duration) => sliding(false, size, slide, offset) };
export const EventTimeSessionWindows = { withGap: (gap: Duration) => session(true, gap) };
export const ProcessingTimeSessionWindows = { withGap: (gap: Duration) => session(false, gap) };
