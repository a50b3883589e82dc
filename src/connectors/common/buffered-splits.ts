/**
 * The split bookkeeping of a source reader that fetches from a server in the background and
 * emits from per-split buffers (Redis Streams, NATS JetStream): which splits are paused
 * (watermark alignment), round-robin emission so one busy split cannot starve the others,
 * finished splits reported once drained, and the poll status. The fetching stays each
 * reader's own; this holds only what they share.
 */
import type { PollStatus, ReaderOutput } from '../../core/source.ts';

/** What a reader keeps per split: items fetched and not yet emitted are buffer[at..]. */
export interface BufferedSplit<Item> {
  readonly split: { readonly id: string };
  buffer: Item[];
  at: number;
  /** Nothing more will be fetched (bounded: the end position reached). */
  done: boolean;
  /** The split's output (its event time), made when the split is first polled. */
  out?: unknown;
}

export class BufferedSplits<St extends BufferedSplit<unknown>> {
  readonly states = new Map<string, St>();
  private readonly paused = new Set<string>();
  /** The split emission starts at next poll, so every split gets to go first in turn. */
  private rr = 0;

  get size(): number {
    return this.states.size;
  }

  add(st: St): void {
    this.states.set(st.split.id, st);
  }

  isPaused(st: St): boolean {
    return this.paused.has(st.split.id);
  }

  pauseOrResume(pause: readonly string[], resume: readonly string[]): void {
    for (const id of pause) this.paused.add(id);
    for (const id of resume) this.paused.delete(id);
  }

  /**
   * Gives every split its output (and so its event time) from its first poll, records or not,
   * as Kinesis does for its shards: a split first seen at its first record never counted as
   * idle, so an empty stream held the reader's watermark at the minimum for good (windows never
   * fired, withIdleness or not) and, with maxDrift, paused every stream that had data.
   */
  startAll(out: ReaderOutput<unknown>): void {
    for (const st of this.states.values()) if (st.out === undefined && !st.done) st.out = out.forSplit(st.split.id);
  }

  /** Reports every split that is done and fully emitted as finished, after `release` frees what it holds. */
  finishDrained(out: ReaderOutput<unknown>, release?: (st: St) => void): void {
    for (const [id, st] of this.states) {
      if (!st.done || st.at < st.buffer.length) continue;
      release?.(st);
      this.states.delete(id);
      out.splitFinished(id);
    }
  }

  /** Emits at most `maxRecords` over the splits with buffered items that are not paused; `emit` returns how many it emitted. */
  emitRoundRobin(maxRecords: number, emit: (st: St, max: number) => number): void {
    const list = [...this.states.values()];
    if (list.length === 0) return;
    let emitted = 0;
    for (let k = 0; k < list.length && emitted < maxRecords; k++) {
      const st = list[(this.rr + k) % list.length]!;
      if (st.at >= st.buffer.length || this.isPaused(st)) continue;
      emitted += emit(st, maxRecords - emitted);
    }
    this.rr = (this.rr + 1) % list.length;
  }

  /** 'more' while a split not paused has items to emit, or one is done and waits to be reported finished. */
  status(): PollStatus {
    for (const st of this.states.values()) {
      if (st.at < st.buffer.length && !this.isPaused(st)) return 'more';
      if (st.done && st.at >= st.buffer.length) return 'more';
    }
    return 'wait';
  }

  /** After emitting: a fully emitted buffer is dropped, so its items can be collected. */
  static dropEmitted(st: BufferedSplit<unknown>): void {
    if (st.at < st.buffer.length) return;
    st.buffer = [];
    st.at = 0;
  }
}
