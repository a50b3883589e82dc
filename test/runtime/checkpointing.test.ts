/**
 * The task side of checkpoints, driven event by event on a real StreamTask: barrier alignment
 * in exactly-once and at-least-once mode, the barrier going downstream before the snapshot,
 * an asynchronous phase that lets records flow while a (deliberately held) write is pending,
 * cancel markers, aborts, a newer barrier ending an older alignment, end of input
 * completing an alignment, and state streams that fail (locally, in in-memory storage, or at a
 * location no storage serves): the checkpoint is declined, its files removed, the task goes on.
 *
 * Nothing here runs on its own: the task and its snapshot jobs step only when the test runs
 * the manual scheduler, processing time is a manual clock, and state files are written to a
 * temp dir through the task's storage view, tracked (test/helpers/stepping.ts) so the test
 * waits for its stream operations. So "no snapshot, no ack yet" is checked at the exact step,
 * with nothing runnable and no I/O in flight, never after a sleep.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamExecutionEnvironment } from '../../src/api/environment.ts';
import { ListStateDescriptor, ValueStateDescriptor, type ListState } from '../../src/core/state.ts';
import type { Collector, KeyedContext, KeyedProcessFunction, KeyedRuntimeContext } from '../../src/core/functions.ts';
import { CheckpointFailureReason as R } from '../../src/checkpoint/failure-reason.ts';
import { childReference } from '../../src/checkpoint/names.ts';
import { MemoryCheckpointStorage, StorageFaults } from '../../src/checkpoint/memory/index.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import type { CheckpointStorageWorkerView } from '../../src/checkpoint/storage.ts';
import type { TaskAck, InlineOperatorState } from '../../src/core/checkpoint-format.ts';
import { buildJobGraph } from '../../src/graph/job-graph.ts';
import type { Batch } from '../../src/core/batch.ts';
import { InputChannel, OutputChannel } from '../../src/runtime/channels/channel.ts';
import { loadKeyedState } from '../../src/runtime/checkpointing/restore.ts';
import { SubtaskCheckpointer } from '../../src/runtime/checkpointing/subtask-checkpointer.ts';
import { END_OF_DATA, type BarrierEvent, type ChannelElement } from '../../src/runtime/events.ts';
import { InputGate } from '../../src/runtime/input-gate.ts';
import { RecordWriter } from '../../src/runtime/record-writer.ts';
import { StreamTask } from '../../src/runtime/task.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { HeapKeyedStateBackend, heapBackendFactory } from '../../src/state/heap/backend.ts';
import type { KeyedStateBackend } from '../../src/state/backend.ts';
import { decodeValue } from '../../src/core/codec.ts';
import { ManualScheduler, TrackedIo } from '../helpers/stepping.ts';
import { taskId } from '../../src/core/task-id.ts';

interface Rec { k: string; n: number }

const count = new ValueStateDescriptor<number>('count', { defaultValue: 0 });
const seenAtSnapshot = new ListStateDescriptor<number>('seen');
const T0 = 1_000_000;

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

/**
 * A keyed operator subtask with two input channels and one downstream channel, all observable.
 * Its storage view is tracked I/O (`io`, with stream faults) over `storage` (local paths by
 * default); barriers carry `location` (a fresh temp dir by default).
 */
function harness(mode: 'exactly-once' | 'at-least-once', opts: { storage?: CheckpointStorageWorkerView; location?: string } = {}) {
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
  const clock = new ManualClock(T0);
  const scheduler = new ManualScheduler();
  const io = new TrackedIo(opts.storage);
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
    writers: new Map([[edge.index, writer]]), splits: [], sourceSplitTotal: 0, clock, recordCounters: true,
    services: { collect: () => {}, writeStdout: () => {}, log: () => {}, deadLetters: () => {} }, scheduler,
    listener: {
      onTaskRestored: () => events.push('restored'),
      onTaskRunning: () => events.push('running'),
      onTaskWaiting: () => events.push('waiting'),
      onTaskFinished: () => events.push('finished'),
      onTaskFailed: (_t, e) => events.push(`failed: ${String(e)}`),
    },
    bufferTimeoutMs: 0, waitForFinalCheckpoint: true, checkpointing: true, restore: undefined, gated: false, objectReuse: false,
    keyedStateBackend: heapBackendFactory, storage: io,
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
  }, scheduler, () => clock.now());
  task.barrierHandler = checkpointer;
  task.start();
  const dir = mkdtempSync(join(tmpdir(), 'weir-task-cp-'));
  dirs.push(dir);
  const keyedOp = task.operators[0] as unknown as { backend: KeyedStateBackend };
  const location = opts.location ?? dir;
  /** A barrier for this harness's snapshot location, stamped `at` (the trigger time on the job manager). */
  const barrier = (id: number, at = clock.now()): BarrierEvent => ({ kind: 'barrier', checkpointId: id, timestamp: at, type: 'checkpoint', location });
  /** Runs the task until nothing is runnable (no I/O is waited for). */
  const run = (): number => scheduler.runUntilIdle();
  /** Runs the task and its snapshot I/O until all is quiet, or until `cond` holds. */
  const quiesce = (cond?: () => boolean): Promise<void> => io.quiesce(scheduler, cond);
  /** Nothing can happen any more without new input: nothing runnable, no I/O in flight, no timer. */
  const quiet = (): boolean => scheduler.idle && io.pending === 0 && clock.pendingTimers() === 0;
  const barriersDownstream = (): number[] => downstream.flatMap((e) => ('kind' in e && e.kind === 'barrier' ? [e.checkpointId] : []));
  return {
    task, gate, inputs, log, processed, acks, declines, downstream, checkpointer, dir, events, keyedOp, clock, scheduler, io,
    barrier, run, quiesce, quiet, barriersDownstream,
  };
}

function seenIn(ack: TaskAck): number[] {
  // Inline state is msgpack+base64; decode through the same codec the runtime uses.
  const op = ack.operators.find((o) => o.inline !== undefined)!;
  return (decodeInline(op.inline!).lists!['seen']!.items as number[]).slice().sort((a, b) => a - b);
}

function decodeInline(b64: string): InlineOperatorState {
  return decodeValue<InlineOperatorState>(Buffer.from(b64, 'base64'));
}

const sortedNums = (xs: readonly number[]): number[] => xs.slice().sort((a, b) => a - b);

describe('barrier alignment', () => {
  it('exactly-once holds a channel that delivered the barrier until every channel did; alignment time is first to last barrier', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(batch(r(1), r(2)));
    h.inputs[0]!.push(h.barrier(1, T0 - 50)); // triggered 50 ms before it reaches this task
    h.inputs[0]!.push(batch(r(3))); // after the barrier on channel 0: must wait
    h.inputs[1]!.push(batch(r(10)));
    h.run();
    expect(sortedNums(h.processed)).toEqual([1, 2, 10]);
    expect(h.gate.isBlocked(0)).toBe(true);
    expect(h.gate.isBlocked(1)).toBe(false);
    // The first barrier alone: no barrier downstream, no snapshot, no file, and nothing left to run.
    expect(h.barriersDownstream()).toEqual([]);
    expect(h.log).not.toContain('snapshot 1');
    expect(h.io.opened).toEqual([]);
    expect(h.quiet()).toBe(true);
    expect(h.acks).toEqual([]);

    h.clock.advance(250);
    h.inputs[1]!.push(batch(r(12)));
    h.inputs[1]!.push(h.barrier(1, T0 - 50));
    h.inputs[1]!.push(batch(r(11)));
    // Step by step: the record before the barrier on channel 1 ...
    expect(h.scheduler.runOne()).toBe(true);
    expect(h.processed.at(-1)).toBe(12);
    expect(h.log).not.toContain('snapshot 1');
    expect(h.barriersDownstream()).toEqual([]);
    // ... then the last barrier: in that very step the barrier goes downstream and the snapshot is taken.
    expect(h.scheduler.runOne()).toBe(true);
    expect(h.log.slice(-3)).toEqual(['barrier 1 downstream', 'barrier 1 downstream', 'snapshot 1']);
    expect(h.barriersDownstream()).toEqual([1, 1]);
    expect(h.gate.isBlocked(0)).toBe(false);
    expect(h.acks).toEqual([]); // the state file is still to be written
    await h.quiesce(() => h.acks.length > 0);
    expect(h.acks.map((a) => a.id)).toEqual([1]);
    // The snapshot is exactly the records before the barrier on every channel.
    expect(seenIn(h.acks[0]!.ack)).toEqual([1, 2, 10, 12]);
    expect(sortedNums(h.processed)).toEqual([1, 2, 3, 10, 11, 12]);
    // Alignment: from the first barrier (at T0) to the last (at T0 + 250) on the task's clock;
    // start delay: from the trigger (T0 - 50) to the first barrier.
    expect(h.acks[0]!.ack.stats.alignmentMs).toBe(250);
    expect(h.acks[0]!.ack.stats.startDelayMs).toBe(50);
    await h.quiesce();
    expect(h.acks).toHaveLength(1);
    expect(h.declines).toEqual([]);
  });

  it('at-least-once does not hold channels: records after a barrier may enter the snapshot', async () => {
    const h = harness('at-least-once');
    h.inputs[0]!.push(batch(r(1)));
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[0]!.push(batch(r(3)));
    h.run();
    expect(sortedNums(h.processed)).toEqual([1, 3]);
    expect(h.gate.isBlocked(0)).toBe(false);
    expect(h.log).not.toContain('snapshot 1');
    expect(h.quiet()).toBe(true);
    h.inputs[1]!.push(h.barrier(1));
    expect(h.scheduler.runOne()).toBe(true);
    expect(h.log).toEqual(['record 1', 'record 3', 'barrier 1 downstream', 'barrier 1 downstream', 'snapshot 1']);
    await h.quiesce(() => h.acks.length > 0);
    expect(h.acks.map((a) => a.id)).toEqual([1]);
    expect(seenIn(h.acks[0]!.ack)).toEqual([1, 3]);
  });

  it('forwards the barrier downstream before taking the snapshot, after the records that precede it', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(batch(r(1)));
    h.inputs[1]!.push(batch(r(2)));
    h.inputs[0]!.push(h.barrier(7));
    h.inputs[1]!.push(h.barrier(7));
    await h.quiesce();
    // (one 'downstream' entry per downstream channel: there are two)
    expect(h.log).toEqual(['record 1', 'record 2', 'barrier 7 downstream', 'barrier 7 downstream', 'snapshot 7', 'ack 7']);
    // Every downstream channel got the barrier, after both records.
    const kinds = h.downstream.map((e) => ('kind' in e ? `${e.kind} ${(e as BarrierEvent).checkpointId}` : `batch ${(e as Batch).values.join(',')}`));
    expect(kinds.filter((k) => k.startsWith('batch')).sort()).toEqual(['batch 1', 'batch 2']);
    expect(kinds.slice(-2)).toEqual(['barrier 7', 'barrier 7']);
  });

  it('a newer barrier ends an older alignment: declined as subsumed, cancel marker downstream', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[0]!.push(batch(r(5)));
    h.inputs[0]!.push(h.barrier(2));
    h.inputs[1]!.push(batch(r(6)));
    h.run();
    expect(h.processed).toEqual([6]); // channel 0 held after barrier 1
    expect(h.declines).toEqual([]);
    expect(h.quiet()).toBe(true);
    h.clock.advance(40);
    h.inputs[1]!.push(h.barrier(2)); // channel 1 skipped barrier 1
    await h.quiesce();
    expect(h.declines).toEqual([{ id: 1, reason: R.CHECKPOINT_DECLINED_SUBSUMED }]);
    // Channel 0 was released: record 5 and barrier 2 flow, and checkpoint 2 completes with record 5 before it.
    expect(h.log).toEqual(['record 6', 'decline 1', 'cancel 1 downstream', 'cancel 1 downstream', 'record 5', 'barrier 2 downstream', 'barrier 2 downstream', 'snapshot 2', 'ack 2']);
    expect(h.acks.map((a) => a.id)).toEqual([2]);
    expect(seenIn(h.acks[0]!.ack)).toEqual([5, 6]);
    // Checkpoint 2's alignment starts with its barrier on channel 1 (T0 + 40) and ends with channel 0's in the
    // same step: the 40 ms spent aligning checkpoint 1 are not counted.
    expect(h.acks[0]!.ack.stats.alignmentMs).toBe(0);
  });

  it('a cancel marker releases the alignment and travels on; the late barrier is ignored', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(h.barrier(3));
    h.inputs[0]!.push(batch(r(1)));
    h.run();
    expect(h.processed).toEqual([]);
    expect(h.quiet()).toBe(true);
    h.inputs[1]!.push({ kind: 'cancel-checkpoint', checkpointId: 3 });
    // The step that takes the marker releases channel 0 and forwards the marker.
    expect(h.scheduler.runOne()).toBe(true);
    expect(h.gate.isBlocked(0)).toBe(false);
    expect(h.log).toEqual(['cancel 3 downstream', 'cancel 3 downstream']);
    h.run();
    expect(h.processed).toEqual([1]);
    h.inputs[1]!.push(h.barrier(3));
    h.inputs[1]!.push(batch(r(2)));
    await h.quiesce();
    // The late barrier started nothing: no alignment (channel 1 was not held), no barrier
    // downstream, no snapshot, no state file; and nothing is left that could ack later.
    expect(h.processed).toEqual([1, 2]);
    expect(h.gate.isBlocked(1)).toBe(false);
    expect(h.barriersDownstream()).toEqual([]);
    expect(h.log).toEqual(['cancel 3 downstream', 'cancel 3 downstream', 'record 1', 'record 2']);
    expect(h.io.opened).toEqual([]);
    expect(h.quiet()).toBe(true);
    expect(h.acks).toEqual([]);
    expect(h.declines).toEqual([]);
  });

  it('an abort from the job manager releases a pending alignment', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(h.barrier(4));
    h.inputs[0]!.push(batch(r(1)));
    h.run();
    expect(h.processed).toEqual([]);
    expect(h.quiet()).toBe(true);
    h.task.mail(() => h.checkpointer.notifyAborted(4));
    // One step: the mail runs first (release, cancel marker), then the held record.
    expect(h.scheduler.runOne()).toBe(true);
    expect(h.log).toEqual(['cancel 4 downstream', 'cancel 4 downstream', 'record 1']);
    // Channel 1's barrier comes after the abort: it is ignored (it starts no alignment, holds nothing).
    h.inputs[1]!.push(h.barrier(4));
    h.inputs[1]!.push(batch(r(2)));
    await h.quiesce();
    expect(h.processed).toEqual([1, 2]);
    expect(h.gate.isBlocked(1)).toBe(false);
    expect(h.barriersDownstream()).toEqual([]);
    expect(h.io.opened).toEqual([]);
    expect(h.acks).toEqual([]);
    expect(h.quiet()).toBe(true);
  });

  it('a channel that ends instead of delivering the barrier completes the alignment', async () => {
    const h = harness('exactly-once');
    h.inputs[0]!.push(h.barrier(5));
    h.inputs[1]!.push(batch(r(9)));
    h.run();
    expect(h.log).toEqual(['record 9']);
    expect(h.quiet()).toBe(true);
    h.clock.advance(30);
    h.inputs[1]!.push(END_OF_DATA);
    expect(h.scheduler.runOne()).toBe(true);
    expect(h.log).toEqual(['record 9', 'barrier 5 downstream', 'barrier 5 downstream', 'snapshot 5']);
    await h.quiesce(() => h.acks.length > 0);
    expect(h.acks.map((a) => a.id)).toEqual([5]);
    expect(seenIn(h.acks[0]!.ack)).toEqual([9]);
    expect(h.acks[0]!.ack.stats.alignmentMs).toBe(30);
  });
});

describe('asynchronous phase', () => {
  it('records keep flowing while the state file write is pending; the snapshot holds only pre-barrier state', async () => {
    const h = harness('exactly-once');
    // Every write of a state stream waits for the test to release it (the file itself is real).
    h.io.fault = () => 'hold';
    const before: Rec[] = [];
    for (let i = 0; i < 300; i++) before.push(r(i, `key-${i % 50}`));
    h.inputs[0]!.push(batch(...before));
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[1]!.push(h.barrier(1));
    // Until the snapshot's first write is held (the stream is open, the header write waits).
    await h.quiesce(() => h.io.holds > 0);
    expect(h.log.slice(-3)).toEqual(['barrier 1 downstream', 'barrier 1 downstream', 'snapshot 1']);
    expect(h.io.opened).toHaveLength(1);
    expect(h.acks).toEqual([]); // the write is held
    const after: Rec[] = [];
    for (let i = 300; i < 600; i++) after.push(r(i, `key-${i % 50}`));
    h.inputs[0]!.push(batch(...after));
    h.inputs[1]!.push(batch(r(1000, 'key-0')));
    await h.quiesce();
    // Quiet with the write still held: every record was processed during the pending write, no ack.
    expect(h.processed.length).toBe(601);
    expect(h.io.holds).toBe(1);
    expect(h.io.heldWrites()).toBe(1);
    expect(h.acks).toEqual([]);
    h.io.fault = undefined;
    expect(h.io.releaseHeld()).toBe(1);
    await h.quiesce(() => h.acks.length > 0);
    expect(h.acks.map((a) => a.id)).toEqual([1]);
    const handle = h.acks[0]!.ack.operators.find((o) => o.file !== undefined)!;
    expect(join(h.dir, handle.file!)).toBe(h.io.opened[0]);
    // Read the state file back: every key counts its 6 pre-barrier records, not the 12 after.
    const restored = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, new ManualClock(T0), 'test');
    await loadKeyedState(restored, [{ path: join(h.dir, handle.file!), size: handle.fileSize! }], h.io);
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
    const h = harness('exactly-once');
    // The header goes through, the blocks fail.
    h.io.fault = (_reference, write) => (write > 0 ? 'fail' : undefined);
    h.inputs[0]!.push(batch(r(1), r(2)));
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[1]!.push(h.barrier(1));
    await h.quiesce(() => h.declines.length > 0);
    expect(h.declines).toEqual([{ id: 1, reason: R.CHECKPOINT_ASYNC_EXCEPTION }]);
    expect(h.io.failures).toBe(1);
    // Once the stream's abort and the discard are done, the failed state file is gone.
    await h.quiesce();
    expect(readdirSync(h.dir)).toEqual([]);
    expect(h.events.filter((e) => e.startsWith('failed'))).toEqual([]);
    h.io.fault = undefined;
    h.inputs[0]!.push(batch(r(3)));
    h.inputs[0]!.push(h.barrier(2));
    h.inputs[1]!.push(h.barrier(2));
    await h.quiesce(() => h.acks.length > 0);
    expect(h.acks.map((a) => a.id)).toEqual([2]);
    const handle = h.acks[0]!.ack.operators.find((o) => o.file !== undefined)!;
    expect(readdirSync(h.dir)).toEqual([handle.file]);
    await h.quiesce();
    expect(h.declines).toHaveLength(1);
    const restored = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, new ManualClock(T0), 'test');
    await loadKeyedState(restored, [{ path: join(h.dir, handle.file!), size: handle.fileSize! }], h.io);
    restored.setCurrentKey('k0');
    expect(restored.getValueState(count).value()).toBe(1); // record 3
    restored.setCurrentKey('k1');
    expect(restored.getValueState(count).value()).toBe(1); // record 1
  });

  it('on in-memory storage with a failing write: declined and nothing left; the next checkpoint is written there and restores from there', async () => {
    const JOB = 'f00dfeedf00dfeedf00dfeedf00dfeed';
    const storage = new MemoryCheckpointStorage({ faults: new StorageFaults().inject({ kind: 'fail-write', match: /chk-1\/.*\.state$/, times: 1 }) });
    const h = harness('exactly-once', { storage: storage.workerView });
    const at = (id: number): BarrierEvent => ({ ...h.barrier(id), location: storage.checkpointDir(JOB, id) });
    h.inputs[0]!.push(batch(r(1), r(2)));
    h.inputs[0]!.push(at(1));
    h.inputs[1]!.push(at(1));
    await h.quiesce();
    expect(h.declines).toEqual([{ id: 1, reason: R.CHECKPOINT_ASYNC_EXCEPTION }]);
    expect(storage.faults.count('fail-write')).toBe(1);
    expect(storage.files.listFiles()).toEqual([]);
    h.inputs[0]!.push(batch(r(3)));
    h.inputs[0]!.push(at(2));
    h.inputs[1]!.push(at(2));
    await h.quiesce();
    expect(h.acks.map((a) => a.id)).toEqual([2]);
    const handle = h.acks[0]!.ack.operators.find((o) => o.file !== undefined)!;
    const file = childReference(storage.checkpointDir(JOB, 2), handle.file!);
    expect(h.io.opened).toEqual([childReference(storage.checkpointDir(JOB, 1), handle.file!), file]);
    expect(storage.files.listFiles()).toEqual([{ reference: file, size: handle.fileSize! }]);
    const restored = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, new ManualClock(T0), 'test');
    await loadKeyedState(restored, [{ path: file, size: handle.fileSize! }], storage.workerView);
    restored.setCurrentKey('k0');
    expect(restored.getValueState(count).value()).toBe(1); // record 3
    restored.setCurrentKey('k1');
    expect(restored.getValueState(count).value()).toBe(1); // record 1
    restored.setCurrentKey('k2');
    expect(restored.getValueState(count).value()).toBe(1); // record 2
  });

  it('a location no storage serves declines the checkpoint; the task goes on', async () => {
    const h = harness('exactly-once', { storage: storageResolver().workerView, location: 'memory://nowhere/job/chk-1' });
    h.inputs[0]!.push(batch(r(1)));
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[1]!.push(h.barrier(1));
    h.inputs[1]!.push(batch(r(2)));
    await h.quiesce();
    expect(h.log).toEqual(['record 1', 'barrier 1 downstream', 'barrier 1 downstream', 'snapshot 1', 'record 2', 'decline 1']);
    expect(h.declines).toEqual([{ id: 1, reason: R.CHECKPOINT_ASYNC_EXCEPTION }]);
    expect(h.io.opened).toEqual([]);
    expect(h.acks).toEqual([]);
    expect(h.task.state).toBe('running');
    expect(h.events.filter((e) => e.startsWith('failed'))).toEqual([]);
  });
});

describe('incremental checkpoints at the task', () => {
  it('a checkpoint acks a chain in the job\'s shared directory, a delta once the task heard its base completed; a savepoint stays a full file in its own place', async () => {
    const root = mkdtempSync(join(tmpdir(), 'weir-task-incr-'));
    dirs.push(root);
    const chk = (n: number) => {
      const d = join(root, 'job', `chk-${n}`);
      mkdirSync(d, { recursive: true });
      return d;
    };
    mkdirSync(join(root, 'job', 'shared'), { recursive: true });
    const h = harness('exactly-once', { location: chk(1) });
    h.checkpointer.incremental = { maxDeltas: 5, maxDeltaRatio: 10 };
    const barrier = (id: number, type: 'checkpoint' | 'savepoint', location: string): BarrierEvent => ({ kind: 'barrier', checkpointId: id, timestamp: h.clock.now(), type, location });
    const snapshot = async (id: number, type: 'checkpoint' | 'savepoint', location: string, records: number[]): Promise<TaskAck> => {
      h.inputs[0]!.push(batch(...records.map((n) => r(n))));
      for (const c of h.inputs) c.push(barrier(id, type, location));
      await h.quiesce(() => h.acks.some((a) => a.id === id));
      return h.acks.find((a) => a.id === id)!.ack;
    };
    const keyedOf = (ack: TaskAck) => ack.operators.find((o) => o.chain !== undefined || o.file !== undefined)!;

    const a1 = keyedOf(await snapshot(1, 'checkpoint', chk(1), [1, 2, 3]));
    expect(a1.file).toBeUndefined();
    expect(a1.chain!.map((c) => [c.kind, c.checkpointId])).toEqual([['base', 1]]);
    expect(existsSync(join(root, 'job', 'shared', a1.chain![0]!.name))).toBe(true);
    expect(readdirSync(join(root, 'job', 'chk-1'))).toEqual([]); // nothing in the checkpoint's own directory
    // Not yet heard that 1 completed: 2 is a base again.
    const a2 = keyedOf(await snapshot(2, 'checkpoint', chk(2), [4]));
    expect(a2.chain!.map((c) => [c.kind, c.checkpointId])).toEqual([['base', 2]]);
    h.checkpointer.notifyComplete(2);
    const a3 = keyedOf(await snapshot(3, 'checkpoint', chk(3), [5]));
    expect(a3.chain!.map((c) => [c.kind, c.checkpointId])).toEqual([['base', 2], ['delta', 3]]);
    // A savepoint: full, canonical, in its own directory.
    const sp = join(root, 'savepoint-x');
    mkdirSync(sp);
    const a4 = keyedOf(await snapshot(4, 'savepoint', sp, [6]));
    expect(a4.chain).toBeUndefined();
    expect(readdirSync(sp)).toEqual([a4.file]);
    // And the full savepoint restores what the chain of 3 plus record 6 holds.
    const b = new HeapKeyedStateBackend({ start: 0, end: 127 }, 128, h.clock, 'restored');
    await loadKeyedState(b, [{ path: join(sp, a4.file!), size: a4.fileSize! }], storageResolver().workerView);
    const counts = ['k0', 'k1', 'k2'].map((k) => {
      b.setCurrentKey(k);
      return b.getValueState(count).value();
    });
    expect(counts).toEqual([2, 2, 2]); // records 1..6 over keys n % 3
  });
});
