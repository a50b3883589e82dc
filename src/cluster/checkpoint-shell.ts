/**
 * The checkpoint coordinator's shell for one attempt: feeds it events, keeps its timer on the
 * injected clock, and carries out its decisions against storage and the tasks. Storage first
 * (a location per checkpoint, the triggered id recorded), then the trigger to the tasks; on
 * completion the metadata is published through the location, last. What a request (savepoint,
 * stop, final checkpoint) does next is not decided here: completions, aborts and rejections of
 * requests go to the attempt, which asks the snapshot-request decisions.
 *
 * Incremental checkpoints: the shared-state registry (pure) counts the references to files of
 * the job's shared directory. An ack registers its chain before the coordinator sees it; one
 * that names a file already given up is declined instead (the subsumption race; reason
 * CHECKPOINT_DECLINED_SUBSUMED, which does not count toward the tolerable failures: the
 * checkpoint it built on was subsumed, and the next one builds on the newer); an aborted
 * checkpoint's references go at once, a subsumed one's after its metadata is deleted; a file
 * nothing references any more is deleted.
 */
import { CheckpointCoordinatorLogic, type CompletedCheckpointInfo, type CoordinatorEvent, type Decision } from '../checkpoint/coordinator.ts';
import { CheckpointFailureReason as R, describeReason, type CheckpointFailureReason } from '../checkpoint/failure-reason.ts';
import { SharedStateRegistry, type SharedFileUse } from '../checkpoint/shared-state-registry.ts';
import type { TaskAck } from '../core/checkpoint-format.ts';
import type { CheckpointStorage, CheckpointStorageLocation, StorageResolver } from '../checkpoint/storage.ts';
import type { CheckpointStatsTracker } from '../checkpoint/stats.ts';
import type { CheckpointConfig } from '../checkpoint/config.ts';
import type { Cancellable, Clock } from '../core/clock.ts';
import type { TaskId } from '../core/task-id.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import { buildCheckpointMetadata } from './checkpoint-metadata.ts';
import { errorCode } from '../core/errors.ts';
import type { ToExecutor } from './messages.ts';

export interface CheckpointShellHost {
  readonly jobId: string;
  readonly graph: JobGraph;
  readonly clock: Clock;
  readonly storage: CheckpointStorage | undefined;
  readonly snapshots: StorageResolver;
  readonly stats: CheckpointStatsTracker;
  readonly attempt: number;
  readonly log: (line: string) => void;
  broadcast(m: ToExecutor): void;
  /** A request's savepoint target (undefined: a checkpoint) and whether sources stop at its barrier. */
  requestPlacement(requestId: string): { readonly savepointTarget: string | undefined; readonly suspendSourcesAfter: boolean };
  onRequestCompleted(requestId: string, checkpointId: number, reference: string, final: boolean): void;
  onRequestFailed(requestId: string, reason: CheckpointFailureReason, message: string, how: 'aborted' | 'rejected'): void;
  /** A completed checkpoint subsumes a claimed snapshot from elsewhere: the host deletes it. */
  onCheckpointCompleted(): void;
  /** A savepoint whose output the tasks were told to commit (a stop's): a restart must not go back past it. */
  onSavepointCommitted(reference: string): void;
  failJob(message: string): void;
}

interface LocationEntry {
  readonly created: Promise<CheckpointStorageLocation>;
  value?: CheckpointStorageLocation;
}

/** Bound on storage operations in flight (deletes, disposals); more wait for the attempt's end. */
const MAX_TRACKED_IO = 10_000;
/**
 * Locations of ended checkpoints kept (a late ack of an aborted one still finds where its state
 * went); older ones are forgotten, and what a very late ack left is garbage collection's.
 */
const ENDED_LOCATIONS_KEPT = 128;

export class CheckpointShell {
  private readonly coordinator: CheckpointCoordinatorLogic;
  private readonly shared: SharedStateRegistry;
  private readonly locations = new Map<number, LocationEntry>();
  /** Ids of ended checkpoints whose locations are still kept, oldest first. */
  private readonly endedIds: number[] = [];
  private readonly finalizing = new Set<Promise<void>>();
  /** The last trigger send queued (they go out in id order; see inTriggerOrder). */
  private triggerOrder: Promise<void> = Promise.resolve();
  /** The last metadata write queued (they run one after another; see finalize). */
  private finalizeQueue: Promise<void> = Promise.resolve();
  /** Deletions in flight: the attempt ends after them, so runJob's caller sees the final layout. */
  private readonly io = new Set<Promise<unknown>>();
  private readonly taskCount: number;
  private tickTimer: Cancellable | undefined;
  /** The attempt is ending: no more timers; metadata being written may still complete. */
  private ending = false;
  /** Ended: decisions are no longer carried out. */
  private ended = false;

  constructor(
    private readonly host: CheckpointShellHost,
    config: CheckpointConfig,
    tasks: readonly { id: TaskId; isSource: boolean }[],
    firstCheckpointId: number,
    restoredCompleted: readonly CompletedCheckpointInfo[],
  ) {
    this.coordinator = new CheckpointCoordinatorLogic(config, tasks, firstCheckpointId, restoredCompleted);
    this.shared = new SharedStateRegistry(restoredCompleted.map((c) => ({ checkpointId: c.id, files: c.sharedFiles ?? [] })));
    this.taskCount = tasks.length;
  }

  handle(e: CoordinatorEvent): void {
    if (this.ended) return;
    if (e.type === 'ack' && !this.registerShared(e.id, e.ack)) {
      const missing = this.shared.registerAck(e.id, sharedUsesOf(e.ack)).missing;
      this.apply(this.coordinator.handle({
        type: 'decline', now: e.now, id: e.id, task: e.ack.task, reason: R.CHECKPOINT_DECLINED_SUBSUMED,
        message: `its incremental state builds on shared files that were already deleted (${missing.join(', ')}): the task had not yet heard that a newer checkpoint completed; the next checkpoint builds on that one`,
      }));
      return;
    }
    this.apply(this.coordinator.handle(e));
  }

  /**
   * Registers the shared files an ack names; false when some are no longer held (the
   * checkpoint is declined). A late ack's files that nothing references are deleted.
   */
  private registerShared(id: number, ack: TaskAck): boolean {
    const uses = sharedUsesOf(ack);
    if (uses.length === 0) return true;
    if (!this.coordinator.pendingIds().includes(id)) {
      void this.deleteShared(this.shared.unreferenced(uses.map((u) => u.name)));
      return true;
    }
    const files = uses.filter((u) => this.shared.isReferenced(u.name) || u.createdBy === id);
    if (files.length < uses.length) return false;
    this.shared.registerAck(id, uses);
    return true;
  }

  /** Deletes shared files (tracked, so the attempt ends after them); the promise settles when all are done. */
  private deleteShared(names: readonly string[]): Promise<unknown> {
    const storage = this.host.storage;
    if (storage === undefined || names.length === 0) return Promise.resolve();
    const all = Promise.all(names.map((n) => storage.discardSharedState(this.host.jobId, n).catch((e) => this.host.log(`weir: cannot delete shared checkpoint file ${n}: ${(e as Error).message}`))));
    this.track(all);
    return all;
  }

  /** Re-arms the coordinator's timer (after tasks changed state, or decisions were applied). */
  scheduleTick(): void {
    if (this.ending) return;
    this.tickTimer?.cancel();
    const at = this.coordinator.nextWakeup();
    if (at === undefined) return;
    this.tickTimer = this.host.clock.schedule(at, () => {
      this.tickTimer = undefined;
      if (!this.ending) this.handle({ type: 'tick', now: this.host.clock.now() });
    });
  }

  /**
   * The attempt ends: no more timers, and metadata being written finishes first (such a
   * checkpoint is complete: it exists once its metadata does, and its completion is carried out).
   */
  async finishFinalizing(): Promise<void> {
    this.ending = true;
    this.tickTimer?.cancel();
    this.tickTimer = undefined;
    await Promise.allSettled([...this.finalizing]);
  }

  /** Every other pending checkpoint is aborted and what it wrote removed (see quiesce). */
  shutdown(): void {
    if (this.ended) return;
    const now = this.host.clock.now();
    for (const d of this.coordinator.handle({ type: 'shutdown', now })) {
      if (d.type !== 'abort') continue;
      this.host.stats.failed(d.id, now, d.reason, describeReason(d.reason));
      this.dispose(d.id);
      void this.deleteShared(this.shared.release(d.id));
    }
    this.ended = true;
  }

  /** Storage operations still in flight (awaited before the attempt settles). */
  async quiesce(): Promise<void> {
    await Promise.all([...this.io]);
  }

  private apply(decisions: readonly Decision[]): void {
    for (const d of decisions) this.execute(d);
    this.scheduleTick();
  }

  private execute(d: Decision): void {
    if (this.ended) return;
    const now = this.host.clock.now();
    switch (d.type) {
      case 'trigger':
        return this.trigger(d, now);
      case 'trigger-task': {
        // A task that finished processing joins a pending checkpoint directly (once its
        // location exists), in order with the other triggers (see trigger).
        const created = this.locations.get(d.id)?.created;
        if (created === undefined) return;
        this.inTriggerOrder(created.then(
          (l) => () => this.host.broadcast({ type: 'trigger', tasks: [d.task], req: { checkpointId: d.id, timestamp: d.timestamp, type: d.checkpointType, location: l.reference } }),
          () => () => {}, // the trigger itself fails the checkpoint
        ));
        return;
      }
      case 'finalize':
        return this.finalize(d, now);
      case 'notify-complete':
        return this.notifyComplete(d, now);
      case 'abort':
        this.host.stats.failed(d.id, now, d.reason, d.message);
        this.host.broadcast({ type: 'notify-abort', id: d.id });
        this.dispose(d.id);
        void this.deleteShared(this.shared.release(d.id));
        this.rememberEnded(d.id);
        if (d.requestId !== undefined) this.host.onRequestFailed(d.requestId, d.reason, d.message, 'aborted');
        return;
      case 'discard-completed':
        for (const id of d.ids) this.discardCompleted(id);
        return;
      case 'discard-ack': {
        const entry = this.locations.get(d.id);
        if (entry === undefined) return;
        for (const op of d.ack.operators) {
          if (op.file !== undefined) this.track(entry.created.then((l) => l.discardState(op.file!)));
          if (op.channelState !== undefined) this.track(entry.created.then((l) => l.discardState(op.channelState!.file)));
        }
        return;
      }
      case 'fail-job':
        this.host.failJob(d.message);
        return;
      case 'request-rejected':
        this.host.onRequestFailed(d.requestId, d.reason, d.message, 'rejected');
        return;
    }
  }

  /**
   * Storage location first; coordinator-side state (split enumerators) is taken with the
   * trigger (splits are all assigned at deployment, so nothing is unassigned), then the
   * trigger goes to the sources and to tasks whose input has ended.
   */
  private trigger(d: Extract<Decision, { type: 'trigger' }>, now: number): void {
    const h = this.host;
    const placement = d.requestId !== undefined ? h.requestPlacement(d.requestId) : { savepointTarget: undefined, suspendSourcesAfter: false };
    const created = this.createLocation(d.id, d.checkpointType, placement.savepointTarget);
    const entry: LocationEntry = { created };
    this.locations.set(d.id, entry);
    h.stats.triggered(d.id, d.checkpointType, now, this.taskCount, h.attempt);
    const ready = created
      .then(async (l) => {
        entry.value = l;
        // Recorded before any task writes under this id: ids are never reused, even if this attempt dies now.
        if (h.storage !== undefined) await h.storage.recordTriggered(h.jobId, d.id);
        return l;
      })
      .then(
        (l) => () => h.broadcast({
          type: 'trigger', tasks: d.tasks,
          req: { checkpointId: d.id, timestamp: d.timestamp, type: d.checkpointType, location: l.reference, ...(placement.suspendSourcesAfter ? { suspendSourceAfter: true } : {}) },
        }),
        (e) => () => this.handle({ type: 'trigger-failed', now: h.clock.now(), id: d.id, message: (e as Error).message, io: errorCode(e) === 'STORAGE' }),
      );
    this.inTriggerOrder(ready);
  }

  /**
   * Carries out a trigger's send once it is ready and every earlier trigger's was carried out.
   * Locations are created concurrently, and one created sooner (a local savepoint directory
   * beside checkpoints on S3) sent its trigger first: a task ignores a trigger older than one
   * it has seen, so the earlier checkpoint was never acked, blocked periodic checkpoints (and
   * sink commits) until its timeout, and then failed the job. Flink sends triggers in id order too.
   */
  private inTriggerOrder(ready: Promise<() => void>): void {
    this.triggerOrder = this.triggerOrder.then(() => ready).then((send) => {
      if (!this.ended) send();
    }).catch((e: unknown) => this.host.failJob(`checkpoint trigger: ${(e as Error).message}`)); // the order goes on
  }

  private async createLocation(id: number, type: 'checkpoint' | 'savepoint', savepointTarget: string | undefined): Promise<CheckpointStorageLocation> {
    const h = this.host;
    if (type === 'savepoint') {
      if (savepointTarget === undefined) throw new Error(`savepoint ${id} was triggered without a target directory`);
      return h.snapshots.forReference(savepointTarget).initSavepoint(savepointTarget, h.jobId, id);
    }
    if (h.storage === undefined) throw new Error(`checkpoint ${id} was triggered without checkpoint storage`);
    return h.storage.initCheckpoint(h.jobId, id);
  }

  private finalize(d: Extract<Decision, { type: 'finalize' }>, now: number): void {
    const h = this.host;
    const location = this.locations.get(d.id)?.value;
    // Acks arrive only after the trigger went out, which was after the location was created.
    if (location === undefined) throw new Error(`checkpoint ${d.id} is complete but has no storage location`);
    const metadata = buildCheckpointMetadata({ graph: h.graph, jobId: h.jobId, checkpointId: d.id, timestamp: d.timestamp, type: d.checkpointType, acks: d.acks, completedAt: now });
    // Metadata is written one checkpoint at a time, in the order their acks completed: a newer
    // checkpoint's write (say the final checkpoint's, right behind a periodic one) never
    // overtakes an older one's, which would then be subsumed although it was complete.
    const p = this.finalizeQueue.then(() => location.finalize(metadata)).then(
      () => this.handle({ type: 'finalized', now: h.clock.now(), id: d.id }),
      (e) => this.handle({ type: 'finalize-failed', now: h.clock.now(), id: d.id, message: `cannot write metadata: ${(e as Error).message}` }),
    );
    this.finalizeQueue = p;
    // An attempt that ends lets metadata being written finish: that checkpoint is complete.
    this.finalizing.add(p);
    void p.finally(() => this.finalizing.delete(p));
  }

  private notifyComplete(d: Extract<Decision, { type: 'notify-complete' }>, now: number): void {
    const h = this.host;
    const reference = this.locations.get(d.id)!.value!.reference;
    h.stats.completed(d.id, now, reference);
    if (d.checkpointType === 'checkpoint') h.onCheckpointCompleted();
    else if (d.notifyTasks) h.onSavepointCommitted(reference);
    if (d.notifyTasks) h.broadcast({ type: 'notify-complete', id: d.id });
    this.rememberEnded(d.id);
    if (d.requestId !== undefined) h.onRequestCompleted(d.requestId, d.id, reference, d.final);
  }

  /** Remembers that checkpoint `id` ended; forgets the oldest ended location beyond the bound. */
  private rememberEnded(id: number): void {
    this.endedIds.push(id);
    while (this.endedIds.length > ENDED_LOCATIONS_KEPT) this.locations.delete(this.endedIds.shift()!);
  }

  private discardCompleted(id: number): void {
    const storage = this.host.storage;
    if (storage === undefined) return;
    const reference = storage.checkpointDir(this.host.jobId, id);
    // Its references go now (the decision is made), its files only once its metadata is gone:
    // never a published checkpoint with a chain file missing.
    const dead = this.shared.release(id);
    // A checkpoint that cannot be deleted stays a retained one too many; the job goes on (and
    // its chain's files stay for the garbage collection at the next start to weigh).
    this.track(storage.discard(reference).then(
      () => this.deleteShared(dead),
      (e) => this.host.log(`weir: cannot discard subsumed checkpoint ${reference}: ${(e as Error).message}`),
    ));
  }

  /** Removes what an aborted checkpoint wrote, once its location exists. */
  private dispose(id: number): void {
    const entry = this.locations.get(id);
    if (entry !== undefined) this.track(entry.created.then((l) => l.dispose()));
  }

  private track(p: Promise<unknown>): void {
    const q = p.catch(() => {});
    if (this.io.size >= MAX_TRACKED_IO) return; // still runs; only the wait at the end is bounded
    this.io.add(q);
    void q.finally(() => this.io.delete(q));
  }

}

/** The shared files an acknowledgement's incremental chains name, with the checkpoint that wrote each. */
function sharedUsesOf(ack: TaskAck): SharedFileUse[] {
  const out: SharedFileUse[] = [];
  for (const op of ack.operators) for (const c of op.chain ?? []) out.push({ name: c.name, createdBy: c.checkpointId });
  return out;
}
