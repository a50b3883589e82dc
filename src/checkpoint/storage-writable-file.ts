/**
 * A bridge, until the state-file writer works over StateOutputStream itself (the
 * KeyedStateBackend seam, issue 8): the positional file handle StateFileWriter writes to,
 * implemented over a state stream from the storage's CheckpointStreamFactory. The writer
 * writes front to back, so every position is the current end (asserted); it syncs and then
 * closes on success, and only closes when it abandons the file, which becomes an abort.
 */
import type { OpenWritableFile, WritableFile } from './state-file.ts';
import type { CheckpointStreamFactory, StateOutputStream } from '../core/state-streams.ts';
import { StorageError } from './storage-error.ts';

export function writableFileOver(stream: StateOutputStream, name: string): WritableFile {
  let end = 0;
  let synced = false;
  const append = async (buffers: readonly Uint8Array[], position: number): Promise<{ bytesWritten: number }> => {
    // Append-only: a positional write anywhere but the end would be a bug in the writer.
    if (position !== end) throw new StorageError(`${name}: write at ${position}, but the stream ends at ${end} (append only)`);
    const n = buffers.reduce((a, b) => a + b.byteLength, 0);
    await stream.write(buffers);
    end += n;
    return { bytesWritten: n };
  };
  return {
    write: (buffer, offset, length, position) => append([buffer.subarray(offset, offset + length)], position),
    writev: (buffers, position) => append(buffers, position),
    sync: async () => {
      synced = true;
    },
    close: async () => {
      if (synced) await stream.close();
      else await stream.abort();
    },
  };
}

/** Opens `name` in the factory's location, whatever path the writer was given. */
export function openWritableFileVia(factory: CheckpointStreamFactory, name: string): OpenWritableFile {
  return async () => writableFileOver(await factory.createStateStream(name), name);
}
