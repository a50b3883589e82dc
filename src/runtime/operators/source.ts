/**
 * The source operator at the head of a source task: pulls a batch from the reader on every
 * mailbox step. End of input is the end of event time: the final watermark goes out before
 * the chain finishes, which fires every event-time window and timer.
 */
import type { MalformedRecord, PollStatus, Source, SourceOutput, SourceReader, SourceSplit } from '../../core/source.ts';
import { DEFAULT_BATCH_SIZE, NO_TIMESTAMP, type Batch } from '../../core/batch.ts';
import { MAX_WATERMARK } from '../events.ts';
import { StreamOperator } from './operator.ts';
import type { InlineOperatorState } from '../../core/checkpoint-format.ts';
import { WeirError } from '../../core/errors.ts';

export const DEAD_LETTER_TAG_ID = 'weir.dead-letters';

export type MalformedPolicy = 'fail' | 'dead-letter';

export class SourceOperator extends StreamOperator implements SourceOutput<unknown> {
  reader!: SourceReader<unknown, SourceSplit>;
  private ended = false;
  /** Called by the task when the reader asks to be woken. */
  wake: () => void = () => {};

  constructor(
    readonly source: Source<unknown, SourceSplit>,
    private readonly malformedPolicy: MalformedPolicy,
    private readonly batchSize = DEFAULT_BATCH_SIZE,
    /** This subtask's share of a source rate limit, records per second. */
    private readonly ratePerSecond?: number,
  ) {
    super();
    this.numInputs = 0;
  }

  /** Malformed records routed to the dead letters so far (this attempt). */
  deadLetterCount = 0;
  /** This poll's dead letters, handed to the runtime's dead-letter output once the poll is done. */
  private letters: MalformedRecord[] = [];

  private rateStart = -1;
  private rateWake: { cancel(): void } | undefined;

  /** Records this subtask may emit now under its rate limit (a token bucket from the start). */
  private allowance(): number {
    const rate = this.ratePerSecond;
    if (rate === undefined) return this.batchSize;
    const now = this.env.clock.now();
    if (this.rateStart < 0) this.rateStart = now;
    const due = Math.floor(((now - this.rateStart) * rate) / 1000) + 1 - this.output.count;
    return Math.max(0, Math.min(this.batchSize, due));
  }

  /**
   * When the next record is due: the first millisecond at which allowance() grants one more.
   * Records 1..n are due by n-1 intervals after the start (the first one at the start), so the
   * record after `count` emitted ones is due `count` intervals in, not `count + 1`.
   */
  private nextDueAt(): number {
    const rate = this.ratePerSecond!;
    const count = this.output.count;
    let at = this.rateStart + Math.ceil((count * 1000) / rate);
    // Guard against rounding: allowance() must really grant a record at `at`.
    while (Math.floor(((at - this.rateStart) * rate) / 1000) + 1 <= count) at++;
    return at;
  }

  /** Splits come from the job manager's plan (or, later, a restored checkpoint). */
  assignedSplits: SourceSplit[] = [];

  protected override setUp(): void {
    const env = this.env;
    try {
      this.reader = this.source.createReader({
        subtaskIndex: env.taskInfo.subtaskIndex,
        parallelism: env.taskInfo.parallelism,
        now: () => env.clock.now(),
        wake: () => this.wake(),
        schedule: (at, fn) => env.scheduleMail(at, fn),
      });
      this.reader.addSplits(this.assignedSplits);
    } catch (e) {
      throw this.fail(e, 'source open');
    }
  }

  processBatch(_batch: Batch): void {
    throw new Error('a source has no input');
  }

  /** Emits one batch; the task calls this as its default action. */
  emitNext(): PollStatus {
    if (this.ended) return 'end';
    const max = this.allowance();
    if (max === 0) {
      // Over the rate: sleep until the next record is due (a mail wakes the task).
      if (this.rateWake === undefined) {
        const at = this.nextDueAt();
        this.rateWake = this.env.scheduleMail(at, () => {
          this.rateWake = undefined;
          this.wake();
        });
      }
      return 'wait';
    }
    let status: PollStatus;
    try {
      status = this.reader.poll(this, max);
    } catch (e) {
      this.flushDeadLetters();
      throw this.fail(e, `source "${this.source.name}"`);
    }
    this.flushDeadLetters();
    this.output.flush();
    if (status === 'end') {
      this.ended = true;
      this.output.emitWatermark(MAX_WATERMARK);
    }
    return status;
  }

  /** Ends the source now, as if its input were exhausted: event time goes to its end. */
  endNow(): void {
    if (this.ended) return;
    this.ended = true;
    this.output.flush();
    this.output.emitWatermark(MAX_WATERMARK);
  }

  collect(value: unknown, timestamp?: number): void {
    this.output.emit(value, timestamp ?? NO_TIMESTAMP);
  }

  malformed(record: MalformedRecord): void {
    if (this.malformedPolicy === 'dead-letter') {
      this.deadLetterCount++;
      this.letters.push(record);
      this.output.emitSide(DEAD_LETTER_TAG_ID, record, NO_TIMESTAMP);
      return;
    }
    throw new MalformedRecordError(record);
  }

  /** One write per poll, not one per record. */
  private flushDeadLetters(): void {
    if (this.letters.length === 0) return;
    const letters = this.letters;
    this.letters = [];
    this.env.services.deadLetters(this.source.name, this.env.taskInfo.subtaskIndex, letters);
  }

  /** A source's checkpoint: its splits with their positions at the barrier. */
  override snapshotInline(checkpointId: number): InlineOperatorState | undefined {
    const base = super.snapshotInline(checkpointId) ?? {};
    return { ...base, splits: this.reader.snapshotSplits() };
  }

  protected override tearDown(): void {
    this.rateWake?.cancel();
    this.reader?.close?.();
  }
}

export class MalformedRecordError extends WeirError {
  constructor(readonly record: MalformedRecord) {
    super('MALFORMED_RECORD', `malformed record at ${record.location}: ${record.error} (raw: ${record.raw.length > 120 ? record.raw.slice(0, 119) + '…' : record.raw}); set malformed: 'dead-letter' to route such records to a dead-letter output instead`);
  }
}
