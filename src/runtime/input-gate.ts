/**
 * An input gate: the channels of one logical input of a subtask (all producers of all edges
 * unioned into that input). It hands out elements round-robin over channels that have data,
 * and combines per-channel watermarks into the input's watermark: the minimum over channels
 * that are neither idle nor ended (Flink's StatusWatermarkValve).
 */
import type { KeySelectorFn } from '../core/partitioning.ts';
import type { ChannelOwner, InputChannel } from './channels/channel.ts';
import { Deque } from './channels/deque.ts';
import { MAX_WATERMARK, MIN_WATERMARK, type ChannelElement } from './events.ts';

export interface GateListener {
  onGateNonEmpty(): void;
}

export interface ValveOutput {
  watermark(timestamp: number): void;
  status(idle: boolean): void;
}

export class InputGate implements ChannelOwner {
  private readonly ready = new Deque<number>();
  private readonly queued: boolean[];
  /** Channels whose data is held back (checkpoint alignment). */
  private readonly blocked: boolean[];
  private readonly channelWatermark: number[];
  private readonly channelIdle: boolean[];
  /**
   * A channel that comes back from idleness behind the gate's watermark is left out of the
   * minimum until it catches up (Flink's StatusWatermarkValve), so it does not stall event
   * time that already moved on.
   */
  private readonly channelAligned: boolean[];
  private endedCount = 0;
  private lastWatermark = MIN_WATERMARK;
  private idle = false;
  listener: GateListener | undefined;
  /** Channel of the element most recently returned by poll(). */
  lastChannel = -1;
  /**
   * In-flight data restored from an unaligned checkpoint (input channel state), per channel in
   * arrival order: handed out before anything the channels receive now. It costs no credit.
   */
  private readonly replay = new Deque<{ readonly channel: number; readonly el: ChannelElement }>();
  /** Some channel of this gate is fed by a broadcast edge (its in-flight data cannot be redistributed on rescaling). */
  broadcastFed = false;
  /**
   * The keyBy (hash edge) feeding this gate, if one does, whatever the operator: in-flight data
   * restored at another parallelism goes to the subtask owning its key group, as live records do.
   */
  hashFed: { readonly keySelector: KeySelectorFn; readonly maxParallelism: number } | undefined;

  constructor(readonly index: number, readonly channels: InputChannel[]) {
    const n = channels.length;
    this.queued = new Array(n).fill(false);
    this.blocked = new Array(n).fill(false);
    this.channelWatermark = new Array(n).fill(MIN_WATERMARK);
    this.channelIdle = new Array(n).fill(false);
    this.channelAligned = new Array(n).fill(true);
    channels.forEach((c) => (c.owner = this));
  }

  notifyNonEmpty(channelIndex: number): void {
    if (this.queued[channelIndex] || this.blocked[channelIndex]) return;
    this.queued[channelIndex] = true;
    const wasEmpty = this.ready.length === 0;
    this.ready.push(channelIndex);
    if (wasEmpty) this.listener?.onGateNonEmpty();
  }

  /** The next element from some channel with data, or undefined. */
  poll(): ChannelElement | undefined {
    if (this.replay.length > 0) {
      const r = this.replay.shift()!;
      this.lastChannel = r.channel;
      return r.el;
    }
    for (;;) {
      const c = this.ready.shift();
      if (c === undefined) return undefined;
      this.queued[c] = false;
      if (this.blocked[c]) continue;
      const ch = this.channels[c]!;
      const el = ch.poll();
      // Not again if returning the credit refilled the channel and queued it already (same thread):
      // with one credit the ready queue grew by one entry per batch, the other channels behind it.
      if (!ch.isEmpty() && !this.queued[c]) {
        this.queued[c] = true;
        this.ready.push(c);
      }
      if (el === undefined) continue;
      this.lastChannel = c;
      return el;
    }
  }

  hasData(): boolean {
    return this.ready.length > 0 || this.replay.length > 0;
  }

  /** Restored in-flight data for `channel`, handed out before live input (see `replay`). */
  addReplay(channel: number, el: ChannelElement): void {
    const wasEmpty = this.replay.length === 0 && this.ready.length === 0;
    this.replay.push({ channel, el });
    if (wasEmpty) this.listener?.onGateNonEmpty();
  }

  /** Restored in-flight data not handed out yet, oldest first (it is still before every barrier). */
  pendingReplay(): readonly { readonly channel: number; readonly el: ChannelElement }[] {
    return [...this.replay];
  }

  block(channel: number): void {
    this.blocked[channel] = true;
  }

  unblockAll(): void {
    for (let c = 0; c < this.blocked.length; c++) {
      if (!this.blocked[c]) continue;
      this.blocked[c] = false;
      if (!this.channels[c]!.isEmpty()) this.notifyNonEmpty(c);
    }
  }

  isBlocked(channel: number): boolean {
    return this.blocked[channel]!;
  }

  /**
   * Marks a channel ended; true when every channel of the gate has ended. A channel ended by a
   * stop-with-savepoint (`stop`) does not move event time: nothing may fire after the savepoint.
   */
  endChannel(channel: number, out: ValveOutput, stop = false): boolean {
    const ch = this.channels[channel]!;
    if (!ch.ended && stop) {
      ch.ended = true;
      this.endedCount++;
      this.channelIdle[channel] = true;
    } else if (!ch.ended) {
      ch.ended = true;
      this.endedCount++;
      // An ended channel no longer holds event time back.
      this.channelWatermark[channel] = MAX_WATERMARK;
      this.channelIdle[channel] = false;
      this.channelAligned[channel] = true;
      this.recompute(out);
    }
    return this.isEnded();
  }

  isEnded(): boolean {
    return this.endedCount === this.channels.length;
  }

  onWatermark(channel: number, timestamp: number, out: ValveOutput): void {
    if (timestamp <= this.channelWatermark[channel]!) return;
    this.channelWatermark[channel] = timestamp;
    if (this.channelIdle[channel]) {
      this.onStatus(channel, false, out);
      return;
    }
    if (!this.channelAligned[channel] && timestamp >= this.lastWatermark) this.channelAligned[channel] = true;
    this.recompute(out);
  }

  onStatus(channel: number, idle: boolean, out: ValveOutput): void {
    // An ended channel stays active at MAX_WATERMARK (see below); a status after its end changes nothing.
    if (this.channels[channel]!.ended || this.channelIdle[channel] === idle) return;
    this.channelIdle[channel] = idle;
    if (!idle) this.channelAligned[channel] = this.channelWatermark[channel]! >= this.lastWatermark;
    // A channel that ended (not by a stop) stays active at MAX_WATERMARK, as a finished channel does
    // in Flink's valve: the gate's event time is then the other channels'. Counted as idle, the
    // order decided: "B ended, then A went idle" left the gate idle at A's watermark, while "A
    // idle, then B ended" moved it to MAX.
    const allIdle = this.channelIdle.every((x) => x);
    // The last active channel went idle while holding event time back: no channel will move it
    // now, so the gate goes to the highest watermark of its channels first, as Flink's valve
    // does (findAndOutputMaxWatermarkAcrossAllSubpartitions). Before, event time stayed at that
    // channel's watermark until traffic came back, or it moved, depending on which channel went
    // idle first. Channels stopped by a savepoint are left out: nothing may fire after it.
    if (idle && allIdle && this.channelWatermark[channel] === this.lastWatermark) this.advanceToMax(out);
    if (allIdle !== this.idle) {
      this.idle = allIdle;
      out.status(allIdle);
    }
    if (!allIdle) this.recompute(out);
  }

  private advanceToMax(out: ValveOutput): void {
    let max = this.lastWatermark;
    for (let i = 0; i < this.channelWatermark.length; i++) {
      if (this.channels[i]!.ended) continue;
      const w = this.channelWatermark[i]!;
      if (w > max) max = w;
    }
    if (max > this.lastWatermark) {
      this.lastWatermark = max;
      out.watermark(max);
    }
  }

  private recompute(out: ValveOutput): void {
    let min = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.channelWatermark.length; i++) {
      if (this.channelIdle[i] || !this.channelAligned[i]) continue;
      const w = this.channelWatermark[i]!;
      if (w < min) min = w;
    }
    if (min !== Number.POSITIVE_INFINITY && min > this.lastWatermark) {
      this.lastWatermark = min;
      out.watermark(min);
    }
  }

  numChannels(): number {
    return this.channels.length;
  }
}
