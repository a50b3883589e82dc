/**
 * Who a sink's progress record belongs to: (job, operator, subtask). The exactly-once sinks
 * record the last checkpoint whose output they committed in the external system itself, under
 * this key, in the same transaction as the output; a re-commit after a restore finds it there
 * and writes nothing twice. Names are restricted so they fit in SQL identifiers' company, gids,
 * Redis keys and NATS message ids without escaping.
 */
import { WeirError } from '../../core/errors.ts';
import type { SinkContext } from '../../core/sink.ts';

const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;

export interface ProgressKey {
  readonly job: string;
  readonly operator: string;
  readonly subtask: number;
}

/** Validates a job id given to a sink (what makes two jobs writing one table tell their progress apart). */
export function checkJobId(sinkName: string, jobId: unknown): string {
  if (typeof jobId !== 'string' || !NAME_RE.test(jobId)) {
    throw new WeirError('CONFIG', `${sinkName}: jobId must be 1 to 64 characters of A-Z a-z 0-9 _ . -, got ${JSON.stringify(jobId)}`);
  }
  return jobId;
}

/** The operator part of the key: the sink operator's id, made safe (uids are user text). */
export function operatorKey(sinkName: string, ctx: SinkContext): string {
  const id = ctx.operatorId;
  if (id === undefined || id === '') throw new WeirError('JOB_DEFINITION', `${sinkName}: the sink context has no operator id`);
  const safe = id.replace(/[^A-Za-z0-9_.-]/g, '_');
  return safe.length <= 64 ? safe : safe.slice(0, 64);
}

/**
 * Whether subtask `sub` of an earlier run is this subtask's to clean up after: its own index,
 * and, for subtask 0, every index that no longer exists after a rescale down.
 */
export function ownsSubtask(ctx: Pick<SinkContext, 'subtaskIndex' | 'parallelism'>, sub: number): boolean {
  return sub === ctx.subtaskIndex || (ctx.subtaskIndex === 0 && sub >= ctx.parallelism);
}

/** The error when the external system says a fresh run's checkpoint was committed already: another run wrote there. */
export function foreignProgressError(sinkName: string, where: string, key: ProgressKey, committed: number, checkpointId: number): WeirError {
  return new WeirError(
    'CONFIG',
    `${sinkName}: ${where} records checkpoint ${committed} of job "${key.job}" (operator ${key.operator}, subtask ${key.subtask}) as committed, ` +
      `but this run started from no checkpoint and is committing checkpoint ${checkpointId}: another run wrote there with the same jobId; ` +
      'give this run its own jobId, or remove that progress record to start over',
  );
}

/**
 * The newest checkpoint any subtask of a sink operator committed: asks `of` for each subtask
 * in turn (bounded by the parallelism), for the start-up check against duplicate output.
 */
export async function newestCommitted(parallelism: number, of: (subtask: number) => Promise<number | undefined>): Promise<number | undefined> {
  let last: number | undefined;
  for (let subtask = 0; subtask < parallelism; subtask++) {
    const c = await of(subtask);
    if (c !== undefined && (last === undefined || c > last)) last = c;
  }
  return last;
}

/**
 * A checkpoint id kept as decimal text (a progress key's value), read back; null: nothing
 * committed. Anything else is an error naming `where`, never a guess: a value read as NaN would
 * commit over it, one read as huge would skip every later commit silently.
 */
export function parseCommittedId(text: string | null, where: string): number | undefined {
  if (text === null) return undefined;
  if (/^[0-9]{1,15}$/.test(text)) return Number(text);
  throw foreignProgressValue(where, text, 'a checkpoint id');
}

/** A progress value no weir sink wrote (`expected`: what it should have been), for every sink's progress reader. */
export function foreignProgressValue(where: string, text: string, expected: string): WeirError {
  return new WeirError('CONNECTOR', `${where} holds ${JSON.stringify(text.slice(0, 200))}, not ${expected}; weir wrote no such value (was the key written by something else?)`);
}
