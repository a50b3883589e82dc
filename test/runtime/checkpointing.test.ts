/**
 * The task side of checkpoints, driven event by event on a real StreamTask: barrier alignment
 * in exactly-once and at-least-once mode, the barrier going downstream before the snapshot,
 * an asynchronous phase that lets records flow while a (deliberately slow) write is pending,
 * cancel markers, aborts, a newer barrier ending an older alignment, and end of input
 * completing an alignment.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamExecutionEnvironment } from '../../src/api/environment.ts';
import { ListStateDescriptor, ValueStateDescriptor, type ListState } from '../../src/core/state.ts';
import type { Collector, KeyedContext, KeyedProcessFunction, KeyedRuntimeContext } from '../../src/core/functions.ts';
import { CheckpointFailureReason as R } from '../../src/checkpoint/failure-reason.ts';
import { localStreamFactory, type WritableFile } from '../../src/checkpoint/local-streams.ts';
import type { TaskAck, InlineOperatorState } from '../../src/core/checkpoint-format.ts';
import { buildJobGraph } from '../../src/graph/job-graph.ts';
import type { Batch } from '../../src/core/batch.ts';
import { InputChannel, OutputChannel } from '../../src/runtime/channels/channel.ts';
import { loadKeyedState } from '../../src/runtime/checkpointing/restore.ts';
import { SubtaskCheckpointer, type StreamsAt } from '../../src/runtime/checkpointing/subtask-checkpointer.ts';
import { END_OF_DATA, type BarrierEvent, type ChannelElement } from '../../src/runtime/events.ts';
import { InputGate } from '../../src/runtime/input-gate.ts';
import { RecordWriter } from '../../src/runtime/record-writer.ts';
import { Scheduler } from '../../src/runtime/scheduler.ts';
import { StreamTask } from '../../src/runtime/task.ts';
import { systemClock } from '../../src/core/clock.ts';
import { HeapKeyedStateBackend } from '../../src/state/heap/backend.ts';
import { heapBackendFactory } from '../../src/state/heap/backend.ts';
import type { KeyedStateBackend } from '../../src/state/backend.ts';

interface Rec { k: string; n: number }

const count = new ValueStateDescriptor<number>('count', { defaultValue: 0 });
const seenAtSnapshot = new ListStateDescriptor<number>('seen');

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function batch(...recs: Rec[]): Batch {
  return { values: recs, timestamps: recs.map(() => Number.NEGATIVE_INFINITY) };
}

function r(n: number, k = `k${n % 3}`): Rec {
  return { k, n };
}

function barrier(id: number, location: string): BarrierEvent {
  return { kind: 'barrier', checkpointId: id, timestamp: Date.now(), type: 'checkpoint', location };
}

async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((res) => setImmediate(res));
}

/** Waits until cond holds (state files are written with real, asynchronous I/O). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((res) => setTimeout(res, 5));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

/** Counts per key, and records in operator state which records it had seen at each snapshot. */
class Tracker implements KeyedProcessFunction<string, Rec, number> {
  private seenState!: ListState<number>;
  constructor(private readonly log: string[], private readonly processed: number[]) {}
  open(ctx: KeyedRuntimeContext): void {
    this.seenState = ctx.getUnionListState(seenAtSnapshot);
  }
  processElement(x: Rec, ctx: KeyedContext<string>, out: Collector<number>): void {
    const s = ctx.getState(count);
    s.update(s.value()! + 1);
    this.processed.push(x.n);
    this.log.push(`record ${x.n}`);
    out.collect(x.n);
  }
  snapshotState({ checkpointId }: { checkpointId: number }): void {
    this.log.push(`snapshot ${checkpointId}`);
    this.seenState.update([...this.processed]);
  }
}

/** A keyed operator subtask with two input channels and one downstream channel, all observable. */
function harness(mode: 'exactly-once' | 'at-least-once', streamsAt?: StreamsAt) {
  const log: string[] = [];
  const processed: number[] = [];
  const env = new StreamExecutionEnvironment({ defaultParallelism: 1 });
  env
    .fromCollection<Rec>([])
    .keyBy((x) => x.k)
    .process<number>(new Tracker(log, processed))
    .uid('proc')
    .addSink(() => {})
    .setParallelism(2);
  const graph = buildJobGraph(env);
  const vertex = graph.vertices.find((v) => v.operators[0]!.node.transformation.uid === 'proc')!;
  const edge = vertex.operators[0]!.networkOutputs[0]!;
  const scheduler = new Scheduler();
  const downstream: ChannelElement[] = [];
  const outs = [0, 1].map((i) => new OutputChannel(100 + i, 1000, (el) => {
    downstream.push(el);
    if ('kind' in el && el.kind === 'barrier') log.push(`barrier ${el.checkpointId} downstream`);
    if ('kind' in el && el.kind === 'cancel-checkpoint') log.push(`cancel ${el.checkpointId} downstream`);
  }));
  const writer = new RecordWriter('rebalance', outs, [0, 1], 2, undefined, edge.targetMaxParallelism, { operatorName: 'proc', operatorId: 'x', subtaskIndex: 0, parallelism: 1 });
  const inputs = [0, 1].map((i) => new InputChannel(i, i, () => {}));
  const gate = new InputGate(0, inputs);
  const acks: { id: number; ack: TaskAck }[] = [];
  const declines: { id: number; reason: string }[] = [];
  const events: string[] = [];
  const task = new StreamTask({
    vertex, subtaskIndex: 0, attempt: 0, keyGroupRange: { start: 0, end: vertex.maxParallelism - 1 }, inputGates: [gate],
    writers: new Map([[edge.index, writer]]), splits: [], clock: systemClock,
    services: { collect: () => {}, writeStdout: () => {}, log: () => {} }, scheduler,
    listener: {
      onTaskRestored: () => events.push('restored'),
      onTaskRunning: () => events.push('running'),
      onTaskWaiting: () => events.push('waiting'),
      onTaskFinished: () => events.push('finished'),
      onTaskFailed: (_t, e) => events.push(`failed: ${String(e)}`),
    },
    bufferTimeoutMs: 0, waitForFinalCheckpoint: true, checkpointing: true, restore: undefined, gated: false, objectReuse: false,
    keyedStateBackend: heapBackendFactory,
  });
  const checkpointer = new SubtaskCheckpointer(task, taskId(1, 0), mode, {
    ack: (id, ack) => {
      log.push(`ack ${id}`);
      acks.push({ id, ack });
    },
    decline: (id, reason) => {
      log.push(`decline ${id}`);
      declines.push({ id, reason });
    },
  }, scheduler, Date.now, streamsAt);
  task.barrierHandler = checkpointer;
  task.start();
  const dir = mkdtempSync(join(tmpdir(), 'weir-task-cp-'));
  dirs.push(dir);
  const keyedOp = task.operators[0] as unknown as { backend: KeyedStateBackend };
  return { task, gate, inputs, log, processed, acks, declines, downstream, checkpointer, dir, events, keyedOp };
}

function seenIn(ack: TaskAck): number[] {
  // Inline state is msgpack+base64; decode through the same codec the runtime uses.
  const op = ack.operators.find((o) => o.inline !== undefined)!;
  return (decodeInline(op.inline!).lists!['seen']!.items as number[]).slice().sort((a, b) => a - b);
}

import { decodeValue } from '../../src/core/codec.ts';
import { taskId } from '../../src/core/task-id.ts';
function decodeInline(b64: string): InlineOperatorState {
  return decodeValue<InlineOperatorState>(Buffer.from(b64, 'base64'));
}

describe('barrier alignment', () => {
  it('exactly-once holds a channel that delivered the barrier until every channel did', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(batch(r(1), r(2)));
    h.inputs[0]!.push(barrier(1, h.dir));
    h.inputs[0]!.push(batch(r(3))); // after the barrier on channel 0: must wait
    h.inputs[1]!.push(batch(r(10)));
    await settle();
    expect(h.processed.sort((a, b) => a - b)).toEqual([1, 2, 10]);
    expect(h.acks).toEqual([]);
    h.inputs[1]!.push(barrier(1, h.dir));
    h.inputs[1]!.push(batch(r(11)));
    await until(() => h.acks.length > 0, 'the ack');
    expect(h.acks.map((a) => a.id)).toEqual([1]);
    // The snapshot is exactly the records before the barrier on every channel.
    expect(seenIn(h.acks[0]!.ack)).toEqual([1, 2, 10]);
    expect(h.processed.sort((a, b) => a - b)).toEqual([1, 2, 3, 10, 11]);
    expect(h.acks[0]!.ack.stats.alignmentMs).toBeGreaterThanOrEqual(0);
  });

  it('at-least-once does not hold channels: records after a barrier may enter the snapshot', async () => {
    const h = harness('at-least-once');
    h.inputs[0]!.push(batch(r(1)));
    h.inputs[0]!.push(barrier(1, h.dir));
    h.inputs[0]!.push(batch(r(3)));
    await settle();
    expect(h.processed.sort((a, b) => a - b)).toEqual([1, 3]);
    h.inputs[1]!.push(barrier(1, h.dir));
    await until(() => h.acks.length > 0, 'the ack');
    expect(h.acks.map((a) => a.id)).toEqual([1]);
    expect(seenIn(h.acks[0]!.ack)).toEqual([1, 3]);
  });

  it('forwards the barrier downstream before taking the snapshot, after the records that precede it', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(batch(r(1)));
    h.inputs[1]!.push(batch(r(2)));
    h.inputs[0]!.push(barrier(7, h.dir));
    h.inputs[1]!.push(barrier(7, h.dir));
    await until(() => h.acks.length > 0, 'the ack');
    const i = h.log.indexOf('barrier 7 downstream');
    expect(i).toBeGreaterThan(h.log.indexOf('record 1'));
    expect(i).toBeGreaterThan(h.log.indexOf('record 2'));
    expect(i).toBeLessThan(h.log.indexOf('snapshot 7'));
    expect(h.log.indexOf('snapshot 7')).toBeLessThan(h.log.indexOf('ack 7'));
    // Every downstream channel got the barrier, after both records.
    const kinds = h.downstream.map((e) => ('kind' in e ? `${e.kind}` : `batch ${(e as Batch).values.join(',')}`));
    expect(kinds.filter((k) => k === 'barrier')).toHaveLength(2);
    expect(kinds.lastIndexOf('barrier')).toBeGreaterThan(Math.max(kinds.indexOf('batch 1'), kinds.indexOf('batch 2')));
  });

  it('a newer barrier ends an older alignment: declined as subsumed, cancel marker downstream', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(barrier(1, h.dir));
    h.inputs[0]!.push(batch(r(5)));
    h.inputs[0]!.push(barrier(2, h.dir));
    h.inputs[1]!.push(batch(r(6)));
    await settle();
    expect(h.processed).toEqual([6]); // channel 0 held after barrier 1
    h.inputs[1]!.push(barrier(2, h.dir)); // channel 1 skipped barrier 1
    await until(() => h.acks.length > 0, 'the ack');
    expect(h.declines).toEqual([{ id: 1, reason: R.CHECKPOINT_DECLINED_SUBSUMED }]);
    expect(h.log).toContain('cancel 1 downstream');
    // Channel 0 was released: record 5 and barrier 2 flow, and checkpoint 2 completes with record 5 before it.
    expect(h.acks.map((a) => a.id)).toEqual([2]);
    expect(seenIn(h.acks[0]!.ack)).toEqual([5, 6]);
  });

  it('a cancel marker releases the alignment and travels on; the late barrier is ignored', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(barrier(3, h.dir));
    h.inputs[0]!.push(batch(r(1)));
    await settle();
    expect(h.processed).toEqual([]);
    h.inputs[1]!.push({ kind: 'cancel-checkpoint', checkpointId: 3 });
    await settle();
    expect(h.processed).toEqual([1]);
    expect(h.log).toContain('cancel 3 downstream');
    h.inputs[1]!.push(barrier(3, h.dir));
    h.inputs[1]!.push(batch(r(2)));
    await settle(20);
    await new Promise((res) => setTimeout(res, 100)); // an ack would have had time to arrive
    expect(h.acks).toEqual([]);
    expect(h.processed).toEqual([1, 2]);
  });

  it('an abort from the job manager releases a pending alignment', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(barrier(4, h.dir));
    h.inputs[0]!.push(batch(r(1)));
    await settle();
    expect(h.processed).toEqual([]);
    h.task.mail(() => h.checkpointer.notifyAborted(4));
    await settle();
    expect(h.processed).toEqual([1]);
    expect(h.log).toContain('cancel 4 downstream');
  });

  it('a channel that ends instead of delivering the barrier completes the alignment', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(barrier(5, h.dir));
    h.inputs[1]!.push(batch(r(9)));
    h.inputs[1]!.push(END_OF_DATA);
    await until(() => h.acks.length > 0, 'the ack');
    expect(h.acks.map((a) => a.id)).toEqual([5]);
    expect(seenIn(h.acks[0]!.ack)).toEqual([9]);
  });
});

describe('asynchronous phase', () => {
  it('records keep flowing while the state file write is pending; the snapshot holds only pre-barrier state', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((res) => (release = res));
    // State streams on a file system whose writes wait for the test to release them.
    const slowStreams: StreamsAt = (location) => localStreamFactory(location, async (path) => {
      const fh = await open(path, 'wx');
      const slow: WritableFile = {
        write: async (b, o, l, p) => {
          await gate;
          return fh.write(b, o, l, p);
        },
        writev: async (bs, p) => {
          await gate;
          return fh.writev(bs, p);
        },
        sync: () => fh.sync(),
        close: () => fh.close(),
      };
      return slow;
    });
    const h = harness('exactly-once', slowStreams);
    const before: Rec[] = [];
    for (let i = 0; i < 300; i++) before.push(r(i, `key-${i % 50}`));
    h.inputs[0]!.push(batch(...before));
    h.inputs[0]!.push(barrier(1, h.dir));
    h.inputs[1]!.push(barrier(1, h.dir));
    await settle(20);
    expect(h.log).toContain('snapshot 1');
    expect(h.acks).toEqual([]); // the write is held
    const after: Rec[] = [];
    for (let i = 300; i < 600; i++) after.push(r(i, `key-${i % 50}`));
    h.inputs[0]!.push(batch(...after));
    h.inputs[1]!.push(batch(r(1000, 'key-0')));
    await settle(20);
    expect(h.processed.length).toBe(601); // processed during the pending write
    expect(h.acks).toEqual([]);
    release();
    await until(() => h.acks.length > 0, 'the ack');
    expect(h.acks.map((a) => a.id)).toEqual([1]);
    const handle = h.acks[0]!.ack.operators.find((o) => o.file !== undefined)!;
    // Read the state file back: every key counts its 6 pre-barrier records, not the 12 after.
    const restored = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, systemClock, 'test');
    await loadKeyedState(restored, [{ path: join(h.dir, handle.file!), size: handle.fileSize! }]);
    const s = restored.getValueState(count);
    for (let k = 0; k < 50; k++) {
      restored.setCurrentKey(`key-${k}`);
      expect(s.value()).toBe(6);
    }
    // The live state moved on.
    const live = h.keyedOp.backend.getValueState(count);
    h.keyedOp.backend.setCurrentKey('key-0');
    expect(live.value()).toBe(13);
  });

  it('a state stream that fails declines the checkpoint, leaves no state file, and the next checkpoint succeeds', async () => {
    let failing = true;
    const flaky: StreamsAt = (location) => localStreamFactory(location, async (path) => {
      const fh = await open(path, 'wx');
      const fail = failing;
      let writes = 0;
      return {
        write: (b, o, l, p) => fh.write(b, o, l, p),
        writev: async (bs, p) => {
          if (fail && writes++ > 0) throw new Error('disk on fire'); // the header goes through, the blocks fail
          return fh.writev(bs, p);
        },
        sync: () => fh.sync(),
        close: () => fh.close(),
      };
    });
    const h = harness('exactly-once', flaky);
    h.inputs[0]!.push(batch(r(1), r(2)));
    h.inputs[0]!.push(barrier(1, h.dir));
    h.inputs[1]!.push(barrier(1, h.dir));
    await until(() => h.declines.length > 0, 'the decline');
    expect(h.declines).toEqual([{ id: 1, reason: R.CHECKPOINT_ASYNC_EXCEPTION }]);
    await until(() => readdirSync(h.dir).length === 0, 'the failed state file to be removed');
    failing = false;
    h.inputs[0]!.push(batch(r(3)));
    h.inputs[0]!.push(barrier(2, h.dir));
    h.inputs[1]!.push(barrier(2, h.dir));
    await until(() => h.acks.length > 0, 'the ack');
    expect(h.acks.map((a) => a.id)).toEqual([2]);
    const handle = h.acks[0]!.ack.operators.find((o) => o.file !== undefined)!;
    expect(readdirSync(h.dir)).toEqual([handle.file]);
    const restored = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, systemClock, 'test');
    await loadKeyedState(restored, [{ path: join(h.dir, handle.file!), size: handle.fileSize! }]);
    restored.setCurrentKey('k0');
    expect(restored.getValueState(count).value()).toBe(1); // record 3
    restored.setCurrentKey('k1');
    expect(restored.getValueState(count).value()).toBe(1); // record 1
  });
});
