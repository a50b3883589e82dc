/**
 * One error type with stable codes. Every error weir raises on purpose is a WeirError whose
 * `code` says what kind of failure it is; code (not the class name, not the message) is what
 * callers branch on, and it travels between threads in SerializedError (structured clone keeps
 * an Error's message and stack, not its own fields). Errors of user code carry where they
 * happened, so the CLI can name the operator, the subtask and the record without a stack.
 */
import { redactUserinfo } from './redact.ts';

export const ERROR_CODES = [
  /** An exception thrown by a function the user gave to the API. */
  'USER_CODE',
  /** The job is built wrongly (API misuse, a job module that cannot load). */
  'JOB_DEFINITION',
  /** A record that cannot be read, with malformed: 'fail'. */
  'MALFORMED_RECORD',
  /** Restored state does not fit the job as it is now (serializer, operator, max parallelism). */
  'STATE_RESTORE',
  /** A snapshot cannot be restored into this job (missing operators, bad snapshot). */
  'RESTORE',
  /** A state file fails its checks (checksum, truncation). */
  'CORRUPT_STATE',
  /** Checkpoint or savepoint metadata fails its checks. */
  'METADATA',
  /** A bad setting (job code, flag or config file). */
  'CONFIG',
  /** A bad command line. */
  'USAGE',
  /** A `weir state inspect` query that cannot be answered. */
  'INSPECT',
  /** The job cannot start (REST port, checkpoint directory, nothing to restore). */
  'START',
  /** A control request (savepoint, stop, cancel) that cannot be carried out now. */
  'CONTROL',
  /** A timeout of an operation weir waits for. */
  'TIMEOUT',
  /** Checkpoint storage could not carry out an operation (create, write, publish, delete, list). */
  'STORAGE',
  /** A connector's external system failed, refused the request or could not be reached in time (host, port and stream named). */
  'CONNECTOR',
  /** The local store of the disk state backend failed or refused an entry (directory, key too long). */
  'STATE_BACKEND',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Failures caused by the user's job, input or settings: reported in one line, no stack. */
const USER_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['USER_CODE', 'JOB_DEFINITION', 'MALFORMED_RECORD', 'STATE_RESTORE', 'RESTORE', 'CONFIG', 'USAGE']);

/** Failures the CLI reports as a usage error (exit code 2) rather than a failed job (1). */
const USAGE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['USAGE']);

export class WeirError extends Error {
  constructor(readonly code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The code of an error, whether a WeirError or a serialized one from another thread; undefined for foreign errors. */
export function errorCode(e: unknown): ErrorCode | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : undefined;
}

export function isUserError(e: unknown): boolean {
  const code = errorCode(e);
  return code !== undefined && USER_CODES.has(code);
}

export function isUsageError(e: unknown): boolean {
  const code = errorCode(e);
  return code !== undefined && USAGE_CODES.has(code);
}

/** Shortens a record for an error message: JSON, at most `max` characters. */
export function describeRecord(value: unknown, max = 200): string {
  let s: string;
  try {
    s = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
    if (s === undefined) s = String(value);
  } catch {
    s = String(value);
  }
  // A record may carry a connection string: its password stays out of the message (logs, REST).
  s = redactUserinfo(s);
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

export interface ErrorLocation {
  readonly operatorName: string;
  readonly operatorId: string;
  /** The operator's uid(...), when the job gave one: the name a user searches the job for. */
  readonly uid?: string | undefined;
  readonly subtaskIndex: number;
  readonly parallelism: number;
}

/** How errors name an operator: its name, then its uid when it has one, and the subtask. */
export function describeOperator(l: ErrorLocation): string {
  return `operator "${l.operatorName}" (${l.uid !== undefined ? `uid "${l.uid}", ` : ''}subtask ${l.subtaskIndex + 1}/${l.parallelism})`;
}

/** An exception thrown by user code (a function given to the API), with where and on what. */
export class UserCodeError extends WeirError {
  constructor(
    readonly location: ErrorLocation,
    readonly phase: string,
    readonly record: string | undefined,
    override readonly cause: unknown,
  ) {
    const what = cause instanceof Error ? cause.message : String(cause);
    super(
      'USER_CODE',
      `${describeOperator(location)} failed in ${phase}` +
        (record !== undefined ? ` on record ${record}` : '') +
        `: ${what}`,
    );
  }
}

/** A problem in how the job is built (API misuse), reported without a stack trace. */
export class JobDefinitionError extends WeirError {
  constructor(message: string) {
    super('JOB_DEFINITION', message);
  }
}

/** Wraps an exception from user code unless it is already attributed to an operator downstream. */
export function attribute(e: unknown, location: ErrorLocation, phase: string, record?: unknown, hasRecord = record !== undefined): Error {
  if (e instanceof UserCodeError || e instanceof JobDefinitionError) return e;
  // A state or a checkpoint that cannot be restored is named by its own message (operator and
  // state, or what the checkpoint holds), whichever record or call first met it; wrapped as the
  // operator's USER_CODE it was restarted for ever instead of ending the job (recovery.ts). So
  // is a malformed record (named by where it was read): every restart reads it again.
  const code = errorCode(e);
  if (code === 'STATE_RESTORE' || code === 'RESTORE' || code === 'MALFORMED_RECORD') return e as Error;
  return new UserCodeError(location, phase, hasRecord ? describeRecord(record) : undefined, e);
}
