/**
 * A batch of records: values with their event timestamps, side by side. Batches are the
 * unit of work everywhere on the data path, so per-record costs are plain array reads and
 * writes and never a Promise.
 *
 * Ownership rule: a batch handed to `processBatch` is borrowed for the duration of the call.
 * A consumer that needs records later copies the values it keeps, never the arrays.
 */
export interface Batch {
  values: unknown[];
  /** Event timestamps in epoch ms, NO_TIMESTAMP where a record has none. Same length as values. */
  timestamps: number[];
  /**
   * Key group of each record, when the batch comes from hash partitioning: the partitioner
   * already hashed every key, so the keyed operator downstream does not hash it again.
   */
  keyGroups?: number[];
}

/** Marks a record without an event timestamp (like Flink's hasTimestamp == false). */
export const NO_TIMESTAMP = Number.NEGATIVE_INFINITY;

export function hasTimestamp(ts: number): boolean {
  return ts !== NO_TIMESTAMP;
}

/** Records per batch produced by sources and collected by operators before handing on. */
export const DEFAULT_BATCH_SIZE = 1024;

export function emptyBatch(): Batch {
  return { values: [], timestamps: [] };
}
