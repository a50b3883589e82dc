/**
 * The checkpoint format every layer shares: what tasks report when they acknowledge a
 * checkpoint, what the metadata records per operator subtask, and what a subtask is given to
 * start from on a restore.
 */
import type { TaskId } from './task-id.ts';

/** A contiguous range of key groups. */
export interface KeyGroupRange {
  /** First key group, inclusive. */
  readonly start: number;
  /** Last key group, inclusive; end < start means the range is empty. */
  readonly end: number;
}

export type CheckpointType = 'checkpoint' | 'savepoint';

/** Where one operator subtask's state went. */
/** One file of an incremental chain, in the job's shared directory (names.ts: sharedStateFileName). */
export interface ChainFileRef {
  /** Its plain name in the job's shared/ directory. */
  readonly name: string;
  readonly size: number;
  /** The checkpoint that wrote it. */
  readonly checkpointId: number;
  /** 'base': a full state file; 'delta': changes since the chain's previous file. */
  readonly kind: 'base' | 'delta';
}

export interface OperatorStateHandle {
  readonly operatorId: string;
  /**
   * Keyed state and timers of an incremental checkpoint: the chain restoring it, base first
   * (then `file` is absent).
   */
  readonly chain?: readonly ChainFileRef[];
  /** Keyed state and timers: a state file, relative to the job directory. */
  readonly file?: string;
  readonly fileSize?: number;
  /**
   * The state file's bytes, base64, when it stayed at or below the memory threshold
   * (state.storage.fs.memory-threshold): then no file was written and `file` is only its name.
   */
  readonly fileInline?: string;
  readonly keyGroupRange?: KeyGroupRange;
  /** Small non-keyed state (operator lists, broadcast state, source splits, sink committables), msgpack, base64. */
  readonly inline?: string;
  /** Bytes of state described by this handle. */
  readonly stateSize: number;
  /**
   * Keyed operators: the event time (combined input watermark) the subtask had reached at the
   * snapshot. A restore starts the operator there instead of at the minimum, so a record that
   * was late before the failure is late after it too, and a window that fired and was purged
   * cannot fire a second time from replayed records (Flink's FLINK-5601).
   */
  readonly watermark?: number;
  /**
   * Unaligned checkpoints, on the head operator of a subtask's chain: the subtask's channel state
   * (in-flight data the barrier overtook), a state file like keyed state, inline when small.
   */
  readonly channelState?: ChannelStateHandle;
}

export interface ChannelStateHandle {
  readonly file: string;
  readonly fileSize: number;
  /** The file's bytes, base64, when at or below the memory threshold (no file was written). */
  readonly fileInline?: string;
  /** Bytes of records in flight it holds (Flink's persisted in-flight data). */
  readonly persistedBytes: number;
}

export interface SubtaskCheckpointStats {
  /** Synchronous phase (records blocked), ms. */
  readonly syncMs: number;
  /** Asynchronous phase (records flowing), ms. */
  readonly asyncMs: number;
  /** First to last barrier of the checkpoint at this subtask, ms (0 for sources). */
  readonly alignmentMs: number;
  /** Barrier creation to its first arrival at this subtask, ms. */
  readonly startDelayMs: number;
  /** Bytes this checkpoint wrote for the subtask (an incremental one: its delta only). */
  readonly stateSize: number;
  /**
   * Bytes of the subtask's whole state: what it wrote and the files of earlier checkpoints its
   * incremental chain reuses (set by the coordinator's statistics; absent: stateSize, a full one).
   */
  readonly fullStateSize?: number;
  /** The subtask took this checkpoint unaligned (its barrier overtook in-flight data). */
  readonly unaligned?: boolean;
  /** Bytes of in-flight records stored as channel state (unaligned only). */
  readonly persistedInFlightBytes?: number;
}

export interface TaskAck {
  readonly task: TaskId;
  readonly operators: readonly OperatorStateHandle[];
  readonly stats: SubtaskCheckpointStats;
}

/** A serializer's name and version, as recorded with the state it wrote. */
export interface SerializerRecord {
  readonly name: string;
  readonly version: number;
}

/** Keys of InlineOperatorState.serializers. */
export const listSerializerKey = (name: string): string => `list:${name}`;
export const broadcastSerializerKey = (name: string): string => `broadcast:${name}`;

/** Non-keyed state of one operator subtask in a snapshot; small, stored inline in the metadata. */
export interface InlineOperatorState {
  lists?: Record<string, { distribution: 'split' | 'union'; items: unknown[] }>;
  broadcast?: Record<string, [unknown, unknown][]>;
  /**
   * The serializer each list ("list:<name>") and broadcast state ("broadcast:<name>") was
   * written by; its items and values are in that serializer's encoding (broadcast keys as
   * they are). A state without a record (snapshots of earlier versions) holds raw values.
   */
  serializers?: Record<string, SerializerRecord>;
  /** Source readers: assigned splits with positions. */
  splits?: unknown[];
  /** Sinks: prepared work waiting for checkpoint completion (pending files, prepared transactions). */
  committables?: unknown[];
  /**
   * Sinks: per committable, the subtask whose writer prepared it (absent in snapshots of
   * earlier versions: the subtask holding it). A restore deals committables by it.
   */
  committableOwners?: number[];
  /** Sinks: the sink's identity (TwoPhaseCommitSink.identity) when the checkpoint was taken. */
  sinkIdentity?: string;
  /** Window operators: how their keyed state is laid out (runtime/operators/state-layout.ts); the same in every subtask. */
  stateLayout?: string;
  /**
   * Keyed operators: the kinds of keys their keyed state was keyed by (KEY_KINDS of
   * state/key-groups.ts), those the subtask saw and those it restored; checked at restore.
   */
  keyKinds?: string[];
}

/** Channel state a subtask replays on restore (see runtime/checkpointing/channel-state-restore.ts). */
export interface ChannelStateRestore {
  /** `primary`: this subtask replays the file's output state and its non-keyed input state. */
  readonly files: readonly { readonly path: string; readonly size: number; readonly inline?: string; readonly primary: boolean }[];
  /** The subtask's vertex had another parallelism when the files were written. */
  readonly rescaled: boolean;
}

/** State a subtask starts from, already redistributed for this subtask by the job manager. */
export interface TaskRestore {
  readonly checkpointId: number;
  readonly channelState?: ChannelStateRestore;
  /** Per operator id. */
  readonly operators: Readonly<Record<string, {
    readonly inline?: InlineOperatorState;
    /** `inline`: the file's bytes (base64) from the metadata, when it was kept there instead of stored. */
    /** `chain`: a file of an incremental chain (only a backend that restoresChains reads those). */
    readonly keyedFiles?: readonly { readonly path: string; readonly size: number; readonly inline?: string; readonly chain?: true }[];
    /** Sinks: every committable of the operator in the snapshot, over all old subtasks. */
    readonly referencedCommittables?: readonly unknown[];
    /** Keyed operators: the event time to start from (the minimum over the old subtasks' watermarks). */
    readonly watermark?: number;
  }>>;
}
