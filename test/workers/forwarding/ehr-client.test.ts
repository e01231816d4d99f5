// The EHR client against peers of the test's own that answer too slowly: one that trickles its status
// line, one that sends 200 and then trickles its body a byte at a time. Each attempt ends at its
// overall deadline as a timeout (which the forwarder retries like any timeout; the EHR deduplicates on
// the message ID), however steadily the bytes keep coming. A peer that answers at once is unaffected,
// and one whose body is over the size cap is judged by its status, without its reference.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEhrClient, type EhrAnswer } from '../../../src/workers/forwarding/ehr-client.ts';

const DEADLINE_MS = 400;
/** Far beyond the deadline, well inside the test's time: a bound, not a measurement. */
const GIVE_UP_MS = 5_000;

/** A TCP peer that reads the request, then writes `answer` one byte every `everyMs`. */
async function tricklingPeer(answer: string, everyMs: number, firstBytes = 0) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      let sent = firstBytes;
      socket.write(answer.slice(0, firstBytes));
      const timer = setInterval(() => {
        if (sent >= answer.length || socket.destroyed) {
          clearInterval(timer);
          return;
        }
        socket.write(answer[sent++] ?? '');
      }, everyMs);
      socket.on('close', () => {
        clearInterval(timer);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/fhir`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

const BODY = '{"reference":"EHR-1"}'.padEnd(400, ' ');
const OK = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`;

describe('an EHR attempt has one overall deadline', () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0)) await close();
  });

  async function attempt(url: string): Promise<{ answer: EhrAnswer | 'still waiting'; ms: number }> {
    const client = createEhrClient({ url, token: undefined, attemptTimeoutMs: DEADLINE_MS });
    closing.push(() => client.close());
    const started = Date.now();
    const answer = await Promise.race([
      client.send(Buffer.from('{}'), 'message-1'),
      new Promise<'still waiting'>((resolve) =>
        setTimeout(() => {
          resolve('still waiting');
        }, GIVE_UP_MS),
      ),
    ]);
    return { answer, ms: Date.now() - started };
  }

  it('ends an attempt whose status line trickles in as a timeout', async () => {
    const peer = await tricklingPeer(OK, 50);
    closing.push(peer.close);
    const { answer } = await attempt(peer.url);
    expect(answer).toEqual({ kind: 'network-error', code: 'EHR_ATTEMPT_TIMEOUT' });
  });

  it('ends an attempt whose body trickles in after 200 as a timeout', async () => {
    const headersEnd = OK.indexOf('\r\n\r\n') + 4;
    const peer = await tricklingPeer(OK, 50, headersEnd);
    closing.push(peer.close);
    const { answer } = await attempt(peer.url);
    expect(answer).toEqual({ kind: 'network-error', code: 'EHR_ATTEMPT_TIMEOUT' });
  });

  it('stops reading a body over the cap and judges the answer by its status', async () => {
    const big = `{"reference":"EHR-1","padding":"${'x'.repeat(70 * 1024)}"}`;
    const answer = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${big.length}\r\n\r\n${big}`;
    const peer = await tricklingPeer(answer, 1, answer.length);
    closing.push(peer.close);
    const { answer: got } = await attempt(peer.url);
    expect(got).toEqual({ kind: 'response', status: 200, reference: null, retryAfterMs: undefined });
  });

  it('leaves an EHR that answers at once alone', async () => {
    const peer = await tricklingPeer(OK, 1, OK.length);
    closing.push(peer.close);
    const { answer } = await attempt(peer.url);
    expect(answer).toEqual({ kind: 'response', status: 200, reference: 'EHR-1', retryAfterMs: undefined });
  });
});
