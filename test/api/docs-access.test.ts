// Who may read the API's documentation (API_DOCS): anyone outside production; in production, by
// default, only ops keys (as `Authorization: ApiKey …`, or as the password of HTTP Basic, which a
// browser asks for on its own); and nobody when it is turned off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const basic = (password: string) => `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`;

describe.each([
  ['ops', { API_DOCS: 'ops' }],
  ['off', { API_DOCS: 'off' }],
  ['public', {}],
] as const)('API_DOCS=%s', (mode, env) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('pglite', { env });
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (url: string, authorization?: string) =>
    t.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });

  it('serves /openapi.json and /docs as the mode says', async () => {
    for (const url of ['/openapi.json', '/docs/']) {
      const anonymous = await get(url);
      const sender = await get(url, `ApiKey ${t.sender.key}`);
      const opsKey = await get(url, `ApiKey ${t.ops.key}`);
      const opsBasic = await get(url, basic(t.ops.key));
      if (mode === 'public') {
        expect([anonymous, sender, opsKey].map((r) => r.statusCode)).toEqual([200, 200, 200]);
      } else if (mode === 'off') {
        for (const res of [anonymous, sender, opsKey, opsBasic]) {
          expect(res.statusCode).toBe(404);
          expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        }
      } else {
        expect(anonymous.statusCode).toBe(401);
        expect(anonymous.headers['www-authenticate']).toMatch(/^Basic realm=/);
        expect(anonymous.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(sender.statusCode).toBe(403);
        expect(sender.json()).toMatchObject({ code: 'forbidden_role' });
        expect(opsKey.statusCode, opsKey.body).toBe(200);
        expect(opsBasic.statusCode, opsBasic.body).toBe(200);
        expect((await get(url, basic('not-a-key'))).statusCode).toBe(401);
      }
    }
  });

  it('still documents the API for the app itself (the typed client is generated from it)', () => {
    expect(t.app.swagger()).toMatchObject({ openapi: '3.1.0' });
  });
});
