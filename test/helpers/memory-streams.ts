/**
 * Keyed-state snapshots written to memory, for tests and benchmarks (no vitest here): state
 * streams kept as name -> bytes, and a snapshot's asynchronous phase driven as the task does.
 */
import type { CheckpointStreamFactory, StateInputHandle, StateOutputStream } from '../../src/core/state-streams.ts';
import type { KeyedStateHandle, KeyedStateSnapshot } from '../../src/state/backend.ts';

/** State streams in memory: name -> bytes once closed. */
export class MemoryStreams implements CheckpointStreamFactory {
  readonly files = new Map<string, Buffer>();
  readonly aborted = new Set<string>();
  readonly opened: string[] = [];

  async createStateStream(name: string): Promise<StateOutputStream> {
    if (this.files.has(name) || this.opened.includes(name)) throw new Error(`stream ${name} exists`);
    this.opened.push(name);
    const chunks: Buffer[] = [];
    return {
      write: async (cs) => {
        for (const c of cs) chunks.push(Buffer.from(c)); // a copy: the writer's buffers are its own
      },
      close: async () => {
        const bytes = Buffer.concat(chunks);
        this.files.set(name, bytes);
        return bytes.length;
      },
      abort: async () => {
        this.aborted.add(name);
      },
    };
  }

  input(name: string): StateInputHandle {
    const bytes = this.files.get(name);
    if (bytes === undefined) throw new Error(`no stream ${name}`);
    return {
      description: `memory:${name}`,
      size: bytes.length,
      read: async (position, length) => {
        if (position + length > bytes.length) throw new Error(`memory:${name} ends before byte ${position + length}`);
        return bytes.subarray(position, position + length);
      },
      close: async () => {},
    };
  }
}

/**
 * Runs the asynchronous phase as the task would: step() while it has work, between
 * "batches"; `between` runs after every step that left more work (records flowing).
 * `shared`: where an incremental snapshot writes its base or delta file.
 */
export async function writeSnapshot(
  s: KeyedStateSnapshot,
  streams: CheckpointStreamFactory,
  name = 'op-0.state',
  between: (step: number) => void = () => {},
  shared?: { readonly streams: CheckpointStreamFactory; readonly streamName: string },
): Promise<KeyedStateHandle> {
  let woken = false;
  let settled = false;
  const result = s.write({ streams, streamName: name, ...(shared !== undefined ? { shared } : {}), wake: () => (woken = true) });
  result.then(() => (settled = true), () => (settled = true));
  let steps = 0;
  while (!settled) {
    if (woken) {
      woken = false;
      while (s.step()) between(steps++);
    }
    await new Promise((r) => setImmediate(r));
  }
  return result;
}
