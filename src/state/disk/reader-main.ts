/**
 * The snapshot reader thread's program (reader-thread.ts starts it through reader-entry.js).
 * For each full snapshot it is asked for, it opens a read transaction on the store's LMDB
 * environment (shared with the task's thread within the process) while the task waits for
 * the acknowledgement, so its view is the store at the barrier; then it reads the view in
 * key order, a chunk at a time (snapshot-blocks.ts: TTL filtering and block encoding, the
 * same code as on the task's thread), and posts the blocks to the task's port, at most
 * `maxInFlightBytes` not yet taken by the task. Between chunks it yields to its event loop, so
 * that another snapshot's begin is acknowledged within a chunk's time and snapshots of several
 * stores share the thread.
 */
import { createRequire } from 'node:module';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { Database, Transaction } from 'lmdb';
import { BlockBuilder, type EncodedBlock, type ExpiredKey } from './snapshot-blocks.ts';
import { ACK_FAILED, ACK_OPEN, CTL_READY, ENTRIES_PER_CHUNK, type BeginRead, type FromReader, type ToReader, type ToThread } from './reader-protocol.ts';


const lmdb = createRequire(import.meta.url)('lmdb') as typeof import('lmdb');

interface Store {
  readonly db: Database<Buffer, Buffer>;
  /** Reads in progress. */
  readers: number;
  /** Closed by the task: the handle goes once the last read ends. */
  closing: boolean;
}

const stores = new Map<number, Store>();

class Read {
  private it: Iterator<{ key: Buffer; value: Buffer }> | undefined;
  private readonly blocks: BlockBuilder;
  private inFlight = 0;
  private ended = false;

  constructor(private readonly store: Store, private readonly id: number, private readonly txn: Transaction, private readonly port: MessagePort, private readonly m: BeginRead) {
    this.blocks = new BlockBuilder(m.states, m.now);
    store.readers++;
    port.on('message', (x: ToReader) => {
      if (x.t === 'credit') {
        this.inFlight -= x.bytes;
        schedule();
      } else {
        this.end();
        this.port.close();
      }
    });
    port.on('close', () => this.end());
  }

  runnable(): boolean {
    return !this.ended && this.inFlight < this.m.maxInFlightBytes;
  }

  /** Reads one chunk and posts what it made; the last chunk also posts done and ends. */
  chunk(): void {
    try {
      this.it ??= this.store.db.getRange({ start: Buffer.from(this.m.start), end: Buffer.from(this.m.end), transaction: this.txn })[Symbol.iterator]() as Iterator<{ key: Buffer; value: Buffer }>;
      const out: EncodedBlock[] = [];
      const expired: ExpiredKey[] = [];
      let finished = false;
      for (let n = 0; n < ENTRIES_PER_CHUNK; n++) {
        const next = this.it.next();
        if (next.done === true) {
          this.blocks.end(out);
          finished = true;
          break;
        }
        this.blocks.add(next.value.key, next.value.value, out, expired);
      }
      if (out.length > 0 || expired.length > 0) {
        const transfer: ArrayBuffer[] = [];
        const blocks = out.map((b) => {
          this.inFlight += b.bytes.byteLength;
          // encodeColumns gives each block a buffer of its own: moved, not copied.
          const own = b.bytes.byteOffset === 0 && b.bytes.byteLength === b.bytes.buffer.byteLength && b.bytes.buffer instanceof ArrayBuffer;
          const bytes = own ? b.bytes : b.bytes.slice();
          transfer.push(bytes.buffer as ArrayBuffer);
          return { name: b.name, bytes, entries: b.entries };
        });
        this.post({ t: 'blocks', blocks, expired }, transfer);
      }
      if (finished) {
        this.post({ t: 'done' });
        this.end();
      }
    } catch (e) {
      this.post({ t: 'error', message: (e as Error)?.message ?? String(e) });
      this.end();
    }
  }

  private post(m: FromReader, transfer: ArrayBuffer[] = []): void {
    this.port.postMessage(m, transfer);
  }

  /**
   * Releases the read transaction (once): finished, failed, cancelled, or the task's port gone.
   * The port stays open for the task to close (its messages are all delivered first).
   */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    reads.delete(this);
    try {
      this.it?.return?.();
    } catch {
      // the iterator's cursor is gone with the transaction below
    }
    this.it = undefined;
    this.txn.done();
    this.store.readers--;
    if (this.store.closing && this.store.readers === 0) closeStore(this.id);
  }
}

const reads = new Set<Read>();
let scheduled = false;

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(pump);
}

/** One chunk of every read that may send more; again while any can. */
function pump(): void {
  scheduled = false;
  let again = false;
  for (const r of [...reads]) {
    if (!r.runnable()) continue;
    r.chunk();
    if (r.runnable()) again = true;
  }
  if (again) schedule();
}

function begin(m: BeginRead): void {
  const ack = new Int32Array(m.ack);
  const port = m.port as MessagePort;
  try {
    let s = stores.get(m.store);
    if (s === undefined) {
      s = { db: lmdb.open<Buffer, Buffer>(m.options as never), readers: 0, closing: false };
      stores.set(m.store, s);
    }
    // A fresh read transaction: lmdb-js keeps one per thread for an event-loop turn, which
    // could predate the task's last commit.
    s.db.resetReadTxn();
    const txn = s.db.useReadTransaction();
    reads.add(new Read(s, m.store, txn, port, m));
    Atomics.store(ack, 0, ACK_OPEN);
    schedule();
  } catch (e) {
    port.postMessage({ t: 'error', message: (e as Error)?.message ?? String(e) } satisfies FromReader);
    port.close();
    Atomics.store(ack, 0, ACK_FAILED);
  }
  Atomics.notify(ack, 0);
}

function closeStore(id: number): void {
  const s = stores.get(id);
  if (s === undefined) return;
  if (s.readers > 0) {
    s.closing = true;
    return;
  }
  stores.delete(id);
  void s.db.close().catch(() => {});
}

/**
 * Ends the thread by itself: its reads end, its stores close, then its port, so its event loop
 * empties. A thread terminated instead (with the JS thread that started it) could be stopped
 * inside LMDB's native code, whose throw then fails and aborts the process.
 */
function endThread(): void {
  for (const r of [...reads]) r.end();
  const closing = [...stores.values()].map((s) => s.db.close().catch(() => {}));
  stores.clear();
  void Promise.all(closing).then(() => parentPort!.close());
}

parentPort!.on('message', (m: ToThread) => {
  if (m.t === 'begin') begin(m);
  else if (m.t === 'end') endThread();
  else closeStore(m.store);
});
Atomics.store(new Int32Array((workerData as { ctl: SharedArrayBuffer }).ctl), CTL_READY, 1);
