// Limits (contract §10): a rate limit per API key with Retry-After and RateLimit headers (its sharing
// between processes and its algorithm: rate-limits.int.test.ts, test/domain/rate-limits.test.ts), a 256 KiB
// body limit, and problem+json for routes that do not exist, without echoing the query string. At
// the HTTP edge: answers Node or Fastify write before any route runs (408, 414, 431, a malformed
// request) are problem+json too and echo nothing the client sent, and slow clients are cut off.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { APP_ENGINES } from '../support/engines.ts';
import { CANARY } from '../support/fixtures/patients.ts';
import { countRows } from '../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../support/test-app.ts';

const LIMIT = 5;

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status, code, requestId: res.headers['x-request-id'] });
}

interface RawAnswer {
  /** Everything the server wrote, as text. */
  readonly text: string;
  /** Whether the server closed the connection before the test gave up waiting. */
  readonly closed: boolean;
  readonly status: number | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * Opens a raw TCP connection, lets `talk` write to it (once, or on a timer for as long as the
 * socket is open), and collects what comes back until the server closes it or `giveUpMs` passes.
 */
function rawExchange(port: number, talk: (socket: net.Socket) => void, giveUpMs: number): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closed = false;
    const giveUp = setTimeout(() => socket.destroy(), giveUpMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('end', () => {
      closed = true;
    });
    socket.on('close', () => {
      clearTimeout(giveUp);
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1];
      const headers = Object.fromEntries(
        headerLines.map((line) => {
          const at = line.indexOf(':');
          return [line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()];
        }),
      );
      resolve({
        text,
        closed,
        status: status === undefined ? undefined : Number(status),
        headers,
        body: rest.join('\r\n\r\n'),
      });
    });
    socket.on('connect', () => {
      talk(socket);
    });
  });
}

/** Writes `bytes` one at a time, every `everyMs`, while the socket stays open. */
function trickle(socket: net.Socket, bytes: string, everyMs: number): void {
  let at = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || socket.writableEnded) clearInterval(timer);
    else socket.write(bytes[at++ % bytes.length]!);
  }, everyMs);
  socket.on('close', () => {
    clearInterval(timer);
  });
}

/** A problem document written at the edge: the shape of problem.ts, echoing nothing that was sent. */
function expectEdgeProblem(answer: RawAnswer, status: number, code: string, sent: readonly string[]) {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(answer.headers['x-request-id']).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  expect(answer.headers['api-version']).toBe('0.0.71');
  const problem = JSON.parse(answer.body) as Record<string, unknown>;
  expect(problem).toEqual({
    type: `urn:refhub:problem:${code}`,
    title: expect.any(String) as unknown,
    status,
    detail: expect.any(String) as unknown,
    code,
    requestId: answer.headers['x-request-id'],
  });
  for (const value of sent) expect(answer.text).not.toContain(value);
}

describe.each(APP_ENGINES)('limits on %s', (engine) => {
  describe(`rate limit of a burst of ${LIMIT}`, () => {
    let t: TestApp;
    beforeAll(async () => {
      // One request earned back a minute: none comes back while the test runs.
      t = await createTestApp(engine, {
        env: { RATE_LIMIT_PER_SECOND: String(1 / 60), RATE_LIMIT_BURST: String(LIMIT) },
      });
    });
    afterAll(async () => {
      await t.close();
    });

    const list = (who: TestParty) =>
      t.request(who, {
        method: 'GET',
        url: `/api/v1/institutions/hci/${who.institution.institutionId}/referrals`,
      });

    it('the request after the limit → 429 rate_limited with Retry-After and RateLimit headers', async () => {
      for (let i = 1; i <= LIMIT; i++) {
        const res = await list(t.sender);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.headers['ratelimit-policy']).toBe(`"default";q=${LIMIT};w=${LIMIT * 60}`);
        expect(res.headers.ratelimit).toMatch(new RegExp(`^"default";r=${LIMIT - i};t=\\d+$`));
      }
      const limited = await list(t.sender);
      expectProblem(limited, 429, 'rate_limited');
      const retryAfter = Number(limited.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(limited.headers['ratelimit-policy']).toBe(`"default";q=${LIMIT};w=${LIMIT * 60}`);
      expect(limited.headers.ratelimit).toBe(`"default";r=0;t=${retryAfter}`);

      // Writes are limited by the same budget, and a refused write changes nothing.
      const before = await countRows(t, 'referrals');
      const write = await t.request(t.sender, {
        method: 'POST',
        url: '/api/v1/referrals',
        payload: { ...t.sender.institution, offeringId: 'cgh-gastro' },
      });
      expectProblem(write, 429, 'rate_limited');
      expect(await countRows(t, 'referrals')).toBe(before);
    });

    it('another API key has its own budget, even for the same institution', async () => {
      const { key } = await t.ctx.apiKeys.create({
        system: 'HAS',
        role: 'sender',
        institutions: [{ idType: 'hci', id: 'S1234A' }],
        environment: 'test',
      });
      const sameInstitution: TestParty = { key, institution: t.sender.institution };
      expect((await list(t.sender)).statusCode).toBe(429);
      for (const who of [t.otherSender, t.provider, sameInstitution]) {
        const res = await list(who);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.headers.ratelimit).toMatch(new RegExp(`^"default";r=${LIMIT - 1};`));
      }
    });

    it('health checks are not rate limited', async () => {
      for (let i = 0; i < LIMIT * 3; i++) {
        const res = await t.request(null, { method: 'GET', url: '/healthz' });
        expect(res.statusCode).toBe(200);
        expect(res.headers['ratelimit-policy']).toBeUndefined();
      }
      // Not even for a client whose key is spent.
      const res = await t.request(t.sender, { method: 'GET', url: '/healthz' });
      expect(res.statusCode).toBe(200);
    });
  });

  describe('body size and unknown routes', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(engine);
    });
    afterAll(async () => {
      await t.close();
    });

    const create = (clinicalInfo: string) =>
      t.request(t.sender, {
        method: 'POST',
        url: '/api/v1/referrals',
        payload: { ...t.sender.institution, offeringId: 'cgh-gastro', clinicalInfo },
      });

    it('a body over 256 KiB → 413 payload_too_large, and nothing is created', async () => {
      const before = await countRows(t, 'referrals');
      expectProblem(await create('x'.repeat(256 * 1024)), 413, 'payload_too_large');
      expect(await countRows(t, 'referrals')).toBe(before);
    });

    it('a body just under 256 KiB is read (and then judged by the schema)', async () => {
      const res = await create('x'.repeat(255 * 1024));
      expectProblem(res, 400, 'validation_failed');
      expect(res.json()).toMatchObject({ errors: [expect.objectContaining({ path: 'body.clinicalInfo' })] });
    });

    it.each([
      ['GET', `/api/v1/patients?uin=${CANARY.patientUin}&name=${encodeURIComponent(CANARY.patientName)}`],
      ['DELETE', `/api/v1/referrals?institutionId=S1234A&secret=${CANARY.patientUin}`],
      ['GET', `/nowhere?token=${CANARY.patientUin}`],
    ] as const)('unknown route %s %s → 404 problem+json without the query string', async (method, url) => {
      for (const who of [t.sender, null]) {
        const res = await t.request(who, { method, url });
        expectProblem(res, 404, 'not_found');
        const path = url.split('?')[0]!;
        const { detail } = res.json<{ detail: string }>();
        expect(detail).toContain(path);
        expect(res.body).not.toContain(url.split('?')[1]!);
        expect(res.body).not.toContain(CANARY.patientUin);
      }
    });

    it('responses that carry patient data are not cached', async () => {
      const created = await create('Fever for three days');
      expect(created.statusCode, created.body).toBe(201);
      expect(created.headers['cache-control']).toBe('no-store');
      const id = created.json<{ id: string }>().id;
      const read = await t.request(t.sender, {
        method: 'GET',
        url: `/api/v1/referrals/${id}?institutionIdType=hci&institutionId=S1234A&requesterIdentifier=a%40b.org`,
      });
      expect(read.statusCode).toBe(200);
      expect(read.headers['cache-control']).toBe('no-store');
    });
  });

  describe('answers written before any route runs', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(engine);
    });
    afterAll(async () => {
      await t.close();
    });

    it('a path parameter over 200 characters → 414 problem+json that does not echo the URL', async () => {
      const long = `Quokkamark${'x'.repeat(300)}`;
      const res = await t.request(t.sender, {
        method: 'GET',
        url: `/api/v1/referrals/${long}?uin=S7777777Q`,
      });
      expectProblem(res, 414, 'uri_too_long');
      expect(res.headers['api-version']).toBe('0.0.71');
      expect(res.body).not.toContain('Quokkamark');
      expect(res.body).not.toContain('S7777777Q');
    });

    it('a path that is not valid percent-encoding → 400 problem+json naming the path, not quoting it', async () => {
      const res = await t.request(t.sender, { method: 'GET', url: '/api/v1/referrals/Quokkamark%E0%A4%A' });
      expectProblem(res, 400, 'validation_failed');
      expect(res.json()).toMatchObject({ errors: [{ path: 'path' }] });
      expect(res.body).not.toContain('Quokkamark');
    });
  });

  describe('slow and malformed clients on a listening server', () => {
    const REQUEST_TIMEOUT_S = 2;
    const HEADERS_TIMEOUT_S = 1;
    const KEEP_ALIVE_TIMEOUT_S = 1;
    /** How long a test waits before it calls a connection held: well past every bound configured. */
    const HELD_AFTER_MS = 4 * REQUEST_TIMEOUT_S * 1000;
    let t: TestApp;
    let port: number;
    beforeAll(async () => {
      t = await createTestApp(engine, {
        env: {
          HTTP_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
          HTTP_HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_S),
          HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: String(KEEP_ALIVE_TIMEOUT_S),
        },
      });
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as net.AddressInfo).port;
    });
    afterAll(async () => {
      await t.close();
    });

    const postHead = (key: string) =>
      'POST /api/v1/referrals HTTP/1.1\r\nHost: refhub.test\r\n' +
      `Authorization: ApiKey ${key}\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n`;

    it('a client that trickles its body is answered 408 problem+json and disconnected, every one of them', async () => {
      const answers = await Promise.all(
        Array.from({ length: 5 }, () =>
          rawExchange(
            port,
            (socket) => {
              socket.write(postHead(t.sender.key));
              trickle(socket, '{"clinicalInfo":"Quokkamark', 200);
            },
            HELD_AFTER_MS,
          ),
        ),
      );
      for (const answer of answers) {
        expect(answer.closed, 'the server closed the connection').toBe(true);
        expectEdgeProblem(answer, 408, 'request_timeout', ['Quokkamark', t.sender.key]);
        expect(answer.headers.connection).toBe('close');
      }
      // Nothing was half-created from the part of the body that arrived.
      expect(await countRows(t, 'referrals')).toBe(0);
      // Each is logged as a client's failure, not as a server error.
      const lines = t.logs.map((line) => JSON.parse(line) as { level: number; msg: string; status?: number });
      expect(lines.filter((l) => l.msg === 'client error' && l.status === 408).length).toBeGreaterThanOrEqual(
        5,
      );
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    });

    it('a client that trickles its headers is answered 408 problem+json and disconnected', async () => {
      const answer = await rawExchange(
        port,
        (socket) => {
          socket.write('GET /healthz HTTP/1.1\r\nHost: refhub.test\r\n');
          trickle(socket, 'X-Quokkamark: a\r\n', 100);
        },
        HELD_AFTER_MS,
      );
      expect(answer.closed).toBe(true);
      expectEdgeProblem(answer, 408, 'request_timeout', ['Quokkamark']);
    });

    it('an idle kept-alive connection is closed once its keep-alive time has passed', async () => {
      const answer = await rawExchange(
        port,
        (socket) => socket.write('GET /healthz HTTP/1.1\r\nHost: refhub.test\r\n\r\n'),
        HELD_AFTER_MS,
      );
      expect(answer.status).toBe(200);
      expect(answer.closed).toBe(true);
    });

    it('headers over the size limit → 431 problem+json that does not echo them', async () => {
      const answer = await rawExchange(
        port,
        (socket) =>
          socket.write(
            `GET /healthz HTTP/1.1\r\nHost: refhub.test\r\nX-Big: Quokkamark${'x'.repeat(20_000)}\r\n\r\n`,
          ),
        HELD_AFTER_MS,
      );
      expectEdgeProblem(answer, 431, 'header_fields_too_large', ['Quokkamark']);
    });

    it.each([
      ['a request line that is not HTTP', 'QUOKKAMARK / SPDY/9\r\n\r\n'],
      [
        'a NUL in a header value',
        'GET /healthz HTTP/1.1\r\nHost: refhub.test\r\nX-Note: Quokka\0mark\r\n\r\n',
      ],
      [
        'a body longer than it said',
        'POST /api/v1/referrals HTTP/1.1\r\nHost: refhub.test\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nQuokkamark',
      ],
    ])('%s → 400 problem+json that echoes nothing', async (_label, request) => {
      const answer = await rawExchange(port, (socket) => socket.write(request), HELD_AFTER_MS);
      expectEdgeProblem(answer, 400, 'bad_request', ['Quokka', 'QUOKKA', 'SPDY']);
      expect(answer.closed).toBe(true);
    });

    it('a long path → 414 problem+json over the wire too, and the server still serves', async () => {
      const answer = await rawExchange(
        port,
        (socket) =>
          socket.write(
            `GET /api/v1/referrals/Quokkamark${'x'.repeat(300)} HTTP/1.1\r\nHost: refhub.test\r\nConnection: close\r\n\r\n`,
          ),
        HELD_AFTER_MS,
      );
      expectEdgeProblem(answer, 414, 'uri_too_long', ['Quokkamark']);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
    });
  });
});
