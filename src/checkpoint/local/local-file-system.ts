/**
 * The file-system primitives of checkpoint storage on a local directory tree: the embedded
 * default. Metadata is published with a temp file, fsync, rename and an fsync of the
 * directory, so a crash leaves either the old state or the whole new file.
 */
import { constants } from 'node:fs';
import { appendFile, mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { StateInputHandle, StateOutputStream } from '../../core/state-streams.ts';
import { schemeOf, tempReference } from '../names.ts';
import type { DirectoryEntry, SnapshotFileSystem } from '../storage-fs.ts';
import { isMissing, LocalStateInputHandle, LocalStateOutputStream } from './local-streams.ts';
import { fsyncDirectory } from '../../core/directory.ts';
import { NOT_A_SMALL_FILE } from '../storage-fs.ts';

/** The most readFile reads (metadata with inline state, commit records, history): far above any weir writes. */
const MAX_READ_BYTES = 256 * 2 ** 20;
/**
 * An appended file (the checkpoint history) keeps its newest bytes up to this, cut at a line
 * end, once it has grown to twice as much, as S3's folded segments do. It grew for good: at one
 * checkpoint a second, 186 MB a day; a resume read it whole (922 MB of memory at 259 MB), and
 * past 256 MiB it could not be read at all, so `weir checkpoints` listed nothing.
 */
const MAX_APPENDED_BYTES = 16 * 2 ** 20;
/** Appends in flight, by file. */
const appending = new Map<string, Promise<void>>();

async function appendTrimmed(file: string, bytes: Uint8Array): Promise<void> {
  await appendFile(file, bytes);
  const size = (await stat(file)).size;
  if (size <= 2 * MAX_APPENDED_BYTES) return;
  const fh = await open(file, 'r');
  let tail: Buffer;
  try {
    tail = Buffer.alloc(MAX_APPENDED_BYTES);
    const { bytesRead } = await fh.read(tail, 0, MAX_APPENDED_BYTES, size - MAX_APPENDED_BYTES);
    tail = tail.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
  const kept = tail.subarray(tail.indexOf(10) + 1); // from the first whole line
  const tmp = `${file}.trim-${process.pid}`;
  await writeFile(tmp, kept);
  await rename(tmp, file);
}

export const localFileSystem: SnapshotFileSystem = {
  threadLocal: false,

  handles(reference: string): boolean {
    return schemeOf(reference) === undefined;
  },

  async prepareDirectory(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
  },

  async createOutput(file: string): Promise<StateOutputStream> {
    // The location may have been removed (an abort) and the task writes late: the directory is
    // made again, and garbage collection removes it, as it has no metadata.
    await mkdir(dirname(file), { recursive: true });
    return LocalStateOutputStream.create(file);
  },

  openInput(file: string): Promise<StateInputHandle> {
    return LocalStateInputHandle.open(file);
  },

  async readFile(file: string): Promise<Uint8Array | undefined> {
    let fh;
    try {
      // Non-blocking open: a FIFO in a file's place would block the open itself.
      fh = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
    try {
      // Only a regular file of bounded size is read: a metadata file that is a link to /dev/zero
      // or a FIFO read without end (gigabytes, or forever) in every listing of the directory.
      const st = await fh.stat();
      if (st.isDirectory()) throw Object.assign(new Error(`EISDIR: ${file} is a directory, not a file`), { code: 'EISDIR' });
      if (!st.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: NOT_A_SMALL_FILE });
      if (st.size > MAX_READ_BYTES) throw Object.assign(new Error(`${file} has ${st.size} bytes, more than the ${MAX_READ_BYTES} a checkpoint's small files may have`), { code: NOT_A_SMALL_FILE });
      return await fh.readFile();
    } finally {
      await fh.close();
    }
  },

  async writeAtomically(file: string, bytes: Uint8Array, options: { readonly durable: boolean }): Promise<void> {
    const tmp = tempReference(file);
    if (!options.durable) {
      await writeFile(tmp, bytes);
      await rename(tmp, file);
      return;
    }
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
    await fsyncDirectory(dirname(file));
  },

  append(file: string, bytes: Uint8Array): Promise<void> {
    // One at a time per file: a trim must not drop a line appended while it copies.
    const next = (appending.get(file) ?? Promise.resolve()).then(() => appendTrimmed(file, bytes));
    const settled = next.catch(() => {});
    appending.set(file, settled);
    void settled.then(() => {
      if (appending.get(file) === settled) appending.delete(file);
    });
    return next;
  },

  async size(file: string): Promise<number | undefined> {
    try {
      return (await stat(file)).size;
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
  },

  async list(dir: string): Promise<readonly DirectoryEntry[]> {
    try {
      return (await readdir(dir, { withFileTypes: true })).map((e) => ({ name: e.name, directory: e.isDirectory() }));
    } catch (e) {
      if (isMissing(e)) return [];
      throw e;
    }
  },

  async delete(file: string): Promise<void> {
    await rm(file, { force: true });
  },

  async deleteRecursively(dir: string): Promise<void> {
    await rm(dir, { recursive: true, force: true });
  },
};
