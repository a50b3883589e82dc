/**
 * What the task's thread and the snapshot reader thread (reader-thread.ts, reader-main.ts)
 * say to each other. Kept apart so that the thread's program imports no more than it needs.
 *
 * To the thread (its parentPort): `begin` a full snapshot's read of one store, `close` a store.
 * On a snapshot's own port, task -> thread: `credit` (bytes of blocks the task took), `cancel`;
 * thread -> task: `blocks` (encoded, their buffers transferred) with the keys found expired,
 * then `done`, or `error`.
 */
import type { BlockState, EncodedBlock, ExpiredKey } from './snapshot-blocks.ts';

/** Slots of the thread's control array (Int32Array over a SharedArrayBuffer). */
export const CTL_READY = 0;
export const CTL_SLOTS = 1;

/** Values of a begin's acknowledgement slot. */
export const ACK_WAITING = 0;
export const ACK_OPEN = 1;
export const ACK_FAILED = 2;

export interface BeginRead {
  readonly t: 'begin';
  readonly store: number;
  /** lmdb-js open options of the store (its environment is shared within the process). */
  readonly options: object;
  /** Int32Array[1] over a SharedArrayBuffer: ACK_OPEN once the read transaction is open. */
  readonly ack: SharedArrayBuffer;
  /** The snapshot's own port (transferred). */
  readonly port: unknown;
  /** Store keys start <= key < end, in key order. */
  readonly start: Uint8Array;
  readonly end: Uint8Array;
  readonly states: readonly BlockState[];
  readonly now: number;
  /** Bytes of blocks sent and not yet credited back, at most (one read chunk's more). */
  readonly maxInFlightBytes: number;
}

export interface CloseStore {
  readonly t: 'close';
  readonly store: number;
}

/** Its JS thread is ending: end every read, close every store, then end (reader-thread.ts endSnapshotReader). */
export interface EndThread {
  readonly t: 'end';
}

export type ToThread = BeginRead | CloseStore | EndThread;

export type ToReader = { readonly t: 'credit'; readonly bytes: number } | { readonly t: 'cancel' };

export type FromReader =
  | { readonly t: 'blocks'; readonly blocks: readonly EncodedBlock[]; readonly expired: readonly ExpiredKey[] }
  | { readonly t: 'done' }
  | { readonly t: 'error'; readonly message: string };

/**
 * Store entries the thread reads between two looks at its messages: a begin waits at most
 * about this long for its acknowledgement (~2-5 ms of decoding and encoding).
 */
export const ENTRIES_PER_CHUNK = 4096;
