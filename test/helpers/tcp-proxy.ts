/**
 * A TCP proxy in front of a shared server (PostgreSQL, Redis, NATS), so a test can act out a
 * server restart without restarting the server other tests use: `cut()` drops every connection
 * and stops listening (new connections are refused, as by a server that is down), `restore()`
 * listens again on the same port. `holdWhen` acts out a half-open connection: once it returns
 * true for a chunk, that connection's bytes in that direction are held, never forwarded (the
 * sender sees no error; the other end sees nothing more).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far (to see that a client reconnected). */
  readonly accepted: number;
  /** Asked of every chunk ('up': client to server) of connection number `connection` (1, 2, ...); true holds it and all after it in that direction. */
  holdWhen: ((direction: 'up' | 'down', chunk: Buffer, connection: number) => boolean) | undefined;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const onConnection = (client: Socket) => {
    const connection = ++accepted;
    const upstream = connect({ host: targetHost, port: targetPort });
    sockets.add(client);
    sockets.add(upstream);
    const held = { up: false, down: false };
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    // Half-open: the end of a side whose bytes are held never reaches the other side either
    // (the other side's socket stays open until the proxy closes).
    client.on('error', () => (held.up ? client.destroy() : drop())).on('close', () => (held.up ? undefined : drop()));
    upstream.on('error', () => (held.down ? upstream.destroy() : drop())).on('close', () => (held.down ? undefined : drop()));
    const forward = (direction: 'up' | 'down', to: Socket) => (chunk: Buffer) => {
      held[direction] ||= proxy.holdWhen?.(direction, chunk, connection) === true;
      if (!held[direction]) to.write(chunk);
    };
    client.on('data', forward('up', upstream));
    upstream.on('data', forward('down', client));
  };
  let server: Server = createServer(onConnection);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const stop = async () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    await new Promise<void>((r) => server.close(() => r()));
  };
  const proxy: TcpProxy = {
    port,
    holdWhen: undefined,
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
  return proxy;
}
