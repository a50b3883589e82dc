/**
 * One connection of the sink, made when first needed and made again after it breaks: `run`
 * retries a whole unit of work (a transaction) on a fresh connection when the connection was
 * lost or the server was away, until the retry deadline. Units must be safe to repeat (the
 * progress row guards each one). The first connection checks the table's schema.
 */
import { retrying } from '../common/retry.ts';
import { close, connect, isTransient, wrap, type PgClient } from './connection.ts';
import type { ResolvedPostgresOptions } from './options.ts';
import { checkSchema, ensureProgressTable } from './schema.ts';

export class PgSession {
  private client: PgClient | undefined;
  private checked = false;

  constructor(private readonly o: ResolvedPostgresOptions, private readonly checkTable: boolean) {}

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
    try {
      return await retrying(this.o.retry, isTransient, async (attempt) => {
        const c = await this.get();
        try {
          return await fn(c, attempt);
        } catch (e) {
          if (isTransient(e)) this.drop();
          throw e;
        }
      }, { onRetry: () => this.drop() });
    } catch (e) {
      throw wrap(e, this.o, doing);
    }
  }

  drop(): void {
    close(this.client);
    this.client = undefined;
  }

  close(): void {
    this.drop();
  }
}
