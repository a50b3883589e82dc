/**
 * Replays the channel state of an unaligned checkpoint into a restored subtask, before it takes
 * any new input:
 * - same subtask, same channels: each input channel's elements (records and event time) are
 *   handed out by its gate first, per channel in order; each output channel's elements are sent
 *   on that channel first;
 * - otherwise (rescaled, or a neighbour's parallelism changed): records only, no event time
 *   (watermarks come again from upstream, as in Flink). Input records go to the subtask that
 *   owns them: on keyed inputs every new subtask reads every old subtask's state and keeps its
 *   own key groups; on other inputs each old subtask's records go to one new subtask. Output
 *   records go through the subtask's partitioner, so each reaches the consumer that owns it now.
 *   In-flight data of broadcast edges cannot be redistributed: that restore is refused.
 */
import type { ChannelStateRestore } from '../../core/checkpoint-format.ts';
import { WeirError } from '../../core/errors.ts';
import type { Batch } from '../../core/batch.ts';
import { inlineStateInput } from '../../checkpoint/inline-state.ts';
import { StateFileReader, openStateFile } from '../../checkpoint/state-file.ts';
import type { CheckpointStorageWorkerView } from '../../checkpoint/storage.ts';
import type { StateInputHandle } from '../../core/state-streams.ts';
import { isEvent } from '../events.ts';
import type { InputGate } from '../input-gate.ts';
import type { RecordWriter } from '../record-writer.ts';
import { readChannelState, restoredElement, sameChannels, type ChannelLayout, type RestoredChannelState } from './channel-state.ts';

export interface LoadedChannelState {
  readonly state: RestoredChannelState;
  /** This subtask replays the file's output state and its non-keyed input state. */
  readonly primary: boolean;
}

export async function loadChannelState(r: ChannelStateRestore, storage: CheckpointStorageWorkerView): Promise<LoadedChannelState[]> {
  const out: LoadedChannelState[] = [];
  for (const f of r.files) {
    const input: StateInputHandle = f.inline !== undefined ? inlineStateInput(f.path, f.inline) : await openStateFile(storage, f.path, f.size);
    try {
      out.push({ state: await readChannelState(await StateFileReader.open(input)), primary: f.primary });
    } finally {
      await input.close();
    }
  }
  return out;
}

export interface ReplayTarget {
  readonly gates: readonly InputGate[];
  /** Record writer per network edge index. */
  readonly writers: ReadonlyMap<number, RecordWriter>;
  /** Per gate: whether this subtask owns a record (keyed inputs), or undefined for a non-keyed input. */
  readonly owns: readonly (((value: unknown, keyGroup: number | undefined) => boolean) | undefined)[];
  /** For error messages. */
  readonly taskName: string;
}

export function layoutOf(gates: readonly InputGate[], writers: ReadonlyMap<number, RecordWriter>): ChannelLayout {
  const outputs: Record<string, number[]> = {};
  for (const [edge, w] of writers) outputs[String(edge)] = w.channels.map((c) => c.id);
  return { inputs: gates.map((g) => g.channels.map((c) => c.id)), outputs };
}

export function replayChannelState(loaded: readonly LoadedChannelState[], rescaled: boolean, t: ReplayTarget): void {
  const now = layoutOf(t.gates, t.writers);
  for (const { state, primary } of loaded) {
    const exactIn = !rescaled && state.layout.inputs.length === now.inputs.length && state.layout.inputs.every((ids, g) => sameChannels(ids, now.inputs[g]));
    for (const e of state.inputs) {
      const gate = t.gates[e.gate];
      if (gate === undefined) throw refuse(t, `its checkpoint has in-flight data for input ${e.gate + 1}, which it does not have now`);
      if (exactIn) {
        for (const s of e.elements) gate.addReplay(e.channel, restoredElement(s));
        continue;
      }
      const owns = t.owns[e.gate];
      if (owns === undefined && !primary) continue;
      for (const s of e.elements) {
        const el = restoredElement(s);
        if (isEvent(el)) continue;
        if (gate.broadcastFed) throw refuse(t, 'in-flight data of a broadcast input cannot be redistributed to a new parallelism');
        const mine = owns === undefined ? el : ownedPart(el, owns);
        if (mine.values.length > 0) gate.addReplay(0, mine);
      }
    }
    if (!primary) continue;
    for (const e of state.outputs) {
      const w = t.writers.get(e.edge);
      if (w === undefined) throw refuse(t, `its checkpoint has in-flight output for edge ${e.edge}, which it does not have now`);
      if (!rescaled && sameChannels(state.layout.outputs[String(e.edge)], now.outputs[String(e.edge)])) {
        for (const s of e.elements) w.channels[e.channel]!.send(restoredElement(s));
        continue;
      }
      for (const s of e.elements) {
        const el = restoredElement(s);
        if (isEvent(el)) continue;
        if (w.kind === 'broadcast') throw refuse(t, 'in-flight data of a broadcast edge cannot be redistributed to a new parallelism');
        w.processBatch(el);
      }
      w.flushAll();
    }
  }
}

function ownedPart(b: Batch, owns: (value: unknown, keyGroup: number | undefined) => boolean): Batch {
  const values: unknown[] = [];
  const timestamps: number[] = [];
  const keyGroups: number[] | undefined = b.keyGroups === undefined ? undefined : [];
  for (let i = 0; i < b.values.length; i++) {
    const kg = b.keyGroups?.[i];
    if (!owns(b.values[i], kg)) continue;
    values.push(b.values[i]);
    timestamps.push(b.timestamps[i]!);
    if (keyGroups !== undefined) keyGroups.push(kg!);
  }
  return keyGroups === undefined ? { values, timestamps } : { values, timestamps, keyGroups };
}

function refuse(t: ReplayTarget, why: string): WeirError {
  return new WeirError('RESTORE', `${t.taskName} cannot restore the unaligned checkpoint: ${why}; restore at the parallelism it was taken with, or from an aligned checkpoint or savepoint`);
}
