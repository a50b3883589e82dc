/**
 * Durations in the API and CLI: a number of milliseconds or a string such as "500ms",
 * "5s", "1.5 min", "2h", "1d". One parser for both, so config files, flags and code agree.
 */
export type Duration = number | string;

const UNITS: Record<string, number> = {
  ms: 1, millis: 1, millisecond: 1, milliseconds: 1,
  s: 1000, sec: 1000, secs: 1000, second: 1000, seconds: 1000,
  m: 60_000, min: 60_000, mins: 60_000, minute: 60_000, minutes: 60_000,
  h: 3_600_000, hour: 3_600_000, hours: 3_600_000,
  d: 86_400_000, day: 86_400_000, days: 86_400_000,
};

/** A duration in milliseconds, or why `d` is not one (`type`: not even a string or number). */
export type ReadDuration = { readonly ms: number } | { readonly problem: string; readonly type: boolean };

/** Parses a duration without throwing, for callers that word the error themselves. */
export function readDuration(d: unknown): ReadDuration {
  if (typeof d === 'number') {
    if (!Number.isFinite(d) || d < 0) return { problem: `expected a non-negative duration, got ${d}`, type: false };
    return { ms: Math.round(d) }; // whole ms, as a string's: window sizes name state (__w2.5 was never restored)
  }
  if (typeof d !== 'string') return { problem: `expected a duration such as "5s" or a number of ms, got ${typeof d}`, type: true };
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(d);
  if (!m) return { problem: `cannot read "${d}" as a duration; use e.g. 500ms, 5s, 1min, 2h`, type: false };
  const unit = (m[2] ?? '').toLowerCase() || 'ms';
  const factor = UNITS[unit];
  if (factor === undefined) return { problem: `unknown time unit "${m[2]}" in "${d}"; use ms, s, min, h or d`, type: false };
  return { ms: Math.round(Number(m[1]) * factor) };
}

/** Parses a duration to milliseconds; `what` names the setting in the error message. */
export function toMillis(d: Duration, what: string): number {
  const r = readDuration(d);
  if ('ms' in r) return r.ms;
  throw r.type ? new TypeError(`${what}: ${r.problem}`) : new RangeError(`${what}: ${r.problem}`);
}

/** A duration that may be negative (interval join bounds, window offsets): a number of ms, or a string such as "-5 s". */
export function signedMillis(d: Duration, what: string): number {
  if (typeof d === 'number') {
    if (!Number.isFinite(d)) throw new RangeError(`${what}: expected a finite number of ms, got ${d}`);
    return Math.round(d);
  }
  if (typeof d === 'string') {
    const m = /^\s*-\s*(.*)$/.exec(d);
    if (m) return -toMillis(m[1]!, what);
  }
  return toMillis(d, what);
}

export const Time = {
  milliseconds: (n: number): number => n,
  seconds: (n: number): number => n * 1000,
  minutes: (n: number): number => n * 60_000,
  hours: (n: number): number => n * 3_600_000,
  days: (n: number): number => n * 86_400_000,
};
