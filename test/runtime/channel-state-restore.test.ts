/**
 * Replaying restored channel state into a subtask's gates and writers: per channel with event
 * time when the channels are the same; records only, to their owners, when rescaled; refused
 * (clearly) for broadcast in-flight data that cannot be redistributed.
 */
import { describe, expect, it } from 'vitest';
import { encodeBatch } from '../../src/core/codec.ts';
import { InputChannel, OutputChannel } from '../../src/runtime/channels/channel.ts';
import { replayChannelState, type LoadedChannelState } from '../../src/runtime/checkpointing/channel-state-restore.ts';
import { restoredElement, type RestoredChannelState, type StoredElement } from '../../src/runtime/checkpointing/channel-state.ts';
import { isEvent, type ChannelElement } from '../../src/runtime/events.ts';
import { InputGate } from '../../src/runtime/input-gate.ts';
import { RecordWriter } from '../../src/runtime/record-writer.ts';
import type { PartitionKind } from '../../src/core/partitioning.ts';

const rec = (...ns: number[]): StoredElement => encodeBatch({ values: ns, timestamps: ns.map(() => 0) });
const wm = (timestamp: number): StoredElement => ({ kind: 'watermark', timestamp });

function target(kind: PartitionKind = 'rebalance') {
  const inputs = [0, 1].map((i) => new InputChannel(10 + i, i, () => {}));
  const gate = new InputGate(0, inputs);
  const sent: ChannelElement[][] = [[], []];
  const outs = [0, 1].map((i) => new OutputChannel(20 + i, 100, (el) => void sent[i]!.push(el)));
  const writer = new RecordWriter(kind, outs, [0, 1], 2, kind === 'hash' ? (v) => v : undefined, 128, { operatorName: 'op', operatorId: 'op', subtaskIndex: 0, parallelism: 1 });
  return { gate, writer, sent, t: { gates: [gate], writers: new Map([[3, writer]]), owns: [undefined] as ((v: unknown) => boolean)[] | [undefined], taskName: 'op (1/1)' } };
}

function drain(gate: InputGate): string[] {
  const out: string[] = [];
  for (let el = gate.poll(); el !== undefined; el = gate.poll()) out.push(isEvent(el) ? `${gate.lastChannel}:${el.kind}` : `${gate.lastChannel}:${el.values.join(',')}`);
  return out;
}

const state = (s: Partial<RestoredChannelState>): RestoredChannelState => ({ layout: { inputs: [[10, 11]], outputs: { 3: [20, 21] } }, inputs: [], outputs: [], ...s });

describe('channel state replay', () => {
  it('stored key hashes are dropped (an in-memory hash another version may compute otherwise); key groups stay', () => {
    const stored = encodeBatch({ values: ['a', 'b'], timestamps: [1, 2], keyGroups: [5, 6], keyHashes: [-3, 4] });
    const el = restoredElement(stored);
    expect(el).toEqual({ values: ['a', 'b'], timestamps: [1, 2], keyGroups: [5, 6] });
    expect('keyHashes' in el).toBe(false);
  });

  it('same channels: inputs per channel with their watermarks, before live input; outputs on their own channel', () => {
    const x = target();
    x.gate.channels[0]!.push({ values: [99], timestamps: [0] }); // live input, arrived before the task opened
    const loaded: LoadedChannelState[] = [{ primary: true, state: state({
      inputs: [{ gate: 0, channel: 1, elements: [rec(1, 2), wm(5), rec(3)] }, { gate: 0, channel: 0, elements: [rec(7)] }],
      outputs: [{ edge: 3, channel: 1, elements: [rec(40)] }],
    }) }];
    replayChannelState(loaded, false, x.t);
    expect(drain(x.gate)).toEqual(['1:1,2', '1:watermark', '1:3', '0:7', '0:99']);
    expect(x.sent[1]!.map((e) => (isEvent(e) ? e.kind : e.values))).toEqual([[40]]);
    expect(x.sent[0]).toEqual([]);
  });

  it('rescaled: records only (watermarks dropped), a keyed input keeps its own records, outputs go through the partitioner', () => {
    const x = target('hash');
    const loaded: LoadedChannelState[] = [{ primary: true, state: state({
      inputs: [{ gate: 0, channel: 1, elements: [rec(1, 2, 3, 4), wm(5), rec(6)] }],
      outputs: [{ edge: 3, channel: 0, elements: [rec(10, 11, 12, 13, 14, 15)] }],
    }) }];
    replayChannelState(loaded, true, { ...x.t, owns: [(v: unknown) => (v as number) % 2 === 0] });
    expect(drain(x.gate)).toEqual(['0:2,4', '0:6']);
    const routed = x.sent.map((c) => c.flatMap((e) => (isEvent(e) ? [] : (e.values as number[]))));
    expect(routed.flat().sort((a, b) => a - b)).toEqual([10, 11, 12, 13, 14, 15]);
    // Each record went to the consumer that owns its key group (both got some: keys were split).
    expect(routed.every((c) => c.length > 0)).toBe(true);
  });

  it('rescaled: a non-primary copy replays only keyed input (its output and non-keyed input belong to another subtask)', () => {
    const x = target();
    const loaded: LoadedChannelState[] = [{ primary: false, state: state({
      inputs: [{ gate: 0, channel: 0, elements: [rec(1, 2)] }], outputs: [{ edge: 3, channel: 0, elements: [rec(10)] }],
    }) }];
    replayChannelState(loaded, true, x.t);
    expect(drain(x.gate)).toEqual([]);
    expect(x.sent.flat()).toEqual([]);
  });

  it('rescaled broadcast in-flight data is refused with a clear error', () => {
    const x = target('broadcast');
    const out: LoadedChannelState[] = [{ primary: true, state: state({ outputs: [{ edge: 3, channel: 0, elements: [rec(1)] }] }) }];
    expect(() => replayChannelState(out, true, x.t)).toThrow(/op \(1\/1\) cannot restore the unaligned checkpoint: in-flight data of a broadcast edge cannot be redistributed to a new parallelism; restore at the parallelism it was taken with, or from an aligned checkpoint or savepoint/);
    const y = target();
    y.gate.broadcastFed = true;
    const inp: LoadedChannelState[] = [{ primary: true, state: state({ inputs: [{ gate: 0, channel: 0, elements: [rec(1)] }] }) }];
    expect(() => replayChannelState(inp, true, y.t)).toThrow(/in-flight data of a broadcast input cannot be redistributed/);
    // At the same parallelism the same data replays per channel.
    const z = target('broadcast');
    z.gate.broadcastFed = true;
    replayChannelState([...out, ...inp], false, z.t);
    expect(drain(z.gate)).toEqual(['0:1']);
  });
});
