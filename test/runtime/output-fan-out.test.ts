/**
 * Output in record-at-a-time mode: one emit hands each record to every chained target, in
 * order, once, with its timestamp; the count moves once per record. Covers the single-target
 * emit, the specialized fan-outs (2 to 8 targets) and the loop beyond.
 */
import { describe, expect, it } from 'vitest';
import { Output, type BatchConsumer } from '../../src/runtime/output.ts';

class RecordingTarget implements BatchConsumer {
  readonly seen: [number, unknown, number][] = [];
  flushes = 0;
  constructor(private readonly id: number, private readonly log: [number, unknown, number][]) {}
  processBatch(): void {
    throw new Error('a record-at-a-time target got a batch');
  }
  processWatermark(): void {}
  processWatermarkStatus(): void {}
  endInput(): void {}
  processRecord(value: unknown, timestamp: number): void {
    // `this` must be the target: the emit calls a bound function, not a bare one.
    this.seen.push([this.id, value, timestamp]);
    this.log.push([this.id, value, timestamp]);
  }
  flush(): void {
    this.flushes++;
  }
}

describe('Output fan-out to chained targets', () => {
  for (const n of [1, 2, 3, 8, 9, 12]) {
    for (const counting of [true, false]) {
      it(`${n} target(s), counting ${counting ? 'on' : 'off'}: every record reaches every target once, in order`, () => {
        const log: [number, unknown, number][] = [];
        const targets = Array.from({ length: n }, (_, i) => new RecordingTarget(i, log));
        const out = new Output(targets, new Map(), 1024, counting);
        const records = [{ a: 1 }, 'two', 3];
        records.forEach((r, k) => out.emit(r, 100 + k));
        out.flush();
        const expected: [number, unknown, number][] = [];
        records.forEach((r, k) => {
          for (let i = 0; i < n; i++) expected.push([i, r, 100 + k]);
        });
        expect(log).toEqual(expected);
        for (const t of targets) expect(t.flushes).toBe(1);
        expect(out.count).toBe(counting ? records.length : 0);
      });
    }
  }
});
