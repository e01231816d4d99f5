// Errors tell the truth: while PostgreSQL cannot be reached, every request gets 503 problem+json with
// Retry-After (never 500, which is kept for defects), the log says so once per outage rather than once
// per request, and refhub recovers by itself when the database is back. The outage is a proxy of the
// test's own being cut between refhub and the shared server. PostgreSQL only: embedded PGlite lives
// inside the process and cannot become unreachable.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../../src/db/database.ts';
import { testDatabaseUrl } from '../../support/engines.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

describe('a database outage', () => {
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    const target = new URL(testDatabaseUrl());
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    t = await createTestApp('postgres', {
      store: {
        reach: (url) => {
          url.hostname = '127.0.0.1';
          url.port = String(proxy.port);
          return url;
        },
      },
    });
  });
  afterAll(async () => {
    await proxy.restore();
    await t.close();
    await proxy.close();
  });

  const create = (key?: string) =>
    t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/referrals',
      headers: key === undefined ? {} : { 'idempotency-key': key },
      payload: { ...t.sender.institution, offeringId: 'cgh-gastro', ...PATIENT },
    });
  const read = (id: string) =>
    t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/referrals/${id}?${new URLSearchParams({ ...t.sender.institution, requesterIdentifier: REQUESTER }).toString()}`,
    });
  const logLines = () => t.logs.map((l) => JSON.parse(l) as { level: number; msg: string; outage?: string });

  it('answers 503 with Retry-After while it lasts, logs it once, and recovers on its own', async () => {
    const before = await create();
    expect(before.statusCode, before.body).toBe(201);
    const id = before.json<{ id: string }>().id;
    const logsBefore = t.logs.length;

    await proxy.cut();
    const during = [await read(id), await create(), await create('outage-key'), await read(id)];
    for (const res of during) {
      expect(res.statusCode, res.body).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
      expect(res.json()).toMatchObject({ status: 503, code: 'unavailable' });
      expect(res.body).not.toContain(PATIENT.patientName);
    }
    const outageLines = logLines()
      .slice(logsBefore)
      .filter((l) => l.outage === 'database');
    expect(outageLines).toHaveLength(1);
    expect(
      logLines()
        .slice(logsBefore)
        .filter((l) => l.msg.startsWith('request failed')),
    ).toEqual([]);

    await proxy.restore();
    let after = await read(id);
    for (let i = 0; i < 20 && after.statusCode !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      after = await read(id);
    }
    expect(after.statusCode, after.body).toBe(200);
    // The keyed create that met the outage wrote nothing, so its retry runs now.
    const retried = await create('outage-key');
    expect(retried.statusCode, retried.body).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    const recovered = logLines()
      .slice(logsBefore)
      .filter((l) => l.outage === 'database');
    expect(recovered.map((l) => l.msg)).toEqual([
      'the database cannot be reached; answering 503',
      'the database is reachable again',
    ]);
  });

  it('keeps 500 for a defect, and its one log line says so, with the error code and no value', async () => {
    const refused = 'outage-test-defect@example.org';
    await sql`alter table audit_events add constraint outage_test_refuses check (requester_identifier is distinct from ${sql.lit(refused)})`.execute(
      t.ctx.db,
    );
    const logsBefore = t.logs.length;
    try {
      const res = await t.request(t.sender, {
        method: 'POST',
        url: '/api/v1/referrals',
        payload: {
          ...t.sender.institution,
          requesterIdentifier: refused,
          offeringId: 'cgh-gastro',
          ...PATIENT,
        },
      });
      expect(res.statusCode, res.body).toBe(500);
      expect(res.json()).toMatchObject({ code: 'internal_error' });
      expect(res.headers['retry-after']).toBeUndefined();
    } finally {
      await sql`alter table audit_events drop constraint outage_test_refuses`.execute(t.ctx.db);
    }
    const lines = t.logs.slice(logsBefore).map((l) => JSON.parse(l) as Record<string, unknown>);
    const defects = lines.filter((l) => l.msg === 'request failed: a defect in refhub (500)');
    expect(defects).toHaveLength(1);
    expect(defects[0]).toMatchObject({ err: { code: '23514' } });
    expect(t.logs.slice(logsBefore).join('\n')).not.toContain(refused);
  });
});

describe('which database errors are an outage', () => {
  it.each([
    ['a refused connection', { code: 'ECONNREFUSED' }],
    ['a reset connection', { code: 'ECONNRESET' }],
    ['a lost connection', new Error('Connection terminated unexpectedly')],
    ['a pool that cannot connect in time', new Error('timeout exceeded when trying to connect')],
    ['a server shutting down', { code: '57P01' }],
    ['a server starting up', { code: '57P03' }],
    ['a connection exception', { code: '08006' }],
    ['too many connections', { code: '53300' }],
    ['a serialization failure', { code: '40001' }],
    ['a deadlock', { code: '40P01' }],
    ['a lock wait past its bound', { code: '55P03' }],
    ['a cause of a wrapped error', new Error('query failed', { cause: { code: 'ECONNREFUSED' } })],
  ])('%s is', (_label, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a check violation', { code: '23514' }],
    ['a unique violation', { code: '23505' }],
    ['a syntax error', { code: '42601' }],
    ['a NUL in a string', { code: '22021' }],
    ['an error without a code', new Error('something else')],
  ])('%s is not', (_label, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
