// Limits (contract §10): a rate limit per API key with Retry-After and RateLimit headers, a 256 KiB
// body limit, and problem+json for routes that do not exist, without echoing the query string.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { ENGINES } from '../support/engines.ts';
import { CANARY } from '../support/fixtures/patients.ts';
import { countRows } from '../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../support/test-app.ts';

const LIMIT = 5;

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status, code, requestId: res.headers['x-request-id'] });
}

describe.each(ENGINES)('limits on %s', (engine) => {
  describe(`rate limit of ${LIMIT} requests a minute`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(engine, { env: { RATE_LIMIT_PER_MINUTE: String(LIMIT) } });
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
        expect(res.headers['ratelimit-limit']).toBe(String(LIMIT));
        expect(res.headers['ratelimit-remaining']).toBe(String(LIMIT - i));
      }
      const limited = await list(t.sender);
      expectProblem(limited, 429, 'rate_limited');
      const retryAfter = Number(limited.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(limited.headers['ratelimit-limit']).toBe(String(LIMIT));
      expect(limited.headers['ratelimit-remaining']).toBe('0');
      const reset = Number(limited.headers['ratelimit-reset']);
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(60);

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
        expect(res.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
      }
    });

    it('health checks are not rate limited', async () => {
      for (let i = 0; i < LIMIT * 3; i++) {
        const res = await t.request(null, { method: 'GET', url: '/healthz' });
        expect(res.statusCode).toBe(200);
        expect(res.headers['ratelimit-limit']).toBeUndefined();
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
});
