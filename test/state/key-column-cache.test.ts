/**
 * The key column cache (key-column-cache.ts, heap/group-map.ts): a group encoded with its
 * cache gives the very bytes it gives without (and encodeColumns gives), whatever happened to
 * the Map since the cache was filled; the cache is actually reused; a change around the Map's
 * methods is noticed; and a heap backend with caching on writes the same state files as one
 * with it off, which restore to what a model holds.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { encodeColumns } from '../../src/state/columnar-block.ts';
import { encodeMapColumnParts, encodeMapColumns, joinParts } from '../../src/state/columnar-map.ts';
import { appendColumns, cacheStats, copySegments, KeyColumnCache, returnView } from '../../src/state/key-column-cache.ts';
import { GroupMap, newGroupMap, NumberGroupMap } from '../../src/state/heap/group-map.ts';
import { KeyTable, keyHash } from '../../src/state/key-table.ts';
import { HeapKeyedStateBackend } from '../../src/state/heap/backend.ts';
import { keyedStateBackendFactory } from '../../src/state/backends.ts';
import { keyGroupOf, type NormKey } from '../../src/state/key-groups.ts';
import { Rng, ValueStateDescriptor } from '../../src/index.ts';
import { testSeed } from '../api/util.ts';
import type { StateInputHandle } from '../../src/core/state-streams.ts';
import { FULL, MAXP, MemoryStreams, writeSnapshot } from './backend-contract.ts';

/** Encodes with the cache and checks: the bytes of encodeColumns and of the uncached encoder, and what the cache holds. */
function encodeChecked(m: Map<NormKey, unknown>, c: KeyColumnCache, what: string): Uint8Array {
  const bytes = encodeMapColumns(m, undefined, undefined, c);
  const plain = encodeMapColumns(m);
  const columns = encodeColumns([...m.keys()], [...m.values()]);
  expect(Buffer.from(bytes).equals(Buffer.from(plain)), what).toBe(true);
  expect(Buffer.from(bytes).equals(Buffer.from(columns)), what).toBe(true);
  const stringKeys = m.size > 0 && [...m.keys()].every((k) => typeof k === 'string');
  expect(c.count, what).toBe(stringKeys ? m.size : 0);
  return bytes;
}

/** A group map of `n` keys `${prefix}0`, `${prefix}1`, ... holding 0, 1, .... */
function groupOfKeys(n: number, prefix: string): GroupMap {
  const m = new GroupMap();
  for (let i = 0; i < n; i++) m.set(prefix + i, i);
  return m;
}

/** Every key of `desc` and its value in a heap backend restored from one state file. */
async function restoredValues(file: StateInputHandle, desc: ValueStateDescriptor<number>, clock: ManualClock): Promise<Map<NormKey, number>> {
  const r = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op');
  await r.restore([file]);
  const state = r.getValueState(desc);
  const out = new Map<NormKey, number>();
  for (const { key } of [...r.keys(desc.name)]) {
    r.setCurrentKey(key);
    out.set(key as NormKey, state.value()!);
  }
  return out;
}

describe('key column cache', () => {
  it('reuses the keys of a group whose values changed, appends new keys, and encodes all again after a removal', () => {
    const mismatches = cacheStats.countMismatches;
    const m = new GroupMap();
    for (let i = 0; i < 1000; i++) m.set('w' + i, i % 7);
    const c = new KeyColumnCache();
    encodeChecked(m, c, 'first');
    expect(cacheStats.reusedKeys).toBe(0);
    for (let i = 0; i < 1000; i += 3) m.set('w' + i, 1000 + i);
    encodeChecked(m, c, 'values changed');
    expect(cacheStats.reusedKeys).toBe(1000);
    for (let i = 1000; i < 1010; i++) m.set('w' + i, 1);
    encodeChecked(m, c, 'keys added');
    expect(cacheStats.reusedKeys).toBe(1000);
    m.delete('w500');
    encodeChecked(m, c, 'a key deleted');
    expect(cacheStats.reusedKeys).toBe(0);
    m.set('w10', 5); // an update keeps the position
    m.delete('w20');
    m.set('w20', 5); // a re-insert goes to the end
    encodeChecked(m, c, 'a key re-inserted');
    expect(cacheStats.reusedKeys).toBe(0);
    m.set('new', 1);
    encodeChecked(m, c, 'after the re-insert');
    expect(cacheStats.reusedKeys).toBe(1009);
    m.clear();
    m.set('a', 1);
    encodeChecked(m, c, 'cleared, one key');
    expect(cacheStats.reusedKeys).toBe(0);
    expect(cacheStats.countMismatches).toBe(mismatches);
  });

  it('a group that keeps gaining keys never has its cached column copied: 2 % more a snapshot for 20 snapshots keeps every segment, in few segments', () => {
    const m = groupOfKeys(10_000, 'k');
    const c = new KeyColumnCache();
    encodeChecked(m, c, 'filled');
    const firstChars = c.charSegments[0]!;
    const firstLens = c.lenSegments[0]!;
    for (let step = 0; step < 20; step++) {
      const before = [...c.charSegments];
      const more = Math.ceil(m.size * 0.02);
      for (let i = 0; i < more; i++) m.set('k' + m.size, step);
      encodeChecked(m, c, `step ${step}`);
      expect(cacheStats.reusedKeys, `step ${step}`).toBe(m.size - more);
      // Each segment there before is still there, the same memory: appends only add.
      before.forEach((seg, i) => expect(c.charSegments[i], `step ${step}`).toBe(seg));
    }
    expect(c.charSegments[0]).toBe(firstChars);
    expect(c.lenSegments[0]).toBe(firstLens);
    // 49 % more keys in all, room of 1/8 per new segment: a handful of segments, not one per snapshot.
    expect(c.charSegments.length).toBeLessThanOrEqual(5);
    expect(c.lenSegments.length).toBeLessThanOrEqual(5);
  });

  it('a young group gaining 40 % keeps its first segment; a group filled afresh after a removal is one segment sized tight', () => {
    const m = groupOfKeys(5000, 'key');
    const c = new KeyColumnCache();
    encodeChecked(m, c, 'first fill');
    const first = c.charSegments[0]!;
    expect(first.length).toBeLessThanOrEqual(c.charCount + (c.charCount >>> 4) + 64);
    for (let i = 5000; i < 7000; i++) m.set('key' + i, i);
    encodeChecked(m, c, '40 % more keys');
    expect(cacheStats.reusedKeys).toBe(5000);
    expect(c.charSegments[0]).toBe(first);
    expect(c.charSegments).toHaveLength(2);
    m.delete('key0');
    encodeChecked(m, c, 'encoded afresh after a removal');
    expect(cacheStats.reusedKeys).toBe(0);
    expect(c.charSegments).toHaveLength(1);
    expect(c.charSegments[0]!.length).toBeLessThanOrEqual(c.charCount + (c.charCount >>> 4) + 64);
    expect(c.lenSegments[0]!.length).toBeLessThanOrEqual(c.count + (c.count >>> 4) + 64);
  });

  it('a block handed out in pieces (key columns as views of the cache) keeps its bytes until written, through later appends, removals, wider keys and clears (seeded)', () => {
    const seed = testSeed('key column pieces stay');
    const rng = new Rng(seed);
    const m = new GroupMap();
    const c = new KeyColumnCache();
    const handedOut: { parts: Uint8Array[]; bytes: Buffer }[] = [];
    let written = 0;
    for (let step = 0; step < 60; step++) {
      const what = `seed ${seed} step ${step}`;
      const op = rng.int(10);
      if (op < 6) for (let i = 0, n = 1 + rng.int(300); i < n; i++) m.set('k' + rng.int(100_000), rng.int(1000));
      else if (op === 6 && m.size > 0) m.delete([...m.keys()][rng.int(m.size)]!);
      else if (op === 7) m.set('wide' + String.fromCharCode(0x100 + rng.int(1000)) + rng.int(100), 1);
      else if (op === 8) m.set('long'.repeat(70 + rng.int(20)) + rng.int(1000), 2);
      else m.clear();
      const parts = encodeMapColumnParts(m, undefined, (n) => new Uint8Array(n), c);
      const bytes = Buffer.from(joinParts(parts));
      expect(bytes.equals(Buffer.from(encodeColumns([...m.keys()], [...m.values()]))), what).toBe(true);
      if (Array.isArray(parts)) handedOut.push({ parts, bytes });
      // Some blocks are written meanwhile (their pieces given back, as the state file does): their memory may be reused.
      for (let i = handedOut.length - 1; i >= 0; i--) {
        if (rng.int(3) !== 0) continue;
        for (const piece of handedOut[i]!.parts) returnView(piece);
        handedOut.splice(i, 1);
        written++;
      }
      // Every block handed out and not yet written still reads as it did.
      for (const [i, h] of handedOut.entries()) expect(Buffer.from(joinParts(h.parts)).equals(h.bytes), `${what}: block ${i}`).toBe(true);
    }
    expect(written).toBeGreaterThan(10);
    for (const h of handedOut) for (const piece of h.parts) returnView(piece);
    expect(c.lent).toBe(0);
  });

  it('a group filled again after a removal reuses its segments once every view of them was written, and makes new ones while one is out', () => {
    const m = groupOfKeys(3000, 'key');
    const c = new KeyColumnCache();
    const encode = (): Uint8Array[] => encodeMapColumnParts(m, undefined, (n) => new Uint8Array(n), c) as Uint8Array[];
    const first = encode();
    const segment1 = c.charSegments[0]!;
    m.delete('key1');
    const second = encode();
    const segment2 = c.charSegments[0]!;
    expect(segment2, 'the first block is not written yet: new memory').not.toBe(segment1);
    for (const piece of first) returnView(piece);
    m.delete('key2');
    const third = encode();
    const segment3 = c.charSegments[0]!;
    expect(segment3, 'the second block is not written yet: new memory').not.toBe(segment2);
    for (const piece of [...second, ...third]) returnView(piece);
    expect(c.lent).toBe(0);
    m.delete('key3');
    const fourth = encode();
    expect(c.charSegments, 'every block written: filled in place').toEqual([segment3]);
    expect(Buffer.from(joinParts(fourth)).equals(Buffer.from(encodeColumns([...m.keys()], [...m.values()])))).toBe(true);
    for (const piece of fourth) returnView(piece);
    expect(() => returnView(fourth[1]!)).not.toThrow(); // a piece given back twice is no longer known: ignored
  });

  it('views a file never gives back (it failed) hold up only the segments they saw: the next segments are reused once their own views are back', () => {
    const m = groupOfKeys(2000, 'key');
    const c = new KeyColumnCache();
    const encode = (): Uint8Array[] => encodeMapColumnParts(m, undefined, (n) => new Uint8Array(n), c) as Uint8Array[];
    encode(); // a file that failed: its views never come back
    const lost = c.charSegments[0]!;
    m.delete('key1');
    const second = encode();
    const segment2 = c.charSegments[0]!;
    expect(segment2).not.toBe(lost);
    expect(c.lent).toBe(c.charSegments.length + c.lenSegments.length); // a view per segment: the header, padding and values are not the cache's
    for (const piece of second) returnView(piece);
    expect(c.lent).toBe(0);
    m.delete('key2');
    const third = encode();
    expect(c.charSegments).toEqual([segment2]);
    expect(Buffer.from(joinParts(third)).equals(Buffer.from(encodeColumns([...m.keys()], [...m.values()])))).toBe(true);
    for (const piece of third) returnView(piece);
  });

  it('appends of any size, Latin-1 or UTF-16, short or long keys, keep exactly the characters and lengths appended, in at most 16 segments (seeded)', () => {
    const seed = testSeed('key column segments');
    const rng = new Rng(seed);
    for (let round = 0; round < 20; round++) {
      const c = new KeyColumnCache();
      const chars: number[] = [];
      const lens: number[] = [];
      for (let step = 0; step < 40; step++) {
        const fresh = step === 0 || rng.int(15) === 0;
        // Mostly small appends, some as large as what is held (a new segment each), rarely a wide or long key.
        const n = rng.int(4) === 0 ? 1 + rng.int(Math.max(1, lens.length + 1)) : 1 + rng.int(20);
        const newLens = Array.from({ length: n }, () => (rng.int(50) === 0 ? 256 + rng.int(300) : rng.int(12)));
        const wide = rng.int(30) === 0;
        const newChars = newLens.flatMap((l) => Array.from({ length: l }, () => (wide && rng.int(4) === 0 ? 0x100 + rng.int(0xff00) : 0x20 + rng.int(0xdf))));
        const src = newChars.some((ch) => ch > 0xff) ? Uint16Array.from(newChars) : Uint8Array.from(newChars);
        if (fresh) {
          chars.length = 0;
          lens.length = 0;
        }
        appendColumns(c, fresh ? 0 : c.count, src, src.length, Uint32Array.from(newLens), n, newLens.reduce((a, x) => Math.max(a, x), 0));
        // Loops, not push(...xs): an append can be larger than the call stack takes as arguments.
        for (const x of newChars) chars.push(x);
        for (const x of newLens) lens.push(x);
        const what = `seed ${seed} round ${round} step ${step}`;
        expect(c.count, what).toBe(lens.length);
        expect(c.charCount, what).toBe(chars.length);
        expect(c.longest, what).toBe(lens.reduce((a, x) => Math.max(a, x), 0));
        expect(c.wide, what).toBe(chars.some((ch) => ch > 0xff) || c.charSegments[0] instanceof Uint16Array);
        const gotChars = c.wide ? new Uint16Array(c.charCount) : new Uint8Array(c.charCount);
        copySegments(gotChars, 0, c.charSegments, c.charCount);
        expect([...gotChars], what).toEqual(chars);
        const gotLens = new Uint32Array(c.count);
        copySegments(gotLens, 0, c.lenSegments, c.count);
        expect([...gotLens], what).toEqual(lens);
        expect(c.charSegments.length, what).toBeLessThanOrEqual(16);
        expect(c.lenSegments.length, what).toBeLessThanOrEqual(16);
        // Every segment but the last is full: what they hold adds up.
        const held = (segs: { length: number }[], used: number) => segs.slice(0, -1).reduce((a, x) => a + x.length, 0) <= used;
        expect(held(c.charSegments, c.charCount) && held(c.lenSegments, c.count), what).toBe(true);
      }
    }
  });

  it('appends however many keys a group gained (no bound: nothing is recorded per insert); a plain Map encodes every key again', () => {
    const m = new GroupMap();
    for (let i = 0; i < 4000; i++) m.set('k' + i, 1);
    const c = new KeyColumnCache();
    encodeChecked(m, c, 'first');
    for (let i = 4000; i < 7000; i++) m.set('k' + i, 2);
    expect(m.insertedSinceFill()).toHaveLength(3000);
    encodeChecked(m, c, 'many keys added');
    expect(cacheStats.reusedKeys).toBe(4000);
    for (let i = 0; i < 200_000; i++) m.set('n' + i, 3); // grown and rebuilt many times over: entries keep their numbers
    encodeChecked(m, c, 'the table grown many times');
    expect(cacheStats.reusedKeys).toBe(7000);
    const plain = new Map<NormKey, unknown>([['a', 1], ['b', 2]]);
    encodeChecked(plain, c, 'a plain Map');
    plain.set('c', 3);
    encodeChecked(plain, c, 'a plain Map, a key added');
    expect(cacheStats.reusedKeys).toBe(0);
  });

  it('after a delete, the table\'s renumbering (holes dropped as it grows) leaves the inserts unknown, not miscounted', () => {
    const m = groupOfKeys(100, 'k');
    const c = new KeyColumnCache();
    encodeChecked(m, c, 'first');
    m.delete('k5'); // a hole, and the tracking stops
    encodeChecked(m, c, 'a key deleted');
    expect(cacheStats.reusedKeys).toBe(0);
    const generation = m.generation;
    for (let i = 100; i < 5000; i++) m.set('k' + i, i); // grows: the hole is dropped, entries renumbered
    expect(m.generation).toBeGreaterThan(generation);
    expect(m.insertedSinceFill()).toBeUndefined();
    encodeChecked(m, c, 'grown past the hole');
    expect(cacheStats.reusedKeys).toBe(0);
    m.set('last', 1);
    encodeChecked(m, c, 'one more');
    expect(cacheStats.reusedKeys).toBe(m.size - 1);
  });

  it('a group takes the kind of map its first key suits; a KeyTable group knows its inserts until one is removed, a Map group never', () => {
    expect(newGroupMap('w1')).toBeInstanceOf(GroupMap);
    expect(newGroupMap(7)).toBeInstanceOf(NumberGroupMap);
    const g = new GroupMap();
    g.set('z', 0);
    expect(g.insertedSinceFill()).toBeUndefined(); // not filled yet
    g.markFilled();
    g.set('a', 1).set('a', 2).set('b', 3).set(2, 4).set('z', 5);
    expect(g.insertedSinceFill()).toEqual(['a', 'b', 2]); // an update is no insert
    g.delete('nothing');
    expect(g.insertedSinceFill()).toEqual(['a', 'b', 2]);
    g.delete('b');
    expect(g.insertedSinceFill()).toBeUndefined();
    g.markFilled();
    expect(g.insertedSinceFill()).toEqual([]);
    g.clear();
    expect(g.insertedSinceFill()).toBeUndefined();
    const n = newGroupMap(1);
    n.markFilled();
    n.set(1, 1).set('a', 2);
    expect(n.insertedSinceFill()).toBeUndefined();
  });

  it('is not fooled by a change that went around the map\'s methods: an insert is seen anyway (entries only append), a delete is counted and every key encoded again', () => {
    const m = new GroupMap();
    m.set('a', 1);
    m.set('b', 2);
    const c = new KeyColumnCache();
    encodeChecked(m, c, 'first');
    const before = cacheStats.countMismatches;
    KeyTable.prototype.set.call(m, 'sneaky', 3); // around GroupMap's own methods
    encodeChecked(m, c, 'an insert around set()');
    expect(cacheStats.countMismatches).toBe(before);
    expect(cacheStats.reusedKeys).toBe(2);
    KeyTable.prototype.deleteHashed.call(m, 'a', keyHash('a')); // delete() itself goes through deleteHashed
    encodeChecked(m, c, 'a delete around delete()');
    expect(cacheStats.countMismatches).toBe(before + 1);
    expect(cacheStats.reusedKeys).toBe(0);
    m.set('c', 4);
    KeyTable.prototype.deleteHashed.call(m, 'c', keyHash('c')); // a removed entry among the new ones
    m.set('d', 5);
    encodeChecked(m, c, 'an insert removed around delete(), then another');
    expect(cacheStats.reusedKeys).toBe(0);
  });

  it('switches between Latin-1 and UTF-16 and between length widths as keys come and go', () => {
    const c = new KeyColumnCache();
    const m = new GroupMap();
    m.set('a', 1);
    m.set('b', 2);
    encodeChecked(m, c, 'latin1');
    m.set('日本', 3);
    encodeChecked(m, c, 'a wide key added');
    m.set('c', 3);
    encodeChecked(m, c, 'a Latin-1 key after it');
    m.delete('日本');
    encodeChecked(m, c, 'the wide key deleted');
    m.set('x'.repeat(300), 4);
    encodeChecked(m, c, 'a key of 300 characters');
    m.set('y'.repeat(70_000), 5);
    encodeChecked(m, c, 'a key of 70,000 characters');
    m.delete('y'.repeat(70_000));
    m.delete('x'.repeat(300));
    encodeChecked(m, c, 'the long keys deleted');
    m.set(7, 1);
    encodeChecked(m, c, 'mixed keys');
    m.delete(7);
    encodeChecked(m, c, 'strings again');
    m.clear();
    encodeChecked(m, c, 'cleared');
    for (let i = 0; i < 5; i++) m.set(i, i);
    encodeChecked(m, c, 'number keys');
  });

  it('gives the uncached bytes through random puts, updates, deletes, re-inserts and clears (seeded)', () => {
    const seed = testSeed('key-column-cache');
    const rng = new Rng(seed);
    const mismatches = cacheStats.countMismatches;
    const key = (): string => {
      const r = rng.int(100);
      if (r < 2) return 'é'.repeat(rng.int(400)); // past a 1-byte length
      if (r < 4) return String.fromCharCode(0x3000 + rng.int(50)) + rng.int(1000); // UTF-16
      return 'k' + rng.int(3000);
    };
    let reused = 0;
    for (let map = 0; map < 20; map++) {
      const m = new GroupMap();
      const c = new KeyColumnCache();
      for (let round = 0; round < 40; round++) {
        const ops = rng.int(round % 5 === 0 ? 500 : 30);
        const removals = rng.int(3) === 0; // most rounds only insert and update, as most checkpoints
        for (let o = 0; o < ops; o++) {
          const r = rng.int(100);
          const keys = m.size > 0 && r < 60 ? [...m.keys()] : [];
          const existing = keys.length > 0 ? keys[rng.int(keys.length)]! : undefined;
          if (r < 40 && existing !== undefined) m.set(existing, rng.int(70_000)); // update in place
          else if (removals && r < 50 && existing !== undefined) m.delete(existing);
          else if (removals && r < 55 && existing !== undefined) {
            const v = m.get(existing);
            m.delete(existing);
            m.set(existing, v); // to the end
          } else if (removals && r < 56) m.clear();
          else if (r < 57) m.set(rng.int(10), 1); // a number key: mixed keys
          else if (removals && r < 58) m.delete([...m.keys()].find((k) => typeof k === 'number') ?? '');
          else m.set(key(), rng.int(2) === 0 ? rng.int(256) : rng.next());
        }
        encodeChecked(m, c, `seed ${seed} map ${map} round ${round}`);
        reused += cacheStats.reusedKeys;
      }
    }
    expect(reused).toBeGreaterThan(0);
    expect(cacheStats.countMismatches).toBe(mismatches);
  });
});

describe('heap backend with the key column cache', () => {
  const plain = new ValueStateDescriptor<number>('counts');
  const ttl = new ValueStateDescriptor<number>('recent', { ttl: { ttlMs: 1000 } });

  it('writes the files of a backend without it, which restore to the model, through random updates, deletes, TTL expiry and snapshots (seeded)', async () => {
    const seed = testSeed('heap-key-cache');
    const mismatches = cacheStats.countMismatches;
    const reusedBefore = cacheStats.reusedTotal;
    const rng = new Rng(seed);
    const clock = new ManualClock(0);
    const cached = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op', { snapshotKeyCache: true });
    const uncached = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op', { snapshotKeyCache: false });
    const both = [cached, uncached];
    const model = new Map<string, number>();
    const ttlModel = new Map<string, { v: number; t: number }>();
    const keyOf = (): string => (rng.int(50) === 0 ? 'ü' + rng.int(300) : rng.int(80) === 0 ? '語' + rng.int(50) : 'w' + rng.int(3000));
    /** One random operation, the same on both backends and the model. */
    let removals = true;
    const op = (): void => {
      let r = rng.int(100);
      // Rounds without removals by the job (TTL cleanup still removes what expired): groups keep their keys.
      if (!removals && r >= 60 && r < 70) r = 0;
      else if (!removals && r >= 90) r = 80;
      const k = keyOf();
      const v = rng.int(3) === 0 ? rng.int(100_000) : rng.int(100);
      for (const b of both) {
        b.setCurrentKey(k); // also sweeps a few TTL entries
        if (r < 60) b.getValueState(plain).update(v);
        else if (r < 70) b.getValueState(plain).clear();
        else if (r < 90) b.getValueState(ttl).update(v);
        else if (r < 95) b.getValueState(ttl).clear();
        else b.getValueState(ttl).value(); // may remove an expired value
      }
      if (r < 60) model.set(k, v);
      else if (r < 70) model.delete(k);
      else if (r < 90) ttlModel.set(k, { v, t: clock.now() });
      else if (r < 95) ttlModel.delete(k);
      if (removals && rng.int(200) === 0) clock.advance(rng.int(1500));
    };
    for (let round = 0; round < 12; round++) {
      const ops = round === 0 ? 20_000 : rng.int(3) === 0 ? 5_000 : 300;
      removals = rng.int(2) === 0;
      for (let i = 0; i < ops; i++) op();
      const atBarrier = new Map(model);
      const ttlAtBarrier = new Map(ttlModel);
      const barrierMs = clock.now();
      const viewsOut = cacheStats.viewsOut;
      const snaps = both.map((b) => b.snapshot());
      // Records while the snapshots are in progress: touched frozen groups are encoded first.
      const during = rng.int(500);
      for (let i = 0; i < during; i++) op();
      const files = both.map(() => new MemoryStreams());
      const handles = [await writeSnapshot(snaps[0]!, files[0]!), await writeSnapshot(snaps[1]!, files[1]!)];
      const what = `seed ${seed} round ${round}`;
      // Every view of a cache the file wrote came back (so a group filled again reuses its memory).
      expect(cacheStats.viewsOut, what).toBe(viewsOut);
      const names = handles.map((h) => h.streams[0]!.name);
      expect(files[0]!.files.get(names[0]!)!.equals(files[1]!.files.get(names[1]!)!), what).toBe(true);
      // And the cached one restores to the model at the barrier.
      const r = new HeapKeyedStateBackend(FULL, MAXP, new ManualClock(barrierMs), 'op');
      await r.restore([files[0]!.input(names[0]!)]);
      const rv = r.getValueState(plain);
      const restored = new Map<string, number>();
      for (const { key } of [...r.keys(plain.name)]) {
        r.setCurrentKey(key);
        restored.set(key as string, rv.value()!);
      }
      expect(restored, what).toEqual(atBarrier);
      const rt = r.getValueState(ttl);
      for (const [k, s] of ttlAtBarrier) {
        r.setCurrentKey(k);
        expect(rt.value(), `${what} key ${k}`).toBe(s.t + 1000 <= barrierMs ? undefined : s.v);
      }
      for (const { key } of [...r.keys(ttl.name)]) expect(ttlAtBarrier.has(key as string), `${what} key ${String(key)}`).toBe(true);
    }
    // The cache was there to be checked: it holds the keys once more; without it nothing.
    expect(cached.snapshotKeyCacheBytes()).toBeGreaterThan(3000);
    expect(cacheStats.reusedTotal).toBeGreaterThan(reusedBefore); // some groups reused their keys
    expect(cacheStats.countMismatches).toBe(mismatches);
    expect(uncached.snapshotKeyCacheBytes()).toBe(0);
  });
});

describe('heap backend restored with the key column cache', () => {
  it('fills the caches from the restored blocks: the first snapshot reads no key string, and every snapshot writes what a backend without caches writes and restores to the model (seeded)', async () => {
    const seed = testSeed('heap-key-cache-restore');
    const rng = new Rng(seed);
    const clock = new ManualClock(0);
    const counts = new ValueStateDescriptor<number>('counts');
    const byId = new ValueStateDescriptor<number>('by id');
    // Latin-1 keys, UTF-16 keys in some groups, number keys in others (groups of mixed kinds
    // have no key column to cache), and a state keyed by numbers only.
    const keyOf = (): NormKey => (rng.int(40) === 0 ? '語' + rng.int(400) : rng.int(3000) === 0 ? rng.int(1000) : 'w' + rng.int(40_000));
    const source = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op', { snapshotKeyCache: false });
    const model = new Map<NormKey, number>();
    for (let i = 0; i < 20_000; i++) {
      const k = keyOf();
      const v = rng.int(1000);
      source.setCurrentKey(k);
      source.getValueState(counts).update(v);
      model.set(k, v);
      source.setCurrentKey(rng.int(5000));
      source.getValueState(byId).update(i);
    }
    const sourceFiles = new MemoryStreams();
    const sourceName = (await writeSnapshot(source.snapshot(), sourceFiles)).streams[0]!.name;

    const cached = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op', { snapshotKeyCache: true });
    const uncached = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op', { snapshotKeyCache: false });
    const both = [cached, uncached];
    for (const b of both) {
      await b.restore([sourceFiles.input(sourceName)]);
      b.getValueState(counts); // the tables are made from the restored blocks when the job registers its states
      b.getValueState(byId);
    }
    // The keys a restored cache holds: those of groups whose keys are all strings.
    const groupsOfStrings = new Map<number, NormKey[]>();
    for (const k of model.keys()) {
      const kg = keyGroupOf(k, MAXP);
      const g = groupsOfStrings.get(kg) ?? [];
      g.push(k);
      groupsOfStrings.set(kg, g);
    }
    let cachedKeys = 0;
    for (const g of groupsOfStrings.values()) if (g.every((k) => typeof k === 'string')) cachedKeys += g.length;
    expect(cachedKeys, `seed ${seed}`).toBeGreaterThan(10_000);
    // Filled by the restore: at least a byte of characters and one of length per key.
    expect(cached.snapshotKeyCacheBytes(), `seed ${seed}`).toBeGreaterThan(2 * cachedKeys);
    expect(uncached.snapshotKeyCacheBytes()).toBe(0);

    for (let round = 0; round < 6; round++) {
      const what = `seed ${seed} round ${round}`;
      if (round > 0) {
        for (let i = 0, ops = rng.int(2) === 0 ? 3000 : 100; i < ops; i++) {
          const k = keyOf();
          const remove = round % 2 === 0 && rng.int(5) === 0;
          const v = rng.int(1000);
          for (const b of both) {
            b.setCurrentKey(k);
            if (remove) b.getValueState(counts).clear();
            else b.getValueState(counts).update(v);
          }
          if (remove) model.delete(k);
          else model.set(k, v);
        }
      }
      const reusedBefore = cacheStats.reusedTotal;
      const snaps = both.map((b) => b.snapshot());
      const files = both.map(() => new MemoryStreams());
      const names = [(await writeSnapshot(snaps[0]!, files[0]!)).streams[0]!.name, (await writeSnapshot(snaps[1]!, files[1]!)).streams[0]!.name];
      expect(files[0]!.files.get(names[0]!)!.equals(files[1]!.files.get(names[1]!)!), what).toBe(true);
      // Right after the restore every string key came from a cache the restore filled.
      if (round === 0) expect(cacheStats.reusedTotal - reusedBefore, what).toBe(cachedKeys);
      expect(await restoredValues(files[0]!.input(names[0]!), counts, clock), what).toEqual(model);
    }
  });
});

describe('heap backend restored from an incremental chain', () => {
  it('keeps the groups the chain\'s merge made, and their key columns: the first full snapshot reads no key string, writes what a backend without caches writes, and holds the state at the barrier (seeded)', async () => {
    const seed = testSeed('heap-key-cache-chain');
    const rng = new Rng(seed);
    const clock = new ManualClock(0);
    const counts = new ValueStateDescriptor<number>('counts');
    const b = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op');
    const own = new MemoryStreams();
    const shared = new MemoryStreams();
    const model = new Map<string, number>();
    const change = (ops: number, removals: boolean): void => {
      for (let i = 0; i < ops; i++) {
        const k = rng.int(50) === 0 ? '語' + rng.int(300) : 'w' + rng.int(30_000);
        b.setCurrentKey(k);
        if (removals && rng.int(8) === 0) {
          b.getValueState(counts).clear();
          model.delete(k);
        } else {
          const v = rng.int(1000);
          b.getValueState(counts).update(v);
          model.set(k, v);
        }
      }
    };
    change(20_000, false);
    const settings = { maxDeltas: 10, maxDeltaRatio: 10 };
    const chain: string[] = [];
    for (let id = 1; id <= 4; id++) {
      if (id > 1) change(rng.int(2) === 0 ? 300 : 3000, id === 3); // the third delta also removes keys
      const h = await writeSnapshot(b.snapshot(undefined, { checkpointId: id, incremental: settings }), own, `own-${id}`, () => {}, { streams: shared, streamName: `chain-${id}` });
      expect(h.chain!.length, `seed ${seed} checkpoint ${id}`).toBe(id); // a base and id - 1 deltas
      b.notifyCheckpointComplete!(id);
      chain.push(`chain-${id}`);
    }

    // Restored from the chain with caches and without: the merged groups' order is the merge's
    // (a key removed and set again within one interval keeps its place, where the live backend
    // moved it to the end), so the check is against the same restore without caches.
    const cached = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op', { snapshotKeyCache: true });
    const uncached = new HeapKeyedStateBackend(FULL, MAXP, clock, 'op', { snapshotKeyCache: false });
    for (const r of [cached, uncached]) {
      await r.restore(chain.map((c) => shared.input(c)));
      r.getValueState(counts);
    }
    const reusedBefore = cacheStats.reusedTotal;
    const files = [new MemoryStreams(), new MemoryStreams()];
    const names = [(await writeSnapshot(cached.snapshot(), files[0]!)).streams[0]!.name, (await writeSnapshot(uncached.snapshot(), files[1]!)).streams[0]!.name];
    expect(files[0]!.files.get(names[0]!)!.equals(files[1]!.files.get(names[1]!)!), `seed ${seed}`).toBe(true);
    expect(cacheStats.reusedTotal - reusedBefore, `seed ${seed}`).toBe(model.size); // every key from a cache the restore filled
    // And that snapshot holds the state at the barrier.
    expect(await restoredValues(files[0]!.input(names[0]!), counts, clock), `seed ${seed}`).toEqual(model);
  });
});

describe('state.backend.heap.snapshot-key-cache', () => {
  it('reaches the heap backend through the backend settings: on by default, off when set so', async () => {
    const cacheBytes = async (heap: { snapshotKeyCache?: boolean } | undefined) => {
      const b = keyedStateBackendFactory('heap', heap === undefined ? {} : { heap }).create({ keyGroupRange: FULL, maxParallelism: MAXP, clock: new ManualClock(0), where: 'op' }) as HeapKeyedStateBackend;
      const v = b.getValueState(new ValueStateDescriptor<number>('v'));
      for (let i = 0; i < 1000; i++) {
        b.setCurrentKey('k' + i);
        v.update(i);
      }
      await writeSnapshot(b.snapshot(), new MemoryStreams());
      return b.snapshotKeyCacheBytes();
    };
    expect(await cacheBytes(undefined)).toBeGreaterThan(1000);
    expect(await cacheBytes({ snapshotKeyCache: true })).toBeGreaterThan(1000);
    expect(await cacheBytes({ snapshotKeyCache: false })).toBe(0);
  });
});
