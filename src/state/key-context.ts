/**
 * The current key of a keyed operator subtask: set from each record (and each firing timer)
 * before user code runs; every state handle reads and writes the slot of this key. Plain
 * fields, read on the record path by handles, timers and operators without a call.
 */
import type { KeyGroupRange } from '../core/checkpoint-format.ts';
import type { NormKey } from './key-groups.ts';

export class KeyContext {
  key: NormKey = '';
  originalKey: unknown = undefined;
  keyGroup = -1;
  /** keyGroup - range.start: the key group's index within this subtask's range. */
  kgIndex = -1;
  /** keyHash(key) (key-table.ts): the heap backend's lookups of this key take it instead of hashing the key again. */
  hash = 0;

  constructor(
    readonly range: KeyGroupRange,
    /** Names the operator subtask in error messages. */
    private readonly where: string,
  ) {}

  /** Makes a key current; a key outside this subtask's key groups means the stream was not keyed here. */
  set(key: NormKey, keyGroup: number, originalKey: unknown, hash: number): void {
    if (keyGroup < this.range.start || keyGroup > this.range.end) {
      throw new Error(
        `${this.where}: key ${JSON.stringify(String(originalKey))} is in key group ${keyGroup}, outside this subtask's range ` +
          `[${this.range.start}, ${this.range.end}]; the stream was not partitioned by this key (use keyBy right before)`,
      );
    }
    this.key = key;
    this.originalKey = originalKey;
    this.keyGroup = keyGroup;
    this.kgIndex = keyGroup - this.range.start;
    this.hash = hash;
  }
}

/**
 * Keyed state used where no key is current: in open() or any code before the first record or
 * timer of the subtask set one. Flink fails the same way ("No key set"); before, a write went
 * to a slot no key reads and no snapshot holds, and was lost.
 */
export function noCurrentKey(): Error {
  return new Error('keyed state used outside a keyed context: no key is current (in open(), or before the first record or timer); read and write keyed state while processing a record or a timer');
}
