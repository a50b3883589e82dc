/**
 * Output in batch mode, and a hash-partitioning RecordWriter per channel, fill arrays allocated
 * at the last batch's length (not grown by push). The batches handed on must still be exactly
 * the records emitted, in order, with no holes and no slot left over, whether a batch is
 * shorter or longer than the one before it, and a batch handed on must never change afterwards.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/random.ts';
import type { Batch } from '../../src/core/batch.ts';
import { Output, type BatchConsumer } from '../../src/runtime/output.ts';
import { RecordWriter } from '../../src/runtime/record-writer.ts';
import { OutputChannel } from '../../src/runtime/channels/channel.ts';
import type { ChannelElement } from '../../src/runtime/events.ts';
import { keyGroupOf, normalizeKey, operatorIndexForKeyGroup } from '../../src/state/key-groups.ts';
import { keyHash } from '../../src/state/key-table.ts';

class Collecting implements BatchConsumer {
  readonly batches: Batch[] = [];
  /** Copies taken when each batch arrived, to check that nothing changes it later. */
  readonly copies: { values: unknown[]; timestamps: number[] }[] = [];
  processBatch(batch: Batch): void {
    this.batches.push(batch);
    this.copies.push({ values: [...batch.values], timestamps: [...batch.timestamps] });
  }
  processWatermark(): void {}
  processWatermarkStatus(): void {}
  endInput(): void {}
}

describe('Output batches', () => {
  it('hands on exactly the emitted records in batches of varying length, without holes (seeded)', () => {
    const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 1_000_000));
    console.log(`output batches seed=${seed} (replay with SEED=${seed})`);
    const rng = new Rng(seed);
    const batchSize = 8;
    const target = new Collecting();
    const out = new Output([target], new Map(), batchSize, true);
    const emitted: [unknown, number][] = [];
    let next = 0;
    for (let round = 0; round < 300; round++) {
      // Runs shorter and longer than the previous batch and than the batch size.
      const n = rng.bool(0.1) ? 0 : rng.int(3 * batchSize);
      for (let i = 0; i < n; i++) {
        const v = rng.bool(0.5) ? { id: next } : next;
        const ts = rng.bool(0.2) ? Number.NEGATIVE_INFINITY : 1_700_000_000_000 + next + rng.next();
        out.emit(v, ts);
        emitted.push([v, ts]);
        next++;
      }
      out.flush();
    }
    expect(out.count).toBe(emitted.length);
    const got: [unknown, number][] = [];
    target.batches.forEach((b, k) => {
      expect(b.values.length, `batch ${k}`).toBeGreaterThan(0);
      expect(b.values.length, `batch ${k}`).toBeLessThanOrEqual(batchSize);
      expect(b.timestamps.length, `batch ${k}`).toBe(b.values.length);
      for (let i = 0; i < b.values.length; i++) {
        expect(i in b.values && i in b.timestamps, `batch ${k} slot ${i}`).toBe(true);
        got.push([b.values[i], b.timestamps[i]!]);
      }
      expect(b.values, `batch ${k} changed after it was handed on`).toEqual(target.copies[k]!.values);
      expect(b.timestamps, `batch ${k} changed after it was handed on`).toEqual(target.copies[k]!.timestamps);
    });
    expect(got).toEqual(emitted);
  });

  it('hash partitioning hands each channel exactly its records, key groups and key hashes, without holes (seeded)', () => {
    const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 1_000_000));
    console.log(`record writer batches seed=${seed} (replay with SEED=${seed})`);
    const rng = new Rng(seed);
    const p = 3;
    const maxP = 128;
    const batchSize = 8;
    const received: Batch[][] = [[], [], []];
    const copies: Batch[][] = [[], [], []];
    const channels = [0, 1, 2].map((c) => new OutputChannel(c, 1_000_000, (el: ChannelElement) => {
      if (!('values' in el)) return;
      received[c]!.push(el);
      copies[c]!.push({ values: [...el.values], timestamps: [...el.timestamps], keyGroups: [...el.keyGroups!], keyHashes: [...el.keyHashes!] });
    }));
    const sel = (r: unknown) => (r as { k: string }).k;
    const writer = new RecordWriter('hash', channels, [0, 1, 2], p, sel, maxP,
      { operatorName: 'src', operatorId: 'x', subtaskIndex: 0, parallelism: 1 }, batchSize, true);
    const expected: [unknown, number, number][][] = [[], [], []];
    let next = 0;
    for (let round = 0; round < 200; round++) {
      const n = rng.int(4 * batchSize);
      const values: unknown[] = [];
      const timestamps: number[] = [];
      for (let i = 0; i < n; i++) {
        const r = { k: 'k' + rng.int(50), id: next++ };
        const ts = rng.bool(0.2) ? Number.NEGATIVE_INFINITY : 1_700_000_000_000 + next;
        values.push(r);
        timestamps.push(ts);
        const kg = keyGroupOf(normalizeKey(r.k), maxP);
        expected[operatorIndexForKeyGroup(maxP, p, kg)]!.push([r, ts, kg]);
      }
      writer.processBatch({ values, timestamps });
      if (rng.bool(0.3)) writer.flushAll();
    }
    writer.flushAll();
    expect(writer.bufferedRecords()).toBe(0);
    for (let c = 0; c < p; c++) {
      const got: [unknown, number, number][] = [];
      received[c]!.forEach((b, k) => {
        const where = `channel ${c} batch ${k}`;
        expect(b.values.length, where).toBeGreaterThan(0);
        expect(b.values.length, where).toBeLessThanOrEqual(batchSize);
        expect(b.timestamps.length, where).toBe(b.values.length);
        expect(b.keyGroups!.length, where).toBe(b.values.length);
        expect(b.keyHashes!.length, where).toBe(b.values.length);
        for (let i = 0; i < b.values.length; i++) {
          expect(i in b.values && i in b.timestamps && i in b.keyGroups! && i in b.keyHashes!, `${where} slot ${i}`).toBe(true);
          got.push([b.values[i], b.timestamps[i]!, b.keyGroups![i]!]);
          // The state tables' hash of the key, as the receiver would compute it.
          expect(b.keyHashes![i], `${where} slot ${i}`).toBe(keyHash(normalizeKey(sel(b.values[i]))));
        }
        expect(b, `${where} changed after it was sent`).toEqual(copies[c]![k]);
      });
      expect(got, `channel ${c}`).toEqual(expected[c]);
    }
  });

  it('an operator\'s numRecordsOut counts its side outputs\' records too, as Flink\'s CountingOutput (it counted the main output only)', () => {
    const side = new Output([new Collecting()], new Map(), 8, true);
    const out = new Output([new Collecting()], new Map([['late', side]]), 8, true);
    for (let i = 0; i < 10; i++) {
      if (i % 4 === 0) out.emitSide('late', i, 0);
      else out.emit(i, 0);
    }
    out.emitSide('nobody', 99, 0); // a side output nobody consumes is dropped, not counted
    out.flush();
    expect([out.count, side.count, out.countWithSides]).toEqual([7, 3, 10]);
  });
});

/** A chained target taking single records (record-at-a-time mode). */
class Single implements BatchConsumer {
  readonly seen: unknown[] = [];
  processBatch(batch: Batch): void {
    this.seen.push(...batch.values);
  }
  processRecord(value: unknown): void {
    this.seen.push(value);
  }
  flush(): void {}
  processWatermark(): void {}
  processWatermarkStatus(): void {}
  endInput(): void {}
}

describe('Output.countOutside (a source whose reader reports its polls\' counts)', () => {
  it('stops counting on every path, record-at-a-time (one and several targets) and batch mode, and says whether the owner must count', () => {
    const one = new Output([new Single()], new Map(), 4, true);
    const many = new Output([new Single(), new Single()], new Map(), 4, true);
    const batched = new Output([new Collecting()], new Map(), 4, true);
    for (const out of [one, many, batched]) {
      expect(out.countOutside()).toBe(true);
      for (let i = 0; i < 10; i++) out.emit(i, 0);
      out.flush();
      expect(out.count).toBe(0); // the owner adds the reported counts
      out.count += 10;
      expect(out.count).toBe(10);
    }
    expect((one.targets[0] as Single).seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect((many.targets[1] as Single).seen).toHaveLength(10);
    expect((batched.targets[0] as Collecting).batches.flatMap((b) => b.values)).toHaveLength(10);
  });

  it('an output that does not count (record counters off) leaves it so: the owner must not count either', () => {
    const out = new Output([new Single()], new Map(), 4, false);
    expect(out.countOutside()).toBe(false);
    out.emit(1, 0);
    expect(out.count).toBe(0);
  });

  it('refuses once records were handed on: counts taken per record and per poll would mix', () => {
    const out = new Output([new Single()], new Map(), 4, true);
    out.emit(1, 0);
    expect(() => out.countOutside()).toThrow('Output.countOutside: records were already handed on');
    const batched = new Output([new Collecting()], new Map(), 4, true);
    batched.emit(1, 0); // collected, not yet handed on
    expect(() => batched.countOutside()).toThrow('Output.countOutside: records were already handed on');
  });
});
