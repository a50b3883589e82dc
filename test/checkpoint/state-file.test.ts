/**
 * State files: a round trip with many blocks reads every block back byte for byte, and the
 * reader refuses a truncated file (cut at several points), a flipped byte in a block (CRC), a
 * bad header and a size other than the expected one. The writer goes through a
 * StateOutputStream and the reader through a StateInputHandle: the local-file ones, as tasks
 * get them from checkpoint storage's worker view (storage's local/local-streams.ts, whose
 * file handle is the fault injection point for short writes; openStateFile for the expected
 * size), and streams that fail or stall, for the writer's handling of them.
 */
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CorruptStateError, openStateFile, StateFileReader, StateFileWriter } from '../../src/checkpoint/state-file.ts';
import { LocalStateOutputStream, type OpenWritableFile } from '../../src/checkpoint/local/local-streams.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';
import { MissingFileError, StorageError } from '../../src/checkpoint/storage-error.ts';
import type { StateInputHandle, StateOutputStream } from '../../src/core/state-streams.ts';
import { Rng } from '../../src/core/random.ts';
import { testSeed } from '../api/util.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'weir-statefile-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileNo = 0;
function fresh(): string {
  return join(dir, `f${fileNo++}.state`);
}

/** The task side of checkpoint storage for local paths. */
const storage = storageResolver().workerView;

/** A local state stream writing the file `path`: from storage's worker view, or on a file handle the test injects. */
function streamTo(path: string, openFile?: OpenWritableFile): Promise<StateOutputStream> {
  if (openFile !== undefined) return LocalStateOutputStream.create(path, openFile);
  return storage.resolveLocation(dirname(path)).createStateStream(basename(path));
}

/** Runs `f` on the file opened for reading through storage, and closes it. */
async function withInput<T>(path: string, expectedSize: number | undefined, f: (input: StateInputHandle) => Promise<T>): Promise<T> {
  const input = await openStateFile(storage, path, expectedSize);
  try {
    return await f(input);
  } finally {
    await input.close();
  }
}

/** Writes `blocks` (name, bytes) and returns the file path and its size as close() reported it. */
async function write(blocks: readonly (readonly [string, Uint8Array])[], meta: unknown = { kind: 'test' }): Promise<{ path: string; size: number }> {
  const path = fresh();
  const w = await StateFileWriter.create(await streamTo(path));
  for (const [name, data] of blocks) w.addBlock(name, data);
  const size = await w.close(meta);
  return { path, size };
}

function bytes(rng: Rng, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = rng.int(256);
  return b;
}

async function readAll(path: string, expectedSize?: number): Promise<Map<string, Buffer>> {
  return withInput(path, expectedSize, async (input) => {
    const r = await StateFileReader.open(input);
    const out = new Map<string, Buffer>();
    for (const b of r.index.blocks) out.set(b.name, Buffer.from(await r.readBlock(b)));
    return out;
  });
}

async function openError(path: string, expectedSize?: number): Promise<CorruptStateError> {
  try {
    await withInput(path, expectedSize, (input) => StateFileReader.open(input));
  } catch (e) {
    expect(e).toBeInstanceOf(CorruptStateError);
    return e as CorruptStateError;
  }
  throw new Error(`expected ${path} to be refused`);
}

describe('state file round trip', () => {
  it('reads back many blocks exactly, with the index meta and the size close() reported', async () => {
    const seed = testSeed('state-file round trip');
    const rng = new Rng(seed);
    const blocks: [string, Uint8Array][] = [];
    // Many blocks, sizes from empty to > 1 MiB so the writer drains mid-way (its 1 MiB bound).
    for (let i = 0; i < 300; i++) blocks.push([`k/state-${i % 7}/${i}`, bytes(rng, rng.int(3000))]);
    blocks.push(['k/empty/1', new Uint8Array(0)]);
    blocks.push(['k/big/2', bytes(rng, (1 << 20) + 12345)]);
    blocks.push(['t/3', bytes(rng, 17)]);
    // A block given as a view into a larger buffer: only the view's bytes are stored.
    const backing = bytes(rng, 100);
    blocks.push(['k/view/4', backing.subarray(10, 30)]);
    const meta = { states: [{ name: 'a', version: 3 }], range: { start: 0, end: 127 } };
    const { path, size } = await write(blocks, meta);
    expect(statSync(path).size).toBe(size);

    await withInput(path, size, async (input) => {
      const r = await StateFileReader.open(input);
      expect(r.size).toBe(size);
      expect(r.index.meta).toEqual(meta);
      expect(r.index.blocks.map((b) => b.name)).toEqual(blocks.map(([n]) => n));
      // Read in a shuffled order: blocks are independent.
      const order = blocks.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = rng.int(i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      for (const i of order) {
        const got = await r.readBlock(r.index.blocks[i]!);
        expect(Buffer.from(got).equals(Buffer.from(blocks[i]![1])), `block ${blocks[i]![0]}`).toBe(true);
      }
    });
  });

  it('a block given in pieces is stored as their concatenation, under one checksum, each piece handed back once written (seeded)', async () => {
    const seed = testSeed('state-file pieces');
    const rng = new Rng(seed);
    const path = fresh();
    const w = await StateFileWriter.create(await streamTo(path));
    const whole: [string, Uint8Array][] = [];
    const handedBack: Uint8Array[] = [];
    let pieces = 0;
    for (let i = 0; i < 60; i++) {
      const block = bytes(rng, rng.int(i === 30 ? 1 << 21 : 5000));
      // Cut at random points (empty pieces too), as views of the block.
      const cuts = [0, ...Array.from({ length: rng.int(6) }, () => rng.int(block.length + 1)).sort((a, b) => a - b), block.length];
      const parts = cuts.slice(1).map((end, k) => block.subarray(cuts[k]!, end));
      pieces += parts.length;
      const name = `k/pieces/${i}`;
      if (rng.int(3) === 0) w.addBlock(name, block);
      else {
        w.addBlock(name, parts, (p) => handedBack.push(p));
        whole.push([name, block]);
        continue;
      }
      pieces -= parts.length;
      whole.push([name, block]);
    }
    const size = await w.close({ kind: 'test' });
    expect(handedBack).toHaveLength(pieces);
    const got = await readAll(path, size);
    for (const [name, block] of whole) expect(got.get(name)?.equals(Buffer.from(block)), `seed ${seed} ${name}`).toBe(true);
  });

  it('an empty file (no blocks) is valid', async () => {
    const { path, size } = await write([], null);
    const got = await readAll(path, size);
    expect(got.size).toBe(0);
  });

  it('refuses to overwrite an existing file', async () => {
    const path = fresh();
    writeFileSync(path, 'x');
    await expect(streamTo(path)).rejects.toThrow();
    expect(readFileSync(path, 'utf8')).toBe('x');
  });
});

describe('state file corruption is detected', () => {
  async function sample(): Promise<{ path: string; size: number; original: Buffer }> {
    const rng = new Rng(42);
    const blocks: [string, Uint8Array][] = [];
    for (let i = 0; i < 20; i++) blocks.push([`k/s/${i}`, bytes(rng, 200 + i)]);
    const { path, size } = await write(blocks);
    return { path, size, original: readFileSync(path) };
  }

  it('truncation at several points: refused when opened, with or without the expected size', async () => {
    const { path, size, original } = await sample();
    const cuts = [0, 1, 7, 8, 9, 100, Math.floor(size / 2), size - 30, size - 17, size - 9, size - 1];
    for (const cut of cuts) {
      const p = `${path}.cut${cut}`;
      writeFileSync(p, original.subarray(0, cut));
      const e1 = await openError(p, size);
      expect(e1.message).toContain(p);
      expect(e1.message).toMatch(/truncated|too short|expected/);
      // Without a size to compare with, the missing trailer gives it away.
      const e2 = await openError(p);
      expect(e2.message, `cut at ${cut}`).toMatch(/truncated|too short|trailer|index/);
    }
  });

  it('a wrong expected size is refused even when the file itself is intact', async () => {
    const { path, size } = await sample();
    const e = await openError(path, size + 1);
    expect(e.message).toContain(`expected ${size + 1}`);
    await expect(readAll(path, size)).resolves.toBeDefined();
  });

  it('a flipped byte in any block fails that block\'s checksum and no other', async () => {
    const { path, size, original } = await sample();
    const blocks = await withInput(path, size, async (input) => (await StateFileReader.open(input)).index.blocks);
    for (const target of [blocks[0]!, blocks[7]!, blocks[blocks.length - 1]!]) {
      for (const at of [0, Math.floor(target.length / 2), target.length - 1]) {
        const corrupt = Buffer.from(original);
        corrupt[target.offset + at] ^= 0x01;
        const p = `${path}.flip-${target.name.replace(/\//g, '_')}-${at}`;
        writeFileSync(p, corrupt);
        // The index is intact: the file opens; reading the damaged block fails with its name.
        await withInput(p, size, async (input) => {
          const r = await StateFileReader.open(input);
          for (const b of r.index.blocks) {
            if (b.name === target.name) {
              await expect(r.readBlock(b)).rejects.toThrow(new RegExp(`block ${target.name} checksum mismatch`));
            } else {
              const good = await r.readBlock(b);
              expect(Buffer.from(good).equals(original.subarray(b.offset, b.offset + b.length))).toBe(true);
            }
          }
        });
      }
    }
  });

  it('a flipped byte in the index fails the index checksum', async () => {
    const { path, size, original } = await sample();
    const indexLength = original.readUInt32LE(size - 16);
    const corrupt = Buffer.from(original);
    corrupt[size - 16 - Math.floor(indexLength / 2)] ^= 0x40;
    const p = `${path}.index-flip`;
    writeFileSync(p, corrupt);
    const e = await openError(p, size);
    expect(e.message).toMatch(/index checksum mismatch/);
  });

  it('a bad header is refused as not a state file', async () => {
    const { path, size, original } = await sample();
    const corrupt = Buffer.from(original);
    corrupt.write('XXXX', 0);
    const p = `${path}.header`;
    writeFileSync(p, corrupt);
    const e = await openError(p, size);
    expect(e.message).toMatch(/bad header/);
  });

  it('a missing file is refused with its path', async () => {
    const p = join(dir, 'does-not-exist.state');
    const e = await openError(p);
    expect(e.message).toContain(p);
    expect(e.message).toMatch(/cannot open/);
  });

  it('a file shortened after opening reports the block as truncated', async () => {
    const { path, size, original } = await sample();
    const p = `${path}.shrinks`;
    writeFileSync(p, original);
    await withInput(p, size, async (input) => {
      const r = await StateFileReader.open(input);
      const last = r.index.blocks[r.index.blocks.length - 1]!;
      truncateSync(p, last.offset + 3);
      await expect(r.readBlock(last)).rejects.toThrow(new RegExp(`block ${last.name} .*truncated`));
    });
  });
});

describe('a storage that fails to answer is not a corrupt snapshot', () => {
  // Taken for corruption, a read error made recovery skip a good checkpoint for an older one.
  const failing = (e: unknown) => ({ openState: () => Promise.reject(e) }) as unknown as Parameters<typeof openStateFile>[0];
  const codeOf = async (p: Promise<unknown>) => (await p.then(() => undefined, (x: unknown) => x)) as { code?: string; message: string };

  it('opening: a storage error or an I/O error is STORAGE; a missing file is CORRUPT_STATE', async () => {
    for (const e of [new StorageError('s3 get failed: 503 after 3 retries'), Object.assign(new Error('i/o error'), { code: 'EIO' }), Object.assign(new Error('too many open files'), { code: 'EMFILE' })]) {
      const err = await codeOf(openStateFile(failing(e), '/chk/op.state'));
      expect(err.code, e.message).toBe('STORAGE');
      expect(err.message).toContain('/chk/op.state');
    }
    for (const e of [new MissingFileError('/chk/op.state does not exist'), Object.assign(new Error('no such file'), { code: 'ENOENT' })]) {
      expect((await codeOf(openStateFile(failing(e), '/chk/op.state'))).code, e.message).toBe('CORRUPT_STATE');
    }
    const missing = await codeOf(openStateFile(storage, join(dir, 'not-there.state')));
    expect(missing.code).toBe('CORRUPT_STATE');
  });

  it('reading: an I/O error is STORAGE, a checksum mismatch CORRUPT_STATE', async () => {
    const { path, size } = await write([['a', new Uint8Array([1, 2, 3])]]);
    await withInput(path, size, async (input) => {
      const r = await StateFileReader.open(input);
      const block = r.index.blocks[0]!;
      const broken = new StateFileReaderProbe(input, () => Promise.reject(Object.assign(new Error('i/o error'), { code: 'EIO' })));
      expect((await codeOf(StateFileReader.open(broken))).code).toBe('STORAGE');
      const flaky = await StateFileReader.open(new StateFileReaderProbe(input, undefined));
      (flaky as unknown as { input: StateInputHandle }).input = new StateFileReaderProbe(input, () => Promise.reject(new StorageError('s3 get failed: timeout')));
      expect((await codeOf(flaky.readBlock(block))).code).toBe('STORAGE');
      (flaky as unknown as { input: StateInputHandle }).input = new StateFileReaderProbe(input, () => Promise.resolve(new Uint8Array([9, 9, 9])));
      expect((await codeOf(flaky.readBlock(block))).code).toBe('CORRUPT_STATE');
    });
  });
});

/** The input, with its reads replaced when `read` is given. */
class StateFileReaderProbe implements StateInputHandle {
  constructor(private readonly inner: StateInputHandle, private readonly fail: (() => Promise<Uint8Array>) | undefined) {}
  get description(): string {
    return this.inner.description;
  }
  get size(): number {
    return this.inner.size;
  }
  read(position: number, length: number): Promise<Uint8Array> {
    return this.fail !== undefined ? this.fail() : this.inner.read(position, length);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

describe('short writes', () => {
  it('writes the OS cuts short, gathering or plain, are finished: the file reads back whole', async () => {
    const seed = testSeed('state-file-short-writes');
    const rng = new Rng(seed);
    const blocks = Array.from({ length: 40 }, (_, i) => [`b${i}`, bytes(rng, 1 + rng.int(100_000))] as const);
    const path = fresh();
    let cut = 0;
    const w = await StateFileWriter.create(await streamTo(path, async (p) => {
      const fh = await open(p, 'wx');
      return {
        write: (b, o, l, pos) => fh.write(b, o, Math.max(1, Math.min(l, 1 + rng.int(l))), pos),
        // Writes only part of what it is given, as writev(2) may.
        writev: async (bs, pos) => {
          const all = Buffer.concat(bs);
          const n = 1 + rng.int(all.length);
          cut++;
          return fh.write(all, 0, n, pos);
        },
        sync: () => fh.sync(),
        close: () => fh.close(),
      };
    }));
    for (const [name, data] of blocks) w.addBlock(name, data);
    const size = await w.close({ kind: 'test' });
    expect(cut).toBeGreaterThan(1);
    const back = await readAll(path, size);
    for (const [name, data] of blocks) expect(back.get(name)!.equals(Buffer.from(data)), name).toBe(true);
  });
});

/** A state stream in memory whose writes can be held back or failed; records what the writer does. */
class TestStream implements StateOutputStream {
  readonly chunks: Buffer[] = [];
  writes = 0;
  inFlight = 0;
  maxInFlight = 0;
  closed = false;
  aborted = false;
  /** Fails the write with this (0-based) number. */
  failAt = Number.POSITIVE_INFINITY;
  /** Every write waits for this. */
  gate: Promise<void> = Promise.resolve();
  /** Added to the size close() reports (a stream that lost or invented bytes). */
  sizeError = 0;

  async write(chunks: readonly Uint8Array[]): Promise<void> {
    const n = this.writes++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await this.gate;
      if (n === this.failAt) throw new Error(`injected failure of write ${n}`);
      for (const c of chunks) this.chunks.push(Buffer.from(c));
    } finally {
      this.inFlight--;
    }
  }
  async close(): Promise<number> {
    this.closed = true;
    return this.bytes().length + this.sizeError;
  }
  async abort(): Promise<void> {
    this.aborted = true;
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

describe('writes through any state stream', () => {
  const rng = new Rng(7);
  const blocks = Array.from({ length: 60 }, (_, i) => [`k/s/${i}`, bytes(rng, 1 + rng.int(60_000))] as const);

  it('a slow stream gets one write at a time and the same bytes as a local file', async () => {
    const stream = new TestStream();
    const w = await StateFileWriter.create(stream);
    let release!: () => void;
    stream.gate = new Promise((r) => (release = r));
    // Blocks of more than 1 MiB queued start a write on their own: several while the first is held.
    for (const [name, data] of blocks) w.addBlock(name, data);
    await new Promise((r) => setImmediate(r));
    expect(stream.writes).toBe(2); // the header, then the first held drain; the next waits behind it
    release();
    const size = await w.close({ kind: 'test' });
    expect(stream.writes).toBeGreaterThan(3);
    expect(stream.maxInFlight).toBe(1);
    expect(stream.closed).toBe(true);
    expect(size).toBe(stream.bytes().length);
    const local = await write(blocks);
    expect(stream.bytes().equals(readFileSync(local.path))).toBe(true);
  });

  it('counts bytes in writes under way as pending, so a producer that waits on whenBelow stays bounded (before: only the undrained queue counted, under 1 MiB, and a snapshot encoded far ahead of the disk)', async () => {
    const stream = new TestStream();
    const w = await StateFileWriter.create(stream);
    let release!: () => void;
    stream.gate = new Promise((r) => (release = r));
    const total = blocks.reduce((n, [, data]) => n + data.byteLength, 0);
    for (const [name, data] of blocks) w.addBlock(name, data);
    await new Promise((r) => setImmediate(r));
    expect(w.pendingBytes()).toBe(total); // drained into held writes, none taken yet
    let below = false;
    const waiting = w.whenBelow(total / 2).then(() => (below = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(below).toBe(false);
    release();
    await waiting;
    expect(w.pendingBytes()).toBeLessThan(total / 2);
    await w.close({ kind: 'test' });
    expect(w.pendingBytes()).toBe(0);
    // A failed write rejects the waiters.
    const failing = new TestStream();
    failing.failAt = 1;
    const f = await StateFileWriter.create(failing);
    for (const [name, data] of blocks) f.addBlock(name, data);
    await expect(f.whenBelow(1)).rejects.toThrow(/injected failure/);
  });

  it('a block is handed back (onWritten) only once the write carrying it resolved, never on a failed write', async () => {
    const stream = new TestStream();
    const w = await StateFileWriter.create(stream);
    let release!: () => void;
    stream.gate = new Promise((r) => (release = r));
    const back: Uint8Array[] = [];
    for (const [name, data] of blocks) w.addBlock(name, data, (d) => back.push(d));
    await new Promise((r) => setImmediate(r));
    expect(back).toHaveLength(0); // the first drain is held by the stream: nothing may be reused yet
    release();
    await w.close({ kind: 'test' });
    expect(back).toEqual(blocks.map(([, data]) => data)); // each exactly once, in order

    const failing = new TestStream();
    failing.failAt = 1;
    const f = await StateFileWriter.create(failing);
    const lost: Uint8Array[] = [];
    for (const [name, data] of blocks) f.addBlock(name, data, (d) => lost.push(d));
    await expect(f.close({ kind: 'test' })).rejects.toThrow(/injected failure/);
    expect(lost.length).toBeLessThan(blocks.length); // the failed write's blocks are never handed back
  });

  it('a failing write fails close() with its error; abort() abandons the stream', async () => {
    const stream = new TestStream();
    stream.failAt = 1; // the first block write, after the header
    const w = await StateFileWriter.create(stream);
    for (const [name, data] of blocks) w.addBlock(name, data);
    await expect(w.close({ kind: 'test' })).rejects.toThrow(/injected failure of write 1/);
    expect(() => w.addBlock('k/s/late', new Uint8Array(1))).toThrow(/injected failure/);
    expect(stream.closed).toBe(false);
    await w.abort();
    expect(stream.aborted).toBe(true);
  });

  it('a failing header write aborts the stream', async () => {
    const stream = new TestStream();
    stream.failAt = 0;
    await expect(StateFileWriter.create(stream)).rejects.toThrow(/injected failure of write 0/);
    expect(stream.aborted).toBe(true);
  });

  it('a stream whose reported size differs from what was written fails close()', async () => {
    const stream = new TestStream();
    stream.sizeError = -3;
    const w = await StateFileWriter.create(stream);
    w.addBlock('k/s/0', new Uint8Array(10));
    await expect(w.close(null)).rejects.toThrow(/reports \d+ bytes written, the state file has \d+/);
  });
});

describe('local state streams', () => {
  it('abort() removes the file; discardState() removes a completed one; names stay inside the directory', async () => {
    const sub = join(dir, `local-${fileNo++}`, 'chk-1');
    const f = storage.resolveLocation(sub);
    const a = await f.createStateStream('a.state'); // creates the directory
    await a.write([Buffer.from('abc')]);
    await a.abort();
    expect(() => statSync(join(sub, 'a.state'))).toThrow();
    const b = await f.createStateStream('b.state');
    await b.write([Buffer.from('abc'), Buffer.from('de')]);
    expect(await b.close()).toBe(5);
    expect(readFileSync(join(sub, 'b.state'), 'utf8')).toBe('abcde');
    await storage.discardState(sub, 'b.state');
    expect(() => statSync(join(sub, 'b.state'))).toThrow();
    await storage.discardState(sub, 'b.state'); // missing is fine
    for (const bad of ['', '.', '..', '../x.state', 'a/b.state', 'a\\b.state']) await expect(f.createStateStream(bad)).rejects.toThrow(/plain name/);
  });

  it('one operation at a time: a second write or a close while a write is in flight is refused; abort waits for it', async () => {
    const path = fresh();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const out = await LocalStateOutputStream.create(path, async (p) => {
      const fh = await open(p, 'wx');
      return {
        write: (b, o, l, pos) => fh.write(b, o, l, pos),
        writev: async (bs, pos) => {
          await gate;
          return fh.writev(bs, pos);
        },
        sync: () => fh.sync(),
        close: () => fh.close(),
      };
    });
    const first = out.write([Buffer.from('abc')]);
    await expect(out.write([Buffer.from('d')])).rejects.toThrow(/one at a time/);
    await expect(out.close()).rejects.toThrow(/closed while a write is in flight/);
    let aborted = false;
    const abort = out.abort().then(() => (aborted = true));
    await new Promise((r) => setImmediate(r));
    expect(aborted).toBe(false); // waiting for the write in flight
    release();
    await first;
    await abort;
    expect(() => statSync(path)).toThrow();
    await expect(out.write([Buffer.from('e')])).rejects.toThrow(/after the stream was aborted/);
  });
});
