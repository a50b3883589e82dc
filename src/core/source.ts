/**
 * The source contract (Flink's FLIP-27 shape): a source is a set of splits, planned on the job
 * manager and assigned to subtasks, plus a reader per subtask that reads its splits. A reader
 * reports its splits with their current positions, which is what a checkpoint records and
 * what a restore resumes from.
 */

export interface SourceSplit {
  /** Stable identity of the split, e.g. a file path or a generator lane. */
  readonly id: string;
}

export interface SourceOutput<T> {
  /** Emits a record, optionally with its event timestamp. */
  collect(value: T, timestamp?: number): void;
  /** A record that could not be read: goes to the dead-letter output or fails the job, per config. */
  malformed(record: MalformedRecord): void;
}

export interface MalformedRecord {
  readonly source: string;
  /** Where, e.g. "data/events.jsonl:17". */
  readonly location: string;
  /** The record as text, whole. */
  readonly raw: string;
  /** The record's bytes, base64, when they are not valid UTF-8 text (raw then has U+FFFD in their place). */
  readonly rawBase64?: string;
  readonly error: string;
}

/**
 * What poll() writes to. Records collected on the reader output directly belong to no split;
 * a reader that reads several splits collects each split's records on `forSplit(id)`, so each
 * split gets its own watermark (fromSource's `watermarks` option) and can be paused alone.
 * With fromSource's `watermarks`, only records collected on `forSplit(id)` move event time
 * (unlike Flink, whose reader output has a watermark generator of its own): an assigned split
 * that is never asked for holds event time at its minimum until the reader ends.
 */
export interface ReaderOutput<T> extends SourceOutput<T> {
  /** The output of one split (Flink's createOutputForSplit): the reader is now reading it. */
  forSplit(splitId: string): SourceOutput<T>;
  /** The split is read to its end: its watermark stops holding back event time. */
  splitFinished(splitId: string): void;
  /**
   * For a reader with `reportsCollected`: the records this poll collected, on this output and its
   * split outputs together, called once at the end of the poll. The runtime's own outputs have it.
   */
  collected?(records: number): void;
}

export type PollStatus = 'more' | 'wait' | 'end';

/** What a reader reports about how far behind its input it is (per split) and what it read. */
export interface SourceReaderMetrics {
  /** Bytes read from the input (payload bytes as received). */
  addBytesRead(bytes: number): void;
  /** Records in the input not read yet for this split (e.g. stream length minus position), if known. */
  setPendingRecords(splitId: string, pending: number | undefined): void;
  /** How far behind the newest record of the split the reader is, in ms, if known. */
  setMillisBehindLatest(splitId: string, ms: number | undefined): void;
}

export interface SourceReaderContext {
  readonly subtaskIndex: number;
  readonly parallelism: number;
  now(): number;
  /** Wakes the reader's task after poll returned 'wait' (data arrived, a timer passed). Safe from any callback. */
  wake(): void;
  /** Runs fn in the task's mailbox at or after atMs. */
  schedule(atMs: number, fn: () => void): { cancel(): void };
  readonly metrics: SourceReaderMetrics;
  /** A line for the job's log (e.g. a connection retried). Never put credentials in it. */
  log(line: string): void;
  /** A message to the source's split enumerator on the job manager (e.g. "split finished"); none without one. */
  sendSourceEvent?(event: unknown): void;
}

export interface SourceReader<T, S extends SourceSplit> {
  /**
   * Set by a reader whose every poll ends with `out.collected(n)`, n the records it collected in
   * that poll. The runtime then counts the source's records (numRecordsOut, a rate limit) once a
   * poll instead of once a record: in a chained pipeline of a few nanoseconds a record, the
   * increment per record was a tenth of the time. A poll that throws reports nothing; the job's
   * attempt fails with it.
   */
  readonly reportsCollected?: boolean;
  /** The splits to read: at start, and later from the source's enumerator (between polls). */
  addSplits(splits: S[]): void;
  /**
   * Emits at most `maxRecords` records. Returns 'more' if more are ready now, 'wait' if the
   * reader will call ctx.wake() when there are (never wait without arranging a wake-up),
   * and 'end' when every split is exhausted and no more will be added (bounded sources).
   */
  poll(out: ReaderOutput<T>, maxRecords: number): PollStatus;
  /**
   * Event-time alignment (maxDrift): stop reading the splits in `pause` until they are named in
   * `resume`. A reader that cannot pause splits leaves this out, and alignment is then off for it.
   */
  pauseOrResumeSplits?(pause: readonly string[], resume: readonly string[]): void;
  /** The assigned splits with their current positions: the reader's part of checkpoint `checkpointId` (given by the runtime; tests may leave it out). */
  snapshotSplits(checkpointId?: number): S[];
  /** A checkpoint completed: positions up to it are durable (a reader may release what it held for it). */
  notifyCheckpointComplete?(checkpointId: number): void;
  /** An event the source's split enumerator sent this reader (sendEventToReader), in the mailbox between polls. */
  handleSourceEvent?(event: unknown): void;
  /** Releases connections and timers; may be asynchronous (bounded by the reader's own timeouts). */
  close?(): void | Promise<void>;
}

export interface Source<T, S extends SourceSplit = SourceSplit> {
  readonly name: string;
  readonly bounded: boolean;
  /** Fixed parallelism (e.g. 1 for a collection), or undefined to follow the job. */
  readonly maxReaders?: number;
  /** On the job manager: the splits to read, for `parallelism` readers. */
  planSplits(parallelism: number): Promise<S[]> | S[];
  /**
   * Optional, on the job manager at a restore: reconciles the checkpoint's splits with what the
   * source is configured to read now (Flink's sources discover topics added since a savepoint).
   * Returns the splits to read: the restored ones it still reads (the same objects, so each stays
   * with the reader the restore dealt it to), plus new splits for what no restored split covers
   * (a stream added since). Only a source that can tell a finished split
   * from a missing one may add splits (an unbounded source's splits never finish); `log`
   * reports what changed.
   */
  reconcileRestoredSplits?(restored: readonly S[], log: (line: string) => void): Promise<S[]> | S[];
  createReader(ctx: SourceReaderContext): SourceReader<T, S>;
  /**
   * Optional: a split enumerator on the job manager for splits that appear while the job runs
   * (Kinesis shards after a reshard). One per source per attempt, started once every task runs.
   * `assigned[i]` are the splits reader i starts with (planned or restored). An enumerator keeps
   * no checkpoint state of its own: what it must know after a restore, it derives from the
   * readers' splits (`assigned`), which is what makes its decisions consistent with the checkpoint.
   */
  createEnumerator?(ctx: SplitEnumeratorContext<S>, assigned: readonly (readonly S[])[]): SplitEnumerator;
}

/** What a split enumerator can do; the job manager's side of FLIP-27's SplitEnumeratorContext. */
export interface SplitEnumeratorContext<S> {
  readonly parallelism: number;
  /** The checkpoint or savepoint this attempt restored from, for messages; undefined at a fresh start. */
  readonly restoredFrom?: string | undefined;
  /**
   * Hands splits to reader `subtask`. Delivery is ordered with checkpoint triggers: a
   * checkpoint triggered before this call never holds the splits, one triggered after always does.
   */
  assignSplits(subtask: number, splits: S[]): void;
  /** A message to reader `subtask` (its handleSourceEvent); like assignSplits, lost if the attempt ends first. */
  sendEventToReader?(subtask: number, event: unknown): void;
  now(): number;
  /** Runs fn after delayMs on the job manager; cancelled when the enumerator closes. */
  schedule(delayMs: number, fn: () => void): { cancel(): void };
  log(line: string): void;
  /** Fails the attempt (the restart strategy decides what follows). */
  fail(e: unknown): void;
}

export interface SplitEnumerator {
  start(): void;
  /** An event reader `subtask` sent with sendSourceEvent. */
  handleSourceEvent(subtask: number, event: unknown): void;
  close(): void;
}

/** Initial assignment: split k to subtask k mod p, so assignment is deterministic. */
export function assignSplits<S>(splits: readonly S[], parallelism: number): S[][] {
  const out: S[][] = Array.from({ length: parallelism }, () => []);
  splits.forEach((s, k) => out[k % parallelism]!.push(s));
  return out;
}
