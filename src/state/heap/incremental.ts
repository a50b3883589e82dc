/**
 * The heap backend's side of incremental checkpoints: which snapshot is a base and which a
 * delta, and on what. A delta builds only on a checkpoint the backend has heard completed
 * (notifyCheckpointComplete), never on one merely written: the job manager deletes the files
 * of checkpoints that did not complete. Changes are kept per epoch (StateTable), so a delta
 * holds every change since the last completed base it knows, however many checkpoints in
 * between were aborted or are still pending.
 *
 * The chain is bounded (periodic materialization): past `maxDeltas` deltas, or when its deltas
 * add up to more than `maxDeltaRatio` times its base, the next snapshot is a full base again,
 * so a restore reads at most a base and a bounded tail whatever the job's age.
 */
import type { ChainFile, IncrementalSettings } from '../backend.ts';
import type { IncrementalPart } from './snapshot.ts';
import type { ChangeEpoch } from './state-table.ts';

/** Written but not yet confirmed snapshots kept (a notification lost for good must not leak). */
const WRITTEN_KEPT = 64;

interface WrittenChain {
  readonly epoch: number;
  /** Epoch of the chain's base snapshot. */
  readonly baseEpoch: number;
  readonly chain: readonly ChainFile[];
}

export class ChainPlanner {
  /** Shared with the tables: the epoch changes are marked with now. */
  readonly current: ChangeEpoch = { epoch: 1 };
  private tracking = false;
  /** Chains whose base is older than this epoch are no base for a delta (a state was dropped or re-read). */
  private validFromEpoch = 0;
  private confirmed: (WrittenChain & { readonly checkpointId: number }) | undefined;
  private readonly written = new Map<number, WrittenChain>();
  /** States dropped while tracking, with the epoch of the drop: a delta after them says so. */
  private readonly dropped = new Map<string, number>();

  get isTracking(): boolean {
    return this.tracking;
  }

  /** Starts tracking (the first incremental snapshot, which is a base). */
  startTracking(): void {
    this.tracking = true;
  }

  /**
   * Something changed that a delta cannot express (a restored state decoded under a new
   * descriptor): the next base must be taken after now.
   */
  invalidateChains(): void {
    this.validFromEpoch = this.current.epoch;
  }

  /** A state was dropped (a window fired): deltas based before now remove it whole. */
  stateDropped(name: string): void {
    if (this.tracking) this.dropped.set(name, this.current.epoch);
  }

  /** The synchronous phase of checkpoint `checkpointId`: its epoch ends now; base or delta. */
  plan(checkpointId: number, settings: IncrementalSettings): IncrementalPart {
    const epoch = this.current.epoch++;
    const c = this.confirmed;
    const part: IncrementalPart = c === undefined || c.baseEpoch < this.validFromEpoch || mustMaterialize(c.chain, settings)
      ? { checkpointId, kind: 'base', baseEpoch: 0, chainBefore: [], droppedStates: [] }
      : { checkpointId, kind: 'delta', baseEpoch: c.epoch, chainBefore: c.chain, droppedStates: [...this.dropped].filter(([, e]) => e > c.epoch).map(([n]) => n) };
    this.pendingEpochs.set(checkpointId, { epoch, baseEpoch: part.kind === 'base' ? epoch : c!.baseEpoch });
    return part;
  }

  private readonly pendingEpochs = new Map<number, { epoch: number; baseEpoch: number }>();

  /** The snapshot of `checkpointId` is written with this chain (awaiting the checkpoint's completion). */
  recordWritten(checkpointId: number, chain: readonly ChainFile[]): void {
    const e = this.pendingEpochs.get(checkpointId);
    this.pendingEpochs.delete(checkpointId);
    if (e === undefined) return;
    this.written.set(checkpointId, { ...e, chain });
    for (const id of this.written.keys()) {
      if (this.written.size <= WRITTEN_KEPT) break;
      this.written.delete(id);
    }
  }

  complete(checkpointId: number): void {
    const w = this.written.get(checkpointId);
    const c = this.confirmed;
    if (w !== undefined && (c === undefined || checkpointId > c.checkpointId)) {
      this.confirmed = { ...w, checkpointId };
      // No delta is based before the confirmed one any more: older drops are in every chain to come.
      for (const [name, e] of this.dropped) if (e <= w.epoch) this.dropped.delete(name);
    } else if (w === undefined && c !== undefined && checkpointId > c.checkpointId) {
      // A later checkpoint completed without a snapshot of this backend (it had no state and no
      // timers then): it names none of the confirmed chain's files, so retention may delete them
      // once the confirmed checkpoint is subsumed. A delta on that chain would be declined, at
      // every checkpoint from then on; the next snapshot is a base.
      this.confirmed = undefined;
    }
    for (const id of [...this.written.keys()]) if (id <= checkpointId) this.written.delete(id);
    for (const id of [...this.pendingEpochs.keys()]) if (id < checkpointId) this.pendingEpochs.delete(id);
  }

  aborted(checkpointId: number): void {
    this.written.delete(checkpointId);
    this.pendingEpochs.delete(checkpointId);
  }

  /** The chain a delta would build on now (tests, diagnostics). */
  confirmedChain(): readonly ChainFile[] | undefined {
    return this.confirmed?.chain;
  }
}

/** Whether a chain has reached a bound, so the next snapshot is a full base. */
export function mustMaterialize(chain: readonly ChainFile[], s: IncrementalSettings): boolean {
  const deltas = chain.length - 1;
  if (deltas >= s.maxDeltas) return true;
  let deltaBytes = 0;
  for (let i = 1; i < chain.length; i++) deltaBytes += chain[i]!.size;
  return deltaBytes > chain[0]!.size * s.maxDeltaRatio;
}
