/**
 * Which files of the job's shared/ directory (incremental chains) may be deleted: a pure
 * reference count, kept by the job manager beside the checkpoint coordinator (design §3:
 * decisions apart from I/O; the shell deletes what it is told to).
 *
 * A file is referenced by every checkpoint whose acknowledgement names it: from the ack on
 * (pending) through completion (retained) until the checkpoint is aborted or subsumed. When
 * the last reference goes the file is deleted, and the registry forgets it. From then on an
 * ack that names it (a task that had not yet heard of a newer completion built on a chain that
 * was just subsumed) is refused: the shell declines that checkpoint with the missing files in
 * the reason, so a checkpoint can never complete with a file that is gone. A file may be new
 * only in the checkpoint that wrote it (its name carries that id); any other reference must be
 * to a file the registry still holds.
 *
 * On start the registry is rebuilt from the retained checkpoints' metadata; files in shared/
 * that none of them names are garbage (storage deletes them before the first trigger).
 */

export interface SharedFileUse {
  readonly name: string;
  /** The checkpoint that wrote the file. */
  readonly createdBy: number;
}

export interface AckRegistration {
  /** Files the ack names that are no longer held (deleted, or about to be): the checkpoint must be declined. */
  readonly missing: readonly string[];
}

export class SharedStateRegistry {
  /** File name -> checkpoints referencing it. */
  private readonly refs = new Map<string, Set<number>>();
  /** Checkpoint id -> the files it references. */
  private readonly byCheckpoint = new Map<number, Set<string>>();

  /** Rebuilt from the retained checkpoints (their metadata's chains). */
  constructor(retained: readonly { readonly checkpointId: number; readonly files: readonly string[] }[] = []) {
    for (const c of retained) for (const f of c.files) this.add(c.checkpointId, f);
  }

  private add(checkpointId: number, name: string): void {
    let r = this.refs.get(name);
    if (r === undefined) this.refs.set(name, (r = new Set()));
    r.add(checkpointId);
    let b = this.byCheckpoint.get(checkpointId);
    if (b === undefined) this.byCheckpoint.set(checkpointId, (b = new Set()));
    b.add(name);
  }

  /**
   * An acknowledgement of pending checkpoint `checkpointId` naming `files`: every file it may
   * use is referenced from now on; the ones it may not (missing) are returned.
   */
  registerAck(checkpointId: number, files: readonly SharedFileUse[]): AckRegistration {
    const missing: string[] = [];
    for (const f of files) {
      if (f.createdBy === checkpointId || this.refs.has(f.name)) this.add(checkpointId, f.name);
      else missing.push(f.name);
    }
    return { missing };
  }

  /**
   * Checkpoint `checkpointId` ended without being retained (aborted, declined) or stopped
   * being retained (subsumed): its references go; returns the files no checkpoint references
   * any more, to delete now.
   */
  release(checkpointId: number): string[] {
    const names = this.byCheckpoint.get(checkpointId);
    if (names === undefined) return [];
    this.byCheckpoint.delete(checkpointId);
    const dead: string[] = [];
    for (const n of names) {
      const r = this.refs.get(n)!;
      r.delete(checkpointId);
      if (r.size === 0) {
        this.refs.delete(n);
        dead.push(n);
      }
    }
    return dead;
  }

  /** Of `names` (a late ack's files), those no checkpoint references: nobody will, so they go. */
  unreferenced(names: readonly string[]): string[] {
    return names.filter((n) => !this.refs.has(n));
  }

  isReferenced(name: string): boolean {
    return this.refs.has(name);
  }

  /** Every file referenced (by retained or pending checkpoints). */
  referenced(): Set<string> {
    return new Set(this.refs.keys());
  }

  /** The files checkpoint `checkpointId` references (tests, diagnostics). */
  filesOf(checkpointId: number): string[] {
    return [...(this.byCheckpoint.get(checkpointId) ?? [])];
  }
}
