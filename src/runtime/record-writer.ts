/**
 * The end of a chain: partitions an operator's output over the channels of one network edge.
 * Batches are immutable once emitted, so forward-style partitioners pass them on whole; hash
 * partitioning splits them by key group into per-channel buffers that are sent when full or
 * when the task flushes (idle, an event, or the buffer timeout).
 */
import { CHANNEL_BATCH_SIZE, newTimestamps, type Batch } from '../core/batch.ts';
import type { AvailabilityListener, OutputChannel } from './channels/channel.ts';
import { attribute, type ErrorLocation } from '../core/errors.ts';
import { END_OF_DATA, END_OF_DATA_STOP, STATUS_ACTIVE, STATUS_IDLE, watermark, type ChannelElement, type StreamEvent } from './events.ts';
import type { BatchConsumer } from './output.ts';
import type { KeySelectorFn } from '../core/partitioning.ts';
import type { PartitionKind } from '../core/partitioning.ts';
import { keyBits, keyGroupOfBits, normalizeKey, operatorIndexForKeyGroup } from '../state/key-groups.ts';
import { keyHashOfBits } from '../state/key-table.ts';

export class RecordWriter implements BatchConsumer, AvailabilityListener {
  private readonly bufV: unknown[][];
  private readonly bufT: number[][];
  private readonly bufK: number[][];
  private readonly bufH: number[][];
  /**
   * Records in each channel's buffers. The buffers are allocated at the length of the channel's
   * last batch and filled by index (growing arrays by push allocates about twice over; see Output).
   */
  private readonly bufN: number[];
  private buffered = 0;
  private next = 0;
  /** Called when the writer becomes available again after backpressure. */
  onAvailable: () => void = () => {};
  recordsOut = 0;

  constructor(
    readonly kind: PartitionKind,
    readonly channels: OutputChannel[],
    /** Index of each channel's consumer subtask (hash partitioning maps key groups to these). */
    private readonly consumerIndex: readonly number[],
    private readonly numConsumers: number,
    private readonly keySelector: KeySelectorFn | undefined,
    private readonly maxParallelism: number,
    private readonly location: ErrorLocation,
    private readonly batchSize = CHANNEL_BATCH_SIZE,
    /** Count records handed on (recordsOut, metrics); off with metrics.record-counters.enabled: false. */
    private readonly countRecords = true,
  ) {
    this.bufV = channels.map(() => []);
    this.bufT = channels.map(() => []);
    this.bufK = channels.map(() => []);
    this.bufH = channels.map(() => []);
    this.bufN = channels.map(() => 0);
    for (const c of channels) c.setListener(this);
    // Round robin starts at each producer's own place, as Flink's RebalancePartitioner starts
    // each at another channel: all starting at 0, a small input went to the first consumer only.
    this.next = channels.length === 0 ? 0 : location.subtaskIndex % channels.length;
    if (kind === 'hash') {
      if (keySelector === undefined) throw new Error('hash partitioning needs a key selector');
      // Hash targets are consumer subtask indices; with all-to-all wiring channel i is consumer i.
      consumerIndex.forEach((c, i) => {
        if (c !== i) throw new Error('hash partitioning expects all-to-all channels');
      });
    }
  }

  onChannelAvailable(): void {
    if (this.isAvailable()) this.onAvailable();
  }

  isAvailable(): boolean {
    const cs = this.channels;
    for (let i = 0; i < cs.length; i++) if (!cs[i]!.isAvailable()) return false;
    return true;
  }

  processBatch(batch: Batch): void {
    const n = batch.values.length;
    if (n === 0 || this.channels.length === 0) return;
    if (this.countRecords) this.recordsOut += n;
    switch (this.kind) {
      case 'hash':
        this.partitionByKey(batch);
        return;
      case 'broadcast':
        for (const c of this.channels) c.send(batch);
        return;
      case 'rebalance':
      case 'rescale':
        this.roundRobin().send(batch);
        return;
      default:
        this.channels[0]!.send(batch);
    }
  }

  /** The next channel in round-robin order, preferring one without backlog. */
  private roundRobin(): OutputChannel {
    const cs = this.channels;
    for (let k = 0; k < cs.length; k++) {
      const c = cs[(this.next + k) % cs.length]!;
      if (c.isAvailable()) {
        this.next = (this.next + k + 1) % cs.length;
        return c;
      }
    }
    const c = cs[this.next]!;
    this.next = (this.next + 1) % cs.length;
    return c;
  }

  private partitionByKey(batch: Batch): void {
    const { values, timestamps } = batch;
    if (this.numConsumers === 1) {
      // One consumer: every key goes there; the keyed operator hashes each key once itself.
      this.channels[0]!.send(batch.keyGroups === undefined ? batch : { values, timestamps });
      return;
    }
    const sel = this.keySelector!;
    const maxP = this.maxParallelism;
    const p = this.numConsumers;
    const bufV = this.bufV;
    const bufT = this.bufT;
    const bufK = this.bufK;
    const bufH = this.bufH;
    const bufN = this.bufN;
    const size = this.batchSize;
    let i = 0;
    // Set while the key selector runs: a failure of the send below (a batch that cannot be
    // encoded) is not the selector's, nor the record's that happened to fill the buffer.
    let selecting = false;
    try {
      for (; i < values.length; i++) {
        const v = values[i];
        selecting = true;
        const k = normalizeKey(sel(v));
        selecting = false;
        // One hash of the key gives both its key group and the state tables' hash of it.
        const bits = keyBits(k);
        const kg = keyGroupOfBits(bits, maxP);
        const target = operatorIndexForKeyGroup(maxP, p, kg);
        const at = bufN[target]!;
        // Beyond the allocated length these append, like push.
        bufV[target]![at] = v;
        bufT[target]![at] = timestamps[i]!;
        bufK[target]![at] = kg;
        bufH[target]![at] = keyHashOfBits(k, bits);
        bufN[target] = at + 1;
        if (at + 1 >= size) this.flushChannel(target);
      }
    } catch (e) {
      if (!selecting) throw e;
      throw attribute(e, this.location, 'keyBy key selector', values[i], true);
    }
    this.buffered = 0;
    for (const n of bufN) this.buffered += n;
  }

  private flushChannel(c: number): void {
    const n = this.bufN[c]!;
    if (n === 0) return;
    const v = this.bufV[c]!;
    const t = this.bufT[c]!;
    const k = this.bufK[c]!;
    const h = this.bufH[c]!;
    // Shorter than allocated: cut to the records (trimmed in place, nothing copied).
    if (v.length !== n) {
      v.length = n;
      t.length = n;
      k.length = n;
      h.length = n;
    }
    // The key groups and hashes go along: the keyed operator downstream does not hash the keys again.
    const batch: Batch = { values: v, timestamps: t, keyGroups: k, keyHashes: h };
    // New arrays per batch even when the batch is serialized for another thread at once: refilling
    // the sent ones allocated 8 % less per worker but ran the 2-worker window count 10 % slower
    // (paired A/B, session 56). Likely, not measured apart: arrays kept that long are promoted to
    // the old generation, where every young record stored into them must be remembered.
    this.bufV[c] = new Array(n);
    this.bufT[c] = newTimestamps(n);
    this.bufK[c] = new Array(n);
    this.bufH[c] = new Array(n);
    this.bufN[c] = 0;
    this.channels[c]!.send(batch);
  }

  /** Records held in partly filled buffers. */
  bufferedRecords(): number {
    return this.buffered;
  }

  flushAll(): void {
    if (this.kind !== 'hash' || this.buffered === 0) return;
    for (let c = 0; c < this.channels.length; c++) this.flushChannel(c);
    this.buffered = 0;
  }

  broadcastEvent(e: StreamEvent): void {
    this.flushAll();
    for (const c of this.channels) c.send(e);
  }

  /**
   * Unaligned checkpoints: sends `e` (a barrier) on every channel ahead of what waits for credit;
   * returns per channel what it overtook (to be stored as output channel state).
   */
  broadcastFirst(e: StreamEvent): ChannelElement[][] {
    this.flushAll();
    return this.channels.map((c) => c.sendFirst(e));
  }

  processWatermark(timestamp: number): void {
    this.broadcastEvent(watermark(timestamp));
  }

  processWatermarkStatus(idle: boolean): void {
    this.broadcastEvent(idle ? STATUS_IDLE : STATUS_ACTIVE);
  }

  /** Set by the task when it ends for a stop-with-savepoint without drain. */
  stopping = false;

  endInput(): void {
    this.broadcastEvent(this.stopping ? END_OF_DATA_STOP : END_OF_DATA);
  }

  backlog(): number {
    let n = 0;
    for (const c of this.channels) n += c.backlogLength();
    return n;
  }
}
