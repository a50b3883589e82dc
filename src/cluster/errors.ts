/** Errors the job manager raises on purpose (codes: see core/errors.ts). */
import { WeirError } from '../core/errors.ts';
import { redactUserinfo } from '../core/options/text.ts';

/** The job cannot start: a bad snapshot to restore, an unusable checkpoint directory. */
export class StartError extends WeirError {
  constructor(message: string) {
    // Start errors echo what the user gave (a snapshot path, a directory): never a URL's credentials.
    super('START', redactUserinfo(message));
  }
}

/** A control request (savepoint, stop, checkpoint) that cannot be carried out now; `status` is its HTTP status. */
export class ControlError extends WeirError {
  constructor(message: string, readonly status = 409) {
    super('CONTROL', message);
  }
}
