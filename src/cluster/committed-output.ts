/**
 * A restore must never silently write output a sink already committed. Every two-phase-commit
 * sink that records its last committed checkpoint (TwoPhaseCommitSink.lastCommittedCheckpoint)
 * is asked before each attempt; when it committed a checkpoint newer than the one the attempt
 * restores (or any, when the attempt starts fresh), replaying from there would emit that output
 * a second time. That happens when `--from latest` skips a newest checkpoint whose metadata is
 * damaged, when checkpoints were deleted (retention) and `--from latest-or-empty` starts over,
 * or when an older snapshot is named with `--from`. The attempt is refused, naming both ids and
 * the ways out, unless the user accepted duplicates (--allow-duplicate-output).
 */
import type { CommitScope, TwoPhaseCommitSink } from '../core/sink.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import { StartError } from './errors.ts';

export type CommittedOutputDecision = { readonly type: 'ok' } | { readonly type: 'refuse' | 'warn'; readonly message: string };

/**
 * Pure: what to do about one sink that committed checkpoint `lastCommitted` (undefined: nothing)
 * when the attempt restores `restoredId` (undefined: starts fresh).
 */
export function decideCommittedOutput(sinkName: string, lastCommitted: number | undefined, restoredId: number | undefined, allowDuplicates: boolean): CommittedOutputDecision {
  if (lastCommitted === undefined) return { type: 'ok' };
  if (restoredId !== undefined && lastCommitted <= restoredId) return { type: 'ok' };
  const what = lastCommitted === 0 ? 'the output of an earlier run (committed at its end, without checkpoints)' : `the output of checkpoint ${lastCommitted}`;
  const start = restoredId === undefined ? 'the job starts fresh (no checkpoint restored)' : `the job restores checkpoint ${restoredId}`;
  if (allowDuplicates) {
    return { type: 'warn', message: `weir: warning: sink "${sinkName}" already committed ${what} and ${start}; records after it are written again (duplicates accepted with --allow-duplicate-output)` };
  }
  const later = restoredId === undefined ? '' : `restore checkpoint ${lastCommitted} or a later one if it still exists, `;
  return {
    type: 'refuse',
    message: `sink "${sinkName}" already committed ${what}, but ${start}: the output after it would be written twice. Ways out: ${later}write to a fresh output (an empty directory or a new table), or accept the duplicates with --allow-duplicate-output`,
  };
}

/**
 * The sinkTo() sinks of the graph, each with the operator that runs it. The scope's parallelism
 * covers the restored snapshot's too (`restoredParallelism`, by operator id): scaled down from
 * 4 to 2, the committables of old subtasks 2 and 3 are committed again under their own
 * progress keys, which the check must read as well.
 */
export function commitSinksOf(graph: JobGraph, restoredParallelism: (operatorId: string) => number | undefined = () => undefined): { sink: TwoPhaseCommitSink<unknown, unknown>; scope: CommitScope }[] {
  const out: { sink: TwoPhaseCommitSink<unknown, unknown>; scope: CommitScope }[] = [];
  for (const v of graph.vertices) {
    for (const op of v.operators) {
      const t = op.node.transformation;
      if (t.kind !== 'one-input' || t.commitSink === undefined) continue;
      const parallelism = Math.max(op.node.parallelism, restoredParallelism(op.node.id) ?? 0);
      out.push({ sink: t.commitSink, scope: { operatorId: op.node.id, parallelism } });
    }
  }
  return out;
}

/** Longest a sink may take to say what it committed last (an external system that does not answer must not hang the start). */
const ASK_TIMEOUT_MS = 60_000;

/** A sink committed past the checkpoint being restored: restoring it would write that output again. */
export class CommittedOutputRefusal extends StartError {}

/**
 * Asks every sink; throws CommittedOutputRefusal on the first refusal (StartError when a sink
 * cannot tell), logs warnings. A fresh start also asks each sink whether it would destroy
 * work an earlier run's completed checkpoint still needs (freshStartRefusal). Returns the highest checkpoint id any sink committed (undefined:
 * none said): the attempt's checkpoint ids go above it, or a sink would skip their output as
 * committed already (duplicates accepted, a restore from before it).
 */
export async function checkCommittedOutput(graph: JobGraph, restoredId: number | undefined, allowDuplicates: boolean, log: (line: string) => void, restoredParallelism?: (operatorId: string) => number | undefined): Promise<number | undefined> {
  let highest: number | undefined;
  for (const { sink, scope } of commitSinksOf(graph, restoredParallelism)) {
    if (sink.lastCommittedCheckpoint !== undefined) {
      let last: number | undefined;
      try {
        last = await withAskTimeout(() => sink.lastCommittedCheckpoint!(scope));
      } catch (e) {
        throw new StartError(`sink "${sink.name}": cannot tell what it committed last: ${(e as Error).message}`);
      }
      const d = decideCommittedOutput(sink.name, last, restoredId, allowDuplicates);
      if (d.type === 'refuse') throw new CommittedOutputRefusal(d.message);
      if (d.type === 'warn') log(d.message);
      if (last !== undefined && Number.isSafeInteger(last)) highest = Math.max(highest ?? 0, last);
    }
    // A fresh start: would it destroy what an earlier run's completed checkpoint still needs (the S3 file sink's open uploads)?
    if (restoredId === undefined && sink.freshStartRefusal !== undefined) {
      let why: string | undefined;
      try {
        why = await withAskTimeout(() => sink.freshStartRefusal!(scope));
      } catch (e) {
        throw new StartError(`sink "${sink.name}": cannot tell whether a fresh start would destroy an earlier run's output: ${(e as Error).message}`);
      }
      if (why !== undefined && !allowDuplicates) throw new CommittedOutputRefusal(why);
      if (why !== undefined) log(`weir: warning: ${why} (started fresh all the same: --allow-duplicate-output)`);
    }
  }
  return highest;
}

/** `ask()`, rejected after ASK_TIMEOUT_MS. */
async function withAskTimeout<T>(ask: () => T | Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ASK_TIMEOUT_MS / 1000} s`)), ASK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([Promise.resolve().then(ask), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
