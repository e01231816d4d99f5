// A TCP proxy of a test's own between refhub and a server it needs (PostgreSQL, Redis). Cutting it is
// an outage as refhub meets one: connections in use are reset, and new ones are refused until it is
// restored, while the server behind it (the machine's shared one) keeps running for everyone else.
import net from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Resets every connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts connections again, on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  };
  let server: net.Server | undefined;
  let port = 0;
  const listen = async () => {
    const listening = net.createServer((client) => {
      const upstream = net.connect(target);
      track(client);
      track(upstream);
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(port, '127.0.0.1', resolve);
    });
    port = (listening.address() as net.AddressInfo).port;
    server = listening;
  };
  const stop = async () => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.resetAndDestroy();
    if (closing !== undefined)
      await new Promise<void>((resolve) =>
        closing.close(() => {
          resolve();
        }),
      );
  };
  await listen();
  return {
    get port() {
      return port;
    },
    cut: stop,
    restore: async () => {
      if (server === undefined) await listen();
    },
    close: stop,
  };
}
