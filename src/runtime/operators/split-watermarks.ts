/**
 * Per-split event time of one source reader (Flink's per-split watermarks, FLIP-27/FLIP-182),
 * as a pure structure of decisions apart from I/O: the source operator feeds it records and
 * clock readings and acts on what it returns.
 *
 * - Every split the reader holds has its own watermark generator. The reader's watermark is
 *   the minimum over its splits that are neither finished nor idle, so the order in which a
 *   reader reads its splits never makes a record late.
 * - A split that is assigned but not yet being read holds event time back at the minimum
 *   (it has records older than anything else may be): the file reader's second file.
 * - Idleness (withIdleness): a split being read that gave no record for the timeout stops
 *   holding event time back until it gives one again. A paused split never turns idle (it is
 *   silent because we stopped it, not because it has nothing). A reader whose splits are all
 *   idle, or that holds none, is idle itself, so it never stalls event time downstream.
 * - Alignment (maxDrift): a split whose watermark is more than maxDrift ahead of the reader's
 *   watermark is paused until the others catch up; the split at the minimum is never paused.
 */
import type { WatermarkGenerator, WatermarkOutput, WatermarkStrategy } from '../../core/watermark-strategy.ts';
import { MIN_WATERMARK, wholeMs } from '../events.ts';

export interface SplitWatermarkSettings {
  readonly idleTimeoutMs: number | undefined;
  readonly maxDriftMs: number | undefined;
  /**
   * A bounded source: a reader whose splits have all finished is ending, not idle. Declaring it
   * idle let the operators downstream go idle before the end-of-input watermark, and the stage
   * after them pass the windows they fire at the end (Nexmark q5 on 2 workers lost records).
   * An unbounded reader with only finished splits (closed Kinesis shards waiting for their
   * children) stays idle, or it would hold event time back for good.
   */
  readonly bounded?: boolean;
  /**
   * The auto-watermark interval (ms); 0 or absent: no periodic emission. Decides whether a split
   * that gave records also asks its generator for a watermark after every poll (polled()).
   */
  readonly intervalMs?: number;
}

class SplitTime implements WatermarkOutput {
  watermark = MIN_WATERMARK;
  /** The reader is reading it (it asked for the split's output); before that it holds time at the minimum. */
  started = false;
  idle = false;
  paused = false;
  lastActiveAt: number;
  constructor(readonly id: string, readonly generator: WatermarkGenerator<unknown>, now: number) {
    this.lastActiveAt = now;
  }
  emitWatermark(timestamp: number): void {
    if (timestamp > this.watermark) this.watermark = wholeMs(timestamp);
    this.idle = false;
  }
  markIdle(): void {
    this.idle = true;
  }
  markActive(): void {
    this.idle = false;
  }
}

/**
 * The reader's event time now: a watermark, or idle (hold nothing back). Idle, `last` is the
 * lowest watermark of its splits that have one: the reader goes there before it is idle (see current).
 */
export type ReaderTime = { readonly idle: false; readonly watermark: number } | { readonly idle: true; readonly last?: number };

export interface AlignmentChange {
  readonly pause: readonly string[];
  readonly resume: readonly string[];
}

export interface SplitTimeHandle extends WatermarkOutput {
  readonly generator: WatermarkGenerator<unknown>;
}

export class SplitWatermarks {
  private readonly splits = new Map<string, SplitTime>();
  /**
   * Whether a split that gave records asks its generator for a watermark after every poll, on top
   * of the interval: only for alignment (maxDrift must see splits move to pause and resume them)
   * and when periodic emission is off (else event time would not move before the end).
   * Otherwise watermarks follow the interval, as in Flink: one per poll (a batch of up to 1024
   * records) made every keyBy flush its partly filled channel buffers and send a watermark event
   * down every channel, thousands of small messages a second between threads (Nexmark q8 on 2
   * workers idled 20 % of the time waiting for credits; 3.1 -> 1.8 s over 5 M events).
   */
  private readonly emitPerPoll: boolean;

  constructor(private readonly strategy: WatermarkStrategy<unknown>, private readonly settings: SplitWatermarkSettings) {
    this.emitPerPoll = settings.maxDriftMs !== undefined || !((settings.intervalMs ?? 0) > 0);
  }

  /** A split was assigned to the reader: it holds event time back until it finishes or idles. */
  add(id: string, now: number): void {
    if (this.splits.has(id)) return;
    this.splits.set(id, new SplitTime(id, this.strategy.createGenerator(), now));
  }

  has(id: string): boolean {
    return this.splits.has(id);
  }

  /** The reader started reading the split: from now on idleness is measured for it. */
  start(id: string, now: number): void {
    let s = this.splits.get(id);
    if (s === undefined) {
      this.add(id, now);
      s = this.splits.get(id)!;
    }
    if (!s.started) {
      s.started = true;
      s.lastActiveAt = now;
    }
  }

  /** The split's generator and the output its watermarks go to (held by the split's record output). */
  handle(id: string): SplitTimeHandle {
    return this.splits.get(id)!;
  }

  /** The split gave records at `now`: it is active. */
  touched(id: string, now: number): void {
    const s = this.splits.get(id);
    if (s === undefined) return;
    s.lastActiveAt = now;
    s.idle = false;
  }

  /** The split is read to its end: it no longer holds event time back. */
  finish(id: string): void {
    if (this.splits.delete(id)) this.finishedAny = true;
  }

  /** Some split of this reader was read to its end. */
  private finishedAny = false;

  /** The split gave records in the poll that ended at `now`: it is active, and may emit (see emitPerPoll). */
  polled(id: string, now: number): void {
    this.touched(id, now);
    if (this.emitPerPoll) this.emitFor(id);
  }

  /** Periodic emission for one split (after it gave a batch, so alignment sees it move). */
  emitFor(id: string): void {
    const s = this.splits.get(id);
    if (s !== undefined && !s.idle) s.generator.onPeriodicEmit(s);
  }

  /**
   * Every auto-watermark interval: idleness by the clock, then each split's periodic emission.
   * `activeUntil`: up to when the reader was polled or waited for data (now, unless the task was
   * held back since its last poll): a split is idle only after that long without records.
   */
  periodic(now: number, activeUntil = now): void {
    const timeout = this.settings.idleTimeoutMs;
    for (const s of this.splits.values()) {
      if (timeout !== undefined && s.started && !s.paused && !s.idle && activeUntil - s.lastActiveAt >= timeout) {
        s.idle = true;
        continue;
      }
      if (!s.idle) s.generator.onPeriodicEmit(s);
    }
  }

  /** The reader's event time: the minimum over live splits, or idle when none holds time back. */
  current(): ReaderTime {
    let min = Number.POSITIVE_INFINITY;
    let lowestSeen = Number.POSITIVE_INFINITY;
    for (const s of this.splits.values()) {
      if (s.started && s.watermark > MIN_WATERMARK && s.watermark < lowestSeen) lowestSeen = s.watermark;
      if (s.started && s.idle) continue;
      if (s.watermark < min) min = s.watermark;
    }
    if (min !== Number.POSITIVE_INFINITY) return { idle: false, watermark: min };
    // Every split idle: the reader goes to the lowest watermark of the splits that have one, as
    // Flink's combined watermark of a reader's splits stays when all go idle. Not the highest
    // (the input gate's rule for channels): a slower split resuming then had its on-time records
    // dropped as late downstream. Splits with no watermark yet are left out: an empty stream
    // beside one read to its end at once left the reader at MIN, and windows never fired.
    if (lowestSeen !== Number.POSITIVE_INFINITY && this.splits.size > 0) return { idle: true, last: lowestSeen };
    // Ending (bounded, every split finished): active, at no new time, until the end-of-input
    // watermark. A reader that never held a split is idle, as is an unbounded one.
    if (this.settings.bounded === true && this.finishedAny && this.splits.size === 0) return { idle: false, watermark: MIN_WATERMARK };
    return { idle: true };
  }

  /**
   * Splits to pause (ahead of the reader's watermark by more than maxDrift) and to resume
   * (back within it). Idle splits are not paused: they have nothing to read anyway.
   */
  align(): AlignmentChange {
    const drift = this.settings.maxDriftMs;
    if (drift === undefined) return { pause: [], resume: [] };
    const t = this.current();
    const pause: string[] = [];
    const resume: string[] = [];
    for (const s of this.splits.values()) {
      const ahead = !t.idle && s.watermark > t.watermark + drift;
      if (ahead && !s.paused) {
        s.paused = true;
        pause.push(s.id);
      } else if (!ahead && s.paused) {
        s.paused = false;
        resume.push(s.id);
      }
    }
    return { pause, resume };
  }

  isPaused(id: string): boolean {
    return this.splits.get(id)?.paused ?? false;
  }

  /** Resumed splits restart their idleness clock (they were silent because they were paused). */
  resumed(ids: readonly string[], now: number): void {
    for (const id of ids) {
      const s = this.splits.get(id);
      if (s !== undefined) s.lastActiveAt = now;
    }
  }

  get size(): number {
    return this.splits.size;
  }
}
