/**
 * The file-system primitives of checkpoint storage on a local directory tree: the embedded
 * default. Metadata is published with a temp file, fsync, rename and an fsync of the
 * directory, so a crash leaves either the old state or the whole new file.
 */
import { appendFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { StateInputHandle, StateOutputStream } from '../../core/state-streams.ts';
import { schemeOf, tempReference } from '../names.ts';
import type { DirectoryEntry, SnapshotFileSystem } from '../storage-fs.ts';
import { isMissing, LocalStateInputHandle, LocalStateOutputStream } from './local-streams.ts';
import { fsyncDirectory } from '../../core/directory.ts';

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
    try {
      return await readFile(file);
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
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

  async append(file: string, bytes: Uint8Array): Promise<void> {
    await appendFile(file, bytes);
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
