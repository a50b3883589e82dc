/**
 * Connections to NATS for the JetStream connectors: one client library (`nats` 2.x), bounded
 * connect retries with backoff, no silent reconnects (a lost connection fails the reader and the
 * job's restart strategy resumes it from its checkpoint), a timeout on every request, and a
 * label (the server list) for messages that never carries credentials.
 */
import type { NatsConnection } from 'nats';
import { WeirError } from '../../core/errors.ts';
import { connecting, withTimeout } from '../common/retry.ts';

export interface NatsConnectionOptions {
  /** host:port, or several (default 127.0.0.1:4222). */
  readonly servers: readonly string[];
  readonly user?: string | undefined;
  readonly pass?: string | undefined;
  readonly token?: string | undefined;
  /** Timeout of connecting and of every request, in ms. */
  readonly timeoutMs: number;
  /** Total time to keep trying to connect, in ms, before the job fails. */
  readonly connectBudgetMs: number;
}

export function validateServers(servers: unknown, where: string): string[] {
  const list = typeof servers === 'string' ? servers.split(',').map((s) => s.trim()) : servers;
  if (!Array.isArray(list) || list.length === 0 || !list.every((s) => typeof s === 'string' && /^(nats:\/\/)?[^\s/@]+:\d+$/.test(s))) {
    throw new RangeError(`${where}: servers must be host:port (or a list of them), without credentials (use user/pass or token)`);
  }
  return list as string[];
}

export function natsLabel(o: NatsConnectionOptions): string {
  return o.servers.join(',');
}

export async function connectNats(o: NatsConnectionOptions, log?: (line: string) => void): Promise<NatsConnection> {
  // Loaded on first use: jobs that read no NATS never load the client library.
  const { connect } = await import('nats');
  return connecting(`cannot connect to NATS at ${natsLabel(o)}`, () => connect({
    servers: [...o.servers],
    timeout: o.timeoutMs,
    reconnect: false,
    name: 'weir',
    ...(o.user !== undefined ? { user: o.user } : {}),
    ...(o.pass !== undefined ? { pass: o.pass } : {}),
    ...(o.token !== undefined ? { token: o.token } : {}),
  }), { initialBackoffMs: 100, maxBackoffMs: 2000, deadlineMs: o.connectBudgetMs }, log, isNatsAuthError);
}

/**
 * Whether the server answers a ping on a connection of its own within timeoutMs (one try, no
 * retries). The server (2.9) handles what a client sends in that client's read loop, and a
 * JetStream request there waits while a consumer scans for its next message or counts its
 * pending ones (seconds for a wildcard filter far behind in a long stream): a consumer's info, a
 * pull or a creation holds up everything the connection sends after it, its pings too, while
 * the server answers other connections at once. So a busy server is told from a silent one here.
 */
export async function natsAnswers(o: NatsConnectionOptions): Promise<boolean> {
  let nc: NatsConnection | undefined;
  try {
    const { connect } = await import('nats');
    nc = await connect({
      servers: [...o.servers], timeout: o.timeoutMs, reconnect: false, name: 'weir-probe',
      ...(o.user !== undefined ? { user: o.user } : {}),
      ...(o.pass !== undefined ? { pass: o.pass } : {}),
      ...(o.token !== undefined ? { token: o.token } : {}),
    });
    await withTimeout(nc.flush(), o.timeoutMs, `NATS at ${natsLabel(o)}: ping`);
    return true;
  } catch {
    return false;
  } finally {
    if (nc !== undefined) void nc.close().catch(() => {});
  }
}

/** The server refused the credentials: not retried. */
export function isNatsAuthError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'AUTHORIZATION_VIOLATION' || code === 'AUTHENTICATION_EXPIRED' || /Authorization Violation|authentication/i.test(e instanceof Error ? e.message : String(e));
}

export function natsError(o: NatsConnectionOptions, what: string, e: unknown): WeirError {
  let msg = e instanceof Error ? e.message : String(e);
  for (const secret of [o.pass, o.token]) if (secret) msg = msg.split(secret).join('***');
  return new WeirError('CONNECTOR', `NATS at ${natsLabel(o)}: ${what}: ${msg}`, { cause: e });
}
