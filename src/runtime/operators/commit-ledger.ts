/**
 * What one subtask of a two-phase-commit sink owes: its committables, by the checkpoint that
 * prepared them, until their commit has finished. Pure bookkeeping with no I/O: the sink
 * operator performs the commits the ledger hands out and reports each one done.
 *
 * The invariant (Flink's committer keeps committables until they are committed): a committable
 * is in every snapshot taken from the barrier that prepared it until its commit has finished.
 * Handing a batch out for commit does not remove it. So a restore from any checkpoint that
 * completed after the one that prepared it finds the committable either committed or in the
 * restored state, and commits it (again, idempotently). Removing committables when their commit
 * was merely queued lost a completed checkpoint's output when the process died before the
 * queued commit ran (issue 7).
 */

/** Committables handed out for commit, in checkpoint order; report them done with `committed`. */
export interface CommitBatch<C> {
  readonly seq: number;
  /** Highest checkpoint id whose committables are in the batch. */
  readonly upToCheckpointId: number;
  readonly committables: readonly C[];
}

interface Entry<C> {
  readonly checkpointId: number;
  readonly committables: readonly C[];
  /** Per committable: the subtask whose writer prepared it (restore-plan.ts deals committables by it). */
  readonly owners: readonly number[];
  /** Batch it was handed out in; undefined while it waits for its checkpoint to complete. */
  batch: number | undefined;
}

/**
 * Checkpoints whose committables may wait for completion at once. Each failed checkpoint leaves
 * one entry until a later one completes; past this many the job is not making progress and the
 * task fails instead of growing its state without bound.
 */
export const MAX_OUTSTANDING_CHECKPOINTS = 10_000;

export class CommitLedger<C> {
  /** In checkpoint order (ids only grow; a restored entry comes first). */
  private readonly entries: Entry<C>[] = [];
  private nextSeq = 0;

  /** Committables taken over from the restored checkpoint: they belong to a completed checkpoint, so they are due at once. */
  restored(checkpointId: number, committables: readonly C[], owners: readonly number[]): CommitBatch<C> | undefined {
    if (this.entries.length > 0) throw new Error('commit ledger: restored() after other committables');
    if (owners.length !== committables.length) throw new Error(`commit ledger: ${committables.length} restored committables with ${owners.length} owners`);
    if (committables.length === 0) return undefined;
    this.entries.push({ checkpointId, committables, owners, batch: undefined });
    return this.completed(checkpointId);
  }

  /** At the barrier of `checkpointId`: the writer's fresh committables; `owner` is its subtask. */
  prepared(checkpointId: number, committables: readonly C[], owner: number): void {
    if (committables.length === 0) return;
    const last = this.entries[this.entries.length - 1];
    if (last !== undefined && last.checkpointId >= checkpointId) {
      throw new Error(`commit ledger: checkpoint ${checkpointId} prepared after checkpoint ${last.checkpointId}`);
    }
    if (this.entries.length >= MAX_OUTSTANDING_CHECKPOINTS) {
      throw new Error(`${MAX_OUTSTANDING_CHECKPOINTS} checkpoints' sink output awaits a completed checkpoint; none completes`);
    }
    this.entries.push({ checkpointId, committables, owners: committables.map(() => owner), batch: undefined });
  }

  /** Checkpoint `checkpointId` completed: everything prepared up to it not yet handed out is due. */
  completed(checkpointId: number): CommitBatch<C> | undefined {
    const seq = this.nextSeq;
    const list: C[] = [];
    let upTo = -1;
    for (const e of this.entries) {
      if (e.checkpointId > checkpointId) break;
      if (e.batch !== undefined) continue;
      e.batch = seq;
      upTo = e.checkpointId;
      for (const c of e.committables) list.push(c);
    }
    if (upTo < 0) return undefined;
    this.nextSeq++;
    return { seq, upToCheckpointId: upTo, committables: list };
  }

  /** The commit of `batch` has finished: its committables leave the state. */
  committed(batch: CommitBatch<C>): void {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      if (this.entries[i]!.batch === batch.seq) this.entries.splice(i, 1);
    }
  }

  /** What a snapshot must carry: every committable whose commit has not finished, in checkpoint order. */
  snapshot(): C[] {
    const out: C[] = [];
    for (const e of this.entries) for (const c of e.committables) out.push(c);
    return out;
  }

  /** The owner of each committable snapshot() returns, in the same order. */
  snapshotOwners(): number[] {
    const out: number[] = [];
    for (const e of this.entries) for (const o of e.owners) out.push(o);
    return out;
  }

  /** Checkpoints with committables not yet committed (waiting or being committed). */
  get outstanding(): number {
    return this.entries.length;
  }
}
