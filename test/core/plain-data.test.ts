/**
 * A function inside a record or a state value fails where it is packed, naming itself: records
 * crossing threads (columnar or msgpack), snapshot values and the disk backend's stored values.
 * Before, msgpack wrote it as nil and it came back undefined without a word.
 */
import { describe, expect, it } from 'vitest';
import { encodeBatch, encodeValue } from '../../src/core/codec.ts';
import { errorCode } from '../../src/core/errors.ts';
import { packStored } from '../../src/state/disk/stored-value.ts';

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('did not throw');
}

function handler(): number {
  return 1;
}

describe('functions in plain data', () => {
  it('a snapshot value holding a function fails naming it', () => {
    const e = thrown(() => encodeValue({ count: 1, onChange: handler }));
    expect(errorCode(e)).toBe('USER_CODE');
    expect(e.message).toContain('a value holds a function handler, which cannot be stored or sent');
    expect(thrown(() => encodeValue([1, () => 2])).message).toContain('a function');
    expect(thrown(() => encodeValue(new Map([['k', handler]]))).message).toContain('function handler');
  });

  it('a batch crossing threads fails, records of one shape (columnar) or of several (msgpack)', () => {
    const sameShape = [{ k: 'a', f: handler }, { k: 'b', f: handler }];
    const mixed = [{ k: 'a', f: handler }, 7, 'x'];
    for (const values of [sameShape, mixed, [handler]]) {
      expect(thrown(() => encodeBatch({ values, timestamps: values.map(() => 0) })).message).toContain('function handler');
    }
  });

  it('the disk backend refuses to store one', () => {
    expect(thrown(() => packStored({ v: handler })).message).toContain('function handler');
  });

  it('plain data still packs: methods on a prototype are not the value\'s own fields', () => {
    class Point {
      constructor(readonly x: number) {}
      norm(): number {
        return Math.abs(this.x);
      }
    }
    expect(() => encodeValue({ p: new Point(3), d: new Date(0), u: undefined })).not.toThrow();
  });
});
