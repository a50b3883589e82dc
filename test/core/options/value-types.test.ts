/** Option value types: reading flag text and config-file JSON, bounds, and how values are shown. */
import { describe, expect, it } from 'vitest';
import { choice } from '../../../src/core/options/choice.ts';
import { duration } from '../../../src/core/options/duration-type.ts';
import { decimal, integer, positiveInteger } from '../../../src/core/options/numbers.ts';
import { onOff, path, text } from '../../../src/core/options/text.ts';
import type { Decoded, ValueType } from '../../../src/core/options/value-type.ts';

const value = <T>(d: Decoded<T>): T => {
  if (!d.ok) throw new Error(`refused: ${JSON.stringify(d.problem)}`);
  return d.value;
};
const problem = <T>(t: ValueType<T>, raw: unknown, dialect: 'cli' | 'flink' = 'cli') => {
  const d = t.decode(raw, dialect);
  return d.ok ? t.check(d.value) : d.problem;
};

describe('integer', () => {
  const n = integer({ min: 1 });
  it('reads flag text and JSON numbers alike', () => {
    expect(value(n.decode('3', 'cli'))).toBe(3);
    expect(value(n.decode(3, 'flink'))).toBe(3);
    expect(value(n.decode('-2', 'cli'))).toBe(-2); // refused by check, not by reading
  });
  it('refuses what is not an integer, then what is out of bounds', () => {
    expect(problem(n, '1.5')).toEqual({ expected: 'an integer', got: '"1.5"' });
    expect(problem(n, 1.5)).toEqual({ expected: 'an integer', got: '1.5' });
    expect(problem(n, '99999999999999999999')).toEqual({ expected: 'an integer', got: '"99999999999999999999"' });
    expect(problem(n, 0)).toEqual({ expected: 'an integer >= 1', got: '0' });
    expect(n.check(1.5)).toEqual({ expected: 'an integer >= 1', got: '1.5' }); // from code
  });
  it('an upper bound, Infinity only when unlimited, and a noun for the bounds', () => {
    const port = integer({ min: 0, max: 65535 });
    expect(port.check(65536)).toEqual({ expected: 'an integer between 0 and 65535', got: '65536' });
    expect(port.describe('cli')).toBe('integer between 0 and 65535');
    expect(integer({ min: 1 }).check(Infinity)).toBeDefined();
    expect(integer({ min: 1, unlimited: true }).check(Infinity)).toBeUndefined();
    expect(integer({ min: 1, unlimited: true }).show(Infinity, 'cli')).toBe('unlimited');
    expect(problem(positiveInteger(), 'abc')).toEqual({ expected: 'a positive integer', got: '"abc"' });
    expect(problem(positiveInteger(), '0')).toEqual({ expected: 'a positive integer', got: '0' });
    expect(positiveInteger().describe('cli')).toBe('positive integer');
  });
});

describe('decimal', () => {
  const jitter = decimal({ min: 0, max: 1 });
  it('reads text and numbers; says the lower bound or the range, whichever is broken', () => {
    expect(value(jitter.decode('0.25', 'cli'))).toBe(0.25);
    expect(problem(jitter, 'lots')).toEqual({ expected: 'a number', got: '"lots"' });
    expect(problem(jitter, '')).toEqual({ expected: 'a number', got: '""' });
    expect(jitter.check(-0.1)).toEqual({ expected: 'a number >= 0', got: '-0.1' });
    expect(jitter.check(2)).toEqual({ expected: 'between 0 and 1', got: '2' });
    expect(jitter.check(Number.NaN)).toMatchObject({ expected: 'a number >= 0' });
  });
});

describe('duration', () => {
  const interval = duration({ minMs: 10 });
  it('keeps the value as written (the consumer converts it)', () => {
    expect(value(interval.decode('30 s', 'flink'))).toBe('30 s');
    expect(value(interval.decode(500, 'flink'))).toBe(500);
  });
  it('refuses other JSON values, unreadable text and values below the minimum', () => {
    expect(problem(interval, true, 'flink')).toEqual({ expected: 'a string such as "5 s" or a number of milliseconds', got: 'true' });
    expect(problem(interval, 'soon')).toEqual({ reason: 'cannot read "soon" as a duration; use e.g. 500ms, 5s, 1min, 2h' });
    expect(problem(interval, '5ms')).toEqual({ expected: 'a duration of at least 10 ms', got: '5 ms' });
    expect(problem(duration(), -5)).toEqual({ reason: 'expected a non-negative duration, got -5' });
    expect(interval.describe('cli')).toBe('duration >= 10 ms');
    expect(duration().show(0, 'cli')).toBe('0 ms');
  });
  it('with a maximum, refuses more (the manager\'s --interval 30d overflowed setTimeout: a pass every millisecond)', () => {
    const bounded = duration({ minMs: 10, maxMs: 86_400_000 });
    expect(problem(bounded, '30d')).toEqual({ expected: 'a duration of at most 86400000 ms', got: '2592000000 ms' });
    expect(problem(bounded, '1h')).toBeUndefined();
    expect(bounded.describe('cli')).toBe('duration from 10 ms to 86400000 ms');
  });
});

describe('choice', () => {
  const mode = choice('M', [{ value: 'exactly-once', flink: 'EXACTLY_ONCE' }, { value: 'at-least-once', flink: 'AT_LEAST_ONCE', aliases: ['alo'] }] as const);
  it('accepts either spelling, any case, - or _, and aliases', () => {
    for (const raw of ['exactly-once', 'EXACTLY_ONCE', 'exactly_once', 'Exactly-Once']) expect(value(mode.decode(raw, 'cli'))).toBe('exactly-once');
    expect(value(mode.decode('ALO', 'flink'))).toBe('at-least-once');
  });
  it('names the values in the spelling of where the value came from', () => {
    expect(problem(mode, 'sometimes', 'cli')).toEqual({ expected: 'exactly-once or at-least-once', got: '"sometimes"' });
    expect(problem(mode, 'sometimes', 'flink')).toEqual({ expected: 'EXACTLY_ONCE or AT_LEAST_ONCE', got: '"sometimes"' });
    expect(problem(mode, 1, 'flink')).toEqual({ expected: 'EXACTLY_ONCE or AT_LEAST_ONCE', got: '1' });
    expect(mode.describe('flink')).toBe('EXACTLY_ONCE | AT_LEAST_ONCE');
    expect(mode.show('at-least-once', 'flink')).toBe('AT_LEAST_ONCE');
  });
  it('code must use the API value itself', () => {
    expect(mode.check('EXACTLY_ONCE')).toEqual({ expected: 'exactly-once or at-least-once', got: '"EXACTLY_ONCE"' });
    expect(mode.check('exactly-once')).toBeUndefined();
  });
});

describe('text, path and on/off', () => {
  it('text must not be empty; numbers in a config file are text', () => {
    const from = text('X', 'latest, latest-or-empty or a path');
    expect(problem(from, '')).toEqual({ expected: 'latest, latest-or-empty or a path', got: '""' });
    expect(value(from.decode(5, 'flink'))).toBe('5');
    expect(problem(from, { a: 1 }, 'flink')).toEqual({ expected: 'a string', got: '{"a":1}' });
  });
  it('paths: Flink\'s file: URIs are local paths; empty paths are refused', () => {
    expect(value(path().decode('file:///data/chk', 'flink'))).toBe('/data/chk');
    expect(value(path().decode('file:/data/chk', 'cli'))).toBe('/data/chk');
    expect(value(path().decode('relative/dir', 'cli'))).toBe('relative/dir');
    expect(problem(path(), ' ')).toEqual({ expected: 'a non-empty path', got: '" "' });
  });
  it('paths: a URL scheme is refused unless the option takes it (it would be a relative local directory named after it)', () => {
    const storage = path('DIR', ['s3']);
    expect(value(storage.decode('s3://bucket/chk', 'flink'))).toBe('s3://bucket/chk');
    expect(storage.describe('cli')).toBe('path or s3:// URL');
    for (const url of ['s3a://bucket/chk', 'hdfs://nn:8020/chk', 'gs://b/chk']) {
      expect(problem(storage, url, 'flink')).toEqual({ expected: 'a local path or s3://... (s3a:// and s3p:// are written s3:// here)', got: JSON.stringify(url) });
    }
    expect(problem(path(), 's3://bucket/x', 'cli')).toEqual({ expected: 'a local path', got: '"s3://bucket/x"' });
    expect(problem(path(), 'file://nas/chk', 'flink')).toEqual({ expected: 'a local path (a file URI with a host, file://nas/..., names another machine; write file:///path)', got: '"file://nas/chk"' });
    expect(value(path().decode('file://localhost/data/chk', 'flink'))).toBe('/data/chk');
    expect(value(path().decode('C:/data', 'cli'))).toBe('C:/data'); // no "//": not a URL
  });
  it('on/off: booleans, or "true"/"false" in a file; a switch takes no value', () => {
    expect(onOff().takesValue).toBe(false);
    expect(value(onOff().decode('TRUE', 'flink'))).toBe(true);
    expect(value(onOff().decode(false, 'flink'))).toBe(false);
    expect(problem(onOff(), 'yes', 'flink')).toEqual({ expected: 'true or false', got: '"yes"' });
  });
});
