// A client that gives up on its own upload is the client's failure, not the database's: the request
// stream's reset (ECONNRESET, as a lost database connection reports too) must not be logged as a
// database outage, nor answered or counted as 503. A real listening server and a raw socket, since
// `inject` cannot reset a connection half-way through a body.
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseOutage } from '../../../src/db/database.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { countRows } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

interface LogLine {
  readonly msg: string;
  readonly outage?: string;
}

describe.each(APP_ENGINES)('a client that aborts its upload on %s', (engine) => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp(engine);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await t.close();
  });

  const lines = (from: number) => t.logs.slice(from).map((l) => JSON.parse(l) as LogLine);
  const ABORTED = 'the client closed the connection before its body arrived';
  /** What refhub logs of an aborted request: its own line, or (the defect) an outage line. */
  const traces = (from: number) => lines(from).filter((l) => l.msg === ABORTED || l.outage !== undefined);

  /** Resolves once refhub has logged `count` traces since `from` (the state, not a delay). */
  const traced = (from: number, count: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (traces(from).length >= count) resolve();
        else setImmediate(check);
      };
      check();
    });

  /** Resolves once the server's next request has its body being read (a state, not a delay). */
  const bodyBeingRead = () =>
    new Promise<void>((resolve) => {
      const onRequest = (request: IncomingMessage) => {
        t.app.server.off('request', onRequest);
        const check = () => {
          if (request.listenerCount('data') > 0) resolve();
          else setImmediate(check);
        };
        check();
      };
      t.app.server.on('request', onRequest);
    });

  /**
   * Declares 1000 bytes of body, sends 20, and resets the connection (TCP RST) while refhub reads the
   * body: a reset before that (during authentication) never reaches the body's parser.
   */
  const abortUpload = () =>
    new Promise<void>((resolve) => {
      const reading = bodyBeingRead();
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(
          'POST /api/v1/referrals HTTP/1.1\r\nHost: refhub.test\r\n' +
            `Authorization: ApiKey ${t.sender.key}\r\nContent-Type: application/json\r\n` +
            'Content-Length: 1000\r\n\r\n' +
            '{"clinicalInfo":"ab',
        );
        void reading.then(() => socket.resetAndDestroy());
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        resolve();
      });
    });

  it('is not logged as a database outage, not answered 503, and leaves nothing behind', async () => {
    const from = t.logs.length;
    for (let i = 1; i <= 3; i++) {
      await abortUpload();
      await traced(from, i);
      expect(lines(from).filter((l) => l.outage !== undefined)).toEqual([]);
    }
    expect(traces(from).map((l) => l.msg)).toEqual([ABORTED, ABORTED, ABORTED]);
    const metrics = await t.ctx.metrics.registry.metrics();
    expect(metrics).not.toMatch(/refhub_http_request_duration_seconds_count\{[^}]*status_class="5xx"/);
    expect(await countRows(t, 'referrals')).toBe(0);

    // The API answers as before, and there is no outage to recover from.
    const res = await t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals`,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(lines(from).filter((l) => l.outage !== undefined)).toEqual([]);
  });

  it('counts as an outage only what the store raised: a code alone does not tell', async () => {
    expect(isDatabaseOutage(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isDatabaseOutage({ code: '40001' })).toBe(false);
    const raised = await sql`do $$ begin raise exception 'retry me' using errcode = '40001'; end $$`
      .execute(t.ctx.db)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(isDatabaseOutage(raised)).toBe(true);
    expect(isDatabaseOutage(new Error('wrapped', { cause: raised }))).toBe(true);
    const defect = await sql`select 1/0`.execute(t.ctx.db).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isDatabaseOutage(defect)).toBe(false);
  });
});
