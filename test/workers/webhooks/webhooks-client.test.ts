// The webhook client against receivers of the test's own (real node:http servers on loopback): only
// the status of an answer counts, so a receiver that sends its status and then trickles its body must
// not hold the attempt (and a delivery slot) until the deadline; the client stops reading and lets the
// connection go. A receiver's address is checked when the client connects: loopback passes outside
// production only, and every other non-public address needs an operator's allowance.
import http from 'node:http';
import type net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createWebhookClient,
  type WebhookClient,
  type WebhookClientOptions,
} from '../../../src/workers/webhooks/webhooks-client.ts';
import { VERSION } from '../../../src/version.ts';

/** Far beyond what the test waits for: an attempt that ran into it would fail the test's own timeout. */
const DEADLINE_MS = 60_000;

interface TricklingReceiver {
  readonly url: string;
  /** Resolves when the receiver sees the connection end: how much it had sent, and whether all. */
  readonly ended: Promise<{ readonly sentBytes: number; readonly finished: boolean }>;
  close(): Promise<void>;
}

/** Answers `status` at once, then one byte of a long body every `everyMs`. */
async function tricklingReceiver(status: number, everyMs: number): Promise<TricklingReceiver> {
  const BODY_BYTES = 100_000;
  let ended!: (end: { sentBytes: number; finished: boolean }) => void;
  const endedPromise = new Promise<{ sentBytes: number; finished: boolean }>((resolve) => {
    ended = resolve;
  });
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      // Chunked, with no length to give the body's size away up front.
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.flushHeaders();
      let sentBytes = 0;
      const timer = setInterval(() => {
        res.write('x');
        sentBytes += 1;
        if (sentBytes === BODY_BYTES) res.end();
      }, everyMs);
      res.on('close', () => {
        clearInterval(timer);
        ended({ sentBytes, finished: res.writableFinished });
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    ended: endedPromise,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

describe('the webhook client', () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0)) await close();
  });
  const client = (options: Partial<WebhookClientOptions> = {}): WebhookClient => {
    const created = createWebhookClient({
      attemptTimeoutMs: DEADLINE_MS,
      loopback: true,
      allowed: new Set(),
      ...options,
    });
    closing.push(() => created.close());
    return created;
  };
  const post = (c: WebhookClient, url: string) => c.post({ url, body: '{}', headers: {} });

  it.each([200, 500])(
    'answers %s while the receiver still trickles its body, and closes the connection',
    async (status) => {
      const receiver = await tricklingReceiver(status, 10);
      closing.push(() => receiver.close());
      expect(await post(client(), receiver.url)).toEqual({ kind: 'response', status });
      // The receiver sees the connection end long before its body could have been sent.
      expect(await receiver.ended).toMatchObject({ finished: false });
    },
  );

  it('connects to a loopback receiver only outside production, or when an operator allowed it', async () => {
    const receiver = await tricklingReceiver(204, 10);
    closing.push(() => receiver.close());
    const byName = receiver.url.replace('127.0.0.1', 'localhost');
    expect(await post(client({ loopback: false }), receiver.url)).toEqual({
      kind: 'network-error',
      code: 'WEBHOOK_ADDRESS_NOT_PUBLIC',
    });
    expect(await post(client({ loopback: false }), byName)).toEqual({
      kind: 'network-error',
      code: 'WEBHOOK_ADDRESS_NOT_PUBLIC',
    });
    expect(await post(client({ loopback: false, allowed: new Set(['localhost']) }), byName)).toEqual({
      kind: 'response',
      status: 204,
    });
  });

  it('refuses a private or metadata address in every mode unless an operator allowed it', async () => {
    for (const url of ['http://169.254.169.254/latest', 'http://10.0.0.1/', 'http://[64:ff9b::a9fe:a9fe]/']) {
      expect(await post(client({ loopback: true }), url), url).toEqual({
        kind: 'network-error',
        code: 'WEBHOOK_ADDRESS_NOT_PUBLIC',
      });
    }
  });

  it('names refhub and its version in the User-Agent of every delivery', async () => {
    const seen: (string | undefined)[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers['user-agent']);
      req.resume();
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closing.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => {
            resolve();
          });
        }),
    );
    const { port } = server.address() as net.AddressInfo;
    expect(await post(client(), `http://127.0.0.1:${port}/hooks`)).toEqual({ kind: 'response', status: 204 });
    expect(seen).toEqual([`refhub/${VERSION} (webhooks)`]);
  });
});
