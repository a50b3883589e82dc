/**
 * Unaligned checkpoints at one real StreamTask, driven event by event (manual scheduler, manual
 * clock, tracked I/O: see test/helpers/stepping.ts): the barrier is seen when it arrives, the
 * snapshot is taken before the data queued ahead of it is processed, that data and what arrives
 * on other channels until their barrier is the channel state; the barrier overtakes output
 * waiting for credit, which is stored too; the aligned-checkpoint timeout switches an alignment
 * in progress to unaligned; an abort while recording leaves no ack and no file.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamExecutionEnvironment } from '../../src/api/environment.ts';
import { ListStateDescriptor, ValueStateDescriptor, type ListState } from '../../src/core/state.ts';
import type { Collector, KeyedContext, KeyedProcessFunction, KeyedRuntimeContext } from '../../src/core/functions.ts';
import { childReference } from '../../src/checkpoint/names.ts';
import { openStateFile, StateFileReader } from '../../src/checkpoint/state-file.ts';
import type { TaskAck, InlineOperatorState } from '../../src/core/checkpoint-format.ts';
import { buildJobGraph } from '../../src/graph/job-graph.ts';
import type { Batch } from '../../src/core/batch.ts';
import { decodeBatch, decodeValue } from '../../src/core/codec.ts';
import { InputChannel, OutputChannel } from '../../src/runtime/channels/channel.ts';
import { SubtaskCheckpointer } from '../../src/runtime/checkpointing/subtask-checkpointer.ts';
import { readChannelState, type RestoredChannelState, type StoredElement } from '../../src/runtime/checkpointing/channel-state.ts';
import { loadChannelState } from '../../src/runtime/checkpointing/channel-state-restore.ts';
import type { UnalignedSettings } from '../../src/runtime/checkpointing/barrier-decision.ts';
import { isEvent, type BarrierEvent, type ChannelElement } from '../../src/runtime/events.ts';
import { InputGate } from '../../src/runtime/input-gate.ts';
import { RecordWriter } from '../../src/runtime/record-writer.ts';
import { StreamTask } from '../../src/runtime/task.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { heapBackendFactory } from '../../src/state/heap/backend.ts';
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

function batch(...ns: number[]): Batch {
  return { values: ns.map((n) => ({ k: `k${n % 3}`, n })), timestamps: ns.map(() => Number.NEGATIVE_INFINITY) };
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

/** A keyed subtask with two input channels and two downstream channels of `credits` each. */
function harness(unaligned: UnalignedSettings, credits = 1000) {
  const log: string[] = [];
  const processed: number[] = [];
  const env = new StreamExecutionEnvironment({ defaultParallelism: 1 });
  env.fromCollection<Rec>([]).keyBy((x) => x.k).process<number>(new Tracker(log, processed)).uid('proc').addSink(() => {}).setParallelism(2);
  const graph = buildJobGraph(env);
  const vertex = graph.vertices.find((v) => v.operators[0]!.node.transformation.uid === 'proc')!;
  const edge = vertex.operators[0]!.networkOutputs[0]!;
  const clock = new ManualClock(T0);
  const scheduler = new ManualScheduler();
  const io = new TrackedIo();
  const downstream: ChannelElement[][] = [[], []];
  const outs = [0, 1].map((i) => new OutputChannel(100 + i, credits, (el) => {
    downstream[i]!.push(el);
    if (isEvent(el) && el.kind === 'barrier') log.push(`barrier ${el.checkpointId} downstream`);
  }));
  const writer = new RecordWriter('rebalance', outs, [0, 1], 2, undefined, edge.targetMaxParallelism, { operatorName: 'proc', operatorId: 'x', subtaskIndex: 0, parallelism: 1 });
  const inputs = [0, 1].map((i) => new InputChannel(i, i, () => {}));
  const gate = new InputGate(0, inputs);
  const acks: { id: number; ack: TaskAck }[] = [];
  const declines: { id: number; reason: string }[] = [];
  const task = new StreamTask({
    vertex, subtaskIndex: 0, attempt: 0, keyGroupRange: { start: 0, end: vertex.maxParallelism - 1 }, inputGates: [gate],
    writers: new Map([[edge.index, writer]]), splits: [], sourceSplitTotal: 0, clock, recordCounters: true,
    services: { collect: () => {}, writeStdout: () => {}, log: () => {}, deadLetters: () => {} }, scheduler,
    listener: { onTaskRestored: () => {}, onTaskRunning: () => {}, onTaskWaiting: () => {}, onTaskFinished: () => {}, onTaskFailed: (_t, e) => log.push(`failed: ${String(e)}`) },
    bufferTimeoutMs: 0, waitForFinalCheckpoint: true, checkpointing: true, restore: undefined, gated: false, objectReuse: false,
    keyedStateBackend: heapBackendFactory, storage: io,
  });
  const checkpointer = new SubtaskCheckpointer(task, taskId(1, 0), 'exactly-once', {
    ack: (id, ack) => { log.push(`ack ${id}`); acks.push({ id, ack }); },
    decline: (id, reason) => { log.push(`decline ${id}`); declines.push({ id, reason }); },
  }, scheduler, () => clock.now());
  checkpointer.configureUnaligned(unaligned);
  task.barrierHandler = checkpointer;
  task.start();
  const dir = mkdtempSync(join(tmpdir(), 'weir-unaligned-'));
  dirs.push(dir);
  const barrier = (id: number, at = T0): BarrierEvent => ({ kind: 'barrier', checkpointId: id, timestamp: at, type: 'checkpoint', location: dir });
  const quiesce = (cond?: () => boolean): Promise<void> => io.quiesce(scheduler, cond);
  /** The channel state an ack names, read back from its file. */
  const channelState = async (ack: TaskAck): Promise<RestoredChannelState | undefined> => {
    const h = ack.operators.find((o) => o.channelState !== undefined)?.channelState;
    if (h === undefined) return undefined;
    const input = await openStateFile(io, childReference(dir, h.file), h.fileSize);
    try {
      return await readChannelState(await StateFileReader.open(input));
    } finally {
      await input.close();
    }
  };
  return { task, gate, inputs, outs, log, processed, acks, declines, downstream, checkpointer, dir, clock, scheduler, io, barrier, quiesce, channelState };
}

function seenIn(ack: TaskAck): number[] {
  const op = ack.operators.find((o) => o.inline !== undefined)!;
  const inline = decodeValue<InlineOperatorState>(Buffer.from(op.inline!, 'base64'));
  return (inline.lists!['seen']!.items as number[]).slice().sort((a, b) => a - b);
}

/** The number of an input record, or an output record (the number itself). */
const recNumber = (v: unknown): number => (typeof v === 'number' ? v : (v as Rec).n);

/** Record numbers of stored elements (batches), in order; events as strings. */
function numbers(els: readonly StoredElement[] | undefined): (number | string)[] {
  return (els ?? []).flatMap((e): (number | string)[] => (e instanceof Uint8Array ? decodeBatch(e).values.map(recNumber) : [`${e.kind}`]));
}

function inputOf(cs: RestoredChannelState | undefined, channel: number): (number | string)[] {
  return numbers(cs?.inputs.find((i) => i.gate === 0 && i.channel === channel)?.elements);
}

const UNALIGNED = { enabled: true, alignedTimeoutMs: 0 };

describe('unaligned checkpoints at a subtask', () => {
  it('the barrier overtakes queued data: snapshot first, the overtaken data and later arrivals before each channel\'s barrier are channel state', async () => {
    const h = harness(UNALIGNED);
    h.inputs[0]!.push(batch(1, 2));
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[0]!.push(batch(3)); // after the barrier on channel 0
    h.inputs[1]!.push(batch(10));
    // One step: the barrier's arrival (mail) comes before any queued record.
    expect(h.scheduler.runOne()).toBe(true);
    expect(h.log.slice(0, 3)).toEqual(['barrier 1 downstream', 'barrier 1 downstream', 'snapshot 1']);
    h.scheduler.runUntilIdle();
    expect(h.processed.slice().sort((a, b) => a - b)).toEqual([1, 2, 3, 10]);
    // Channel 1 has not delivered its barrier: what arrives there is recorded, and no ack yet.
    h.inputs[1]!.push(batch(11));
    h.scheduler.runUntilIdle();
    await h.quiesce();
    expect(h.acks).toEqual([]);
    h.inputs[1]!.push(h.barrier(1));
    h.inputs[1]!.push(batch(12)); // after the barrier: not channel state
    await h.quiesce(() => h.acks.length > 0);
    expect(h.acks.map((a) => a.id)).toEqual([1]);
    const ack = h.acks[0]!.ack;
    expect(seenIn(ack)).toEqual([]); // the snapshot was taken before any record was processed
    const cs = await h.channelState(ack);
    expect(inputOf(cs, 0)).toEqual([1, 2]);
    expect(inputOf(cs, 1)).toEqual([10, 11]);
    // Snapshot + channel state = exactly the records before the barrier on every channel.
    expect(ack.stats.unaligned).toBe(true);
    expect(ack.stats.persistedInFlightBytes).toBeGreaterThan(0);
    const handle = ack.operators.find((o) => o.channelState !== undefined)!;
    expect(handle.stateSize).toBeGreaterThanOrEqual(handle.channelState!.fileSize);
    h.scheduler.runUntilIdle();
    expect(h.processed.slice().sort((a, b) => a - b)).toEqual([1, 2, 3, 10, 11, 12]);
    expect(h.declines).toEqual([]);
  });

  it('event time in flight is stored with the records, in order', async () => {
    const h = harness(UNALIGNED);
    h.inputs[0]!.push(batch(1));
    h.inputs[0]!.push({ kind: 'watermark', timestamp: 5 });
    h.inputs[0]!.push(batch(2));
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[1]!.push(h.barrier(1));
    await h.quiesce(() => h.acks.length > 0);
    expect(inputOf(await h.channelState(h.acks[0]!.ack), 0)).toEqual([1, 'watermark', 2]);
  });

  it('the barrier overtakes output waiting for credit; that output is output channel state and still goes out after it', async () => {
    const h = harness(UNALIGNED, 0); // no credit downstream: every batch waits
    h.inputs[0]!.push(batch(1));
    h.scheduler.runUntilIdle();
    expect(h.processed).toEqual([1]);
    expect(h.downstream.flat()).toEqual([]);
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[1]!.push(h.barrier(1));
    await h.quiesce(() => h.acks.length > 0);
    // Downstream got the barrier on both channels although the batch before it is still waiting.
    expect(h.downstream.map((d) => d.map((e) => (isEvent(e) ? e.kind : 'batch')))).toEqual([['barrier'], ['barrier']]);
    const cs = await h.channelState(h.acks[0]!.ack);
    const out = cs!.outputs.flatMap((o) => numbers(o.elements));
    expect(out).toEqual([1]);
    expect(seenIn(h.acks[0]!.ack)).toEqual([1]);
    h.outs.forEach((o) => o.addCredit(1));
    expect(h.downstream.flat().filter((e) => !isEvent(e)).flatMap((b) => (b as Batch).values.map(recNumber))).toEqual([1]);
  });

  it('aligned-checkpoint timeout: aligned until trigger + timeout on the clock, then the alignment switches to unaligned', async () => {
    const h = harness({ enabled: true, alignedTimeoutMs: 100 });
    h.inputs[0]!.push(batch(1));
    h.inputs[0]!.push(h.barrier(1, T0));
    h.inputs[0]!.push(batch(3));
    h.inputs[1]!.push(batch(10));
    h.scheduler.runUntilIdle();
    // Aligned so far: channel 0 is held after its barrier, no snapshot.
    expect(h.processed.slice().sort((a, b) => a - b)).toEqual([1, 10]);
    expect(h.gate.isBlocked(0)).toBe(true);
    expect(h.log).not.toContain('snapshot 1');
    h.inputs[1]!.push(batch(11));
    h.scheduler.runUntilIdle();
    h.clock.advance(99);
    h.scheduler.runUntilIdle();
    expect(h.log).not.toContain('snapshot 1');
    h.clock.advance(1); // T0 + 100: the timeout
    h.scheduler.runUntilIdle();
    expect(h.log).toContain('snapshot 1');
    expect(h.gate.isBlocked(0)).toBe(false);
    expect(h.processed).toContain(3); // released: after channel 0's barrier, not channel state
    h.inputs[1]!.push(batch(12));
    h.inputs[1]!.push(h.barrier(1, T0));
    await h.quiesce(() => h.acks.length > 0);
    const ack = h.acks[0]!.ack;
    expect(seenIn(ack)).toEqual([1, 10, 11]);
    const cs = await h.channelState(ack);
    expect(inputOf(cs, 0)).toEqual([]);
    expect(inputOf(cs, 1)).toEqual([12]);
    expect(ack.stats.unaligned).toBe(true);
    expect(ack.stats.alignmentMs).toBe(100);
  });

  it('aligned-checkpoint timeout: an alignment that completes in time stays aligned and leaves no timer', async () => {
    const h = harness({ enabled: true, alignedTimeoutMs: 100 });
    h.inputs[0]!.push(h.barrier(1, T0));
    h.inputs[1]!.push(batch(10));
    h.inputs[1]!.push(h.barrier(1, T0));
    await h.quiesce(() => h.acks.length > 0);
    expect(h.acks[0]!.ack.stats.unaligned).toBeUndefined();
    expect(h.acks[0]!.ack.operators.some((o) => o.channelState !== undefined)).toBe(false);
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('small channel state goes inline into the metadata (memory threshold), and loads back from there', async () => {
    const h = harness(UNALIGNED);
    h.checkpointer.inlineThresholdBytes = 1 << 20;
    h.inputs[0]!.push(batch(1, 2));
    h.inputs[0]!.push(h.barrier(1));
    h.inputs[1]!.push(batch(3));
    h.inputs[1]!.push(h.barrier(1));
    await h.quiesce(() => h.acks.length > 0);
    const handle = h.acks[0]!.ack.operators.find((o) => o.channelState !== undefined)!.channelState!;
    expect(handle.fileInline).toBeDefined();
    expect(readdirSync(h.dir).filter((n) => n.includes('.channels.'))).toEqual([]);
    const [loaded] = await loadChannelState({ files: [{ path: childReference(h.dir, handle.file), size: handle.fileSize, inline: handle.fileInline!, primary: true }], rescaled: false }, h.io);
    expect(numbers(loaded!.state.inputs.find((i) => i.channel === 0)?.elements)).toEqual([1, 2]);
    expect(numbers(loaded!.state.inputs.find((i) => i.channel === 1)?.elements)).toEqual([3]);
  });

  it('a newer barrier in the same pass as the last barrier of a complete capture does not decline it (before: declined as subsumed)', async () => {
    const h = harness(UNALIGNED);
    h.inputs[0]!.push(batch(1));
    h.inputs[0]!.push(h.barrier(1));
    h.scheduler.runUntilIdle(); // snapshot 1, channel 1 recording
    h.inputs[1]!.push(batch(2));
    h.inputs[1]!.push(h.barrier(1)); // capture 1 complete...
    const second: BarrierEvent = { ...h.barrier(2), location: mkdtempSync(join(tmpdir(), 'weir-unaligned-2-')) };
    dirs.push(second.location);
    h.inputs[0]!.push(second);
    h.inputs[1]!.push(second);
    h.scheduler.runUntilIdle(); // ...and barrier 2 in the same synchronous pass
    await h.quiesce(() => h.acks.length >= 2);
    expect(h.declines).toEqual([]);
    // Both acknowledged, in whichever order their files were written.
    expect(h.acks.map((a) => a.id).sort()).toEqual([1, 2]);
    expect(inputOf(await h.channelState(h.acks.find((a) => a.id === 1)!.ack), 1)).toEqual([2]);
  });

  it('an abort while channel state is recorded: no ack, no decline, no file; the next checkpoint completes', async () => {
    const h = harness(UNALIGNED);
    h.inputs[0]!.push(batch(1));
    h.inputs[0]!.push(h.barrier(1));
    await h.quiesce();
    expect(h.log).toContain('snapshot 1');
    h.inputs[1]!.push(batch(2)); // recorded
    h.task.mail(() => h.checkpointer.notifyAborted(1));
    await h.quiesce();
    h.inputs[1]!.push(h.barrier(1)); // late: ignored
    await h.quiesce();
    expect(h.acks).toEqual([]);
    expect(h.declines).toEqual([]);
    expect(readdirSync(h.dir).filter((n) => n.includes('.channels.'))).toEqual([]);
    h.inputs[0]!.push(h.barrier(2));
    h.inputs[1]!.push(batch(3));
    h.inputs[1]!.push(h.barrier(2));
    await h.quiesce(() => h.acks.length > 0);
    expect(h.acks.map((a) => a.id)).toEqual([2]);
    expect(inputOf(await h.channelState(h.acks[0]!.ack), 1)).toEqual([3]);
  });
});
