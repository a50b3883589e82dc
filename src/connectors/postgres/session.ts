/**
 * One connection of the sink, made when first needed and made again after it breaks: `run`
 * retries a whole unit of work (a transaction) on a fresh connection when the connection was
 * lost or the server was away, until the retry deadline. Units must be safe to repeat (the
 * progress row guards each one). The first connection checks the table's schema.
 *
 * `signal` (the task's SinkContext.signal) stops a unit under way: its connection is closed
 * (the server then rolls its open transaction back instead of going on to the next statement,
 * a PREPARE TRANSACTION after rows that waited on a lock) and it is not tried again.
 */
import { WeirError } from '../../core/errors.ts';
import { retrying } from '../common/retry.ts';
import { close, connect, destroy, isTransient, wrap, type PgClient } from './connection.ts';
import type { ResolvedPostgresOptions } from './options.ts';
import { checkSchema, ensureProgressTable } from './schema.ts';

export class PgSession {
  private client: PgClient | undefined;
  private checked = false;

  constructor(private readonly o: ResolvedPostgresOptions, private readonly checkTable: boolean, private readonly signal?: AbortSignal) {}

  private async get(): Promise<PgClient> {
    if (this.client === undefined) this.client = await connect(this.o);
    if (!this.checked) {
      await ensureProgressTable(this.client, this.o);
      if (this.checkTable) await checkSchema(this.client, this.o);
      this.checked = true;
    }
    return this.client;
  }

  async run<T>(doing: string, fn: (c: PgClient, attempt: number) => Promise<T>): Promise<T> {
    const signal = this.signal;
    const stop = (): void => {
      destroy(this.client);
      this.client = undefined;
    };
    signal?.addEventListener('abort', stop, { once: true });
    // A function, not a narrowed property: the signal fires while the unit awaits.
    const aborted = (): boolean => signal?.aborted === true;
    try {
      return await retrying(this.o.retry, isTransient, async (attempt) => {
        if (aborted()) throw this.stopped(doing);
        const c = await this.get();
        try {
          return await fn(c, attempt);
        } catch (e) {
          if (aborted()) throw this.stopped(doing);
          if (isTransient(e)) this.drop();
          throw e;
        }
      }, { onRetry: () => this.drop(), signal });
    } catch (e) {
      throw wrap(e, this.o, doing);
    } finally {
      signal?.removeEventListener('abort', stop);
    }
  }

  private stopped(doing: string): WeirError {
    return new WeirError('CONNECTOR', `postgres sink table "${this.o.tableText}": ${doing} stopped: its task was cancelled or failed (the outcome is unknown; the restore settles it)`);
  }

  drop(): void {
    close(this.client);
    this.client = undefined;
  }

  close(): void {
    this.drop();
  }
}
