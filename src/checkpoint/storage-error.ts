/** The error of checkpoint storage operations (code STORAGE); its own module so every storage file can import it without a cycle. */
import { WeirError } from '../core/errors.ts';
import { redactUserinfo } from '../core/options/text.ts';

/** Checkpoint storage could not do what it was asked; the message names the place and why. */
export class StorageError extends WeirError {
  constructor(message: string, options?: { cause?: unknown }) {
    // Storage errors name the location they failed on: never with a URL's credentials in it.
    super('STORAGE', redactUserinfo(message), options);
  }
}

/**
 * A file that storage was asked to open does not exist: a snapshot that names it is broken
 * (restore skips it for the one before), where any other StorageError is the storage failing
 * to answer (a restart tries the same snapshot again).
 */
export class MissingFileError extends StorageError {}

/** The message of anything thrown (storage passes causes on in its own messages). */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
