/**
 * In-band events that travel in channels between batches, in order with the records.
 * Watermarks and end-of-data are used now; barriers and cancel markers carry checkpoints.
 */
import type { Batch } from '../core/batch.ts';

export const MAX_WATERMARK = Number.MAX_SAFE_INTEGER;
export const MIN_WATERMARK = Number.MIN_SAFE_INTEGER;

/**
 * Event time is whole milliseconds, as Flink's long: a fraction is dropped where a timestamp or
 * watermark enters (a source reader, an assigner, a watermark generator). Windows end, fire and
 * are cleaned at end - 1, the last whole millisecond in them: a record at 9.8 behind a watermark
 * of 9.7 was neither in the fired window [0, 10) nor counted late, lost.
 */
export function wholeMs(ms: number): number {
  return Math.floor(ms);
}

export interface WatermarkEvent {
  readonly kind: 'watermark';
  readonly timestamp: number;
}

/** An input that will not produce records for a while (idleness) or produces again. */
export interface WatermarkStatusEvent {
  readonly kind: 'status';
  readonly idle: boolean;
}

export interface BarrierEvent {
  readonly kind: 'barrier';
  readonly checkpointId: number;
  readonly timestamp: number;
  /** 'checkpoint' | 'savepoint'. */
  readonly type: 'checkpoint' | 'savepoint';
  /** Directory the snapshot's files go to (the checkpoint's or the savepoint's own). */
  readonly location: string;
  /** Stop-with-savepoint (without drain): every task suspends after this barrier (Task.suspendSource). */
  readonly suspendAfter?: boolean;
}

export interface CancelMarkerEvent {
  readonly kind: 'cancel-checkpoint';
  readonly checkpointId: number;
}

/**
 * No more records on this channel: the producing subtask has finished. `stop` marks the end
 * of a stop-with-savepoint without drain: downstream operators then end without finishing
 * (no windows fired, nothing flushed), as their state is already in the savepoint.
 */
export interface EndOfDataEvent {
  readonly kind: 'end';
  readonly stop?: boolean;
}

export type StreamEvent = WatermarkEvent | WatermarkStatusEvent | BarrierEvent | CancelMarkerEvent | EndOfDataEvent;

/** What a channel carries: a batch of records or an event. */
export type ChannelElement = Batch | StreamEvent;

export function isEvent(e: ChannelElement): e is StreamEvent {
  return (e as StreamEvent).kind !== undefined;
}

export const END_OF_DATA: EndOfDataEvent = Object.freeze({ kind: 'end' });
export const END_OF_DATA_STOP: EndOfDataEvent = Object.freeze({ kind: 'end', stop: true });
export const STATUS_IDLE: WatermarkStatusEvent = Object.freeze({ kind: 'status', idle: true });
export const STATUS_ACTIVE: WatermarkStatusEvent = Object.freeze({ kind: 'status', idle: false });

export function watermark(timestamp: number): WatermarkEvent {
  return { kind: 'watermark', timestamp };
}
