/**
 * assignTimestampsAndWatermarks with withIdleness, driven by hand on a manual clock: input that
 * stops because the task is held back (back-pressured, or with input it has not taken yet) is
 * not idle input. Declared idle there, the channel stopped holding event time back downstream,
 * windows fired without its records, and those came late once the backpressure eased.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { WatermarkStrategy } from '../../src/core/watermark-strategy.ts';
import type { OperatorEnvironment } from '../../src/runtime/operators/operator.ts';
import { TimestampsAndWatermarksOperator } from '../../src/runtime/operators/watermarks.ts';
import { Output, type BatchConsumer } from '../../src/runtime/output.ts';

function harness() {
  const clock = new ManualClock(0);
  const mail: { at: number; fn: () => void }[] = [];
  let heldBack = false;
  const statuses: boolean[] = [];
  const consumer: BatchConsumer = {
    processBatch() {},
    processWatermark() {},
    processWatermarkStatus: (idle: boolean) => void statuses.push(idle),
    endInput() {},
  };
  const env = {
    taskInfo: { operatorName: 'Timestamps', operatorId: 'tw', subtaskIndex: 0, parallelism: 1, maxParallelism: 128, attemptNumber: 0 },
    clock,
    scheduleMail: (at: number, fn: () => void) => {
      const m = { at, fn };
      mail.push(m);
      return { cancel: () => void mail.splice(mail.indexOf(m), 1) };
    },
    keyedBackend: undefined,
    keySelectors: [],
    operatorState: undefined,
    isSuspended: () => false,
    isHeldBack: () => heldBack,
    checkpointing: false,
    objectReuse: false,
  } as unknown as OperatorEnvironment;
  const strategy = WatermarkStrategy.forMonotonousTimestamps<{ ts: number }>().withTimestampAssigner((r) => r.ts).withIdleness(50);
  const op = new TimestampsAndWatermarksOperator(strategy, 10);
  op.setup(env, new Output([consumer]), 1);
  op.open();
  /** Moves the clock to `to`, running the mail due on the way, in time order. */
  const advance = (to: number) => {
    for (;;) {
      mail.sort((a, b) => a.at - b.at);
      const m = mail[0];
      if (m === undefined || m.at > to) break;
      mail.shift();
      if (m.at > clock.now()) clock.advanceTo(m.at);
      m.fn();
    }
    if (to > clock.now()) clock.advanceTo(to);
  };
  const record = (ts: number) => {
    op.processBatch({ values: [{ ts }], timestamps: [Number.NEGATIVE_INFINITY] });
    op.afterRecords();
    op.output.flush();
  };
  return { advance, record, statuses, holdBack: (b: boolean) => void (heldBack = b) };
}

describe('idleness of assignTimestampsAndWatermarks', () => {
  it('no records for longer than the timeout while held back is not idle; the timeout counts again once it is not', () => {
    const h = harness();
    h.record(1);
    h.holdBack(true);
    h.advance(500); // ten timeouts back-pressured: before, idle at the check at 50
    expect(h.statuses).toEqual([]);
    h.holdBack(false);
    h.advance(540); // 40 ms not held back: not yet
    expect(h.statuses).toEqual([]);
    h.advance(560);
    expect(h.statuses).toEqual([true]);
    h.record(2);
    expect(h.statuses).toEqual([true, false]);
  });

  it('without hold-back, idle after the timeout as before', () => {
    const h = harness();
    h.record(1);
    h.advance(40);
    expect(h.statuses).toEqual([]);
    h.advance(60);
    expect(h.statuses).toEqual([true]);
  });
});
