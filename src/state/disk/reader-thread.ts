/**
 * The task's side of the snapshot reader thread (reader-main.ts): a full disk snapshot's
 * reading of the store, TTL filtering and block encoding run there instead of on the task's
 * thread, which only takes the finished blocks into the state file (threaded-snapshot.ts).
 *
 * One thread per JS thread (shared by every store opened there, like the write thread),
 * started when the first store opens, so it is ready by the first checkpoint; unref'd.
 * A snapshot's synchronous phase (the store flushed and every write committed) asks it to open
 * a read transaction and blocks until it says so (bounded: BEGIN_TIMEOUT_MS), so the thread's
 * view is exactly the store at the barrier while the task goes on writing. When the thread is
 * not ready (still booting, failed to start, exited) or does not answer in time, begin()
 * returns undefined and the backend reads on the task's thread as before (snapshot.ts): a
 * slower checkpoint, never a failed one.
 *
 * Also inside a worker thread (where tasks run with `--workers`): unlike the write thread,
 * which must not be ended inside a write transaction, a reader holds only a read transaction,
 * and a worker terminated (with its nested reader) mid-read ends promptly (measured: ~15 ms,
 * 1 M entries, writes going on).
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { ACK_FAILED, ACK_OPEN, ACK_WAITING, CTL_READY, CTL_SLOTS, type BeginRead, type FromReader, type ToReader, type ToThread } from './reader-protocol.ts';
import type { BlockState } from './snapshot-blocks.ts';

export type { FromReader } from './reader-protocol.ts';

/** The thread's bootstrap (loads reader-main from sources or dist/). */
const ENTRY = new URL('./reader-entry.js', import.meta.url);
/**
 * How long a synchronous phase waits for the thread to open its read transaction: it answers
 * within a chunk of its work (a few ms); past this it is stuck, and the task reads itself.
 */
export const BEGIN_TIMEOUT_MS = 2_000;
/** Block bytes posted to the task and not yet taken, per snapshot (back-pressure on the thread). */
export const MAX_IN_FLIGHT_BYTES = 8 << 20;
/** Starts of the thread per JS thread at most: one that keeps dying is not started again. */
const MAX_STARTS = 3;

interface ReaderThread {
  readonly worker: Worker;
  readonly ctl: Int32Array;
  exited: boolean;
}

let current: ReaderThread | undefined;
let starts = 0;
let nextStoreId = 1;

/** Starts the thread if none is running (and it may start again); never throws. */
function ensureThread(): ReaderThread | undefined {
  if (current !== undefined && !current.exited) return current;
  if (starts >= MAX_STARTS) return undefined;
  starts++;
  try {
    const ctl = new Int32Array(new SharedArrayBuffer(CTL_SLOTS * 4));
    const worker = new Worker(ENTRY, { workerData: { ctl: ctl.buffer }, stdout: false, stderr: false });
    worker.unref();
    const t: ReaderThread = { worker, ctl, exited: false };
    // Its snapshots see their ports close (threaded-snapshot.ts fails them); the next one starts a new thread.
    worker.once('exit', () => {
      t.exited = true;
      if (current === t) current = undefined;
    });
    worker.on('error', () => {});
    current = t;
    return t;
  } catch {
    return undefined;
  }
}

/** Whether the thread is up and has loaded its program. */
function readyThread(): ReaderThread | undefined {
  const t = ensureThread();
  return t !== undefined && Atomics.load(t.ctl, CTL_READY) === 1 ? t : undefined;
}

/** Resolves true once the thread of this JS thread is ready, false after `timeoutMs` (tests, benchmarks). */
export async function snapshotReaderReady(timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (readyThread() !== undefined) return true;
    if (Date.now() >= until || (current === undefined && starts >= MAX_STARTS)) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Ends this JS thread's reader thread, as if it had died (tests: its snapshots in progress
 * fail, later ones read on the task's thread until a new thread is up).
 */
export async function terminateSnapshotReader(): Promise<void> {
  const t = current;
  if (t === undefined) return;
  await t.worker.terminate();
}

/** How long endSnapshotReader waits for the thread to end by itself before it terminates it. */
const END_WAIT_MS = 2_000;

/**
 * Ends this JS thread's reader thread by itself (reader-main.ts endThread), for a JS thread
 * that is about to end (a worker thread whose tasks were cancelled: worker-main.ts). A worker
 * ending with its reader still running terminates the reader wherever it is, inside LMDB's
 * native code too (opening or closing a store for a snapshot of the cancelled attempt), where
 * the addon's throw fails in a terminating thread and aborts the whole process. Resolves once
 * the thread exited (terminated after END_WAIT_MS if it did not); no thread starts after it.
 */
export function endSnapshotReader(): Promise<void> {
  starts = MAX_STARTS;
  const t = current;
  current = undefined;
  if (t === undefined || t.exited) return Promise.resolve();
  return new Promise((resolve) => {
    // Referenced meanwhile: the JS thread must outlive its reader, not end and take it along.
    t.worker.ref();
    const timer = setTimeout(() => void t.worker.terminate().catch(() => 0), END_WAIT_MS);
    t.worker.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    try {
      t.worker.postMessage({ t: 'end' } satisfies ToThread);
    } catch {
      void t.worker.terminate().catch(() => 0);
    }
  });
}

/** What a full snapshot asks the thread to read. */
export interface ReadRequest {
  /** Store keys start <= key < end. */
  readonly start: Buffer;
  readonly end: Buffer;
  readonly states: readonly BlockState[];
  readonly now: number;
}

/** One store's line to the reader thread. */
export class StoreReader {
  private readonly id = nextStoreId++;
  private closed = false;

  /** `options`: the store's lmdb-js open options. Starts the thread, so it is ready by the first snapshot. */
  constructor(private readonly options: object) {
    ensureThread();
  }

  /**
   * Has the thread open a read view of the store as it is now and start reading it; blocks
   * until the view is open (at most BEGIN_TIMEOUT_MS). Undefined: the thread cannot (not ready,
   * failed, too slow); the caller reads on its own thread.
   */
  begin(req: ReadRequest): ReadJob | undefined {
    if (this.closed) return undefined;
    const t = readyThread();
    if (t === undefined) return undefined;
    const { port1, port2 } = new MessageChannel();
    const ack = new Int32Array(new SharedArrayBuffer(4));
    const m: BeginRead = {
      t: 'begin', store: this.id, options: this.options, ack: ack.buffer, port: port2,
      start: req.start, end: req.end, states: req.states, now: req.now, maxInFlightBytes: MAX_IN_FLIGHT_BYTES,
    };
    try {
      t.worker.postMessage(m satisfies ToThread, [port2]);
    } catch {
      port1.close();
      return undefined;
    }
    Atomics.wait(ack, 0, ACK_WAITING, BEGIN_TIMEOUT_MS);
    const answer = Atomics.load(ack, 0);
    if (answer === ACK_OPEN) return new ReadJob(port1);
    // Failed (its reason is on the port) or too slow: let go of the read if it ever opens it.
    port1.postMessage({ t: 'cancel' } satisfies ToReader);
    port1.close();
    // A thread that did not answer at all is stuck: not asked again (the next store starts another).
    if (answer !== ACK_FAILED && current === t) {
      current = undefined;
      void t.worker.terminate().catch(() => 0);
    }
    return undefined;
  }

  /** The store is being disposed: the thread closes its handle once its reads of it end. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const t = current;
    if (t === undefined || t.exited) return;
    try {
      t.worker.postMessage({ t: 'close', store: this.id } satisfies ToThread);
    } catch {
      // the thread is gone: nothing of the store is open there
    }
  }
}

/** One snapshot's read on the thread, seen from the task. */
export class ReadJob {
  /** Messages that arrive through the event loop; set by the snapshot. */
  onMessage: ((m: FromReader) => void) | undefined;
  /** The thread went away (exited, or closed the port) before the read ended. */
  onLost: (() => void) | undefined;
  private ended = false;

  constructor(private readonly port: MessagePort) {
    port.on('message', (m: FromReader) => this.onMessage?.(m));
    port.on('close', () => {
      if (!this.ended) this.onLost?.();
    });
    // A snapshot nobody writes (or a process ending meanwhile) must not keep the process alive.
    port.unref();
  }

  /**
   * While the snapshot is being written its steps wait for the thread's messages, with
   * nothing else of it keeping the event loop alive: the port does.
   */
  holdProcess(): void {
    if (!this.ended) this.port.ref();
  }

  /** Moves the messages already arrived into `into`, without waiting for the event loop. */
  pull(into: FromReader[]): void {
    for (let r = receiveMessageOnPort(this.port); r !== undefined; r = receiveMessageOnPort(this.port)) into.push(r.message as FromReader);
  }

  /** The task took `bytes` of blocks: the thread may send as many more. */
  credit(bytes: number): void {
    if (!this.ended) this.port.postMessage({ t: 'credit', bytes } satisfies ToReader);
  }

  /** Ends the read (once): the thread releases its transaction if it still holds it. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.port.postMessage({ t: 'cancel' } satisfies ToReader);
    this.port.close();
  }
}
