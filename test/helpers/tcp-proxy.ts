/**
 * A TCP proxy in front of a shared server (PostgreSQL, Redis, NATS), so a test can act out a
 * server restart without restarting the server other tests use: `cut()` drops every connection
 * and stops listening (new connections are refused, as by a server that is down), `restore()`
 * listens again on the same port.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far (to see that a client reconnected). */
  readonly accepted: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const onConnection = (client: Socket) => {
    accepted++;
    const upstream = connect({ host: targetHost, port: targetPort });
    sockets.add(client);
    sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  };
  let server: Server = createServer(onConnection);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const stop = async () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return {
    port,
    get accepted() { return accepted; },
    cut: stop,
    restore: async () => {
      server = createServer(onConnection);
      await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
    },
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
