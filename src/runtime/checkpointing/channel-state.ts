/**
 * Channel state of an unaligned checkpoint: the in-flight data a barrier overtook at one subtask.
 * - input side: per input channel, what arrived on it from the moment the subtask took its
 *   snapshot until that channel's barrier (the operator's state does not contain it yet);
 * - output side: per output channel, what waited for credit when the barrier jumped ahead of it
 *   (the consumer will count it after the checkpoint, the operator's state already did).
 * Stored as one state file per subtask (a block per channel, CRC-checked, inline in the metadata
 * when small) and replayed on restore before any new input: inputs into the gate, outputs into
 * the channels (or, when the layout changed by rescaling, through the partitioner).
 */
import { decodeBatch, decodeValue, encodeBatch, encodeValue } from '../../core/codec.ts';
import type { CheckpointStreamFactory } from '../../core/state-streams.ts';
import { StateFileReader, StateFileWriter } from '../../checkpoint/state-file.ts';
import { isEvent, type ChannelElement, type WatermarkEvent, type WatermarkStatusEvent } from '../events.ts';

/** An element as stored: an encoded batch, or a watermark / watermark-status event. */
export type StoredElement = Uint8Array | WatermarkEvent | WatermarkStatusEvent;

/** The channels a subtask had when it recorded its channel state: channel ids per gate, per output edge. */
export interface ChannelLayout {
  readonly inputs: readonly (readonly number[])[];
  readonly outputs: Readonly<Record<string, readonly number[]>>;
}

/** What to store of a channel element: data and event time, never control events (barriers, markers, end). */
export function storable(el: ChannelElement | Uint8Array): StoredElement | undefined {
  if (el instanceof Uint8Array) return el;
  // Encoded at once: the batch object is shared with the consumer, which may reuse its records.
  if (!isEvent(el)) return encodeBatch(el);
  if (el.kind === 'watermark') return { kind: 'watermark', timestamp: el.timestamp };
  if (el.kind === 'status') return { kind: 'status', idle: el.idle };
  return undefined;
}

export function restoredElement(s: StoredElement): ChannelElement {
  if (!(s instanceof Uint8Array)) return s;
  // Key hashes are the state tables' in-memory hash (state/key-table.ts), free to change from
  // one version to the next: stored ones are dropped and the receiver hashes the keys itself.
  const b = decodeBatch(s);
  return b.keyHashes === undefined ? b : { values: b.values, timestamps: b.timestamps, keyGroups: b.keyGroups };
}

function key(a: number, b: number): string {
  return `${a}/${b}`;
}

/** The channel state of one checkpoint at one subtask, while it is being recorded. */
export class ChannelStateCapture {
  readonly inputs = new Map<string, StoredElement[]>();
  readonly outputs = new Map<string, StoredElement[]>();
  /** Input channels still recording: their barrier has not arrived yet. */
  private readonly recording = new Set<string>();
  private sealed = false;
  private settle!: (complete: boolean) => void;
  /** Resolves true when every input channel delivered its barrier (or ended), false when cancelled. */
  readonly done: Promise<boolean>;
  bytes = 0;

  constructor(readonly checkpointId: number) {
    this.done = new Promise((r) => (this.settle = r));
  }

  addInput(gate: number, channel: number, el: ChannelElement | Uint8Array): void {
    this.add(this.inputs, key(gate, channel), el);
  }

  addOutput(edge: number, channel: number, el: ChannelElement): void {
    this.add(this.outputs, key(edge, channel), el);
  }

  private add(to: Map<string, StoredElement[]>, k: string, el: ChannelElement | Uint8Array): void {
    const s = storable(el);
    if (s === undefined) return;
    if (s instanceof Uint8Array) this.bytes += s.byteLength;
    const list = to.get(k);
    if (list === undefined) to.set(k, [s]);
    else list.push(s);
  }

  startRecording(gate: number, channel: number): void {
    this.recording.add(key(gate, channel));
  }

  isRecording(gate: number, channel: number): boolean {
    return this.recording.has(key(gate, channel));
  }

  /** The channel's barrier came (or the channel ended): nothing after it belongs to this checkpoint. */
  stopRecording(gate: number, channel: number): void {
    this.recording.delete(key(gate, channel));
    if (this.sealed && this.recording.size === 0) this.complete();
  }

  /** Every channel is accounted for (recording or done); completes at once if none records. */
  seal(): void {
    this.sealed = true;
    if (this.recording.size === 0) this.complete();
  }

  /** Every input channel delivered its barrier: known at once, before `done` resolves (a microtask later). */
  isComplete = false;

  private complete(): void {
    this.isComplete = true;
    this.settle(true);
  }

  cancel(): void {
    this.recording.clear();
    this.settle(false);
  }

  isEmpty(): boolean {
    return this.inputs.size === 0 && this.outputs.size === 0;
  }
}

const INPUT_BLOCK = 'i';
const OUTPUT_BLOCK = 'o';

/** Writes the captured channel state as a state file called `name`; resolves with its size. */
export async function writeChannelState(c: ChannelStateCapture, layout: ChannelLayout, streams: CheckpointStreamFactory, name: string): Promise<number> {
  const w = await StateFileWriter.create(await streams.createStateStream(name));
  try {
    for (const [k, list] of c.inputs) w.addBlock(`${INPUT_BLOCK}/${k}`, encodeValue(list));
    for (const [k, list] of c.outputs) w.addBlock(`${OUTPUT_BLOCK}/${k}`, encodeValue(list));
    return await w.close({ kind: 'channel-state', layout });
  } catch (e) {
    await w.abort();
    throw e;
  }
}

export interface RestoredChannelState {
  readonly layout: ChannelLayout;
  /** Per [gate, channel]: elements in arrival order. */
  readonly inputs: readonly { readonly gate: number; readonly channel: number; readonly elements: readonly StoredElement[] }[];
  /** Per [edge, channel]: elements in send order. */
  readonly outputs: readonly { readonly edge: number; readonly channel: number; readonly elements: readonly StoredElement[] }[];
}

/** Reads a channel state file (the reader's input is the caller's to close). */
export async function readChannelState(r: StateFileReader): Promise<RestoredChannelState> {
  const meta = r.index.meta as { kind?: unknown; layout?: ChannelLayout } | undefined;
  if (meta?.kind !== 'channel-state' || meta.layout === undefined) throw new Error(`${r.description} is not a channel state file`);
  const inputs: { gate: number; channel: number; elements: StoredElement[] }[] = [];
  const outputs: { edge: number; channel: number; elements: StoredElement[] }[] = [];
  for (const b of r.index.blocks) {
    const [side, a, ch] = b.name.split('/');
    const elements = decodeValue<StoredElement[]>(await r.readBlock(b));
    if (side === INPUT_BLOCK) inputs.push({ gate: Number(a), channel: Number(ch), elements });
    else if (side === OUTPUT_BLOCK) outputs.push({ edge: Number(a), channel: Number(ch), elements });
  }
  return { layout: meta.layout, inputs, outputs };
}

export function sameChannels(a: readonly number[] | undefined, b: readonly number[] | undefined): boolean {
  return a !== undefined && b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
}
