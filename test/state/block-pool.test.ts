/**
 * The pool of snapshot block memory: blocks carved from a slab never overlap while live, start
 * 8-byte aligned, and a slab is reused only once every block carved from it was released.
 */
import { describe, expect, it } from 'vitest';
import { allocBlock, releaseBlock, SLAB_BYTES } from '../../src/state/block-pool.ts';
import { Rng } from '../../src/index.ts';
import { testSeed } from '../api/util.ts';

const overlap = (a: Uint8Array, b: Uint8Array) =>
  a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;

describe('block pool', () => {
  it('live blocks never share bytes; released memory is reused (seeded)', () => {
    const rng = new Rng(testSeed('block-pool'));
    const live: { bytes: Uint8Array; fill: number }[] = [];
    const buffers = new Set<ArrayBufferLike>();
    let allocs = 0;
    for (let round = 0; round < 3000; round++) {
      if (live.length > 0 && (rng.int(2) === 0 || live.length > 40)) {
        const [b] = live.splice(rng.int(live.length), 1);
        expect(b!.bytes.every((x) => x === b!.fill)).toBe(true); // nobody wrote over it meanwhile
        releaseBlock(b!.bytes);
        continue;
      }
      const size = rng.int(4) === 0 ? rng.int(SLAB_BYTES) : 1 + rng.int(300_000);
      const bytes = allocBlock(size);
      allocs++;
      expect(bytes.byteLength).toBe(size);
      expect(bytes.byteOffset % 8).toBe(0);
      for (const o of live) expect(overlap(o.bytes, bytes)).toBe(false);
      const fill = round % 251;
      bytes.fill(fill);
      live.push({ bytes, fill });
      buffers.add(bytes.buffer);
    }
    for (const b of live) releaseBlock(b.bytes);
    expect(buffers.size).toBeLessThan(allocs / 4); // slabs were carved and reused, not one buffer per block
  });

  it('memory not from the pool is ignored; a slab released more often than carved is refused', () => {
    expect(() => releaseBlock(new Uint8Array(8))).not.toThrow();
    const a = allocBlock(16);
    releaseBlock(a);
    expect(() => releaseBlock(a)).toThrow(/released twice/);
  });
});
