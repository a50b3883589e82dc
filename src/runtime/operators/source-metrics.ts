/**
 * Per-source metrics of one reader (Flink's numRecordsIn, numBytesIn, pendingRecords,
 * millisBehindLatest): records are counted by the operator's output, bytes and lag are
 * reported by the reader. Lag is kept per split and summed (pending) or maxed (ms behind).
 */
import type { SourceReaderMetrics } from '../../core/source.ts';

export interface SourceMetricsSnapshot {
  readonly bytesRead: number;
  /** Sum over splits that report it; undefined if none does. */
  readonly pendingRecords: number | undefined;
  /** Largest over splits that report it; undefined if none does. */
  readonly millisBehindLatest: number | undefined;
}

export class SourceMetrics implements SourceReaderMetrics {
  bytesRead = 0;
  private readonly pending = new Map<string, number>();
  private readonly behind = new Map<string, number>();

  addBytesRead(bytes: number): void {
    if (bytes > 0) this.bytesRead += bytes;
  }

  setPendingRecords(splitId: string, pending: number | undefined): void {
    if (pending === undefined || !Number.isFinite(pending)) this.pending.delete(splitId);
    else this.pending.set(splitId, Math.max(0, pending));
  }

  setMillisBehindLatest(splitId: string, ms: number | undefined): void {
    if (ms === undefined || !Number.isFinite(ms)) this.behind.delete(splitId);
    else this.behind.set(splitId, Math.max(0, ms));
  }

  snapshot(): SourceMetricsSnapshot {
    let pending: number | undefined;
    for (const v of this.pending.values()) pending = (pending ?? 0) + v;
    let behind: number | undefined;
    for (const v of this.behind.values()) behind = Math.max(behind ?? 0, v);
    return { bytesRead: this.bytesRead, pendingRecords: pending, millisBehindLatest: behind };
  }
}
