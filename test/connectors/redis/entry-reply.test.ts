/** An XREAD reply's entries are checked before any position is taken from them (entry-id.ts). */
import { describe, expect, it } from 'vitest';
import { entriesProblem } from '../../../src/connectors/redis/entry-id.ts';

describe('entriesProblem', () => {
  it('accepts [id, [field, value, ...]] entries, and names the first that is not one', () => {
    expect(entriesProblem([])).toBeUndefined();
    expect(entriesProblem([['1700000000000-0', ['data', '{}']], ['1700000000000-1', []]])).toBeUndefined();
    expect(entriesProblem(null)).toBe("the reply's entries are not a list (object)");
    expect(entriesProblem([['1-0', ['a', 'b']], 'x'])).toBe('entry 1 of the reply is not [id, fields]');
    expect(entriesProblem([['abc', ['a', 'b']]])).toBe('entry 0 of the reply has no valid id ("abc")');
    expect(entriesProblem([[undefined, ['a', 'b']]])).toBe('entry 0 of the reply has no valid id (none)');
    expect(entriesProblem([['5-0', null]])).toBe('entry 5-0 of the reply has no [field, value, ...] list');
    expect(entriesProblem([['5-0', ['only-a-field']]])).toBe('entry 5-0 of the reply has no [field, value, ...] list');
  });
});
