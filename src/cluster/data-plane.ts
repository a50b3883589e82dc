/**
 * Data exchange between worker threads: one MessagePort per pair of workers carries batches
 * (encoded by core/codec.ts into a buffer of their own, transferred, not copied), in-band events,
 * and credits flowing back.
 * Credits are gathered during a scheduler slice and sent in one message per peer.
 */
import { WeirError } from '../core/errors.ts';
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { OutputChannel, InputChannel } from '../runtime/channels/channel.ts';
import { encodeBatch } from '../core/codec.ts';
import { isEvent, type ChannelElement } from '../runtime/events.ts';

const DATA = 0;
const EVENT = 1;
const CREDITS = 2;

type Wire = [typeof DATA, number, Uint8Array] | [typeof EVENT, number, unknown] | [typeof CREDITS, number[]];

export class DataPlane {
  private readonly ports = new Map<number, MessagePort>();
  private readonly inputs = new Map<number, InputChannel>();
  private readonly outputs = new Map<number, OutputChannel>();
  private readonly pendingCredits = new Map<number, Map<number, number>>();
  bytesSent = 0;

  private readonly portList: MessagePort[] = [];
  private closed = false;

  addPeer(worker: number, port: MessagePort): void {
    this.ports.set(worker, port);
    this.portList.push(port);
    port.on('message', (m: Wire) => this.receive(m));
  }

  /**
   * Takes the messages waiting on every port now, in order (the same queue the 'message'
   * listener reads, so nothing is seen twice or out of order). Called between the scheduler's
   * steps: a batch or credit sent by another thread reaches its channel within a step instead
   * of at the end of the slice, which keeps the producer on the other side supplied.
   */
  poll(): void {
    if (this.closed) return;
    const ports = this.portList;
    for (let i = 0; i < ports.length; i++) {
      const port = ports[i]!;
      for (let r = receiveMessageOnPort(port); r !== undefined; r = receiveMessageOnPort(port)) this.receive(r.message as Wire);
    }
  }

  registerInput(ch: InputChannel): void {
    this.inputs.set(ch.id, ch);
  }

  registerOutput(ch: OutputChannel): void {
    this.outputs.set(ch.id, ch);
  }

  /** Transmit function for an output channel whose consumer lives on `worker`. */
  transmitTo(worker: number, channelId: number): (el: ChannelElement) => number {
    const port = this.ports.get(worker);
    if (port === undefined) throw new Error(`no data port to worker ${worker}`);
    return (el) => {
      if (isEvent(el)) {
        port.postMessage([EVENT, channelId, el] satisfies Wire);
        return 0;
      }
      let bytes: Uint8Array;
      try {
        bytes = encodeBatch(el);
      } catch (e) {
        // Encoding may run late (a batch waiting for credit is encoded when the credit comes), so
        // the error says what failed and what records may hold, not only the codec's words.
        throw new WeirError('USER_CODE', `a batch of ${el.values.length} records for another worker thread (channel ${channelId}) cannot be encoded: ${(e as Error).message}; records that cross threads must be plain data (objects, arrays, strings, numbers, booleans, null, bigint, Date, Map, Set, typed arrays), without cycles, symbols or functions`);
      }
      const n = bytes.byteLength;
      this.bytesSent += n;
      port.postMessage([DATA, channelId, bytes] satisfies Wire, [bytes.buffer as ArrayBuffer]);
      return n;
    };
  }

  /** Credit-return function for an input channel whose producer lives on `worker`. */
  creditTo(worker: number, channelId: number): () => void {
    return () => {
      let m = this.pendingCredits.get(worker);
      if (m === undefined) {
        m = new Map();
        this.pendingCredits.set(worker, m);
      }
      const n = (m.get(channelId) ?? 0) + 1;
      m.set(channelId, n);
      // Return credits promptly (half the window): a producer waiting a whole scheduler slice
      // for credits would leave both threads idle.
      if (n >= this.creditBatch) this.flushCredits();
    };
  }

  /** Credits returned in one message; half the channel's window. */
  creditBatch = 2;

  /** Sends the credits gathered since the last call (end of each scheduler slice). */
  flushCredits(): void {
    if (this.pendingCredits.size === 0) return;
    for (const [worker, m] of this.pendingCredits) {
      const flat: number[] = [];
      for (const [id, n] of m) flat.push(id, n);
      this.ports.get(worker)!.postMessage([CREDITS, flat] satisfies Wire);
    }
    this.pendingCredits.clear();
  }

  private receive(m: Wire): void {
    switch (m[0]) {
      case DATA:
        this.inputs.get(m[1])?.push(m[2]);
        return;
      case EVENT:
        this.inputs.get(m[1])?.push(m[2] as ChannelElement);
        return;
      case CREDITS: {
        const flat = m[1];
        for (let i = 0; i < flat.length; i += 2) this.outputs.get(flat[i]!)?.addCredit(flat[i + 1]!);
        return;
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const p of this.ports.values()) p.close();
    this.ports.clear();
  }
}
