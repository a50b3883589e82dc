/**
 * Errors that carry where they happened, so the CLI can name the operator, the subtask and
 * the record without a stack trace.
 */

/** Shortens a record for an error message: JSON, at most `max` characters. */
export function describeRecord(value: unknown, max = 200): string {
  let s: string;
  try {
    s = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
    if (s === undefined) s = String(value);
  } catch {
    s = String(value);
  }
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

export interface ErrorLocation {
  readonly operatorName: string;
  readonly operatorId: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
}

/** An exception thrown by user code (a function given to the API), with where and on what. */
export class UserCodeError extends Error {
  constructor(
    readonly location: ErrorLocation,
    readonly phase: string,
    readonly record: string | undefined,
    override readonly cause: unknown,
  ) {
    const what = cause instanceof Error ? cause.message : String(cause);
    super(
      `operator "${location.operatorName}" (subtask ${location.subtaskIndex + 1}/${location.parallelism}) failed in ${phase}` +
        (record !== undefined ? ` on record ${record}` : '') +
        `: ${what}`,
    );
    this.name = 'UserCodeError';
  }
}

/** A problem in how the job is built (API misuse), reported without a stack trace. */
export class JobDefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobDefinitionError';
  }
}

/** Wraps an exception from user code unless it is already attributed to an operator downstream. */
export function attribute(e: unknown, location: ErrorLocation, phase: string, record?: unknown, hasRecord = record !== undefined): Error {
  if (e instanceof UserCodeError || e instanceof JobDefinitionError) return e;
  // A state that cannot be restored is named by its own message (operator and state), whichever record first touched it.
  if (e instanceof Error && e.name === 'StateRestoreError') return e;
  return new UserCodeError(location, phase, hasRecord ? describeRecord(record) : undefined, e);
}
