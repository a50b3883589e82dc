/**
 * The JetStream sink's progress key and what a commit does given it, as pure functions.
 *
 * The value is `{committed, publishing?, since?}`: the last checkpoint fully published, and a
 * checkpoint whose publishing began at `since` (ms) without being recorded as finished. A
 * re-commit of that checkpoint publishes its messages again under the same Nats-Msg-Ids: the
 * server drops the ones it has, but only within its duplicate window after their first publish.
 */
import { foreignProgressValue } from '../common/progress.ts';

export interface ProgressState {
  readonly committed: number | undefined;
  readonly publishing?: number;
  readonly since?: number;
}

/**
 * The progress value read from the bucket; `where` names the key for errors. Missing or empty:
 * nothing committed. A value that cannot be read is an error, not "nothing committed":
 * guessing low would pass the start's duplicate-output check, and the next commit would write
 * over the evidence and publish again, past the duplicate window a duplicate.
 */
export function parseProgress(text: string | undefined, where: string): ProgressState {
  if (text === undefined || text === '') return { committed: undefined };
  const unreadable = (why: string) => foreignProgressValue(where, text, `{committed, publishing?, since?}: ${why}`);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw unreadable('not JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw unreadable('not an object');
  const { committed, publishing, since } = v as { committed?: unknown; publishing?: unknown; since?: unknown };
  const checkpointId = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  // The sink writes committed: null before its first checkpoint is published.
  if (!(committed === undefined || committed === null || checkpointId(committed))) throw unreadable('committed is not a checkpoint id');
  if (!(publishing === undefined || checkpointId(publishing))) throw unreadable('publishing is not a checkpoint id');
  if (!(since === undefined || (typeof since === 'number' && Number.isFinite(since)))) throw unreadable('since is not a time in ms');
  return {
    committed: checkpointId(committed) ? (committed as number) : undefined,
    ...(publishing !== undefined ? { publishing: publishing as number } : {}),
    ...(since !== undefined ? { since: since as number } : {}),
  };
}

/**
 * The newest checkpoint whose messages may be in the stream: one whose publishing began counts
 * (the duplicate-output check at a start: a restore from before it would publish them again,
 * under new message ids, so the server would not drop them).
 */
export function newestVisible(s: ProgressState): number | undefined {
  if (s.publishing === undefined) return s.committed;
  return Math.max(s.committed ?? 0, s.publishing);
}

export type CommitDecision =
  | { readonly action: 'skip' }
  | { readonly action: 'foreign'; readonly committed: number }
  | { readonly action: 'publish'; readonly since: number; readonly late: boolean; readonly again: boolean };

/**
 * `fresh`: this run started from no checkpoint; `triedBefore`: this committer tried this
 * checkpoint already. Publishing again more than `windowMs` after the first try is `late`: the
 * server may no longer drop every repeat.
 */
export function decideCommit(s: ProgressState, chk: number, fresh: boolean, triedBefore: boolean, nowMs: number, windowMs: number): CommitDecision {
  if (s.committed !== undefined && s.committed >= chk) {
    return fresh && !triedBefore ? { action: 'foreign', committed: s.committed } : { action: 'skip' };
  }
  if (s.publishing === chk && s.since !== undefined) {
    return { action: 'publish', since: s.since, late: nowMs - s.since > windowMs, again: true };
  }
  return { action: 'publish', since: nowMs, late: false, again: false };
}

/** Nats-Msg-Id of message `index` of a subtask's checkpoint: the same in every re-commit. */
export function messageId(job: string, operator: string, subtask: number, chk: number, index: number): string {
  return `${messageIdPrefix(job, operator, subtask, chk)}${index}`;
}

/** What the Nats-Msg-Id of every message of a subtask's checkpoint begins with. */
export function messageIdPrefix(job: string, operator: string, subtask: number, chk: number): string {
  return `${job}:${operator}:${subtask}:${chk}:`;
}
