/**
 * The file-system primitives of checkpoint storage in memory, under `memory://<store>/...`:
 * a map of files and explicit directories, with the faults of faults.ts injected into writes,
 * publishes and deletes. Only for one thread (tasks on other threads cannot reach it).
 *
 * Publishing a file is modelled as a temp file and a rename, so a lost rename leaves what a
 * crash between the two would: a temp file and no new file.
 */
import type { StateInputHandle, StateOutputStream } from '../../core/state-streams.ts';
import { childReference, parentReference, tempReference } from '../names.ts';
import { MissingFileError, StorageError } from '../storage-error.ts';
import type { DirectoryEntry, SnapshotFileSystem } from '../storage-fs.ts';
import { injectedFailure, type StorageFaults } from './faults.ts';

const SCHEME = 'memory://';

/** A file: its bytes as written, in chunks (concatenated on read). */
class MemoryFile {
  private chunks: Uint8Array[] = [];
  size = 0;
  append(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    this.chunks.push(bytes.slice());
    this.size += bytes.byteLength;
  }
  bytes(): Uint8Array {
    if (this.chunks.length !== 1) this.chunks = [Buffer.concat(this.chunks, this.size)];
    return this.chunks[0] ?? new Uint8Array(0);
  }
}

export class MemoryFileSystem implements SnapshotFileSystem {
  readonly threadLocal = true;
  readonly base: string;
  private readonly files = new Map<string, MemoryFile>();
  private readonly dirs = new Set<string>();

  constructor(readonly store: string, readonly faults: StorageFaults) {
    if (!/^[a-z0-9][a-z0-9._-]*$/i.test(store)) throw new RangeError(`memory store name must be a plain name, got ${JSON.stringify(store)}`);
    this.base = `${SCHEME}${store}`;
    this.dirs.add(this.base);
  }

  handles(reference: string): boolean {
    return reference === this.base || reference.startsWith(`${this.base}/`);
  }

  /** Every file with its size, sorted by reference (for tests). */
  listFiles(): { reference: string; size: number }[] {
    return [...this.files].map(([reference, f]) => ({ reference, size: f.size })).sort((a, b) => (a.reference < b.reference ? -1 : 1));
  }

  async prepareDirectory(dir: string): Promise<void> {
    this.check(dir);
    for (let d = dir; !this.dirs.has(d); d = parentReference(d)) {
      if (this.files.has(d)) throw new StorageError(`cannot create ${dir}: ${d} is a file`);
      this.dirs.add(d);
    }
  }

  async createOutput(file: string): Promise<StateOutputStream> {
    this.check(file);
    if (this.files.has(file) || this.dirs.has(file)) throw new StorageError(`${file} exists`);
    await this.prepareDirectory(parentReference(file));
    if (this.faults.decide('create', file) === 'fail-write') throw injectedFailure('fail-write', file);
    const f = new MemoryFile();
    this.files.set(file, f);
    return new MemoryOutputStream(this, file, f);
  }

  async openInput(file: string): Promise<StateInputHandle> {
    const f = this.files.get(file);
    if (f === undefined) throw new MissingFileError(`${file} does not exist`);
    const bytes = f.bytes();
    return {
      description: file,
      size: bytes.byteLength,
      async read(position: number, length: number): Promise<Uint8Array> {
        if (position < 0 || length < 0 || position + length > bytes.byteLength) {
          throw new StorageError(`${file}: cannot read ${length} bytes at ${position}, the file has ${bytes.byteLength}`);
        }
        return bytes.slice(position, position + length);
      },
      async close(): Promise<void> {},
    };
  }

  async readFile(file: string): Promise<Uint8Array | undefined> {
    return this.files.get(file)?.bytes().slice();
  }

  async writeAtomically(file: string, bytes: Uint8Array): Promise<void> {
    const tmp = tempReference(file);
    await this.prepareDirectory(parentReference(file));
    const f = new MemoryFile();
    await this.write(tmp, f, bytes);
    this.files.set(tmp, f);
    if (this.faults.decide('publish', file) === 'lose-rename') return;
    this.files.delete(tmp);
    this.files.set(file, f);
  }

  async append(file: string, bytes: Uint8Array): Promise<void> {
    await this.prepareDirectory(parentReference(file));
    let f = this.files.get(file);
    if (f === undefined) this.files.set(file, (f = new MemoryFile()));
    await this.write(file, f, bytes);
  }

  async size(file: string): Promise<number | undefined> {
    return this.files.get(file)?.size;
  }

  async list(dir: string): Promise<readonly DirectoryEntry[]> {
    if (this.faults.decide('list', dir) === 'fail-list') throw injectedFailure('fail-list', dir);
    const prefix = `${dir.replace(/\/+$/, '')}/`;
    const out = new Map<string, boolean>();
    for (const d of this.dirs) if (d.startsWith(prefix)) out.set(d.slice(prefix.length).split('/')[0]!, true);
    for (const f of this.files.keys()) {
      if (!f.startsWith(prefix)) continue;
      const rest = f.slice(prefix.length).split('/');
      out.set(rest[0]!, rest.length > 1 || out.get(rest[0]!) === true);
    }
    return [...out].map(([name, directory]) => ({ name, directory })).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async delete(file: string): Promise<void> {
    if (!this.files.has(file)) return;
    if (this.faults.decide('delete', file) === 'fail-delete') throw injectedFailure('fail-delete', file);
    this.files.delete(file);
  }

  async deleteRecursively(dir: string): Promise<void> {
    const prefix = `${dir.replace(/\/+$/, '')}/`;
    const doomed = [...this.files.keys()].filter((f) => f === dir || f.startsWith(prefix));
    const doomedDirs = [...this.dirs].filter((d) => d === dir || d.startsWith(prefix));
    if (doomed.length === 0 && doomedDirs.length === 0) return;
    if (this.faults.decide('delete', dir) === 'fail-delete') throw injectedFailure('fail-delete', dir);
    for (const f of doomed) this.files.delete(f);
    for (const d of doomedDirs) if (d !== this.base) this.dirs.delete(d);
  }

  /** One write with its faults: fail, keep only part (reporting success), or wait for the test. */
  async write(reference: string, f: MemoryFile, bytes: Uint8Array): Promise<void> {
    const fault = this.faults.decide('write', reference);
    if (fault === 'fail-write') throw injectedFailure(fault, reference);
    if (fault === 'hold-write') await this.faults.hold(reference);
    f.append(fault === 'short-write' ? bytes.subarray(0, Math.floor(bytes.byteLength / 2)) : bytes);
  }

  /** The stream's file is still the one in the map (not deleted or replaced under it). */
  owns(reference: string, f: MemoryFile): boolean {
    return this.files.get(reference) === f;
  }

  forget(reference: string, f: MemoryFile): void {
    if (this.owns(reference, f)) this.files.delete(reference);
  }

  private check(reference: string): void {
    if (!this.handles(reference)) throw new StorageError(`${reference} is not in memory store ${this.base}`);
  }
}

class MemoryOutputStream implements StateOutputStream {
  /** Bytes the writer handed over (a short write stores fewer: that is the fault). */
  private claimed = 0;
  private busy = false;
  private state: 'open' | 'closed' | 'aborted' = 'open';

  constructor(private readonly fs: MemoryFileSystem, private readonly reference: string, private readonly file: MemoryFile) {}

  async write(chunks: readonly Uint8Array[]): Promise<void> {
    if (this.state !== 'open') throw new StorageError(`${this.reference}: write after the stream was ${this.state}`);
    if (this.busy) throw new StorageError(`${this.reference}: a write is already in flight (one at a time)`);
    this.busy = true;
    try {
      const total = chunks.reduce((n, c) => n + c.byteLength, 0);
      if (total === 0) return;
      await this.fs.write(this.reference, this.file, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks.map((c) => Buffer.from(c.buffer, c.byteOffset, c.byteLength)), total));
      this.claimed += total;
    } finally {
      this.busy = false;
    }
  }

  async close(): Promise<number> {
    if (this.state !== 'open') throw new StorageError(`${this.reference}: close after the stream was ${this.state}`);
    if (this.busy) throw new StorageError(`${this.reference}: closed while a write is in flight`);
    this.state = 'closed';
    if (!this.fs.owns(this.reference, this.file)) throw new StorageError(`${this.reference} was deleted while being written`);
    return this.claimed;
  }

  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    this.fs.forget(this.reference, this.file);
  }
}

/** A reference inside a memory store (for tests building names by hand). */
export function memoryReference(store: string, ...names: string[]): string {
  return names.reduce((ref, n) => childReference(ref, n), `${SCHEME}${store}`);
}
