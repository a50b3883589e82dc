/**
 * The task side of a checkpoint (Flink's SubtaskCheckpointCoordinator plus barrier handler):
 * - sources (and tasks whose input has ended) are triggered directly by the job manager;
 * - other tasks align barriers: in exactly-once mode an input channel that delivered barrier
 *   n is held back until every live channel delivered it; at-least-once holds nothing;
 * - then: the barrier goes downstream first, the synchronous phase freezes state, and the
 *   asynchronous phase writes it while records flow; the acknowledgement carries the state
 *   handles and timings;
 * - a newer barrier ends an older alignment (declined as subsumed); an aborted checkpoint
 *   releases its alignment and sends a cancel marker downstream.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { CheckpointFailureReason as R, type CheckpointFailureReason } from '../../checkpoint/failure-reason.ts';
import type { OperatorStateHandle, TaskAck } from '../../core/checkpoint-format.ts';
import type { TaskId } from '../../core/task-id.ts';
import type { CheckpointingMode } from '../../checkpoint/config.ts';
import { encodeValue } from '../../core/codec.ts';
import type { BarrierEvent, StreamEvent } from '../events.ts';
import type { InputGate } from '../input-gate.ts';
import { KeyedOperator } from '../operators/keyed.ts';
import type { Scheduler } from '../scheduler.ts';
import type { BarrierHandler, StreamTask } from '../task.ts';
import { KeyedSnapshotJob } from './keyed-snapshot.ts';
import type { OpenWritableFile } from '../../checkpoint/local-streams.ts';

export interface CheckpointReporter {
  ack(checkpointId: number, ack: TaskAck): void;
  decline(checkpointId: number, reason: CheckpointFailureReason, message: string): void;
}

export interface TriggerRequest {
  readonly checkpointId: number;
  readonly timestamp: number;
  readonly type: 'checkpoint' | 'savepoint';
  /** Directory for this snapshot's files. */
  readonly location: string;
  /** Stop-with-savepoint: a source stops reading right after emitting this barrier. */
  readonly suspendSourceAfter?: boolean;
}

interface Alignment {
  readonly barrier: BarrierEvent;
  readonly arrived: Set<number>;
  readonly firstArrivalAt: number;
}

export class SubtaskCheckpointer implements BarrierHandler {
  private alignment: Alignment | undefined;
  private readonly aborted = new Set<number>();
  /** Highest checkpoint id this subtask has snapshotted or aborted; older barriers are stale. */
  private lastSeen = 0;
  private readonly inFlight = new Map<number, KeyedSnapshotJob[]>();
  private readonly gateOffsets: number[] = [];

  constructor(
    private readonly task: StreamTask,
    private readonly taskId: TaskId,
    private readonly mode: CheckpointingMode,
    private readonly reporter: CheckpointReporter,
    private readonly scheduler: Scheduler,
    private readonly now: () => number = Date.now,
    /** How state files are opened; tests inject slow or failing I/O. */
    private readonly openFile?: OpenWritableFile,
  ) {
    let off = 0;
    for (const g of task.gates) {
      this.gateOffsets.push(off);
      off += g.numChannels();
    }
  }

  // ---- in-band events

  onEvent(_task: StreamTask, gate: InputGate, channel: number, e: StreamEvent): void {
    if (e.kind === 'barrier') this.onBarrier(gate, channel, e);
    else if (e.kind === 'cancel-checkpoint') this.onCancelMarker(e.checkpointId);
  }

  private onBarrier(gate: InputGate, channel: number, b: BarrierEvent): void {
    const id = b.checkpointId;
    if (this.aborted.has(id) || id <= this.lastSeen) return; // aborted or stale: nothing to align
    const cur = this.alignment;
    if (cur !== undefined && id > cur.barrier.checkpointId) {
      // A newer barrier overtook an alignment in progress: the older checkpoint cannot complete here.
      this.abortAlignment(R.CHECKPOINT_DECLINED_SUBSUMED, `barrier ${id} arrived while aligning checkpoint ${cur.barrier.checkpointId}`);
    }
    if (this.alignment === undefined) this.alignment = { barrier: b, arrived: new Set(), firstArrivalAt: this.now() };
    const a = this.alignment!;
    a.arrived.add(this.gateOffsets[gate.index]! + channel);
    // Savepoints are always aligned, whatever the checkpointing mode (as in Flink).
    if (this.mode === 'exactly-once' || b.type === 'savepoint') gate.block(channel);
    this.maybeAligned();
  }

  /** A channel ended: it will deliver no barrier, so alignment may now be complete. */
  onChannelEnded(): void {
    this.maybeAligned();
  }

  private maybeAligned(): void {
    const a = this.alignment;
    if (a === undefined) return;
    const gates = this.task.gates;
    for (let g = 0; g < gates.length; g++) {
      const gate = gates[g]!;
      for (let c = 0; c < gate.numChannels(); c++) {
        if (!gate.channels[c]!.ended && !a.arrived.has(this.gateOffsets[g]! + c)) return;
      }
    }
    this.alignment = undefined;
    for (const gate of gates) gate.unblockAll();
    const alignmentMs = this.now() - a.firstArrivalAt;
    const startDelayMs = Math.max(0, a.firstArrivalAt - a.barrier.timestamp);
    this.perform(
      { checkpointId: a.barrier.checkpointId, timestamp: a.barrier.timestamp, type: a.barrier.type, location: a.barrier.location },
      alignmentMs,
      startDelayMs,
      true,
    );
  }

  private onCancelMarker(id: number): void {
    if (this.alignment?.barrier.checkpointId === id) {
      this.releaseAlignment();
    }
    if (!this.aborted.has(id) && id > this.lastSeen) {
      this.rememberAborted(id);
      this.forwardCancel(id);
    }
  }

  private abortAlignment(reason: CheckpointFailureReason, message: string): void {
    const a = this.alignment;
    if (a === undefined) return;
    this.releaseAlignment();
    this.rememberAborted(a.barrier.checkpointId);
    this.reporter.decline(a.barrier.checkpointId, reason, message);
    this.forwardCancel(a.barrier.checkpointId);
  }

  private releaseAlignment(): void {
    this.alignment = undefined;
    for (const gate of this.task.gates) gate.unblockAll();
  }

  private forwardCancel(id: number): void {
    if (this.task.state !== 'running') return;
    for (const w of this.task.writers) w.broadcastEvent({ kind: 'cancel-checkpoint', checkpointId: id });
  }

  private rememberAborted(id: number): void {
    this.aborted.add(id);
    if (this.aborted.size > 128) this.aborted.delete(Math.min(...this.aborted));
  }

  // ---- control from the job manager

  /** Sources and tasks that finished processing start a checkpoint here (no barrier arrives). */
  triggerDirect(req: TriggerRequest): void {
    if (this.aborted.has(req.checkpointId) || req.checkpointId <= this.lastSeen) return;
    const forward = this.task.state === 'running';
    this.perform(req, 0, Math.max(0, this.now() - req.timestamp), forward);
    if (req.suspendSourceAfter) this.task.suspendSource();
  }

  notifyComplete(id: number): void {
    for (const op of this.task.operators) op.notifyCheckpointComplete(id);
  }

  notifyAborted(id: number): void {
    if (this.alignment?.barrier.checkpointId === id) {
      this.releaseAlignment();
      this.forwardCancel(id);
    } else if (id > this.lastSeen && !this.aborted.has(id)) {
      // The barrier has not arrived yet: when it does, it is ignored; downstream learns now.
      this.forwardCancel(id);
    }
    this.rememberAborted(id);
    const jobs = this.inFlight.get(id);
    if (jobs) for (const j of jobs) j.abort();
    for (const op of this.task.operators) op.notifyCheckpointAborted(id);
  }

  /** Cancels everything in flight (task cancelled or failed). */
  dispose(): void {
    this.alignment = undefined;
    for (const jobs of this.inFlight.values()) for (const j of jobs) j.abort();
    this.inFlight.clear();
  }

  // ---- the checkpoint itself

  private perform(req: TriggerRequest, alignmentMs: number, startDelayMs: number, forwardBarrier: boolean): void {
    const id = req.checkpointId;
    this.lastSeen = Math.max(this.lastSeen, id);
    const task = this.task;
    const t0 = performance.now();
    for (const op of task.operators) op.prepareSnapshotPreBarrier(id);
    for (const op of task.operators) op.output.flush();
    if (forwardBarrier) {
      const barrier: BarrierEvent = { kind: 'barrier', checkpointId: id, timestamp: req.timestamp, type: req.type, location: req.location };
      for (const w of task.writers) w.broadcastEvent(barrier);
    }
    // Synchronous phase: small state captured, keyed state frozen; nothing is written yet.
    const handles: { operatorId: string; inline?: string; inlineSize: number; job?: KeyedSnapshotJob; file?: string; range?: { start: number; end: number } }[] = [];
    const jobs: KeyedSnapshotJob[] = [];
    let dirMade = false;
    for (const op of task.operators) {
      const inline = op.snapshotInline(id);
      const h: (typeof handles)[number] = { operatorId: op.env.taskInfo.operatorId, inlineSize: 0 };
      if (inline !== undefined) {
        const bytes = encodeValue(inline);
        h.inline = Buffer.from(bytes).toString('base64');
        h.inlineSize = bytes.byteLength;
      }
      if (op instanceof KeyedOperator && op.backend !== undefined && (op.backend.tables.size > 0 || op.backend.restored.size > 0 || (op.timerServiceIfCreated()?.numEventTimers() ?? 0) + (op.timerServiceIfCreated()?.numProcessingTimers() ?? 0) > 0)) {
        for (const prev of this.inFlight.values()) for (const j of prev) j.serializeRemaining();
        if (!dirMade) {
          mkdirSync(req.location, { recursive: true });
          dirMade = true;
        }
        const file = `${op.env.taskInfo.operatorId.slice(0, 16)}-${task.d.subtaskIndex}.state`;
        const job = new KeyedSnapshotJob(op.backend, op.timerServiceIfCreated(), join(req.location, file), this.scheduler, this.openFile);
        h.job = job;
        h.file = file;
        h.range = { start: op.backend.range.start, end: op.backend.range.end };
        jobs.push(job);
      }
      if (h.inline !== undefined || h.job !== undefined) handles.push(h);
    }
    const syncMs = performance.now() - t0;
    this.inFlight.set(id, jobs);
    for (const j of jobs) j.start();
    // Asynchronous phase: runs as scheduler steps and file I/O while records keep flowing.
    const t1 = performance.now();
    Promise.all(jobs.map((j) => j.result)).then(
      (results) => {
        this.inFlight.delete(id);
        if (this.aborted.has(id)) {
          void this.deleteFiles(req.location, handles);
          return;
        }
        let stateSize = 0;
        const ops: OperatorStateHandle[] = handles.map((h) => {
          const r = h.job ? results[jobs.indexOf(h.job)]! : undefined;
          const size = h.inlineSize + (r?.stateSize ?? 0);
          stateSize += size;
          return {
            operatorId: h.operatorId,
            ...(h.inline !== undefined ? { inline: h.inline } : {}),
            ...(r !== undefined ? { file: h.file!, fileSize: r.fileSize, keyGroupRange: h.range! } : {}),
            stateSize: size,
          };
        });
        const asyncMs = performance.now() - t1;
        this.reporter.ack(id, { task: this.taskId, operators: ops, stats: { syncMs, asyncMs, alignmentMs, startDelayMs, stateSize } });
      },
      (e) => {
        this.inFlight.delete(id);
        void this.deleteFiles(req.location, handles);
        if (this.aborted.has(id)) return;
        this.reporter.decline(id, R.CHECKPOINT_ASYNC_EXCEPTION, `asynchronous phase failed in ${task.name}: ${e instanceof Error ? e.message : String(e)}`);
      },
    );
  }

  private async deleteFiles(location: string, handles: readonly { file?: string }[]): Promise<void> {
    for (const h of handles) if (h.file) await rm(join(location, h.file), { force: true }).catch(() => {});
  }
}
