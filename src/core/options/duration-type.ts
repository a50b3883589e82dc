/** Duration option values: "500ms", "5 s", "1min" or a number of milliseconds, kept as given. */
import { readDuration, type Duration } from '../duration.ts';
import { ok, refuse, type ValueType } from './value-type.ts';

export function duration(b: { readonly minMs?: number; readonly maxMs?: number } = {}): ValueType<Duration> {
  const min = b.minMs ?? 0;
  const max = b.maxMs ?? Number.POSITIVE_INFINITY;
  return {
    metavar: 'D',
    takesValue: true,
    describe: () => (max < Number.POSITIVE_INFINITY ? `duration from ${min} ms to ${max} ms` : min > 0 ? `duration >= ${min} ms` : 'duration'),
    // Kept as written ("30 s"): the consumer converts, and messages can quote the user's text.
    decode: (raw) => (typeof raw === 'string' || typeof raw === 'number' ? ok(raw) : refuse('a string such as "5 s" or a number of milliseconds', raw)),
    check: (v) => {
      const r = readDuration(v);
      if (!('ms' in r)) return { reason: r.problem };
      if (r.ms > max) return { expected: `a duration of at most ${max} ms`, got: `${r.ms} ms` };
      return r.ms < min ? { expected: `a duration of at least ${min} ms`, got: `${r.ms} ms` } : undefined;
    },
    show: (v) => (typeof v === 'number' ? `${v} ms` : v),
  };
}
