/**
 * Reused memory for the blocks a snapshot encodes, per thread (module state: each worker
 * thread has its own). A block is carved from a slab; once its state file has written it
 * (StateFileWriter calls releaseBlock after the stream's write resolved, when the stream
 * has copied or written the bytes: the StateOutputStream contract) its slab can be used again.
 *
 * Why: a full snapshot of 10 M keys encodes ~100 MB. Fresh typed arrays for it cost more
 * than the encoding itself: new zeroed pages from the OS for every block (page faults), and
 * external memory growth that makes V8 collect garbage over and over on a GB-sized heap. A
 * few slabs cycling between the encoder and the writer (its queue is bounded by
 * MAX_PENDING_BYTES) touch the same memory every checkpoint.
 *
 * Blocks that are not released (an aborted file drops its queue) are simply garbage: their
 * slab is never reused, and the pool makes a new one.
 */

/** Bytes per slab; larger blocks get memory of their own (not pooled). */
export const SLAB_BYTES = 4 << 20;
const MAX_BLOCK_BYTES = SLAB_BYTES >> 1;
/**
 * Free slabs kept for the next blocks (the rest are left to the garbage collector): enough
 * for what a snapshot holds at once, up to MAX_PENDING_BYTES (16 MiB) queued plus a write of
 * as much in flight. With fewer, a 10 M-key snapshot still made a new slab every few blocks.
 */
const MAX_FREE_SLABS = 10;

interface Slab {
  readonly buf: ArrayBuffer;
  /** Bytes carved so far. */
  used: number;
  /** Blocks carved and not yet released. */
  live: number;
}

const slabOf = new WeakMap<ArrayBuffer, Slab>();
const free: Slab[] = [];
let current: Slab | undefined;

/**
 * `size` bytes for a block, starting at a multiple of 8 (typed columns inside stay aligned).
 * The contents are whatever the memory held before: the encoder writes every byte.
 */
export function allocBlock(size: number): Uint8Array {
  if (size > MAX_BLOCK_BYTES) return new Uint8Array(size);
  let s = current;
  if (s === undefined || s.used + size > SLAB_BYTES) {
    if (s !== undefined) {
      current = undefined;
      if (s.live === 0) recycle(s);
    }
    s = free.pop() ?? newSlab();
    current = s;
  }
  const at = s.used;
  s.used = (at + size + 7) & ~7;
  s.live++;
  return new Uint8Array(s.buf, at, size);
}

/** The block's bytes are no longer needed (written); a block not from allocBlock is ignored. */
export function releaseBlock(bytes: Uint8Array): void {
  const s = slabOf.get(bytes.buffer as ArrayBuffer);
  if (s === undefined) return;
  if (s.live <= 0) throw new Error('a snapshot block was released twice'); // a bug: its memory may be in use again
  s.live--;
  if (s.live > 0) return;
  if (s === current) s.used = 0; // carved again from the start
  else recycle(s);
}

function newSlab(): Slab {
  const s: Slab = { buf: new ArrayBuffer(SLAB_BYTES), used: 0, live: 0 };
  slabOf.set(s.buf, s);
  return s;
}

function recycle(s: Slab): void {
  s.used = 0;
  if (free.length < MAX_FREE_SLABS) free.push(s);
}

/** Slabs in use and free (tests). */
export function poolStats(): { free: number; currentLive: number } {
  return { free: free.length, currentLive: current?.live ?? 0 };
}
