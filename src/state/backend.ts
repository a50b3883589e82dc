/**
 * The keyed state backend seam (design §2): where the keyed state of one operator subtask
 * lives, how it is snapshotted and how it is restored. The runtime sees only this interface;
 * each backend is a folder behind it (heap/ today; an embedded on-disk store later).
 *
 * A snapshot has two phases, as in Flink:
 * - synchronous (records blocked, at the barrier): cheap, freezes a version of the state and
 *   serializes nothing; returns a KeyedStateSnapshot;
 * - asynchronous (records flowing): the snapshot writes itself through the checkpoint's
 *   CheckpointStreamFactory and resolves with a KeyedStateHandle for the acknowledgement.
 *   Its CPU work runs in bounded step()s that the task interleaves with its batches (the
 *   backend asks for them with wake()); its I/O is asynchronous. No backend knows the
 *   runtime's scheduler, paths or storage.
 * A restore reads the state streams back through StateInputHandles, keeping only the key
 * groups of this subtask (rescaling).
 *
 * Keyed timers are not keyed state but are snapshotted with it, key group by key group: the
 * runtime hands them over as opaque per-key-group blocks, and gets them back on restore.
 */
import type { ChainFileRef, KeyGroupRange } from '../core/checkpoint-format.ts';
import type { Clock } from '../core/clock.ts';
import type {
  AggregatingState, AggregatingStateDescriptor, ListState, ListStateDescriptor, MapState, MapStateDescriptor,
  ReducingState, ReducingStateDescriptor, ValueState, ValueStateDescriptor,
} from '../core/state.ts';
import type { CheckpointStreamFactory, StateInputHandle } from '../core/state-streams.ts';
import type { KeyContext } from './key-context.ts';
import type { NormKey } from './key-groups.ts';

/** Opaque bytes of one key group, snapshotted with the keyed state (keyed timers). */
export interface KeyGroupBlock {
  readonly keyGroup: number;
  readonly bytes: Uint8Array;
}

/**
 * Per-key-group blocks to write with a snapshot. Captured by the caller in the synchronous
 * phase; encode() is called once, in the asynchronous phase, so the encoding costs no
 * barrier time.
 */
export interface KeyGroupBlockSource {
  encode(): Iterable<KeyGroupBlock>;
}

/** One file of an incremental chain: its name is SnapshotTarget.shared.streamName of the checkpoint that wrote it. */
export type ChainFile = ChainFileRef;

/** What a completed asynchronous phase wrote; goes into the checkpoint acknowledgement. */
export interface KeyedStateHandle {
  readonly keyGroupRange: KeyGroupRange;
  /** The state streams written, by the name given to CheckpointStreamFactory, with their sizes in bytes. */
  readonly streams: readonly { readonly name: string; readonly size: number }[];
  /**
   * Incremental snapshots: the chain that restores this snapshot, base first (streams is then
   * empty). Every file but the last was written by an earlier, completed checkpoint.
   */
  readonly chain?: readonly ChainFile[];
  /** Bytes of state and timer blocks (the streams without their framing and index). */
  readonly stateSize: number;
  /** Entries written, summed over states (a key with two states counts twice). */
  readonly entries: number;
}

/** Where and how an asynchronous phase runs. */
export interface SnapshotTarget {
  readonly streams: CheckpointStreamFactory;
  /**
   * Name of the snapshot's state stream, unique within the checkpoint (the caller's naming);
   * a backend that writes several streams appends "-<n>" to it.
   */
  readonly streamName: string;
  /**
   * Where an incremental snapshot writes its one new file (base or delta): the job's shared
   * directory, and the file's name there. Absent for savepoints: those are always full.
   */
  readonly shared?: { readonly streams: CheckpointStreamFactory; readonly streamName: string };
  /**
   * Asks for step() to be called soon, between batches (never inside record processing).
   * Safe to call any number of times, from any callback.
   */
  wake(): void;
}

/** A snapshot after its synchronous phase. */
export interface KeyedStateSnapshot {
  /**
   * Starts the asynchronous phase (once). Resolves with the handle when every stream is
   * written and durable; rejects on an I/O failure or abort().
   */
  write(target: SnapshotTarget): Promise<KeyedStateHandle>;
  /**
   * Runs a bounded slice of the asynchronous phase's CPU work (a few key groups); true when
   * more is ready right away, false when done or waiting for I/O (wake() follows).
   */
  step(): boolean;
  /**
   * Stops: releases the frozen version without writing it and removes what was written;
   * write() rejects. No effect once write() has resolved.
   */
  abort(): void;
}

/** Bounds of an incremental chain: past either, the next snapshot is a full one (materialization). */
export interface IncrementalSettings {
  /** Most delta files after a base. */
  readonly maxDeltas: number;
  /** The chain's delta bytes may reach this many times its base's bytes. */
  readonly maxDeltaRatio: number;
}

/** What kind of snapshot the synchronous phase takes. */
export interface SnapshotOptions {
  readonly checkpointId: number;
  /**
   * Set for a checkpoint with incremental checkpoints on: the snapshot may be a delta on the
   * last checkpoint the backend knows completed (write() then needs SnapshotTarget.shared).
   */
  readonly incremental?: IncrementalSettings;
}

/**
 * Keyed state of one operator subtask, for the key groups of its range. All calls come from
 * the subtask's thread, between or inside record processing; none blocks, none returns a
 * promise except the asynchronous phase and restore.
 */
export interface KeyedStateBackend {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /** The current key; written only through the setCurrent* methods. */
  readonly ctx: KeyContext;

  /** Sets the current key from a key selector's result; returns its key group. */
  setCurrentKey(originalKey: unknown): number;
  /** Sets the current key whose key group is already known (computed by the partitioner). */
  setCurrentKeyInGroup(originalKey: unknown, keyGroup: number): void;
  /** Sets an already normalised key (timers, iteration over keys). */
  setCurrentNormalizedKey(key: NormKey, keyGroup: number, originalKey: unknown): void;
  /**
   * Sets a key prepared ahead (KeyedOperator.prefetchKeys): normalised, its key group and its
   * keyHash (key-table.ts) computed from one hash of the key, as setCurrentKey would.
   */
  setCurrentPreparedKey(originalKey: unknown, key: NormKey, keyGroup: number, hash: number): void;
  /**
   * Optional: reads, for each of the first `n` keys (normalised; `kgIndexes` their key groups
   * less the range's start, `hashes` their keyHash) of the next records to run, the memory
   * their state lookups will read first: lookups of large state each wait for a few cache
   * misses, and misses of different keys overlap only when their loads are issued together.
   * The operator calls it a chunk of a batch at a time (KeyedOperator.prefetchKeys). Changes
   * nothing; returns a number made from what it read.
   */
  prefetch?(keys: readonly NormKey[], kgIndexes: Int32Array, hashes: Int32Array, n: number): number;
  /** With prefetch: whether the next batch is worth it (state large enough to miss the caches). */
  wantsPrefetch?(): boolean;

  /**
   * State handles, created on first use of a name (restored data of that name is decoded
   * then, through the descriptor's serializer) and the same handle afterwards. Using one
   * name as two kinds of state fails. TTL comes with the descriptor.
   */
  getValueState<T>(desc: ValueStateDescriptor<T>): ValueState<T>;
  getListState<T>(desc: ListStateDescriptor<T>): ListState<T>;
  getMapState<K, V>(desc: MapStateDescriptor<K, V>): MapState<K, V>;
  getReducingState<T>(desc: ReducingStateDescriptor<T>): ReducingState<T>;
  getAggregatingState<IN, ACC, OUT>(desc: AggregatingStateDescriptor<IN, ACC, OUT>): AggregatingState<IN, OUT>;

  /** Removes a state and every entry of it (a snapshot in progress still writes it as it was). */
  dropState(name: string): void;

  /**
   * Every key with an entry in `stateName`, key group by key group; state may be changed
   * while iterating (the keys of a group are taken before the group is visited).
   */
  keys(stateName: string): IterableIterator<{ key: NormKey; keyGroup: number }>;
  /**
   * The keys with an entry in `stateName` in one key group of this range. Values may be
   * changed while iterating; keys added meanwhile may or may not be visited.
   */
  keysInGroup(stateName: string, keyGroup: number): Iterable<NormKey>;

  /**
   * Optional: calls visit(value, key) for each entry of `stateName` in one key group, values as
   * stored, without making each key current or looking it up (window panes merge thousands of
   * keys per firing). Only for states without TTL (their values are stored wrapped): returns
   * false, visiting nothing, for one with TTL. visit must not change the state.
   */
  visitGroup?(stateName: string, keyGroup: number, visit: (value: unknown, key: NormKey) => void): boolean;

  /**
   * Optional: a hint that state `stateName` (registered, still empty) will hold about as many
   * keys per key group as `likeStateName` holds now, so its maps can be made at that size.
   * Window operators give it each new window's state with the previous window's.
   */
  presizeLike?(stateName: string, likeStateName: string): void;

  /** True once any state was registered or restored: a snapshot then has something to record. */
  hasStates(): boolean;
  /** States in the restored snapshot that no descriptor has claimed yet (carried into later snapshots as they are). */
  restoredStateNames(): string[];

  /**
   * The synchronous phase of a snapshot. `timers` are written with it, one block per key
   * group. A snapshot still in its asynchronous phase is not disturbed (its frozen version is
   * finished first where the backend needs that).
   */
  snapshot(timers?: KeyGroupBlockSource, options?: SnapshotOptions): KeyedStateSnapshot;

  /**
   * Incremental backends: checkpoint `checkpointId` completed, so its chain may be the base of
   * the next delta. A backend keeps the changes since the last checkpoint it knows completed
   * until it hears of a newer one.
   */
  notifyCheckpointComplete?(checkpointId: number): void;
  /** Incremental backends: checkpoint `checkpointId` was aborted; its chain is never a base. */
  notifyCheckpointAborted?(checkpointId: number): void;
  /** True when restore() reads incremental chains (base then deltas, in order); others refuse them. */
  readonly restoresChains?: boolean;
  /**
   * True when a value read from state and changed in place (an array pushed to) is the state's
   * value, checkpointed as changed, with no update(): the heap backend. Otherwise (disk) only
   * update(), add() and put() reach the state, and an operator that changes a value in place
   * must update it after (KeyedOperator.changedInPlace).
   */
  readonly keepsInPlaceChanges?: boolean;

  /**
   * Reads snapshots back (several after rescaling), keeping the key groups of this range
   * (incremental chains come as their files in order, base first, chain after chain):
   * keyed state becomes available to the handles created afterwards; the timer blocks of
   * this range are returned. Must come before any state is registered. The caller opens and
   * closes the inputs.
   */
  restore(inputs: readonly StateInputHandle[]): Promise<KeyGroupBlock[]>;

  /** Releases everything (the subtask ended); the backend is not used afterwards. */
  dispose(): void;
}

export interface KeyedStateBackendParams {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  /** Processing time, for TTL. */
  readonly clock: Clock;
  /** Names the operator subtask in error messages. */
  readonly where: string;
}

/** Makes the backend of each keyed operator subtask; chosen by name in the configuration (backends.ts). */
export interface KeyedStateBackendFactory {
  readonly name: string;
  create(params: KeyedStateBackendParams): KeyedStateBackend;
}
