/**
 * Strings with a lone surrogate (half an emoji, as slice() cuts one) come back exactly through
 * every msgpack path: snapshot values (encodeValue), batches between threads (the columnar
 * codec's fallback and its packed columns), and the disk backend's stored values. Before,
 * msgpack wrote U+FFFD in their place: a key crossing threads became another key, and a timer's
 * key in a checkpoint no longer matched its state's.
 */
import { describe, expect, it } from 'vitest';
import { decodeBatch, decodeValue, encodeBatch, encodeValue } from '../../src/core/codec.ts';
import { packStored, unpackStored } from '../../src/state/disk/stored-value.ts';

const cut = 'user-😀'.slice(0, 6); // 'user-\uD83D'
const other = 'user-😁'.slice(0, 6); // the same high surrogate: a different key only by what was cut
const low = '\uDC00tail';

describe('strings UTF-8 cannot carry', () => {
  it('snapshot values keep them, nested in arrays, objects, maps and sets; a real U+FFFD stays itself', () => {
    const v = { k: cut, list: [cut, 'plain', { low }], map: new Map([[cut, low]]), set: new Set([low]), real: '\uFFFD', n: 1 };
    const back = decodeValue<typeof v>(encodeValue(v));
    expect(back.k).toBe(cut);
    expect(back.list).toEqual([cut, 'plain', { low }]);
    expect(back.map.get(cut)).toBe(low);
    expect(back.set.has(low)).toBe(true);
    expect(back.real).toBe('\uFFFD');
    expect(decodeValue(encodeValue(cut))).toBe(cut);
    expect(decodeValue(encodeValue([cut, 'x'.repeat(100_000) + low]))).toEqual([cut, 'x'.repeat(100_000) + low]);
  });

  it('a batch crossing threads keeps them, whether it goes columnar, msgpack or as a packed column', () => {
    for (const values of [[{ k: cut }, { k: low }], [{ k: cut }, { k: 1 }], [{ k: 'a', tags: [cut] }, { k: 'b', tags: [low] }], [cut, 7]]) {
      expect(decodeBatch(encodeBatch({ values, timestamps: values.map(() => 0) })).values).toEqual(values);
    }
  });

  it('the disk backend stores them exactly', () => {
    expect(unpackStored(packStored({ k: cut, v: [low] }))).toEqual({ k: cut, v: [low] });
  });

  it('two keys that differ only in their lone surrogate stay two keys', () => {
    const [a, b] = decodeValue<string[]>(encodeValue([cut, other.slice(0, 5) + '\uD83E']));
    expect(a).not.toBe(b);
    expect(a).toBe(cut);
  });
});
