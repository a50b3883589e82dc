/**
 * A subtask's metrics as Flink names them, counted where the work happens and read out about
 * once a second (never per record). Counters are plain numbers on the task: records per
 * operator are counted by batch (or by the chained record path's own counter), time is
 * accounted per blocked interval, not per batch: the task notes when it stops for lack of
 * input (idle) or of output credit (back-pressured) and adds the interval when it runs again.
 * Busy time is measured: the time in the task's steps (a batch each). It is not the rest of
 * the wall clock, as in Flink, where every task has a thread: subtasks here share a worker
 * thread, and one waiting for its turn is neither busy nor blocked (before, such waiting was
 * counted as busy, and every subtask of a saturated thread showed 1000 ms/s).
 */

import type { SourceMetricsSnapshot } from './operators/source-metrics.ts';

/** Cumulative counters of one subtask at one moment; rates are computed by whoever samples twice. */
export interface TaskMetricsSample {
  readonly vertex: number;
  readonly subtask: number;
  readonly state: string;
  /** Wall clock of the sample (epoch ms, sub-ms precision), so rates use the worker's own time base. */
  readonly sampledAt: number;
  /** Records taken in, per operator of the chain (index 0 is the head; for a source, records read). */
  readonly recordsIn: readonly number[];
  /** Records emitted, per operator of the chain. */
  readonly recordsOut: readonly number[];
  /** Records handed to the network (the task's numRecordsOut). */
  readonly taskRecordsOut: number;
  /** Bytes serialized onto channels to other threads (numBytesOut); same-thread channels pass references. */
  readonly bytesOut: number;
  /** Cumulative ms the task had no input (idle) and had no output credit (back-pressured). */
  readonly idleMs: number;
  readonly backPressuredMs: number;
  /** Cumulative wall ms since the task opened. */
  readonly elapsedMs: number;
  /** Cumulative ms spent in the task's steps (busy). At most elapsed - idle - back-pressured: the rest waited for the thread. */
  readonly busyMs: number;
  /** True while the task waits for output credit now (Flink's isBackPressured). */
  readonly isBackPressured: boolean;
  /** Per operator: combined input watermark and the last watermark it emitted (-Infinity: none yet). */
  readonly inputWatermark: readonly number[];
  readonly outputWatermark: readonly number[];
  /** Per operator: late records dropped (windows without a late-data output). */
  readonly lateRecordsDropped: readonly number[];
  readonly mailboxSize: number;
  /** Malformed records the task's source sent to the dead letters (Flink's numRecordsInErrors). */
  readonly deadLetters?: number;
  /** The task's source reader, if it runs one: bytes read, pending records, ms behind latest. */
  readonly source?: SourceMetricsSnapshot;
}

export type BlockedReason = 'idle' | 'backpressure';

/** Wall time split into idle, back-pressured and the rest (busy), accounted per blocked interval. */
export class TaskTimeAccount {
  private openedAt: number | undefined;
  private idle = 0;
  private backPressured = 0;
  private busy = 0;
  private blockedSince = 0;
  private blocked: BlockedReason | undefined;

  /** The task opened: time counts from now. */
  open(now: number): void {
    this.openedAt = now;
  }

  /** The task stops running for `reason`; a second call keeps the first interval's start. */
  block(reason: BlockedReason, now: number): void {
    if (this.blocked === reason) return;
    if (this.blocked !== undefined) this.addBlocked(now);
    this.blocked = reason;
    this.blockedSince = now;
  }

  /** The task runs again. Cheap when it was not blocked (the usual case between batches). */
  resume(now: number): void {
    if (this.blocked === undefined) return;
    this.addBlocked(now);
    this.blocked = undefined;
  }

  /** A step (a batch) took `ms`. */
  addBusy(ms: number): void {
    this.busy += ms;
  }

  get isBlocked(): boolean {
    return this.blocked !== undefined;
  }

  private addBlocked(now: number): void {
    const d = Math.max(0, now - this.blockedSince);
    if (this.blocked === 'idle') this.idle += d;
    else this.backPressured += d;
  }

  /** Totals up to `now`, the open interval included. */
  totals(now: number): { elapsedMs: number; idleMs: number; backPressuredMs: number; busyMs: number; isBackPressured: boolean } {
    if (this.openedAt === undefined) return { elapsedMs: 0, idleMs: 0, backPressuredMs: 0, busyMs: 0, isBackPressured: false };
    const open = this.blocked === undefined ? 0 : Math.max(0, now - this.blockedSince);
    return {
      elapsedMs: Math.max(0, now - this.openedAt),
      busyMs: this.busy,
      idleMs: this.idle + (this.blocked === 'idle' ? open : 0),
      backPressuredMs: this.backPressured + (this.blocked === 'backpressure' ? open : 0),
      isBackPressured: this.blocked === 'backpressure',
    };
  }
}
