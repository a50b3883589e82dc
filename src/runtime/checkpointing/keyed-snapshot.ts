/**
 * Asynchronous snapshot of one keyed operator subtask: its state tables and timers go into
 * one state file, a block per (state, key group) and per key group of timers.
 *
 * Synchronous phase (records blocked): freeze the tables' non-empty key groups and copy the
 * timer list (references only). Asynchronous phase (records flowing): serialize frozen groups
 * a few at a time as scheduler steps between batches, and write them with async file I/O.
 * A record that touches a still-frozen group serializes that group first (StateTable.thaw),
 * so what is written is exactly the state at the barrier.
 */
import type { HeapKeyedStateBackend, StateTable, FrozenGroupSink } from '../../state/heap-keyed-backend.ts';
import { encodeGroup, stateMeta, type StateMeta } from '../../state/state-codec.ts';
import { encodeValue } from '../../core/codec.ts';
import type { Schedulable, Scheduler } from '../scheduler.ts';
import type { InternalTimerService, Timer } from '../timers.ts';
import { basename, dirname } from 'node:path';
import { StateFileWriter } from '../../checkpoint/state-file.ts';
import { localStreamFactory, type OpenWritableFile } from '../../checkpoint/local-streams.ts';

export interface KeyedSnapshotMeta {
  readonly states: readonly StateMeta[];
  readonly keyGroupRange: { start: number; end: number };
  readonly maxParallelism: number;
}

export interface KeyedSnapshotResult {
  readonly fileSize: number;
  readonly stateSize: number;
  readonly keys: number;
}

/** Groups serialized per scheduler step; keeps each step short so records keep flowing. */
const GROUPS_PER_STEP = 4;
/** Serialized bytes allowed to wait for the disk before background serialization pauses. */
const MAX_PENDING_BYTES = 16 << 20;

export class KeyedSnapshotJob implements Schedulable, FrozenGroupSink {
  queued = false;
  private readonly todo: { table: StateTable; kg: number }[] = [];
  private readonly ready: { name: string; bytes: Uint8Array }[] = [];
  private readonly timers: { domain: 0 | 1; t: Timer }[] = [];
  private writer: StateFileWriter | undefined;
  private opening: Promise<void> | undefined;
  private waitingIo = false;
  private done = false;
  private aborted = false;
  private settled = false;
  private stateBytes = 0;
  private keys = 0;
  private readonly metas: StateMeta[] = [];
  private resolve!: (r: KeyedSnapshotResult) => void;
  private reject!: (e: Error) => void;
  readonly result: Promise<KeyedSnapshotResult>;

  constructor(
    private readonly backend: HeapKeyedStateBackend,
    timers: InternalTimerService | undefined,
    private readonly path: string,
    private readonly scheduler: Scheduler,
    private readonly openFile?: OpenWritableFile,
  ) {
    this.result = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    this.result.catch(() => {});
    // ---- synchronous phase: freeze only.
    for (const table of backend.tables.values()) {
      this.metas.push(stateMeta(table.descriptor));
      for (const kg of table.freeze(this)) this.todo.push({ table, kg });
    }
    // States restored but not claimed by this job version: carried forward as they are.
    for (const [name, r] of backend.restored) {
      this.metas.push(r.meta);
      for (const [kg, bytes] of r.groups) this.ready.push({ name: `k/${name}/${kg}`, bytes });
    }
    if (timers !== undefined) {
      for (const t of timers.eventTimersList()) this.timers.push({ domain: 0, t });
      for (const t of timers.processingTimersList()) this.timers.push({ domain: 1, t });
    }
  }

  /** Called by a table when a record touches a frozen group: serialize it before it changes. */
  serializeGroup(table: StateTable, kgIndex: number): void {
    const bytes = encodeGroup(table.descriptor, table.groups[kgIndex]);
    this.keys += table.groups[kgIndex]?.size ?? 0;
    this.ready.push({ name: `k/${table.descriptor.name}/${table.range.start + kgIndex}`, bytes });
  }

  start(): void {
    this.opening = localStreamFactory(dirname(this.path), this.openFile).createStateStream(basename(this.path)).then(StateFileWriter.create).then(
      (w) => {
        this.writer = w;
        if (this.aborted) void w.abort();
        else this.scheduler.wake(this);
      },
      (e) => this.fail(e),
    );
  }

  /** Serializes everything still frozen, right now (a newer snapshot needs the tables). */
  serializeRemaining(): void {
    while (this.todo.length > 0) {
      const { table, kg } = this.todo.shift()!;
      if (table.frozen?.[kg] === 1) table.thaw(kg);
    }
  }

  step(): boolean {
    if (this.done || this.aborted || this.writer === undefined || this.waitingIo) return false;
    try {
      const w = this.writer;
      let n = 0;
      while (n < GROUPS_PER_STEP && this.todo.length > 0 && w.pendingBytes() < MAX_PENDING_BYTES) {
        const { table, kg } = this.todo.shift()!;
        if (table.frozen?.[kg] === 1) table.thaw(kg); // else a record already serialized it
        n++;
      }
      for (const b of this.ready) {
        this.stateBytes += b.bytes.byteLength;
        w.addBlock(b.name, b.bytes);
      }
      this.ready.length = 0;
      if (w.pendingBytes() >= MAX_PENDING_BYTES) {
        this.waitIo(w.drain());
        return false;
      }
      if (this.todo.length > 0) return true;
      this.writeTimers(w);
      this.done = true;
      const meta: KeyedSnapshotMeta = {
        states: this.metas,
        keyGroupRange: { start: this.backend.range.start, end: this.backend.range.end },
        maxParallelism: this.backend.maxParallelism,
      };
      w.close(meta).then(
        (fileSize) => {
          if (this.settled) return;
          this.settled = true;
          this.resolve({ fileSize, stateSize: this.stateBytes, keys: this.keys });
        },
        (e) => this.fail(e),
      );
      return false;
    } catch (e) {
      this.fail(e);
      return false;
    }
  }

  private writeTimers(w: StateFileWriter): void {
    if (this.timers.length === 0) return;
    const byGroup = new Map<number, unknown[]>();
    for (const { domain, t } of this.timers) {
      let l = byGroup.get(t.keyGroup);
      if (l === undefined) byGroup.set(t.keyGroup, (l = []));
      l.push([domain, t.timestamp, t.key, t.namespace, t.seq]);
    }
    for (const [kg, list] of byGroup) {
      const bytes = encodeValue(list);
      this.stateBytes += bytes.byteLength;
      w.addBlock(`t/${kg}`, bytes);
    }
  }

  private waitIo(p: Promise<void>): void {
    this.waitingIo = true;
    p.then(
      () => {
        this.waitingIo = false;
        this.scheduler.wake(this);
      },
      (e) => this.fail(e),
    );
  }

  private fail(e: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.abort();
    this.reject(e instanceof Error ? e : new Error(String(e)));
  }

  /** Stops the snapshot: releases frozen groups without serializing them, closes the file. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    if (!this.settled) {
      this.settled = true;
      this.reject(new Error('snapshot aborted'));
    }
    for (const { table, kg } of this.todo) {
      if (table.frozen?.[kg] === 1) {
        table.frozen[kg] = 0;
        table.frozenCount--;
      }
    }
    this.todo.length = 0;
    void this.opening?.then(() => this.writer?.abort());
  }
}
