/**
 * Which checkpoints a sink's committer has tried to commit, per writer subtask: a second try of
 * one may follow a first whose commit went through with its answer lost, so the sink must not
 * take the progress it finds as another job's. Commits come in checkpoint order per subtask, so
 * the highest tried is enough: a set of every id tried grew by one entry per checkpoint for the
 * life of the job (151 MiB per sink subtask after 30 days at one checkpoint a second). An older
 * checkpoint after a newer one counts as tried: its progress is past it whichever went through.
 */
export class TriedCheckpoints {
  /** Highest checkpoint id tried, by writer subtask (bounded by the parallelisms seen). */
  private readonly highest = new Map<number, number>();

  /** Whether checkpoint `chk` of writer `sub` was tried before; records this try. */
  tryOnce(sub: number, chk: number): boolean {
    const h = this.highest.get(sub);
    if (h !== undefined && chk <= h) return true;
    this.highest.set(sub, chk);
    return false;
  }
}
