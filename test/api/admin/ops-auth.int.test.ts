// Signing in to the ops pages: HTTP Basic with an ops API key as the password, on every kind of
// route they have (the overview, bull-board's page, its static files and its JSON API). Missing or
// wrong credentials get the challenge, other roles 403, and every refusal that names a key or a
// password is audited. Repeated failures from one address are answered 429 and no longer audited.
import { randomUUID } from 'node:crypto';
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_HEADERS, BOARD_CSP } from '../../../src/api/admin/admin.plugin.ts';
import { BASIC_CHALLENGE } from '../../../src/api/admin/ops-auth.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { apiKeyIdOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import { OPS_USER, adminAudit, basic, opsGet, opsRequest } from '../../support/ops-client.ts';

const ROUTES = [
  '/admin',
  '/admin/queues',
  '/admin/queues/queue/ehr-forward',
  '/admin/queues/static/favicon-32x32.png',
  '/admin/queues/static/locales/en-US/messages.json',
  '/admin/queues/api/queues',
  '/admin/queues/api/redis/stats',
];

describe.each(APP_ENGINES)('signing in to the ops pages on %s', (engine) => {
  let t: TestApp;
  // Each test signs in from an address of its own, so the failure counts stay apart.
  let address = 0;
  const from = () => `192.0.2.${++address}`;

  beforeAll(async () => {
    t = await createTestApp(engine, {
      env: { REDIS_URL: testRedisUrl(), QUEUE_PREFIX: `test-${randomUUID()}` },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('challenges a request without credentials on every route, and audits nothing', async () => {
    const before = (await adminAudit(t)).length;
    for (const url of ROUTES) {
      for (const authorization of [undefined, `ApiKey ${t.ops.key}`, 'Bearer x']) {
        const res = await opsRequest(t, null, {
          method: 'GET',
          url,
          headers: authorization === undefined ? {} : { authorization },
        });
        expect(res.statusCode, `${url} ${authorization ?? ''}`).toBe(401);
        expect(res.headers['www-authenticate']).toBe(BASIC_CHALLENGE);
        expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(res.json()).toMatchObject({
          status: 401,
          code: 'unauthorized',
          requestId: res.headers['x-request-id'],
        });
      }
    }
    expect(await adminAudit(t)).toHaveLength(before);
  });

  it('challenges wrong credentials again, and audits each attempt without a key', async () => {
    const remoteAddress = from();
    const before = (await adminAudit(t)).length;
    const wrong = [
      basic('rfh_test_0000000000000000000000000000000000000000000'),
      basic('not-a-key'),
      basic(''),
      `Basic ${Buffer.from(t.ops.key).toString('base64')}`, // no user name and no colon
    ];
    for (const authorization of wrong) {
      const res = await t.app.inject({
        method: 'GET',
        url: '/admin',
        remoteAddress,
        headers: { authorization },
      });
      expect(res.statusCode, authorization).toBe(401);
      expect(res.headers['www-authenticate']).toBe(BASIC_CHALLENGE);
    }
    const rows = (await adminAudit(t)).slice(before);
    // The last one is not Basic credentials at all: challenged like a first visit, not audited.
    expect(rows.map((r) => [r.action, r.outcome, r.apiKeyId, r.requester])).toEqual(
      Array.from({ length: 3 }, () => ['admin.overview.read', 'denied', null, OPS_USER]),
    );
  });

  it('refuses a revoked ops key', async () => {
    const { key, record } = await t.ctx.apiKeys.create({
      system: 'HAS',
      role: 'ops',
      institutions: [],
      environment: 'test',
    });
    expect((await opsGet(t, '/admin', { key, institution: t.ops.institution })).statusCode).toBe(200);
    await t.ctx.apiKeys.revoke(record.id);
    expect((await opsGet(t, '/admin', { key, institution: t.ops.institution })).statusCode).toBe(401);
  });

  it('answers 403 to sender and provider keys on every route, and audits it with the key', async () => {
    for (const who of [t.sender, t.provider]) {
      const before = (await adminAudit(t)).length;
      for (const url of ROUTES) {
        const res = await opsGet(t, url, who);
        expect(res.statusCode, url).toBe(403);
        expect(res.headers['www-authenticate']).toBeUndefined();
        expect(res.json()).toMatchObject({ code: 'forbidden_role' });
      }
      const rows = (await adminAudit(t)).slice(before);
      expect(rows).toHaveLength(ROUTES.length);
      const keyId = await apiKeyIdOf(t, who);
      expect(rows.every((r) => r.outcome === 'denied' && r.apiKeyId === keyId)).toBe(true);
    }
  });

  it('lets an ops key in with any user name, and audits page loads but not static files or polling', async () => {
    const keyId = await apiKeyIdOf(t, t.ops);
    const before = (await adminAudit(t)).length;
    for (const url of ROUTES) {
      const res = await t.app.inject({
        method: 'GET',
        url,
        headers: { authorization: basic(t.ops.key, url === '/admin' ? 'ops' : OPS_USER) },
      });
      expect(res.statusCode, `${url}: ${res.body.slice(0, 200)}`).toBe(200);
    }
    const rows = (await adminAudit(t)).slice(before);
    expect(rows.map((r) => [r.action, r.outcome, r.apiKeyId])).toEqual([
      ['admin.overview.read', 'success', keyId],
      ['admin.queues.read', 'success', keyId],
      ['admin.queues.read', 'success', keyId],
    ]);
    expect(rows.map((r) => r.requester)).toEqual(['ops', OPS_USER, OPS_USER]);
  });

  it('answers 429 once an address has failed too often, stops auditing it, and still lets a valid key in', async () => {
    const remoteAddress = from();
    const attempt = (password: string) =>
      t.app.inject({
        method: 'GET',
        url: '/admin/queues',
        remoteAddress,
        headers: { authorization: basic(password) },
      });
    const before = (await adminAudit(t)).length;
    for (let i = 0; i < 10; i++) expect((await attempt(`wrong-${i}`)).statusCode).toBe(401);
    const limited = await attempt('wrong-10');
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(500);
    expect(limited.headers['www-authenticate']).toBeUndefined();
    expect(limited.json()).toMatchObject({ code: 'rate_limited' });
    expect((await attempt('wrong-11')).statusCode).toBe(429);
    expect((await adminAudit(t)).slice(before)).toHaveLength(10);

    expect((await attempt(t.ops.key)).statusCode).toBe(200);
    const elsewhere = await t.app.inject({
      method: 'GET',
      url: '/admin/queues',
      remoteAddress: from(),
      headers: { authorization: basic('wrong') },
    });
    expect(elsewhere.statusCode).toBe(401);
  });

  it('logs the route pattern and the key prefix, never the credentials', async () => {
    const res = await opsGet(t, '/admin/queues/api/queues?activeQueue=ehr-forward&status=failed');
    expect(res.statusCode).toBe(200);
    const line = t.logs.find((l) => l.includes(res.headers['x-request-id'] as string));
    expect(JSON.parse(line ?? '{}')).toMatchObject({
      route: '/admin/queues/api/queues',
      status: 200,
      keyPrefix: t.ops.key.slice(0, 17),
    });
    const logs = t.logs.join('\n');
    for (const secret of [
      t.ops.key,
      t.sender.key,
      basic(t.ops.key),
      basic(t.ops.key, 'ops'),
      'activeQueue',
    ]) {
      expect(logs).not.toContain(secret);
    }
  });

  it('sends /admin with a nonce’d policy, no script, and headers that keep it out of caches and frames', async () => {
    const res = await opsGet(t, '/admin');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers).toMatchObject({
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
    });
    const $ = cheerio.load(res.body);
    const nonce = $('style').attr('nonce');
    expect(nonce).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    expect(res.headers['content-security-policy']).toBe(
      `default-src 'none'; style-src 'nonce-${nonce}'; img-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'`,
    );
    expect($('script')).toHaveLength(0);
    // A fresh nonce per response.
    const again = cheerio
      .load((await opsGet(t, '/admin')).body)('style')
      .attr('nonce');
    expect(again).not.toBe(nonce);
  });

  it('sends the board with the same headers, a policy for its own script, and no third-party stylesheet', async () => {
    for (const url of [
      '/admin/queues',
      '/admin/queues/api/queues',
      '/admin/queues/static/favicon-32x32.png',
    ]) {
      const res = await opsGet(t, url);
      expect(res.statusCode, url).toBe(200);
      for (const [name, value] of Object.entries(ADMIN_HEADERS))
        expect(res.headers[name.toLowerCase()], name).toBe(value);
      expect(res.headers['content-security-policy']).toBe(BOARD_CSP);
    }
    const page = (await opsGet(t, '/admin/queues')).body;
    expect(page).toContain('<base href="/admin/queues/" />');
    expect(page).not.toMatch(/https?:\/\//);
  });

  it('leaves the API’s own authentication alone: an ops key is still refused referral data', async () => {
    const res = await t.request(t.ops, {
      method: 'GET',
      url: '/api/v1/institutions/hci/S1234A/referrals',
    });
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toBeUndefined();
    const basicOnApi = await t.app.inject({
      method: 'GET',
      url: '/api/v1/institutions/hci/S1234A/referrals',
      headers: { authorization: basic(t.sender.key) },
    });
    expect(basicOnApi.statusCode).toBe(401);
    expect(basicOnApi.headers['www-authenticate']).toBe('ApiKey, Bearer');
  });
});
