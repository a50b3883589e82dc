/**
 * Channels between subtasks with credit-based flow control. The consumer side grants the
 * producer a fixed number of buffer credits; a batch uses one; consuming it returns one.
 * Events (watermarks, barriers, end of data) need no credit but keep their order behind
 * batches. A producer without credit queues its output as backlog and reports itself
 * unavailable, so its task stops taking input: that is how backpressure reaches sources.
 * The transport (same thread, or bytes between threads) is a pluggable function.
 */
import { isEvent, type ChannelElement } from '../events.ts';
import { Deque } from './deque.ts';

/** Buffers a consumer accepts per channel before the producer must wait (a channel between threads). */
export const DEFAULT_CHANNEL_CREDITS = 4;

/**
 * The same for a channel whose producer and consumer run in one thread. Credits let a producer
 * work ahead while its consumer works too; in one thread they never run at once, so one buffer
 * loses nothing, and every buffer more is a batch of records kept alive. A producer does get
 * ahead: each watermark it sends costs the consumer a step of its own, which the producer
 * spends on its next batch, until its credits run out (test/cluster/local-channel-credits.test.ts).
 * In the window count on one worker (bench/child.ts window-count weir-1) the young-generation
 * collector copied ~0.95 MB at each scavenge with 4 credits, ~0.6 MB with 1.
 */
export const LOCAL_CHANNEL_CREDITS = 1;

/** Credits of one channel: the job's setting for every channel, else the default for its kind. */
export function channelCredits(jobCredits: number | undefined, sameThread: boolean): number {
  return jobCredits ?? (sameThread ? LOCAL_CHANNEL_CREDITS : DEFAULT_CHANNEL_CREDITS);
}

export interface AvailabilityListener {
  onChannelAvailable(): void;
}

export class OutputChannel {
  private readonly backlog = new Deque<ChannelElement>();
  private listener: AvailabilityListener | undefined;
  /** Batches sent, for metrics and tests. */
  sentBatches = 0;
  /** Bytes of batches serialized for another thread (numBytesOut); same-thread channels pass references. */
  bytesOut = 0;

  constructor(
    readonly id: number,
    private credits: number,
    /** Delivers an element to the consumer (direct call, or encode and post: then returns the bytes sent). */
    private readonly transmit: (el: ChannelElement) => number | void,
  ) {}

  setListener(l: AvailabilityListener): void {
    this.listener = l;
  }

  send(el: ChannelElement): void {
    if (this.backlog.length === 0) {
      if (isEvent(el)) {
        this.transmit(el);
        return;
      }
      if (this.credits > 0) {
        this.credits--;
        this.sentBatches++;
        this.bytesOut += this.transmit(el) ?? 0;
        return;
      }
    }
    this.backlog.push(el);
  }

  /** The consumer freed n buffers. */
  addCredit(n: number): void {
    this.credits += n;
    const wasBlocked = this.backlog.length > 0;
    while (this.backlog.length > 0) {
      const el = this.backlog.peek()!;
      if (!isEvent(el)) {
        if (this.credits === 0) break;
        this.credits--;
        this.sentBatches++;
      }
      this.backlog.shift();
      this.bytesOut += this.transmit(el) ?? 0;
    }
    if (wasBlocked && this.backlog.length === 0) this.listener?.onChannelAvailable();
  }

  /**
   * Unaligned checkpoints: sends `el` (a barrier) ahead of everything waiting for credit and
   * returns what it overtook. Those elements still go out after it, in order; the caller stores
   * them as output channel state, since the consumer will count them after the checkpoint.
   */
  sendFirst(el: ChannelElement): ChannelElement[] {
    const overtaken = [...this.backlog];
    this.transmit(el);
    return overtaken;
  }

  /** True when nothing waits for credit: the producer may take more input. */
  isAvailable(): boolean {
    return this.backlog.length === 0;
  }

  backlogLength(): number {
    return this.backlog.length;
  }
}

export interface ChannelOwner {
  /** Called when an empty channel receives an element. */
  notifyNonEmpty(channelIndex: number): void;
}

/**
 * Consumer side. Elements arrive in order; `decode` turns transported bytes into a batch
 * lazily, on the consumer's own step, not in the message handler.
 */
export class InputChannel {
  private readonly queue = new Deque<ChannelElement | Uint8Array>();
  owner: ChannelOwner | undefined;
  ended = false;
  /**
   * Sees every element as it arrives, after it is queued (unaligned checkpoints: a barrier is
   * noticed before the task reaches it, and in-flight data is recorded until it comes). Called
   * in the producer's turn: it may record and post mail, never process.
   */
  arrivals: ((indexInGate: number, el: ChannelElement | Uint8Array) => void) | undefined;

  constructor(
    readonly id: number,
    readonly indexInGate: number,
    /** Returns one credit to the producer. */
    private readonly returnCredit: () => void,
    private readonly decode: (bytes: Uint8Array) => ChannelElement = () => {
      throw new Error('this channel carries no encoded data');
    },
  ) {}

  push(el: ChannelElement | Uint8Array): void {
    if (this.ended) {
      // After the end only barriers and cancel markers come (a finished producer's unaligned
      // barriers, one per checkpoint): noticed, never queued. Queued, they piled up for good in
      // a consumer waiting for its final checkpoint, which polls no input (one per checkpoint
      // per ended channel, until the whole job finished).
      if (el instanceof Uint8Array || !isEvent(el) || (el.kind !== 'barrier' && el.kind !== 'cancel-checkpoint')) {
        throw new Error(`channel ${this.id}: ${el instanceof Uint8Array || !isEvent(el) ? 'records' : el.kind} after the end of its data`);
      }
      if (this.arrivals !== undefined) this.arrivals(this.indexInGate, el);
      return;
    }
    const wasEmpty = this.queue.length === 0;
    this.queue.push(el);
    if (wasEmpty) this.owner?.notifyNonEmpty(this.indexInGate);
    if (this.arrivals !== undefined) this.arrivals(this.indexInGate, el);
  }

  /** The queued elements, oldest first (encoded ones still as bytes); the queue is unchanged. */
  queued(): (ChannelElement | Uint8Array)[] {
    return [...this.queue];
  }

  poll(): ChannelElement | undefined {
    const raw = this.queue.shift();
    if (raw === undefined) return undefined;
    if (raw instanceof Uint8Array) {
      this.returnCredit();
      return this.decode(raw);
    }
    if (!isEvent(raw)) this.returnCredit();
    return raw;
  }

  isEmpty(): boolean {
    return this.queue.length === 0;
  }

  size(): number {
    return this.queue.length;
  }
}
