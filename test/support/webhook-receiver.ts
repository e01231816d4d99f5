// A webhook receiver of a test's own: a real HTTP server on a free loopback port that records every
// delivery (its headers and body, as sent) and answers as the test tells it: a status, after a delay.
// Tests verify what it received with the `standardwebhooks` package, as an integrator would.
import http from 'node:http';
import type net from 'node:net';
import { LOOPBACK } from './free-port.ts';

export interface ReceivedDelivery {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The status this receiver answered. */
  readonly status: number;
  readonly receivedAt: number;
}

export interface Answering {
  readonly status: number;
  readonly delayMs: number;
}

export interface WebhookReceiver {
  /** The base URL; deliveries to any path under it are recorded. */
  readonly url: string;
  /** How to answer from now on; `next` answers the coming requests first, one each. */
  answer(answering: Partial<Answering>, next?: readonly Partial<Answering>[]): void;
  deliveries(): readonly ReceivedDelivery[];
  /** Requests received and not yet answered or closed by the sender: the ones this receiver holds. */
  inFlight(): number;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  let answering: Answering = { status: 204, delayMs: 0 };
  let queued: Partial<Answering>[] = [];
  let open = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const now = { ...answering, ...queued.shift() };
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (typeof value === 'string') headers[name] = value;
      }
      received.push({
        path: request.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        status: now.status,
        receivedAt: Date.now(),
      });
      open++;
      const timer = setTimeout(() => {
        response.writeHead(now.status, { 'content-type': 'text/plain' });
        response.end('ok');
      }, now.delayMs);
      response.once('close', () => {
        open--;
        clearTimeout(timer);
      });
    });
  });
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://${LOOPBACK}:${port}`,
    answer(next, sequence = []) {
      answering = { ...answering, ...next };
      queued = [...sequence];
    },
    deliveries: () => [...received],
    inFlight: () => open,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}
