/**
 * The interval join operator driven by hand, record by record and watermark by watermark, on a
 * heap backend: which records meet, when each side's buffer lets a record go (its cleanup
 * timer), and what is late. No job, no threads, no scheduling: every step is exact.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { ValueStateDescriptor } from '../../src/core/state.ts';
import { HeapKeyedStateBackend } from '../../src/state/heap/backend.ts';
import { denormalizeKey } from '../../src/state/key-groups.ts';
import { IntervalJoinOperator } from '../../src/runtime/operators/interval-join.ts';
import type { OperatorEnvironment } from '../../src/runtime/operators/operator.ts';
import { Output, type BatchConsumer } from '../../src/runtime/output.ts';

interface Rec { readonly k: string; readonly v: string }

function harness(lower: number, upper: number) {
  const backend = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, new ManualClock(0), 'interval join');
  const results: string[] = [];
  const consumer: BatchConsumer = {
    processBatch: (b) => b.values.forEach((v, i) => results.push(`${String(v)}@${b.timestamps[i]}`)),
    processWatermark() {},
    processWatermarkStatus() {},
    endInput() {},
  };
  const op = new IntervalJoinOperator({
    lower, upper, leftLateTag: undefined, rightLateTag: undefined,
    fn: { processElement: (a: Rec, b: Rec) => [`${a.v}${b.v}`] },
  });
  const env = {
    taskInfo: { operatorName: 'IntervalJoin', operatorId: 'ij', subtaskIndex: 0, parallelism: 1, maxParallelism: 128, attemptNumber: 0 },
    clock: new ManualClock(0),
    scheduleMail: () => ({ cancel() {} }),
    keyedBackend: backend,
    keySelectors: [(x: Rec) => x.k, (x: Rec) => x.k],
    operatorState: undefined,
    isSuspended: () => false,
    isHeldBack: () => false,
    checkpointing: false,
    objectReuse: false,
  } as unknown as OperatorEnvironment;
  op.setup(env, new Output([consumer]), 2);
  op.open();
  const send = (input: number, k: string, ts: number, v: string) => {
    op.processBatch({ values: [{ k, v }], timestamps: [ts] }, input);
    op.output.flush();
  };
  /** Records buffered on one side, as "<value>@<ts>" over all keys. */
  const buffered = (side: 'left' | 'right'): string[] => {
    const state = backend.getValueState(new ValueStateDescriptor<[number, Rec][]>(`__interval_join_${side}`));
    const out: string[] = [];
    for (const { key, keyGroup } of backend.keys(`__interval_join_${side}`)) {
      backend.setCurrentNormalizedKey(key, keyGroup, denormalizeKey(key));
      for (const [ts, r] of state.value() ?? []) out.push(`${r.v}@${ts}`);
    }
    return out.sort();
  };
  return {
    op,
    results,
    left: (k: string, ts: number, v: string) => send(0, k, ts, v),
    right: (k: string, ts: number, v: string) => send(1, k, ts, v),
    watermark: (w: number) => {
      op.processWatermark(w, 0);
      op.processWatermark(w, 1);
    },
    buffered,
  };
}

describe('interval join operator', () => {
  it('a record is let go once the watermark passes the last time a partner could have', () => {
    // [-5, +10]: a left record at t meets right records in [t - 5, t + 10]; a right record at u
    // meets left records in [u - 10, u + 5]. Left 100 may meet rights up to 110: kept until the
    // watermark passes 110. Right 100 may meet lefts up to 105: kept until it passes 105.
    const h = harness(-5, 10);
    h.left('a', 100, 'L');
    h.right('a', 100, 'R');
    expect(h.results).toEqual(['LR@100']);
    h.watermark(105);
    expect([h.buffered('left'), h.buffered('right')]).toEqual([['L@100'], ['R@100']]);
    h.watermark(106);
    expect([h.buffered('left'), h.buffered('right')]).toEqual([['L@100'], []]);
    // At the watermark, not late, and still within L's interval: they meet (Flink's timer at
    // 110 would already have let L go).
    h.watermark(110);
    h.right('a', 110, 'S');
    expect(h.results).toEqual(['LR@100', 'LS@110']);
    h.watermark(111);
    expect([h.buffered('left'), h.buffered('right')]).toEqual([[], ['S@110']]);
    h.watermark(116);
    expect(h.buffered('right')).toEqual([]);
  });

  it('negative bounds: a record waits at least until the watermark passes its own time', () => {
    // [-10, -5]: left 50 meets rights in [40, 45]; right 42 meets lefts in [47, 52].
    const h = harness(-10, -5);
    h.right('a', 42, 'R');
    h.left('a', 50, 'L');
    h.left('a', 53, 'M'); // 42 is outside [43, 48]
    expect(h.results).toEqual(['LR@50']);
    h.watermark(50);
    expect(h.buffered('left')).toEqual(['L@50', 'M@53']);
    h.watermark(51); // L's last chance was a right at 45, long below the watermark; it stays until 50 passes
    expect(h.buffered('left')).toEqual(['M@53']);
    expect(h.buffered('right')).toEqual(['R@42']); // until 52 passes
    h.watermark(53);
    expect(h.buffered('right')).toEqual([]);
  });

  it('records below the watermark are late: dropped and counted; keys never meet each other', () => {
    const h = harness(0, 0);
    h.left('a', 10, 'A');
    h.right('b', 10, 'B');
    h.watermark(10);
    h.left('a', 9, 'x'); // late
    h.right('a', 10, 'C'); // at the watermark: meets A
    expect(h.results).toEqual(['AC@10']);
    expect(h.op.numLateRecordsDropped).toBe(1);
  });

  it('equal timestamps keep arrival order; results carry the larger timestamp', () => {
    const h = harness(-100, 100);
    h.right('a', 5, '1');
    h.right('a', 5, '2');
    h.right('a', 3, '0');
    h.left('a', 4, 'L');
    expect(h.results).toEqual(['L0@4', 'L1@5', 'L2@5']);
  });
});
