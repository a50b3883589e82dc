/**
 * The disk backend's write thread: the store's write-behind batches (the cache's flushes of
 * `flushEvery` dirty entries) are written by a thread of their own, so LMDB's random puts
 * (B-tree descent and copy-on-write of a page per put: ~30 % of the task's time when the
 * keys do not fit the cache) leave the task's thread.
 *
 * One thread per JS thread (shared by every store opened there), started with the first
 * batch and unref'd. Batches go in order (a message each, its buffer transferred); the thread
 * hands each to lmdb-js's asynchronous writes on the same environment (lmdb-js shares it
 * between threads; its native writer commits them in order) and, once committed, stores the
 * batch's sequence number in the store's shared control array, so the task's thread knows
 * what is committed without waiting for its own event loop: it polls that number or blocks on
 * it with a timeout (waitFor), and runs its own synchronous transactions only when nothing is
 * on the way (DiskStore.write drains first).
 *
 * Not lmdb-js's asynchronous writes on the task's thread: their commit is only seen in a
 * later event-loop turn, and a synchronous transaction interrupts the batch it runs beside
 * (writes queued after the interruption land after the synchronous ones), so neither a
 * snapshot's synchronous phase nor a removal could be sure to come after every write queued
 * before it. Not transactionSync in this thread: terminated inside one (process exit), the
 * thread left its environment's write lock held and the exit hung.
 *
 * A batch is a run of operations: u8 op (1 put, 2 remove), u16 key length (LE), key bytes,
 * and for a put u32 value length (LE) and value bytes.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { WeirError } from '../../core/errors.ts';
import type { NormKey } from '../key-groups.ts';
import { storeKeyBytesAtMost, writeStoreKey } from './keys.ts';
import { packStored, STORED_NUMBER_MAX_BYTES, writeStoredNumber } from './stored-value.ts';

export const OP_PUT = 1;
export const OP_REMOVE = 2;
/** Batches are smaller than this (2 GiB: a batch is one ArrayBuffer), so an operation's offset fits the thread's Int32Array. */
const OP_INDEX_SPAN = 2 ** 31;

/** Control array slots (Int32Array over a SharedArrayBuffer, one per store). */
const COMMITTED = 0;
const FAILED = 1;
const ERROR_BYTES = 2;
const ERROR_TEXT_MAX = 2048;

/** The thread's program (CommonJS, evaluated: no file to find in a source checkout or in dist/). */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const lmdb = require(workerData.lmdbPath);
const stores = new Map();
function fail(s, seq, e) {
  s.failed = true;
  const text = Buffer.from(String((e && e.message) || e)).subarray(0, s.err.length);
  s.err.set(text);
  Atomics.store(s.ctl, ${ERROR_BYTES}, text.length);
  Atomics.store(s.ctl, ${FAILED}, seq);
  Atomics.notify(s.ctl, ${COMMITTED});
}
/** Per key group (a key's first two bytes), reused from batch to batch: its operations, then where its next goes. */
const perGroup = new Int32Array(65536);
const nextAt = new Int32Array(65536);
/**
 * The batch's operations' offsets in key group order, stable (operations of one group keep
 * their order): a counting sort, passes over the batch and none over the groups unused.
 */
function byKeyGroup(b, len) {
  let offsets = new Int32Array(1024);
  let groups = new Uint16Array(1024);
  let n = 0;
  let p = 0;
  while (p < len) {
    const op = b[p];
    const kl = b[p + 1] | (b[p + 2] << 8);
    if (kl < 5 || p + 3 + kl > len) throw new Error('bad write-behind batch at byte ' + p);
    if (n === offsets.length) {
      const o = new Int32Array(2 * n);
      o.set(offsets);
      offsets = o;
      const g = new Uint16Array(2 * n);
      g.set(groups);
      groups = g;
    }
    offsets[n] = p;
    groups[n++] = (b[p + 3] << 8) | b[p + 4];
    p += 3 + kl;
    if (op === ${OP_PUT}) p += 4 + b.readUInt32LE(p);
  }
  if (p !== len) throw new Error('bad write-behind batch: ' + p + ' of ' + len + ' bytes');
  for (let i = 0; i < n; i++) perGroup[groups[i]]++;
  // Each group's first place, in the order groups first appear (any order of groups does); its
  // count goes back to 0 as it is placed, ready for the next batch.
  let at = 0;
  for (let i = 0; i < n; i++) {
    const g = groups[i];
    if (perGroup[g] === 0) continue;
    nextAt[g] = at;
    at += perGroup[g];
    perGroup[g] = 0;
  }
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[nextAt[groups[i]]++] = offsets[i];
  return order;
}
/** The batch being written: batchKeys reads its keys from it. */
let batch = null;
/**
 * lmdb-js's custom key encoding (its keyEncoder option): a key is given as the offset of its
 * operation in the batch and copied from there into lmdb-js's instruction buffer, the same bytes
 * as keyEncoding 'binary' would write, without a Buffer made per key. This thread only writes.
 */
const batchKeys = {
  writeKey(op, target, start) {
    const kl = batch[op + 1] | (batch[op + 2] << 8);
    for (let j = 0, from = op + 3; j < kl; j++) target[start + j] = batch[from + j];
    return start + kl;
  },
  readKey() {
    throw new Error('the write-behind thread reads no keys');
  },
};
parentPort.on('message', (m) => {
  if (m.t === 'open') {
    const options = { ...m.options, keyEncoding: undefined, keyEncoder: batchKeys };
    stores.set(m.id, { db: lmdb.open(options), ctl: new Int32Array(m.ctl), err: new Uint8Array(m.err), failed: false });
    return;
  }
  const s = stores.get(m.id);
  if (s === undefined) return;
  if (m.t === 'close') {
    stores.delete(m.id);
    s.db.close().catch(() => {});
    return;
  }
  if (s.failed) return;
  try {
    // lmdb-js's asynchronous writes: its native writer thread puts them in one transaction
    // (all of this turn's), so this thread never holds the write lock: terminated at exit, it
    // leaves nothing locked. The values are read from this batch's buffer until the commit.
    const b = Buffer.from(m.buf, 0, m.len);
    let last = Promise.resolve(true);
    // In key group order (stable: operations of one group keep theirs): the store's keys begin
    // with the group, so consecutive puts land in neighbouring B-tree pages, still in the
    // CPU's caches, where the batch's order (the cache's eviction order) is random.
    const order = byKeyGroup(b, m.len);
    batch = b;
    for (let i = 0; i < order.length; i++) {
      const at = order[i];
      const op = b[at];
      let p = at + 3 + (b[at + 1] | (b[at + 2] << 8));
      if (op === ${OP_PUT}) {
        const vl = b.readUInt32LE(p);
        p += 4;
        // The value is the batch buffer with start and end set (lmdb-js reads a Buffer's own
        // start/end when it has them), not a Buffer made per value; lmdb-js records its address
        // at once, so the next put may move start and end.
        b.start = p;
        b.end = p + vl;
        last = s.db.put(at, b);
      } else if (op === ${OP_REMOVE}) last = s.db.remove(at);
      else throw new Error('bad write-behind operation ' + op);
    }
    batch = null;
    last.then(() => {
      Atomics.store(s.ctl, ${COMMITTED}, m.seq);
      Atomics.notify(s.ctl, ${COMMITTED});
    }, (e) => fail(s, m.seq, e));
  } catch (e) {
    fail(s, m.seq, e);
  }
});
`;

let thread: Worker | undefined;
let nextStoreId = 1;
let exitHookInstalled = false;
/** The stores open on the thread: told when it exits (one listener, not one per store). */
const open = new Set<WriteBehind>();
/**
 * How long the process's exit waits for the batches still on the way. A thread stopped
 * while lmdb-js has a batch open leaves lmdb-js's native writer waiting for the batch's end,
 * and Node's exit waits for that writer for ever: so the exit lets them commit first.
 */
const EXIT_DRAIN_MS = 10_000;

function drainAtExit(): void {
  for (const s of open) {
    try {
      s.drain(EXIT_DRAIN_MS);
    } catch {
      // a failed or stuck thread: nothing more to do at exit
    }
  }
}

function writeThread(): Worker {
  if (thread !== undefined) return thread;
  const lmdbPath = createRequire(import.meta.url).resolve('lmdb');
  const w = new Worker(THREAD_SOURCE, { eval: true, workerData: { lmdbPath }, stdout: false, stderr: false });
  w.unref();
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', drainAtExit);
  }
  // A thread that dies takes its stores' batches with it: their waits time out or see FAILED
  // (set below); the next store starts a new thread.
  w.once('exit', () => {
    if (thread === w) thread = undefined;
    for (const s of [...open]) s.lost(w);
  });
  w.on('error', () => {});
  thread = w;
  return w;
}

/** One store's line to the write thread. */
export class WriteBehind {
  private readonly id = nextStoreId++;
  private readonly ctl = new Int32Array(new SharedArrayBuffer(3 * 4));
  private readonly err = new Uint8Array(new SharedArrayBuffer(ERROR_TEXT_MAX));
  private readonly thread: Worker;
  /** The last batch sent. */
  private sent = 0;
  private closed = false;

  constructor(options: object, private readonly where: string) {
    this.thread = writeThread();
    this.thread.postMessage({ t: 'open', id: this.id, options, ctl: this.ctl.buffer, err: this.err.buffer });
    open.add(this);
  }

  /** Sends a batch (`len` bytes of `buf`, which is transferred); its sequence number. */
  send(buf: ArrayBuffer, len: number): number {
    if (this.closed) throw new WeirError('STATE_BACKEND', `${this.where}: write to a closed disk state store`);
    this.check();
    const seq = ++this.sent;
    this.thread.postMessage({ t: 'write', id: this.id, seq, buf, len }, [buf]);
    return seq;
  }

  /** The last batch committed (batches commit in order); throws if a batch failed. */
  committed(): number {
    this.check();
    return Atomics.load(this.ctl, COMMITTED);
  }

  /** Blocks until batch `seq` has committed; throws after `timeoutMs` or if a batch failed. */
  waitFor(seq: number, timeoutMs: number): void {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const done = this.committed();
      if (done >= seq) return;
      const left = until - Date.now();
      if (left <= 0) {
        throw new WeirError('STATE_BACKEND', `${this.where}: the disk state store's write thread did not commit within ${timeoutMs} ms (batch ${seq}, committed ${done})`);
      }
      Atomics.wait(this.ctl, COMMITTED, done, left);
    }
  }

  /** Blocks until every batch sent has committed. */
  drain(timeoutMs: number): void {
    if (this.sent > 0) this.waitFor(this.sent, timeoutMs);
  }

  /** Whether some batch sent has not committed yet. */
  busy(): boolean {
    return this.sent > Atomics.load(this.ctl, COMMITTED);
  }

  /**
   * Waits (bounded) for the batches sent, then tells the thread to close its handle on the
   * store: a thread ended with a batch open would hang its process's exit (EXIT_DRAIN_MS).
   */
  close(): void {
    if (this.closed) return;
    try {
      this.drain(EXIT_DRAIN_MS);
    } catch {
      // failed or stuck: the store is thrown away anyway
    }
    this.closed = true;
    open.delete(this);
    this.thread.postMessage({ t: 'close', id: this.id });
  }

  private check(): void {
    if (Atomics.load(this.ctl, FAILED) === 0) return;
    const text = Buffer.from(this.err.slice(0, Atomics.load(this.ctl, ERROR_BYTES))).toString();
    throw new WeirError('STATE_BACKEND', `${this.where}: the disk state store's write thread failed: ${text}`);
  }

  /** A thread exited: if it was this store's, batches not committed will never be. */
  lost(exited: Worker): void {
    if (exited !== this.thread) return;
    open.delete(this);
    if (this.closed || !this.busy()) return;
    const text = Buffer.from('the write thread exited');
    this.err.set(text);
    Atomics.store(this.ctl, ERROR_BYTES, text.length);
    Atomics.store(this.ctl, FAILED, this.sent);
    Atomics.notify(this.ctl, COMMITTED);
  }
}

/** Builds one batch in a growing buffer (keys and values copied in; no Buffer per entry kept). */
export class BatchWriter {
  private buf: Buffer;
  private pos = 0;
  count = 0;

  constructor(private readonly initialBytes = 1 << 16) {
    this.buf = Buffer.allocUnsafeSlow(initialBytes);
  }

  /** Room for `n` more bytes. */
  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    if (this.pos + n >= OP_INDEX_SPAN) throw new WeirError('STATE_BACKEND', `a write-behind batch of over ${OP_INDEX_SPAN} bytes (flush fewer entries at once)`);
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const b = Buffer.allocUnsafeSlow(size);
    this.buf.copy(b, 0, 0, this.pos);
    this.buf = b;
  }

  private key(op: number, keyGroup: number, stateId: number, key: NormKey): void {
    this.room(3 + storeKeyBytesAtMost(key));
    const at = this.pos + 3;
    const end = writeStoreKey(this.buf, at, keyGroup, stateId, key);
    this.buf[this.pos] = op;
    this.buf.writeUInt16LE(end - at, this.pos + 1);
    this.pos = end;
    this.count++;
  }

  put(keyGroup: number, stateId: number, key: NormKey, value: Uint8Array): void {
    this.key(OP_PUT, keyGroup, stateId, key);
    this.room(4 + value.length);
    this.buf.writeUInt32LE(value.length, this.pos);
    this.buf.set(value, this.pos + 4);
    this.pos += 4 + value.length;
  }

  /** put() of a value in its stored form, packed here: a number straight into the batch. */
  putStored(keyGroup: number, stateId: number, key: NormKey, raw: unknown): void {
    if (typeof raw !== 'number') return this.put(keyGroup, stateId, key, packStored(raw));
    this.key(OP_PUT, keyGroup, stateId, key);
    this.room(4 + STORED_NUMBER_MAX_BYTES);
    const at = this.pos + 4;
    const end = writeStoredNumber(this.buf, at, raw);
    this.buf.writeUInt32LE(end - at, this.pos);
    this.pos = end;
  }

  remove(keyGroup: number, stateId: number, key: NormKey): void {
    this.key(OP_REMOVE, keyGroup, stateId, key);
  }

  /** Forgets what was written since the last take() (a batch that could not be made whole). */
  discard(): void {
    this.pos = 0;
    this.count = 0;
  }

  /** The batch so far (its buffer, to transfer, and length); the writer starts a new one. */
  take(): { buf: ArrayBuffer; len: number } {
    const out = { buf: this.buf.buffer as ArrayBuffer, len: this.pos };
    this.buf = Buffer.allocUnsafeSlow(Math.max(this.initialBytes, this.pos));
    this.pos = 0;
    this.count = 0;
    return out;
  }
}
