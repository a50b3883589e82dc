/** JSON from a user's file (core/json-text.ts): JSON.parse's values, keys twice refused, faults by place only. */
import { describe, expect, it } from 'vitest';
import { JsonTextError, parseJsonText } from '../../src/core/json-text.ts';

const fault = (text: string): string => {
  try {
    parseJsonText(text);
  } catch (e) {
    expect(e).toBeInstanceOf(JsonTextError);
    return (e as Error).message;
  }
  throw new Error('no error');
};

describe('parseJsonText', () => {
  it('gives what JSON.parse gives for valid JSON', () => {
    for (const t of ['{}', '[]', ' 1 ', '"a\\u0041\\n"', '[-0.5e+3, 0, 1E2, true, false, null]', '{"a": {"a": [{"a": 1}]}, "b": "\\ud800"}', '\n{"x": [1, [2, [3]]]}\n']) {
      expect(parseJsonText(t), t).toEqual(JSON.parse(t));
    }
  });

  it('refuses a key twice in one object, by its decoded name, with its line', () => {
    expect(fault('{"a": 1,\n  "b": {"a": 2},\n  "a": 3}')).toBe('line 3, column 3: the key "a" is given twice in one object (JSON.parse would keep the last silently)');
    expect(fault('{"\\u0061": 1, "a": 2}')).toMatch(/^line 1, column 15: the key "a" is given twice/);
  });

  it('refuses what JSON.parse refuses, by place', () => {
    for (const t of ['', '{', '[1,]', '{"a" 1}', '[01]', '{a: 1}', "['a']", '"a\tb"', '[1] 2', 'tru', '\ufeff{}', '[NaN]']) {
      expect(() => JSON.parse(t), t).toThrow();
      expect(fault(t), t).toMatch(/^line \d+, column \d+: /);
    }
  });
});
