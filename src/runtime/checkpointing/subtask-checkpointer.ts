/**
 * The task side of a checkpoint (Flink's SubtaskCheckpointCoordinator plus barrier handler):
 * - sources (and tasks whose input has ended) are triggered directly by the job manager;
 * - other tasks align barriers: in exactly-once mode an input channel that delivered barrier
 *   n is held back until every live channel delivered it; at-least-once holds nothing;
 * - then: the barrier goes downstream first, the synchronous phase freezes state, and the
 *   asynchronous phase writes it while records flow, through the state streams checkpoint
 *   storage hands out for the request's location (the task's CheckpointStorageWorkerView:
 *   the only source of streams); the acknowledgement carries the state handles and timings;
 * - a newer barrier ends an older alignment (declined as subsumed); an aborted checkpoint
 *   releases its alignment and sends a cancel marker downstream.
 */
import { InliningStreamFactory } from '../../checkpoint/inline-state.ts';
import { CheckpointFailureReason as R, type CheckpointFailureReason } from '../../checkpoint/failure-reason.ts';
import type { OperatorStateHandle, TaskAck } from '../../core/checkpoint-format.ts';
import type { TaskId } from '../../core/task-id.ts';
import type { CheckpointingMode } from '../../checkpoint/config.ts';
import { encodeValue } from '../../core/codec.ts';
import { isEvent, MAX_WATERMARK, MIN_WATERMARK, type BarrierEvent, type ChannelElement, type StreamEvent } from '../events.ts';
import type { InputGate } from '../input-gate.ts';
import { KeyedOperator } from '../operators/keyed.ts';
import type { StreamOperator } from '../operators/operator.ts';
import type { Scheduler } from '../scheduler.ts';
import type { BarrierHandler, StreamTask } from '../task.ts';
import type { IncrementalSettings, KeyedStateHandle, KeyedStateSnapshot } from '../../state/backend.ts';
import type { CheckpointStreamFactory } from '../../core/state-streams.ts';
import { channelStateFileName, sharedDirOfCheckpoint, sharedStateFileName, stateFileName } from '../../checkpoint/names.ts';
import { ALIGNED_ONLY, barrierHandling, watchesArrivals, type UnalignedSettings } from './barrier-decision.ts';
import { ChannelStateCapture, writeChannelState } from './channel-state.ts';
import { layoutOf } from './channel-state-restore.ts';
import { runAsyncPhase } from './async-phase.ts';
import { timerBlocks } from './timer-blocks.ts';

export interface CheckpointReporter {
  ack(checkpointId: number, ack: TaskAck): void;
  decline(checkpointId: number, reason: CheckpointFailureReason, message: string): void;
}

export interface TriggerRequest {
  readonly checkpointId: number;
  readonly timestamp: number;
  readonly type: 'checkpoint' | 'savepoint';
  /**
   * Where this snapshot's state files go: a location reference of checkpoint storage, which
   * the task's CheckpointStorageWorkerView (TaskDeployment.storage) resolves to its streams.
   */
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
  private readonly inFlight = new Map<number, KeyedStateSnapshot[]>();
  private readonly gateOffsets: number[] = [];
  /**
   * Keyed state files at or below this many bytes go inline into the metadata instead of to
   * storage (state.storage.fs.memory-threshold); 0 stores every file.
   */
  inlineThresholdBytes = 0;
  /**
   * Incremental checkpoints (execution.checkpointing.incremental): keyed state of a checkpoint
   * (never of a savepoint) is a chain in the job's shared directory; undefined: off.
   */
  incremental: IncrementalSettings | undefined;
  private unaligned: UnalignedSettings = ALIGNED_ONLY;
  /** The unaligned checkpoint whose input channel state is being recorded (one at a time). */
  private capture: ChannelStateCapture | undefined;
  /** The aligned-checkpoint timeout of the checkpoint in progress: when it fires, switch to unaligned. */
  private switchTimer: { readonly checkpointId: number; readonly handle: { cancel(): void } } | undefined;

  constructor(
    private readonly task: StreamTask,
    private readonly taskId: TaskId,
    private readonly mode: CheckpointingMode,
    private readonly reporter: CheckpointReporter,
    private readonly scheduler: Scheduler,
    private readonly now: () => number = Date.now,
  ) {
    let off = 0;
    for (const g of task.gates) {
      this.gateOffsets.push(off);
      off += g.numChannels();
    }
  }

  /**
   * Unaligned checkpoints (execution.checkpointing.unaligned.enabled): every input channel then
   * reports arrivals, so a barrier is seen when it arrives, not when the task reaches it.
   */
  configureUnaligned(settings: UnalignedSettings): void {
    this.unaligned = settings;
    if (!watchesArrivals(settings, this.mode)) return;
    this.task.gates.forEach((gate, g) => {
      for (const ch of gate.channels) ch.arrivals = (c, el) => this.onArrival(g, c, el);
    });
  }

  /** Runs in the producer's turn: records in-flight data, and posts arriving barriers to the mailbox. */
  private onArrival(gate: number, channel: number, el: ChannelElement | Uint8Array): void {
    const ev = el instanceof Uint8Array || !isEvent(el) ? undefined : el;
    const cap = this.capture;
    if (cap !== undefined && cap.isRecording(gate, channel)) {
      if (ev !== undefined && ((ev.kind === 'barrier' && ev.checkpointId >= cap.checkpointId) || ev.kind === 'end')) cap.stopRecording(gate, channel);
      else cap.addInput(gate, channel, el);
    }
    if (ev?.kind === 'barrier') this.task.mail(() => this.onBarrierArrived(ev));
  }

  /** A barrier arrived in some input channel (possibly behind queued data). */
  private onBarrierArrived(b: BarrierEvent): void {
    if (this.task.state !== 'running') return;
    const id = b.checkpointId;
    if (this.aborted.has(id) || id <= this.lastSeen) return;
    const h = barrierHandling(this.unaligned, this.mode, b, this.now());
    if (h.kind === 'unaligned') this.startUnaligned(b, undefined);
    else if (h.kind === 'aligned-until') this.scheduleSwitch(b, h.switchAtMs);
  }

  private scheduleSwitch(b: BarrierEvent, atMs: number): void {
    if (this.switchTimer?.checkpointId === b.checkpointId) return;
    this.cancelSwitch();
    const handle = this.task.scheduleMail(atMs, () => {
      this.switchTimer = undefined;
      const id = b.checkpointId;
      if (this.task.state !== 'running' || this.aborted.has(id) || id <= this.lastSeen) return;
      this.startUnaligned(b, undefined);
    });
    this.switchTimer = { checkpointId: b.checkpointId, handle };
  }

  private cancelSwitch(): void {
    this.switchTimer?.handle.cancel();
    this.switchTimer = undefined;
  }

  /**
   * The barrier overtakes: channels that already delivered it (aligned so far, `arrivedNow` just
   * now) hold only later data; on every other channel, what is queued before its barrier, and
   * what arrives until the barrier does, is recorded as channel state. The snapshot is taken now.
   */
  private startUnaligned(b: BarrierEvent, arrivedNow: number | undefined): void {
    const id = b.checkpointId;
    this.abortCapture(R.CHECKPOINT_DECLINED_SUBSUMED, `barrier ${id} arrived while recording channel state of an older checkpoint`);
    let a = this.alignment;
    if (a !== undefined && a.barrier.checkpointId !== id) {
      this.abortAlignment(R.CHECKPOINT_DECLINED_SUBSUMED, `barrier ${id} arrived while aligning checkpoint ${a.barrier.checkpointId}`);
      a = undefined;
    }
    this.alignment = undefined;
    this.cancelSwitch();
    const arrived = new Set(a?.arrived ?? []);
    if (arrivedNow !== undefined) arrived.add(arrivedNow);
    const cap = new ChannelStateCapture(id);
    const gates = this.task.gates;
    // Restored in-flight data not handed out yet comes before every barrier.
    gates.forEach((gate, g) => {
      for (const r of gate.pendingReplay()) cap.addInput(g, r.channel, r.el);
    });
    for (let g = 0; g < gates.length; g++) {
      const gate = gates[g]!;
      for (let c = 0; c < gate.numChannels(); c++) {
        const ch = gate.channels[c]!;
        if (ch.ended || arrived.has(this.gateOffsets[g]! + c)) continue;
        let reached = false;
        for (const el of ch.queued()) {
          const ev = el instanceof Uint8Array || !isEvent(el) ? undefined : el;
          if (ev !== undefined && ((ev.kind === 'barrier' && ev.checkpointId >= id) || ev.kind === 'end')) {
            reached = true;
            break;
          }
          cap.addInput(g, c, el);
        }
        if (!reached) cap.startRecording(g, c);
      }
    }
    for (const gate of gates) gate.unblockAll();
    this.capture = cap;
    const now = this.now();
    const alignmentMs = a === undefined ? 0 : now - a.firstArrivalAt;
    const startDelayMs = Math.max(0, (a?.firstArrivalAt ?? now) - b.timestamp);
    this.perform({ checkpointId: id, timestamp: b.timestamp, type: b.type, location: b.location }, alignmentMs, startDelayMs, true, cap);
    cap.seal();
    void cap.done.then(() => {
      if (this.capture === cap) this.capture = undefined;
    });
  }

  /** Stops recording channel state of the checkpoint in progress (declined with `reason`, unless already aborted). */
  private abortCapture(reason: CheckpointFailureReason | undefined, message: string): void {
    const cap = this.capture;
    if (cap === undefined) return;
    this.capture = undefined;
    // Complete (every barrier came, in this same pass): nothing to stop; declined, a checkpoint
    // whose barriers already went on failed for nothing.
    if (cap.isComplete) return;
    cap.cancel();
    if (reason === undefined || this.aborted.has(cap.checkpointId)) return;
    this.rememberAborted(cap.checkpointId);
    this.reporter.decline(cap.checkpointId, reason, message);
    this.forwardCancel(cap.checkpointId);
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
    this.abortCapture(R.CHECKPOINT_DECLINED_SUBSUMED, `barrier ${id} arrived while recording channel state of an older checkpoint`);
    const h = barrierHandling(this.unaligned, this.mode, b, this.now());
    if (h.kind === 'unaligned') {
      this.startUnaligned(b, this.gateOffsets[gate.index]! + channel);
      return;
    }
    if (this.alignment === undefined) this.alignment = { barrier: b, arrived: new Set(), firstArrivalAt: this.now() };
    const a = this.alignment!;
    a.arrived.add(this.gateOffsets[gate.index]! + channel);
    // Savepoints are always aligned, whatever the checkpointing mode (as in Flink).
    if (h.kind !== 'none') gate.block(channel);
    if (h.kind === 'aligned-until') this.scheduleSwitch(b, h.switchAtMs);
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
    this.cancelSwitch();
    for (const gate of gates) gate.unblockAll();
    const alignmentMs = this.now() - a.firstArrivalAt;
    const startDelayMs = Math.max(0, a.firstArrivalAt - a.barrier.timestamp);
    this.performAndSuspend(
      { checkpointId: a.barrier.checkpointId, timestamp: a.barrier.timestamp, type: a.barrier.type, location: a.barrier.location, ...(a.barrier.suspendAfter === true ? { suspendSourceAfter: true } : {}) },
      alignmentMs,
      startDelayMs,
      true,
    );
  }

  private onCancelMarker(id: number): void {
    if (this.alignment?.barrier.checkpointId === id) {
      this.releaseAlignment();
    }
    if (this.capture?.checkpointId === id) {
      // Upstream gave the checkpoint up before its barrier came: the channel state cannot complete.
      this.abortCapture(undefined, '');
      this.rememberAborted(id);
      this.forwardCancel(id);
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
    this.cancelSwitch();
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
    const state = this.task.state;
    // A source (or a task whose input ended) has no input channel state, but its barrier still
    // overtakes the output waiting for credit when the checkpoint is unaligned. Unaligned, a task
    // that has ended its output sends the barrier too, after its end of data: downstream then
    // checkpoints at once (what is queued before the end is its channel state) instead of only
    // after processing everything up to the end.
    const unaligned = (state === 'running' || state === 'finishing' || state === 'waiting-final')
      && barrierHandling(this.unaligned, this.mode, req, this.now()).kind === 'unaligned';
    const forward = state === 'running' || unaligned;
    const cap = unaligned ? new ChannelStateCapture(req.checkpointId) : undefined;
    this.perform(req, 0, Math.max(0, this.now() - req.timestamp), forward, cap);
    cap?.seal();
    if (req.suspendSourceAfter) this.task.suspendSource();
  }

  notifyComplete(id: number): void {
    for (const op of this.task.operators) {
      if (op instanceof KeyedOperator) op.backend?.notifyCheckpointComplete?.(id);
      op.notifyCheckpointComplete(id);
    }
  }

  notifyAborted(id: number): void {
    if (this.capture?.checkpointId === id) {
      this.abortCapture(undefined, '');
      if (!this.aborted.has(id)) this.forwardCancel(id);
    }
    if (this.alignment?.barrier.checkpointId === id) {
      this.releaseAlignment();
      this.forwardCancel(id);
    } else if (id > this.lastSeen && !this.aborted.has(id)) {
      // The barrier has not arrived yet: when it does, it is ignored; downstream learns now.
      this.forwardCancel(id);
    }
    this.rememberAborted(id);
    const snapshots = this.inFlight.get(id);
    if (snapshots) for (const s of snapshots) s.abort();
    for (const op of this.task.operators) {
      if (op instanceof KeyedOperator) op.backend?.notifyCheckpointAborted?.(id);
      op.notifyCheckpointAborted(id);
    }
  }

  /** Cancels everything in flight (task cancelled or failed). */
  dispose(): void {
    this.alignment = undefined;
    this.cancelSwitch();
    this.capture?.cancel();
    this.capture = undefined;
    for (const snapshots of this.inFlight.values()) for (const s of snapshots) s.abort();
    this.inFlight.clear();
  }

  // ---- the checkpoint itself

  private performAndSuspend(req: TriggerRequest, alignmentMs: number, startDelayMs: number, forwardBarrier: boolean): void {
    this.perform(req, alignmentMs, startDelayMs, forwardBarrier);
    if (req.suspendSourceAfter === true) this.task.suspendSource();
  }

  private perform(req: TriggerRequest, alignmentMs: number, startDelayMs: number, forwardBarrier: boolean, channel?: ChannelStateCapture): void {
    const id = req.checkpointId;
    this.lastSeen = Math.max(this.lastSeen, id);
    const task = this.task;
    const t0 = performance.now();
    for (const op of task.operators) op.prepareSnapshotPreBarrier(id, req.suspendSourceAfter === true, req.type === 'savepoint');
    for (const op of task.operators) op.output.flush();
    if (forwardBarrier) {
      const barrier: BarrierEvent = { kind: 'barrier', checkpointId: id, timestamp: req.timestamp, type: req.type, location: req.location, ...(req.suspendSourceAfter === true ? { suspendAfter: true } : {}) };
      if (channel === undefined) {
        for (const w of task.writers) w.broadcastEvent(barrier);
      } else {
        // Unaligned: the barrier goes first; what it overtook is output channel state.
        for (const [edge, w] of task.d.writers) {
          w.broadcastFirst(barrier).forEach((overtaken, c) => {
            for (const el of overtaken) channel.addOutput(edge, c, el);
          });
        }
      }
    }
    // Synchronous phase: small state captured, keyed state frozen; nothing is written yet.
    const parts: OperatorSnapshot[] = [];
    for (const op of task.operators) {
      const part = this.snapshotSync(op, id, req.type === 'checkpoint' ? this.incremental : undefined);
      // The head operator carries the subtask's channel state, if there is any.
      if (part.inline !== undefined || part.keyed !== undefined || part.watermark !== undefined || (channel !== undefined && op === task.head)) parts.push(part);
    }
    const syncMs = performance.now() - t0;
    // Operators whose snapshot names external work (a prepared transaction) that must be durable first.
    const durable: Promise<void>[] = [];
    for (const op of task.operators) {
      const p = op.durableBeforeAck(id);
      if (p !== undefined) durable.push(p);
    }
    this.writeAsync(id, req.location, parts, { syncMs, alignmentMs, startDelayMs }, durable, channel);
  }

  /**
   * Asynchronous phase: keyed snapshots write their streams as scheduler steps and I/O while
   * records keep flowing; then the acknowledgement, or a decline with everything removed.
   */
  private writeAsync(
    id: number, location: string, parts: readonly OperatorSnapshot[], timings: { syncMs: number; alignmentMs: number; startDelayMs: number },
    durable: readonly Promise<void>[] = [],
    channel?: ChannelStateCapture,
  ): void {
    const snapshots = parts.flatMap((p) => (p.keyed ? [p.keyed.snapshot] : []));
    this.inFlight.set(id, snapshots);
    const t1 = performance.now();
    const streams = snapshots.length > 0 || channel !== undefined ? new InliningStreamFactory(this.streamsAt(location), this.inlineThresholdBytes) : undefined;
    const written = parts.map((p) => (p.keyed ? runAsyncPhase(p.keyed.snapshot, streams!, p.keyed.streamName, this.scheduler, this.sharedTarget(location, p.keyed)) : undefined));
    const channelName = channelStateFileName(this.task.head.env.taskInfo.operatorId, this.task.d.subtaskIndex);
    // Channel state is complete when every input channel delivered its barrier; then it is written.
    const channelWritten = channel === undefined ? Promise.resolve(undefined) : channel.done.then(async (complete): Promise<WrittenChannelState | undefined> => {
      if (!complete) throw new Error(`checkpoint ${id} was aborted while its channel state was recorded`);
      if (channel.isEmpty()) return undefined;
      const size = await writeChannelState(channel, layoutOf(this.task.gates, this.task.d.writers), streams!, channelName);
      return { name: channelName, size, persistedBytes: channel.bytes };
    });
    const failed = (e: unknown): void => {
      this.inFlight.delete(id);
      // The other snapshots of this checkpoint are of no use any more: stop them, remove what they wrote.
      for (const s of snapshots) s.abort();
      void this.discard(location, parts, channel === undefined ? undefined : channelName);
      if (this.aborted.has(id)) return;
      // An operator may say why (durableBeforeAck: not ready yet, which is not counted as a failure).
      const reason = (e as { declineReason?: CheckpointFailureReason } | undefined)?.declineReason ?? R.CHECKPOINT_ASYNC_EXCEPTION;
      this.reporter.decline(id, reason, `asynchronous phase failed in ${this.task.name}: ${e instanceof Error ? e.message : String(e)}`);
    };
    Promise.all([Promise.all(written), Promise.all(durable), channelWritten]).then(([handles, , channelState]) => {
      this.inFlight.delete(id);
      if (this.aborted.has(id)) {
        void this.discard(location, parts, channel === undefined ? undefined : channelName);
        return;
      }
      let ack: TaskAck;
      try {
        ack = this.ackOf(parts, handles, streams, { ...timings, asyncMs: performance.now() - t1 }, channel === undefined ? undefined : { written: channelState });
      } catch (e) {
        failed(e);
        return;
      }
      this.reporter.ack(id, ack);
    }, failed);
  }

  /** Where an incremental snapshot writes its new file: the job's shared directory. */
  private sharedTarget(location: string, keyed: NonNullable<OperatorSnapshot['keyed']>): { streams: CheckpointStreamFactory; streamName: string } | undefined {
    if (keyed.sharedName === undefined) return undefined;
    return { streams: this.streamsAt(sharedDirOfCheckpoint(location)), streamName: keyed.sharedName };
  }

  /** One operator's synchronous phase: its inline state, and its keyed state frozen (with its timers). */
  private snapshotSync(op: StreamOperator, id: number, incremental: IncrementalSettings | undefined): OperatorSnapshot {
    const operatorId = op.env.taskInfo.operatorId;
    const inline = op.snapshotInline(id);
    const bytes = inline === undefined ? undefined : encodeValue(inline);
    const part: OperatorSnapshot = {
      operatorId,
      inline: bytes === undefined ? undefined : Buffer.from(bytes).toString('base64'),
      inlineSize: bytes?.byteLength ?? 0,
    };
    if (!(op instanceof KeyedOperator)) return part;
    // Event time goes with keyed state: late decisions and fired windows depend on it. Not the
    // end-of-input watermark (MAX): a job restored from a drained savepoint reads new input.
    const wm = op.currentWatermark;
    if (wm > MIN_WATERMARK && wm < MAX_WATERMARK) part.watermark = wm;
    if (op.backend === undefined) return part;
    const timers = op.timerServiceIfCreated();
    const numTimers = timers === undefined ? 0 : timers.numEventTimers() + timers.numProcessingTimers();
    if (!op.backend.hasStates() && numTimers === 0) return part;
    const snapshot = op.backend.snapshot(timers === undefined ? undefined : timerBlocks(timers), { checkpointId: id, ...(incremental !== undefined ? { incremental } : {}) });
    const subtask = this.task.d.subtaskIndex;
    return {
      ...part,
      keyed: { snapshot, streamName: stateFileName(operatorId, subtask), ...(incremental !== undefined ? { sharedName: sharedStateFileName(operatorId, subtask, id) } : {}) },
    };
  }

  private ackOf(
    parts: readonly OperatorSnapshot[], handles: readonly (KeyedStateHandle | undefined)[], streams: InliningStreamFactory | undefined,
    timings: { syncMs: number; asyncMs: number; alignmentMs: number; startDelayMs: number },
    /** Present when the checkpoint was unaligned here; `written` when there was in-flight data. */
    unaligned?: { readonly written: WrittenChannelState | undefined },
  ): TaskAck {
    let stateSize = 0;
    const headId = this.task.head.env.taskInfo.operatorId;
    const ch = unaligned?.written;
    const operators: OperatorStateHandle[] = parts.map((p, i) => {
      const h = handles[i];
      const channelHere = ch !== undefined && p.operatorId === headId ? ch : undefined;
      const size = p.inlineSize + (h?.stateSize ?? 0) + (channelHere?.size ?? 0);
      stateSize += size;
      return {
        operatorId: p.operatorId,
        ...(p.inline !== undefined ? { inline: p.inline } : {}),
        ...(p.watermark !== undefined ? { watermark: p.watermark } : {}),
        ...(h !== undefined ? stateFileOf(h, streams) : {}),
        ...(channelHere !== undefined ? { channelState: channelStateOf(channelHere, streams) } : {}),
        stateSize: size,
      };
    });
    const { syncMs, asyncMs, alignmentMs, startDelayMs } = timings;
    const u = unaligned === undefined ? {} : { unaligned: true, persistedInFlightBytes: ch?.persistedBytes ?? 0 };
    return { task: this.taskId, operators, stats: { syncMs, asyncMs, alignmentMs, startDelayMs, stateSize, ...u } };
  }

  /**
   * The stream factory of a location, from the task's storage view. A reference no storage
   * here serves fails the snapshot's asynchronous phase (a decline the coordinator counts),
   * not the task.
   */
  private streamsAt(location: string): CheckpointStreamFactory {
    try {
      return this.task.d.storage.resolveLocation(location);
    } catch (e) {
      return { createStateStream: () => Promise.reject(e) };
    }
  }

  /** Removes the state files of a checkpoint this subtask will not acknowledge (missing ones are fine); never throws. */
  private async discard(location: string, parts: readonly OperatorSnapshot[], channelFile?: string): Promise<void> {
    const names = parts.flatMap((p) => (p.keyed === undefined ? [] : [{ dir: location, name: p.keyed.streamName }]));
    // Only the file this checkpoint wrote to the shared directory: the older files of its chain belong to completed checkpoints.
    for (const p of parts) if (p.keyed?.sharedName !== undefined) names.push({ dir: sharedDirOfCheckpoint(location), name: p.keyed.sharedName });
    if (channelFile !== undefined) names.push({ dir: location, name: channelFile });
    for (const { dir, name } of names) {
      try {
        await this.task.d.storage.discardState(dir, name);
      } catch {
        // Best effort: what is left has no metadata, and garbage collection removes it.
      }
    }
  }
}

interface OperatorSnapshot {
  readonly operatorId: string;
  watermark?: number;
  /** Inline state, msgpack, base64. */
  readonly inline: string | undefined;
  readonly inlineSize: number;
  /** `sharedName`: an incremental snapshot's new file in the job's shared directory. */
  readonly keyed?: { readonly snapshot: KeyedStateSnapshot; readonly streamName: string; readonly sharedName?: string };
}

interface WrittenChannelState {
  readonly name: string;
  readonly size: number;
  readonly persistedBytes: number;
}

function channelStateOf(w: WrittenChannelState, streams: InliningStreamFactory | undefined): NonNullable<OperatorStateHandle['channelState']> {
  const inline = streams?.take(w.name);
  return { file: w.name, fileSize: w.size, persistedBytes: w.persistedBytes, ...(inline !== undefined ? { fileInline: Buffer.from(inline).toString('base64') } : {}) };
}

/** The checkpoint metadata records one state file (or one chain) per keyed operator subtask. */
function stateFileOf(h: KeyedStateHandle, streams: InliningStreamFactory | undefined): Pick<OperatorStateHandle, 'file' | 'fileSize' | 'fileInline' | 'keyGroupRange' | 'chain'> {
  if (h.chain !== undefined) {
    if (h.streams.length !== 0 || h.chain.length === 0) throw new Error('an incremental keyed state snapshot names its chain and nothing else');
    return { chain: h.chain.map((c) => ({ name: c.name, size: c.size, checkpointId: c.checkpointId, kind: c.kind })), keyGroupRange: h.keyGroupRange };
  }
  if (h.streams.length !== 1) throw new Error(`a keyed state snapshot wrote ${h.streams.length} state streams; the checkpoint metadata records one per operator subtask`);
  const s = h.streams[0]!;
  const inline = streams?.take(s.name);
  return { file: s.name, fileSize: s.size, ...(inline !== undefined ? { fileInline: Buffer.from(inline).toString('base64') } : {}), keyGroupRange: h.keyGroupRange };
}
