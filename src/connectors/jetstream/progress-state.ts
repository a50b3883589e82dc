/**
 * The JetStream sink's progress key and what a commit does given it, as pure functions.
 *
 * The value is `{committed, publishing?, since?}`: the last checkpoint fully published, and a
 * checkpoint whose publishing began at `since` (ms) without being recorded as finished. A
 * re-commit of that checkpoint publishes its messages again under the same Nats-Msg-Ids: the
 * server drops the ones it has, but only within its duplicate window after their first publish.
 */
export interface ProgressState {
  readonly committed: number | undefined;
  readonly publishing?: number;
  readonly since?: number;
}

export function parseProgress(text: string | undefined): ProgressState {
  if (text === undefined || text === '') return { committed: undefined };
  try {
    const v = JSON.parse(text) as { committed?: unknown; publishing?: unknown; since?: unknown };
    return {
      committed: typeof v.committed === 'number' ? v.committed : undefined,
      ...(typeof v.publishing === 'number' ? { publishing: v.publishing } : {}),
      ...(typeof v.since === 'number' ? { since: v.since } : {}),
    };
  } catch {
    return { committed: undefined };
  }
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
  return `${job}:${operator}:${subtask}:${chk}:${index}`;
}
